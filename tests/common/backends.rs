//! Scheme suites written once, run on both backends.
//!
//! A test body is a function generic over `B: Backend` that takes a [`Make`] (which builds its
//! backend for a parameter set: a body may need several sets) and a [`Transcript`] in which it
//! records the ciphertexts it computes. [`cpu_and_gpu!`] instantiates each listed body twice:
//!
//! * `cpu::name` runs it on the CPU reference backend;
//! * `gpu::name` runs it on the GPU (the shared device of `common::device`: without an adapter
//!   it prints `SKIPPED: <reason>`, a failure under `WGFHE_REQUIRE_GPU=1`) and again on the CPU
//!   with the same seeds, and asserts that both transcripts hold the same ciphertext words, in
//!   the same order: the backends are bit-identical, not merely both correct.
//!
//! Included by the suites as `#[path = "common/backends.rs"] mod backends;` next to
//! `mod common;` (kept out of `common` itself so the test binaries that only need the device do
//! not carry unused helpers).

use std::cell::RefCell;
use std::panic::Location;
use std::sync::Arc;

use sha2::{Digest, Sha256};
use wgfhe::backend::gpu::GpuDevice;
use wgfhe::backend::{Backend, CpuBackend, GpuBackend};
use wgfhe::params::Parameters;
use wgfhe::poly::{Eval, RnsPoly};
use wgfhe::ring::RingContext;

/// Builds the backend a body computes on, for a parameter set.
pub type Make<'a, B> = &'a dyn Fn(&Parameters) -> B;

/// The CPU reference backend for `params`.
pub fn cpu(params: &Parameters) -> CpuBackend {
    CpuBackend::new(RingContext::new(params).unwrap())
}

/// GPU backends for any parameter set, on `dev`.
pub fn gpu(dev: &Arc<GpuDevice>) -> impl Fn(&Parameters) -> GpuBackend + '_ {
    move |params| GpuBackend::new(RingContext::new(params).unwrap(), Arc::clone(dev))
}

/// The ciphertexts a body computed, in order: where it recorded each (file, line and a note)
/// and the SHA-256 of its words.
#[derive(Default)]
pub struct Transcript(RefCell<Vec<(String, [u8; 32])>>);

impl Transcript {
    /// Records the words of `polys` (downloaded from `be`), labelled with the caller's location.
    #[track_caller]
    pub fn record<'p, B: Backend>(&self, be: &B, note: &str, polys: impl IntoIterator<Item = &'p RnsPoly<B, Eval>>) {
        let at = Location::caller();
        let mut h = Sha256::new();
        for p in polys {
            let words = p.to_host(be).unwrap();
            h.update((words.len() as u64).to_le_bytes());
            for w in words {
                h.update(w.to_le_bytes());
            }
        }
        self.0.borrow_mut().push((format!("{}:{} {note}", at.file(), at.line()), h.finalize().into()));
    }

    /// Asserts that `self` (a GPU run) recorded exactly what `cpu` (the CPU run of the same
    /// body) recorded, and that the body recorded something.
    pub fn assert_same_as(&self, cpu: &Transcript) {
        let (gpu, cpu) = (self.0.borrow(), cpu.0.borrow());
        assert!(!cpu.is_empty(), "the body recorded no ciphertext: nothing was compared");
        for (i, (g, c)) in gpu.iter().zip(cpu.iter()).enumerate() {
            assert_eq!(g.0, c.0, "record {i}: the two runs took different paths");
            assert!(g.1 == c.1, "record {i} ({}): the GPU's words differ from the CPU's", g.0);
        }
        assert_eq!(gpu.len(), cpu.len(), "the two runs recorded different numbers of ciphertexts");
        eprintln!("{} ciphertexts bit-identical on the GPU and the CPU", cpu.len());
    }
}

/// `cpu_and_gpu!(a, b, ...)`: for each body `fn a<B: Backend>(make: Make<'_, B>, log:
/// &Transcript)` of the invoking module, the tests `cpu::a` and `gpu::a` described in the
/// module documentation.
macro_rules! cpu_and_gpu {
    ($($name:ident),+ $(,)?) => {
        /// The bodies on the CPU reference backend.
        mod cpu {
            $(
                #[test]
                fn $name() {
                    super::$name::<wgfhe::backend::CpuBackend>(
                        &$crate::backends::cpu,
                        &$crate::backends::Transcript::default(),
                    );
                }
            )+
        }

        /// The bodies on the GPU, each compared word for word with its CPU run.
        mod gpu {
            $(
                #[test]
                fn $name() {
                    let Some(dev) = $crate::common::device() else { return };
                    let cpu = $crate::backends::Transcript::default();
                    super::$name::<wgfhe::backend::CpuBackend>(&$crate::backends::cpu, &cpu);
                    let gpu = $crate::backends::Transcript::default();
                    super::$name::<wgfhe::backend::GpuBackend>(&$crate::backends::gpu(&dev), &gpu);
                    gpu.assert_same_as(&cpu);
                }
            )+
        }
    };
}
pub(crate) use cpu_and_gpu;
