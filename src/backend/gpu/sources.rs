//! The WGSL of every hand-written kernel, exactly as the device compiles it.
//!
//! A [`Kernel`] names its pipeline (the device's pipeline-cache key), its entry point and the
//! files under `shaders/` its source is made of, in order. Every pipeline the device builds gets
//! the shared modular arithmetic (`shared/zq.wgsl`) in front of its own source;
//! [`Kernel::wgsl`] returns that complete text, so it can be validated without a device.
//! [`KERNELS`] lists every hand-written kernel: the device runs only a [`Kernel`] (see
//! [`GpuDevice::dispatch`](crate::backend::gpu::GpuDevice::dispatch)), and every kernel is
//! declared in the one macro that builds the list, so none can be dispatched without being
//! listed. Generated (fused) kernels are assembled the same way; their sources come from
//! [`crate::backend::gpu::fused_kernel_sources`].

/// The shared modular arithmetic every pipeline's source starts with.
const ZQ_WGSL: &str = include_str!("../../../shaders/shared/zq.wgsl");

/// The complete WGSL of a pipeline whose own source is `source`: the shared arithmetic, then
/// `source`. The device builds every pipeline, hand-written or generated, from this.
pub(super) fn assemble(source: &str) -> String {
    format!("{ZQ_WGSL}\n{source}")
}

/// A hand-written kernel: one entry point of one WGSL source.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Kernel {
    /// Pipeline name (the pipeline-cache key; unique among [`KERNELS`]).
    pub name: &'static str,
    /// The entry point the pipeline runs.
    pub entry: &'static str,
    /// The files under `shaders/` whose text, in this order, is the kernel's own source (the
    /// shared arithmetic `shared/zq.wgsl` goes in front of it, see [`Kernel::wgsl`]).
    pub files: &'static [&'static str],
    /// The concatenated text of `files`.
    source: &'static str,
}

impl Kernel {
    /// The kernel's own source: the text of [`Kernel::files`], without the shared arithmetic.
    pub(super) fn source(&self) -> &'static str {
        self.source
    }

    /// The complete WGSL the device compiles for this kernel (the shared arithmetic, then the
    /// text of [`Kernel::files`]).
    #[must_use]
    pub fn wgsl(&self) -> String {
        assemble(self.source)
    }
}

/// Declares each kernel as a constant and lists them all in [`KERNELS`].
macro_rules! kernels {
    ($($(#[$doc:meta])* $konst:ident = $name:literal, $entry:literal, [$($file:literal),+];)+) => {
        $(
            $(#[$doc])*
            pub(super) const $konst: Kernel = Kernel {
                name: $name,
                entry: $entry,
                files: &[$($file),+],
                source: concat!($(include_str!(concat!("../../../shaders/", $file)), "\n"),+),
            };
        )+
        /// Every hand-written kernel of the GPU backend.
        pub const KERNELS: &[Kernel] = &[$($konst),+];
    };
}

kernels! {
    /// Element-wise add, sub, neg, mul, multiply-add and scalar multiplication.
    ELEMENTWISE = "elementwise", "main", ["elementwise.wgsl"];
    /// `X -> X^g` in the Eval domain.
    AUTOMORPHISM = "automorphism", "main", ["automorphism.wgsl"];
    /// `(sum_j d_j b_j, sum_j d_j a_j)` of hybrid key switching.
    KEY_SWITCH_INNER_PRODUCT = "key_switch_inner_product", "main", ["key_switch_inner_product.wgsl"];
    /// Forward NTT, a column pass (the first stages, strided columns), tiles of 4096 values.
    NTT_FWD_COLUMNS_4096 = "ntt_fwd_columns_4096", "fwd_columns", ["ntt/tile_4096.wgsl", "ntt.wgsl"];
    /// Forward NTT, the row pass (the last stages, contiguous tiles), tiles of 4096 values.
    NTT_FWD_ROWS_4096 = "ntt_fwd_rows_4096", "fwd_rows", ["ntt/tile_4096.wgsl", "ntt.wgsl"];
    /// Inverse NTT, the row pass (the first stages, contiguous tiles), tiles of 4096 values.
    NTT_INV_ROWS_4096 = "ntt_inv_rows_4096", "inv_rows", ["ntt/tile_4096.wgsl", "ntt.wgsl"];
    /// Inverse NTT, a column pass (the last stages, strided columns), tiles of 4096 values.
    NTT_INV_COLUMNS_4096 = "ntt_inv_columns_4096", "inv_columns", ["ntt/tile_4096.wgsl", "ntt.wgsl"];
    /// Forward NTT, a column pass (the first stages, strided columns), tiles of 2048 values.
    NTT_FWD_COLUMNS_2048 = "ntt_fwd_columns_2048", "fwd_columns", ["ntt/tile_2048.wgsl", "ntt.wgsl"];
    /// Forward NTT, the row pass (the last stages, contiguous tiles), tiles of 2048 values.
    NTT_FWD_ROWS_2048 = "ntt_fwd_rows_2048", "fwd_rows", ["ntt/tile_2048.wgsl", "ntt.wgsl"];
    /// Inverse NTT, the row pass (the first stages, contiguous tiles), tiles of 2048 values.
    NTT_INV_ROWS_2048 = "ntt_inv_rows_2048", "inv_rows", ["ntt/tile_2048.wgsl", "ntt.wgsl"];
    /// Inverse NTT, a column pass (the last stages, strided columns), tiles of 2048 values.
    NTT_INV_COLUMNS_2048 = "ntt_inv_columns_2048", "inv_columns", ["ntt/tile_2048.wgsl", "ntt.wgsl"];
    /// Forward NTT, a column pass (the first stages, strided columns), tiles of 1024 values.
    NTT_FWD_COLUMNS_1024 = "ntt_fwd_columns_1024", "fwd_columns", ["ntt/tile_1024.wgsl", "ntt.wgsl"];
    /// Forward NTT, the row pass (the last stages, contiguous tiles), tiles of 1024 values.
    NTT_FWD_ROWS_1024 = "ntt_fwd_rows_1024", "fwd_rows", ["ntt/tile_1024.wgsl", "ntt.wgsl"];
    /// Inverse NTT, the row pass (the first stages, contiguous tiles), tiles of 1024 values.
    NTT_INV_ROWS_1024 = "ntt_inv_rows_1024", "inv_rows", ["ntt/tile_1024.wgsl", "ntt.wgsl"];
    /// Inverse NTT, a column pass (the last stages, strided columns), tiles of 1024 values.
    NTT_INV_COLUMNS_1024 = "ntt_inv_columns_1024", "inv_columns", ["ntt/tile_1024.wgsl", "ntt.wgsl"];
    /// ChaCha20 expansion to uniform residues (after the shared ChaCha20 block it calls).
    UNIFORM = "uniform", "main", ["shared/chacha.wgsl", "uniform.wgsl"];
    /// Fast basis conversion.
    BASE_CONVERT = "base_convert", "main", ["base_convert.wgsl"];
    /// Divide-and-round by the product of dropped primes.
    SCALE_DOWN = "scale_down", "main", ["scale_down.wgsl"];
}
