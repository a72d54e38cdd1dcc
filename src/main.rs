//! The `wgfhe` command-line tool.
fn main() {}
