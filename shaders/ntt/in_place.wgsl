// The inverse row pass's input for ntt.wgsl (in place): the buffer's own word.
fn inv_in(i: u32, limb: u32) -> u32 {
    return a[i];
}
