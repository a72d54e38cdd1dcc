// NTT tile of 4096 values (16384 bytes of workgroup memory), for ntt.wgsl (backend/gpu/ntt.rs picks
// the largest tile the adapter's max_compute_workgroup_storage_size holds).
const LOG_TILE: u32 = 12u;
const TILE: u32 = 4096u;
