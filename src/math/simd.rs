//! Instruction-set levels of the explicit-SIMD CPU kernels (NTT, base conversion, scale-down).
//!
//! Every kernel with a SIMD path has one implementation per level and picks the widest level the
//! CPU has at run time ([`SimdLevel::active`]); the levels compute the same bits, so the choice
//! only changes the speed. Callers that want a particular level (tests comparing the levels, or
//! benchmarks) pass it explicitly: a level the CPU lacks is clamped down to the best one it has
//! ([`SimdLevel::clamp`]), so every level can be asked for on every machine.
//!
//! The SIMD paths use `pulp`'s safe wrappers of the x86 intrinsics (no `unsafe` in this crate):
//! `pulp::x86::V3` (AVX2, FMA, BMI) and `pulp::x86::V4` (AVX-512 F/BW/CD/DQ/VL).

use std::sync::OnceLock;

/// An instruction-set level, from the portable code up to AVX-512.
///
/// Ordered: a later level is wider. `Scalar` is portable Rust (the compiler may still vectorise
/// it for the baseline target); `Avx2` and `Avx512` are x86-64 only.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum SimdLevel {
    /// Portable code, no explicit SIMD.
    Scalar,
    /// 256-bit AVX2 (`pulp::x86::V3`).
    Avx2,
    /// 512-bit AVX-512 F/BW/CD/DQ/VL (`pulp::x86::V4`).
    Avx512,
}

impl SimdLevel {
    /// Every level, narrowest first.
    pub const ALL: [SimdLevel; 3] = [SimdLevel::Scalar, SimdLevel::Avx2, SimdLevel::Avx512];

    /// The widest level this CPU supports (checked with CPUID once, then cached by `pulp`).
    #[must_use]
    pub fn detect() -> Self {
        #[cfg(target_arch = "x86_64")]
        {
            if pulp::x86::V4::is_available() {
                return SimdLevel::Avx512;
            }
            if pulp::x86::V3::is_available() {
                return SimdLevel::Avx2;
            }
        }
        SimdLevel::Scalar
    }

    /// Whether this CPU supports the level.
    #[must_use]
    pub fn is_available(self) -> bool {
        self <= Self::detect()
    }

    /// The levels this CPU supports, narrowest first (always starts with `Scalar`).
    #[must_use]
    pub fn available() -> Vec<Self> {
        Self::ALL.into_iter().filter(|l| l.is_available()).collect()
    }

    /// `self`, or the widest supported level below it when the CPU lacks `self`.
    #[must_use]
    pub fn clamp(self) -> Self {
        self.min(Self::detect())
    }

    /// The level the kernels use when none is given: [`detect`](Self::detect), unless an
    /// application lowered it with [`SimdLevel::set_active`] before the first use. Fixed for the
    /// rest of the process once read.
    #[must_use]
    pub fn active() -> Self {
        *ACTIVE.get_or_init(Self::detect)
    }

    /// Lowers (never raises) the level the kernels use for the rest of the process to `level`
    /// clamped to this CPU ([`SimdLevel::clamp`]), for benchmarking the narrower paths (the
    /// `wgfhe` command line does it from `WGFHE_SIMD`). Works once, before anything has read
    /// [`SimdLevel::active`]: returns the level now in force, `Err` with it if it was already
    /// fixed.
    pub fn set_active(level: Self) -> Result<Self, Self> {
        let level = level.clamp();
        ACTIVE.set(level).map(|()| level).map_err(|_| Self::active())
    }

    /// Parses `scalar`, `avx2` or `avx512` (case-insensitive).
    #[must_use]
    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|l| l.name().eq_ignore_ascii_case(name.trim()))
    }

    /// `scalar`, `avx2` or `avx512`.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            SimdLevel::Scalar => "scalar",
            SimdLevel::Avx2 => "avx2",
            SimdLevel::Avx512 => "avx512",
        }
    }
}

/// The level [`SimdLevel::active`] returns, fixed at its first use.
static ACTIVE: OnceLock<SimdLevel> = OnceLock::new();

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn levels_are_ordered_and_clamped() {
        assert!(SimdLevel::Scalar < SimdLevel::Avx2 && SimdLevel::Avx2 < SimdLevel::Avx512);
        let best = SimdLevel::detect();
        assert_eq!(SimdLevel::available().last(), Some(&best));
        assert_eq!(SimdLevel::available().first(), Some(&SimdLevel::Scalar));
        for l in SimdLevel::ALL {
            assert!(l.clamp() <= best && l.clamp() <= l);
            assert_eq!(l.clamp() == l, l.is_available());
            assert_eq!(SimdLevel::parse(l.name()), Some(l));
        }
        assert!(SimdLevel::active() <= best);
        assert_eq!(SimdLevel::parse(" AVX2 "), Some(SimdLevel::Avx2));
        assert_eq!(SimdLevel::parse("sse"), None);
    }

    /// `pulp`'s detection never claims a level whose features `std` does not see; the level
    /// found is printed (`--nocapture`) so a test log shows which SIMD paths the level tests ran.
    #[test]
    fn detection_agrees_with_std() {
        let best = SimdLevel::detect();
        eprintln!("SIMD levels on this CPU: {:?}", SimdLevel::available());
        #[cfg(target_arch = "x86_64")]
        {
            if best >= SimdLevel::Avx2 {
                assert!(is_x86_feature_detected!("avx2") && is_x86_feature_detected!("fma"));
            }
            if best >= SimdLevel::Avx512 {
                for f in [
                    is_x86_feature_detected!("avx512f"),
                    is_x86_feature_detected!("avx512bw"),
                    is_x86_feature_detected!("avx512cd"),
                    is_x86_feature_detected!("avx512dq"),
                    is_x86_feature_detected!("avx512vl"),
                ] {
                    assert!(f);
                }
            }
        }
        #[cfg(not(target_arch = "x86_64"))]
        assert_eq!(best, SimdLevel::Scalar);
    }
}
