// NTT tile of 1024 values (4096 bytes of workgroup memory), for ntt.wgsl (backend/gpu/ntt.rs picks
// the largest tile the adapter's max_compute_workgroup_storage_size holds).
const LOG_TILE: u32 = 10u;
const TILE: u32 = 1024u;
