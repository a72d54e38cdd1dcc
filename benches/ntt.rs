//! NTT benchmarks (in progress).
fn main() {}
