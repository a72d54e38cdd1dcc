// NTT tile of 2048 values (8192 bytes of workgroup memory), for ntt.wgsl (backend/gpu/ntt.rs picks
// the largest tile the adapter's max_compute_workgroup_storage_size holds).
const LOG_TILE: u32 = 11u;
const TILE: u32 = 2048u;
