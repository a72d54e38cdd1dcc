//! What an application takes from its process environment, read through a getter it passes in:
//! the library itself never reads or changes the environment.
//!
//! ```
//! use wgfhe::backend::config::EnvConfig;
//! use wgfhe::backend::BackendKind;
//!
//! // An application passes `|name| std::env::var_os(name)`; here a fixed environment.
//! let cfg = EnvConfig::from_vars(|name| (name == "WGFHE_BACKEND").then(|| "cpu".into()))?;
//! assert_eq!(cfg.backend, BackendKind::Cpu);
//! assert!(cfg.quiet_device_select); // no XDG_RUNTIME_DIR, no NODEVICE_SELECT
//! # Ok::<(), wgfhe::Error>(())
//! ```

use std::ffi::OsString;

use super::gpu::{self, DeviceOptions};
use super::BackendKind;
use crate::math::simd::SimdLevel;

/// The settings a process's environment gives a wgfhe application.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EnvConfig {
    /// `WGFHE_BACKEND` (`auto`, `gpu` or `cpu`; default `auto`).
    pub backend: BackendKind,
    /// Device options: the graphics APIs from wgpu's own `WGPU_BACKEND` (`vulkan`, `metal`,
    /// `dx12`, `gl`, comma-separated), Vulkan, Metal and DX12 when unset.
    pub device: DeviceOptions,
    /// `WGFHE_SIMD` (`scalar`, `avx2` or `avx512`): the SIMD level the CPU kernels are lowered
    /// to ([`SimdLevel::set_active`]); `None` when unset or unrecognised.
    pub simd: Option<SimdLevel>,
    /// Whether the application should set `NODEVICE_SELECT=1` before its first thread
    /// ([`gpu::should_quiet_device_select`]): neither `NODEVICE_SELECT` nor
    /// `MESA_VK_DEVICE_SELECT` is set and `XDG_RUNTIME_DIR` names no directory.
    pub quiet_device_select: bool,
}

impl EnvConfig {
    /// The settings from the variables `var` returns (`|name| std::env::var_os(name)` in an
    /// application). Errors: a `WGFHE_BACKEND` other than `auto`, `gpu` or `cpu`
    /// ([`crate::Error::InvalidField`]).
    pub fn from_vars(var: impl Fn(&str) -> Option<OsString>) -> crate::Result<Self> {
        let text = |name: &str| var(name).map(|v| v.to_string_lossy().into_owned());
        let backend = match text("WGFHE_BACKEND") {
            Some(name) => name.parse()?,
            None => BackendKind::Auto,
        };
        let backends = text("WGPU_BACKEND").map(|s| wgpu::Backends::from_comma_list(&s));
        let configured = var("NODEVICE_SELECT").is_some() || var("MESA_VK_DEVICE_SELECT").is_some();
        let session = var("XDG_RUNTIME_DIR").is_some_and(|d| std::path::Path::new(&d).is_dir());
        Ok(Self {
            backend,
            device: DeviceOptions { backends, ..DeviceOptions::default() },
            simd: text("WGFHE_SIMD").and_then(|s| SimdLevel::parse(&s)),
            quiet_device_select: gpu::should_quiet_device_select(configured, session),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env<'a>(pairs: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<OsString> + 'a {
        move |name| pairs.iter().find(|(k, _)| *k == name).map(|(_, v)| OsString::from(v))
    }

    #[test]
    fn reads_each_variable() {
        let cfg = EnvConfig::from_vars(env(&[])).unwrap();
        assert_eq!((cfg.backend, cfg.device.backends, cfg.simd), (BackendKind::Auto, None, None));
        assert!(cfg.quiet_device_select);
        let cfg = EnvConfig::from_vars(env(&[
            ("WGFHE_BACKEND", "gpu"),
            ("WGPU_BACKEND", "vulkan"),
            ("WGFHE_SIMD", "AVX2"),
            ("NODEVICE_SELECT", "1"),
        ]))
        .unwrap();
        assert_eq!(cfg.backend, BackendKind::Gpu);
        assert_eq!(cfg.device.backends, Some(wgpu::Backends::VULKAN));
        assert_eq!(cfg.simd, Some(SimdLevel::Avx2));
        assert!(!cfg.quiet_device_select);
        // A session directory also keeps the layer as it is.
        let tmp = std::env::temp_dir();
        let tmp = tmp.to_str().unwrap();
        assert!(!EnvConfig::from_vars(env(&[("XDG_RUNTIME_DIR", tmp)])).unwrap().quiet_device_select);
        assert!(EnvConfig::from_vars(env(&[("WGFHE_BACKEND", "tpu")])).is_err());
    }
}
