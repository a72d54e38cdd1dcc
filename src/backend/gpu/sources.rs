//! The WGSL of every hand-written kernel, exactly as the device compiles it.
//!
//! A [`Kernel`] names its pipeline (the device's pipeline-cache key), its entry point and the
//! files under `shaders/` its source is made of, in order. Every pipeline the device builds gets
//! the shared modular arithmetic (`shared/zq.wgsl`, then the wide product of the device's
//! [`Arithmetic`]: `shared/mul_native.wgsl` or `shared/mul_emulated.wgsl`) in front of its own
//! source; [`Kernel::wgsl_for`] returns that complete text, so it can be validated without a
//! device.
//! [`KERNELS`] lists every hand-written kernel: the device runs only a [`Kernel`] (see
//! [`GpuDevice::dispatch`](crate::backend::gpu::GpuDevice::dispatch)), and every kernel is
//! declared in the one macro that builds the list, so none can be dispatched without being
//! listed. Generated (fused) kernels are assembled the same way; their sources come from
//! [`crate::backend::gpu::fused_kernel_sources`].

/// The shared modular arithmetic every pipeline's source starts with.
const ZQ_WGSL: &str = include_str!("../../../shaders/shared/zq.wgsl");
/// `mul_wide`, `barrett_wide` and `mul_wide4` with native 64-bit integers.
const MUL_NATIVE_WGSL: &str = include_str!("../../../shaders/shared/mul_native.wgsl");
/// `mul_wide`, `barrett_wide` and `mul_wide4` from 16-bit halves.
const MUL_EMULATED_WGSL: &str = include_str!("../../../shaders/shared/mul_emulated.wgsl");

/// How the kernels form the 64-bit products of 32-bit residues. Both give the same words for
/// every input; the device picks [`Arithmetic::NativeInt64`] when the adapter has
/// `wgpu::Features::SHADER_INT64` (unless told otherwise, see
/// [`DeviceOptions`](super::DeviceOptions)).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
pub enum Arithmetic {
    /// 32x32->64 products from four 16x16 products (`shared/mul_emulated.wgsl`); any adapter.
    Emulated,
    /// Native `u64` products (`shared/mul_native.wgsl`); needs `SHADER_INT64`.
    NativeInt64,
}

impl Arithmetic {
    /// Both, emulated first.
    pub const ALL: [Self; 2] = [Self::Emulated, Self::NativeInt64];

    /// The file (under `shaders/`) defining `mul_wide`, `barrett_wide` and the four-lane
    /// `mul_wide4` for this arithmetic.
    #[must_use]
    pub fn file(self) -> &'static str {
        match self {
            Self::Emulated => "shared/mul_emulated.wgsl",
            Self::NativeInt64 => "shared/mul_native.wgsl",
        }
    }

    fn source(self) -> &'static str {
        match self {
            Self::Emulated => MUL_EMULATED_WGSL,
            Self::NativeInt64 => MUL_NATIVE_WGSL,
        }
    }
}

/// The complete WGSL of a pipeline whose own source is `source`: the shared arithmetic, the wide
/// product of `arithmetic`, then `source`. The device builds every pipeline, hand-written or
/// generated, from this.
pub(super) fn assemble(source: &str, arithmetic: Arithmetic) -> String {
    format!("{ZQ_WGSL}\n{}\n{source}", arithmetic.source())
}

/// The declaration of the parameters (binding 0) every hand-written kernel starts with: a
/// storage slice of the device's parameter arena.
pub const PARAMS_DECLARATION: &str = "@group(0) @binding(0) var<storage, read> params: array<u32>;";

/// Parameter words of a kernel built to take its parameters as immediates (128 bytes, the
/// push-constant size every Vulkan device has).
pub const IMMEDIATE_WORDS: usize = 32;

/// `source` with its parameters taken as immediates: [`PARAMS_DECLARATION`] replaced by an
/// immediate `array<u32, IMMEDIATE_WORDS>` of the same name (so `params[i]` reads the same word),
/// or `None` if the source does not declare its parameters exactly so, once.
#[must_use]
pub fn with_immediate_params(source: &str) -> Option<String> {
    (source.matches(PARAMS_DECLARATION).count() == 1)
        .then(|| source.replace(PARAMS_DECLARATION, &format!("var<immediate> params: array<u32, {IMMEDIATE_WORDS}>;")))
}

