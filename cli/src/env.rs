//! The process environment, read once at start (before any thread): the backend choice, the
//! device options, the SIMD level and Mesa's device-selection layer. The library reads none of
//! it; this is the one place the command line does.

use std::sync::OnceLock;

use wgfhe::backend::config::EnvConfig;
use wgfhe::backend::{BackendChoice, BackendKind};
use wgfhe::math::simd::SimdLevel;

static CONFIG: OnceLock<EnvConfig> = OnceLock::new();

/// Reads the environment and applies what must be applied process-wide. Called first thing in
/// `main`, while the process has one thread, which is what makes `set_var` sound.
pub(crate) fn init() -> wgfhe::Result<()> {
    let cfg = EnvConfig::from_vars(|name| std::env::var_os(name))?;
    if cfg.quiet_device_select {
        // Sound: no other thread exists yet (see the function's doc).
        std::env::set_var("NODEVICE_SELECT", "1");
    }
    if let Some(level) = cfg.simd {
        // The level is fixed only once; nothing has read it yet.
        let _ = SimdLevel::set_active(level);
    }
    let _ = CONFIG.set(cfg);
    Ok(())
}

/// The configuration read by [`init`].
pub(crate) fn config() -> EnvConfig {
    CONFIG.get().copied().unwrap_or(EnvConfig {
        backend: BackendKind::Auto,
        device: wgfhe::backend::gpu::DeviceOptions::default(),
        simd: None,
        quiet_device_select: false,
    })
}

/// Opens `kind` (the environment's `WGFHE_BACKEND` when `None`) with the environment's device
/// options; says on stderr why `auto` fell back to the CPU.
pub(crate) fn open_backend(kind: Option<BackendKind>) -> wgfhe::Result<BackendChoice> {
    let cfg = config();
    let opened = BackendChoice::open(kind.unwrap_or(cfg.backend), cfg.device)?;
    if let Some(e) = opened.fallback {
        eprintln!("wgfhe: {e}; using the CPU backend");
    }
    Ok(opened.choice)
}