/// A hand-written kernel: one entry point of one WGSL source.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Kernel {
    /// Pipeline name (the pipeline-cache key; unique among [`KERNELS`]).
    pub name: &'static str,
    /// The entry point the pipeline runs.
    pub entry: &'static str,
    /// The files under `shaders/` whose text, in this order, is the kernel's own source (the
    /// shared arithmetic goes in front of it, see [`Kernel::wgsl_for`]).
    pub files: &'static [&'static str],
    /// The concatenated text of `files`.
    source: &'static str,
}

impl Kernel {
    /// The kernel's own source: the text of [`Kernel::files`], without the shared arithmetic.
    pub(super) fn source(&self) -> &'static str {
        self.source
    }

    /// The complete WGSL a device without native 64-bit integers compiles for this kernel
    /// ([`Kernel::wgsl_for`] with [`Arithmetic::Emulated`]).
    #[must_use]
    pub fn wgsl(&self) -> String {
        self.wgsl_for(Arithmetic::Emulated)
    }

    /// The complete WGSL a device with `arithmetic` compiles for this kernel: `shared/zq.wgsl`,
    /// the file of [`Arithmetic::file`], then the text of [`Kernel::files`].
    #[must_use]
    pub fn wgsl_for(&self, arithmetic: Arithmetic) -> String {
        assemble(self.source, arithmetic)
    }

    /// The kernel's own source taking its parameters as immediates, if it declares them as the
    /// others do ([`with_immediate_params`]).
    pub(super) fn immediate_source(&self) -> Option<String> {
        with_immediate_params(self.source)
    }

    /// The complete WGSL a device with `arithmetic` and immediates compiles for this kernel
    /// (when its parameters fit in [`IMMEDIATE_WORDS`]); `None` if the kernel does not declare
    /// its parameters as [`PARAMS_DECLARATION`].
    #[must_use]
    pub fn wgsl_immediate(&self, arithmetic: Arithmetic) -> Option<String> {
        self.immediate_source().map(|s| assemble(&s, arithmetic))
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
    /// `(sum_j d_j b_j, sum_j d_j a_j)` of hybrid key switching, every digit in one dispatch
    /// (after the shared ChaCha12 block of generator 2 that regenerates seeded `a_j`).
    KEY_SWITCH_INNER_PRODUCT =
        "key_switch_inner_product", "main", ["shared/chacha.wgsl", "shared/zq4.wgsl", "key_switch_inner_product.wgsl"];
    /// Forward NTT, a column pass (the first stages, strided columns), tiles of 4096 values.
    NTT_FWD_COLUMNS_4096 = "ntt_fwd_columns_4096", "fwd_columns", ["ntt/tile_4096.wgsl", "ntt.wgsl", "ntt/in_place.wgsl"];
    /// Forward NTT, the row pass (the last stages, contiguous tiles), tiles of 4096 values.
    NTT_FWD_ROWS_4096 = "ntt_fwd_rows_4096", "fwd_rows", ["ntt/tile_4096.wgsl", "ntt.wgsl", "ntt/in_place.wgsl"];
    /// Inverse NTT, the row pass (the first stages, contiguous tiles), tiles of 4096 values.
    NTT_INV_ROWS_4096 = "ntt_inv_rows_4096", "inv_rows", ["ntt/tile_4096.wgsl", "ntt.wgsl", "ntt/in_place.wgsl"];
    /// Inverse NTT, a column pass (the last stages, strided columns), tiles of 4096 values.
    NTT_INV_COLUMNS_4096 = "ntt_inv_columns_4096", "inv_columns", ["ntt/tile_4096.wgsl", "ntt.wgsl", "ntt/in_place.wgsl"];
    /// Inverse NTT, the row pass out of place: the input formed on load (a copy, a product, an
    /// automorphism) and optionally kept, tiles of 4096 values.
    NTT_INV_ROWS_FROM_4096 = "ntt_inv_rows_from_4096", "inv_rows", ["ntt/tile_4096.wgsl", "ntt.wgsl", "ntt/from.wgsl"];
    /// Forward NTT, a column pass (the first stages, strided columns), tiles of 2048 values.
    NTT_FWD_COLUMNS_2048 = "ntt_fwd_columns_2048", "fwd_columns", ["ntt/tile_2048.wgsl", "ntt.wgsl", "ntt/in_place.wgsl"];
    /// Forward NTT, the row pass (the last stages, contiguous tiles), tiles of 2048 values.
    NTT_FWD_ROWS_2048 = "ntt_fwd_rows_2048", "fwd_rows", ["ntt/tile_2048.wgsl", "ntt.wgsl", "ntt/in_place.wgsl"];
    /// Inverse NTT, the row pass (the first stages, contiguous tiles), tiles of 2048 values.
    NTT_INV_ROWS_2048 = "ntt_inv_rows_2048", "inv_rows", ["ntt/tile_2048.wgsl", "ntt.wgsl", "ntt/in_place.wgsl"];
    /// Inverse NTT, a column pass (the last stages, strided columns), tiles of 2048 values.
    NTT_INV_COLUMNS_2048 = "ntt_inv_columns_2048", "inv_columns", ["ntt/tile_2048.wgsl", "ntt.wgsl", "ntt/in_place.wgsl"];
    /// Inverse NTT, the row pass out of place: the input formed on load (a copy, a product, an
    /// automorphism) and optionally kept, tiles of 2048 values.
    NTT_INV_ROWS_FROM_2048 = "ntt_inv_rows_from_2048", "inv_rows", ["ntt/tile_2048.wgsl", "ntt.wgsl", "ntt/from.wgsl"];
    /// Forward NTT, a column pass (the first stages, strided columns), tiles of 1024 values.
    NTT_FWD_COLUMNS_1024 = "ntt_fwd_columns_1024", "fwd_columns", ["ntt/tile_1024.wgsl", "ntt.wgsl", "ntt/in_place.wgsl"];
    /// Forward NTT, the row pass (the last stages, contiguous tiles), tiles of 1024 values.
    NTT_FWD_ROWS_1024 = "ntt_fwd_rows_1024", "fwd_rows", ["ntt/tile_1024.wgsl", "ntt.wgsl", "ntt/in_place.wgsl"];
    /// Inverse NTT, the row pass (the first stages, contiguous tiles), tiles of 1024 values.
    NTT_INV_ROWS_1024 = "ntt_inv_rows_1024", "inv_rows", ["ntt/tile_1024.wgsl", "ntt.wgsl", "ntt/in_place.wgsl"];
    /// Inverse NTT, a column pass (the last stages, strided columns), tiles of 1024 values.
    NTT_INV_COLUMNS_1024 = "ntt_inv_columns_1024", "inv_columns", ["ntt/tile_1024.wgsl", "ntt.wgsl", "ntt/in_place.wgsl"];
    /// Inverse NTT, the row pass out of place: the input formed on load (a copy, a product, an
    /// automorphism) and optionally kept, tiles of 1024 values.
    NTT_INV_ROWS_FROM_1024 = "ntt_inv_rows_from_1024", "inv_rows", ["ntt/tile_1024.wgsl", "ntt.wgsl", "ntt/from.wgsl"];
    /// Generator-2 uniform residues, one ChaCha12 block (16 residues) per invocation (after the
    /// shared ChaCha12 block it calls).
    UNIFORM = "uniform", "main", ["shared/chacha.wgsl", "uniform.wgsl"];
    /// Fast basis conversion, several parts per dispatch, a tile of target limbs per invocation.
    BASE_CONVERT = "base_convert", "main", ["shared/zq4.wgsl", "base_convert.wgsl"];
    /// The digits of prime-by-prime divide-and-round (the triangular recurrence).
    SCALE_DOWN_DIGITS = "scale_down_digits", "digits", ["scale_down_digits.wgsl"];
    /// The divide-and-round correction over the kept primes, a tile of them per invocation.
    SCALE_DOWN_CORRECTION = "scale_down_correction", "main", ["shared/zq4.wgsl", "scale_down_correction.wgsl"];
    /// Bootstrapped gates: signed gadget decomposition and forward NTT of one row per workgroup.
    GATES_DECOMPOSE = "gates_decompose", "main", ["gates_decompose.wgsl"];
    /// Bootstrapped gates: lazy two-word gadget inner products with the key, times `X^e - 1`.
    GATES_KEY_PRODUCT = "gates_key_product", "main", ["gates_key_product.wgsl"];
    /// Bootstrapped gates: inverse NTT of the accumulator, one polynomial per workgroup.
    GATES_INVERSE = "gates_inverse", "main", ["gates_inverse.wgsl"];
}

/// The kernels of the bootstrapped gates (`crate::gates`), in step order: decomposition with
/// forward NTT, key products, inverse NTT.
#[must_use]
pub fn gates_kernels() -> [&'static Kernel; 3] {
    [&GATES_DECOMPOSE, &GATES_KEY_PRODUCT, &GATES_INVERSE]
}
