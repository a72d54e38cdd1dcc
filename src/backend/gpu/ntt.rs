//! Host side of the GPU NTT (`shaders/ntt.wgsl`): the pass plan, the compact twiddle tables and
//! the dispatches.
//!
//! See [`NttPlan`] for the passes, the tile sizes and the twiddle tables.

use super::device::WORKGROUP_SIZE;
use super::sources::{
    Kernel, NTT_FWD_COLUMNS_1024, NTT_FWD_COLUMNS_2048, NTT_FWD_COLUMNS_4096, NTT_FWD_ROWS_1024, NTT_FWD_ROWS_2048,
    NTT_FWD_ROWS_4096, NTT_INV_COLUMNS_1024, NTT_INV_COLUMNS_2048, NTT_INV_COLUMNS_4096, NTT_INV_ROWS_1024,
    NTT_INV_ROWS_2048, NTT_INV_ROWS_4096, NTT_INV_ROWS_FROM_1024, NTT_INV_ROWS_FROM_2048, NTT_INV_ROWS_FROM_4096,
};
use super::{GpuBackend, GpuBuffer};
use crate::backend::InverseInput;
use crate::error::{Error, Result};
use crate::math::ntt::{NttTable, MAX_LOG_N, MIN_LOG_N};
use std::sync::Arc;

/// Invocations per workgroup of the NTT kernels (`WG` in `ntt.wgsl`).
const INVOCATIONS: u32 = 256;

/// `log2` of the fewest columns a column pass moves per workgroup (32 words: 128-byte runs).
const LOG_MIN_COLUMNS: u32 = 5;

/// One tile size of the kernels: `log2` of its values and its four kernels.
#[derive(Debug, PartialEq, Eq)]
struct Variant {
    log_tile: u32,
    fwd_columns: Kernel,
    fwd_rows: Kernel,
    inv_rows: Kernel,
    inv_columns: Kernel,
    /// The inverse row pass out of place (`ntt/from.wgsl`).
    inv_rows_from: Kernel,
}

/// The tile sizes, largest first (`shaders/ntt/tile_*.wgsl`).
static VARIANTS: [Variant; 3] = [
    Variant {
        log_tile: 12,
        fwd_columns: NTT_FWD_COLUMNS_4096,
        fwd_rows: NTT_FWD_ROWS_4096,
        inv_rows: NTT_INV_ROWS_4096,
        inv_columns: NTT_INV_COLUMNS_4096,
        inv_rows_from: NTT_INV_ROWS_FROM_4096,
    },
    Variant {
        log_tile: 11,
        fwd_columns: NTT_FWD_COLUMNS_2048,
        fwd_rows: NTT_FWD_ROWS_2048,
        inv_rows: NTT_INV_ROWS_2048,
        inv_columns: NTT_INV_COLUMNS_2048,
        inv_rows_from: NTT_INV_ROWS_FROM_2048,
    },
    Variant {
        log_tile: 10,
        fwd_columns: NTT_FWD_COLUMNS_1024,
        fwd_rows: NTT_FWD_ROWS_1024,
        inv_rows: NTT_INV_ROWS_1024,
        inv_columns: NTT_INV_COLUMNS_1024,
        inv_rows_from: NTT_INV_ROWS_FROM_1024,
    },
];

/// Workgroup memory, in bytes, of the tile of `2^log_tile` values.
const fn tile_bytes(log_tile: u32) -> u32 {
    4 << log_tile
}

/// How one NTT of `2^log_n` values per limb runs on a device: the tile and the passes.
///
/// # Passes over memory
///
/// A transform of `N = 2^log_n` values per limb runs in workgroup memory, a tile of
/// `2^log_tile` values per workgroup of 256 invocations, in the four-step style. With
/// `lt = min(log_n, log_tile)` and `r = log_n - lt`:
///
/// * **column passes** (only when `r > 0`) do the first `r` stages of the forward transform:
///   a pass of `k` stages takes the `2^k` values at stride `N / 2^(s0 + k)` of each column (all
///   the values those stages combine) and `2^log_tile / 2^k >= 32` adjacent columns per
///   workgroup, so loads and stores move runs of at least 128 contiguous bytes;
/// * **one row pass** does the last `lt` stages on contiguous tiles of `2^lt` values, the last
///   one reducing to canonical residues.
///
/// The inverse runs the same passes in the reverse order (row pass first; the last column
/// pass ends with the stage that folds in `N^{-1}`). Each pass is one dispatch that reads and
/// writes the buffer once. Within a pass, with 4096-value tiles, each invocation keeps 16
/// values in registers and does up to four stages on them per trip (radix 16): the row pass of
/// a whole tile (`N >= 2^12`) makes three trips, loading from the buffer, going through
/// workgroup memory twice (two barriers) and storing to the buffer; a column pass of at most
/// four stages is one trip that never touches workgroup memory. Elsewhere (smaller tiles, a
/// row pass of `N < 2^12`, column passes of five or more stages) stages go two at a time
/// through workgroup memory (radix-4 units of four values), `ceil(k / 2)` round trips and as
/// many barriers for `k` stages. Either way the butterflies are those of radix-2 stages.
/// Every butterfly is the CPU's ([`crate::math::ntt`]): same pair, same twiddle and Shoup
/// companion, same stage order, so every intermediate value, not only the output, equals the
/// CPU's bit for bit.
///
/// # Tile size and the adapter's limits
///
/// The device is created with the adapter's own `max_compute_workgroup_storage_size`,
/// `max_compute_invocations_per_workgroup` and `max_compute_workgroup_size_x` (WebGPU
/// guarantees 16 KiB and 256). The kernels come in three tile sizes, and [`NttPlan::new`] takes
/// the largest whose workgroup memory the adapter allows: 4096 values (16 KiB, every WebGPU
/// adapter), 2048 (8 KiB: for instance wgpu's downlevel limit of 16,352 bytes) or 1024 (4 KiB).
/// Larger tiles are not used even where the adapter allows them: 4096 already gives two passes
/// up to `N = 2^19` (more than the library's `2^17`), and larger tiles would only cut the
/// workgroups a transform spreads over and the ones each compute unit can hold. Smaller tiles
/// fall back to more column passes (each at most `log_tile - 5` stages): passes per transform
///
/// | `log_n`          | 1 ..= 10 | 11 | 12 | 13 ..= 15 | 16 | 17 |
/// |------------------|----------|----|----|-----------|----|----|
/// | 4096-value tile  | 1        | 1  | 1  | 2         | 2  | 2  |
/// | 2048-value tile  | 1        | 1  | 2  | 2         | 2  | 2  |
/// | 1024-value tile  | 1        | 2  | 2  | 2         | 3  | 3  |
///
/// against `log_n - 10` passes (`N > 2^11`) for the previous kernels, one dispatch per stage
/// wider than a 2048-value tile plus one tile pass (6 at `2^16`). Every kernel of the backend
/// has 256 invocations per workgroup (WebGPU's guaranteed minimum), so an adapter with fewer,
/// or with less than 4 KiB of workgroup memory, gets [`Error::AdapterLimit`].
///
/// # Compact twiddles
///
/// Per limb and direction one table of [`NttPlan::twiddle_words`] words (layout in
/// `ntt.wgsl`): four constants, the column passes' twiddles `T[0 .. max(2^r, 2)]` with their
/// Shoup companions, the row pass's local factors `T[0 .. 2^(lt-1)]` with companions, and one
/// factor per row tile and stage. The row pass forms each twiddle `T[2^s + tt 2^(s-r) + b]` as
/// the exact product of a local factor `T[b]` and its tile's stage factor, and its Shoup
/// companion `floor(w 2^32 / q)` exactly from per-limb constants, once per block an
/// invocation works on. Words per limb and transform (before: `2N`, every `T[k]` and `T'[k]`):
///
/// | `log_n` | before  | after (4096-value tile) |
/// |---------|---------|-------------------------|
/// | 12      | 8,192   | 4,116                   |
/// | 14      | 32,768  | 4,156                   |
/// | 16      | 131,072 | 4,324                   |
/// | 17      | 262,144 | 4,548                   |
///
/// (16,464 bytes instead of 32 KiB at `2^12`, 17,296 instead of 512 KiB at `2^16`.)
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NttPlan {
    log_n: u32,
    variant: &'static Variant,
    /// Column passes in forward order: `(first stage, stages)`.
    columns: Vec<(u32, u32)>,
}

impl NttPlan {
    /// The plan for `2^log_n` on a device created with `limits`: the largest tile whose
    /// workgroup memory `limits.max_compute_workgroup_storage_size` holds (4096, 2048 or 1024
    /// values), then as few column passes as that tile allows.
    ///
    /// Errors: `log_n` outside `[1, 17]` ([`Error::InvalidRingDegree`]); fewer than 256
    /// invocations per workgroup or along `x`, or under 4 KiB of workgroup memory
    /// ([`Error::AdapterLimit`]).
    pub fn new(log_n: u32, limits: &wgpu::Limits) -> Result<Self> {
        if !(MIN_LOG_N..=MAX_LOG_N).contains(&log_n) {
            return Err(Error::InvalidRingDegree {
                n: 1u64.checked_shl(log_n).unwrap_or(0),
                min_log: MIN_LOG_N,
                max_log: MAX_LOG_N,
            });
        }
        if limits.max_compute_invocations_per_workgroup < INVOCATIONS
            || limits.max_compute_workgroup_size_x < INVOCATIONS
        {
            return Err(Error::AdapterLimit {
                reason: format!(
                    "the NTT needs {INVOCATIONS} invocations per workgroup; the adapter allows {} ({} along x)",
                    limits.max_compute_invocations_per_workgroup, limits.max_compute_workgroup_size_x
                ),
            });
        }
        let storage = limits.max_compute_workgroup_storage_size;
        let variant =
            VARIANTS.iter().find(|v| tile_bytes(v.log_tile) <= storage).ok_or_else(|| Error::AdapterLimit {
                reason: format!(
                    "the NTT needs {} bytes of workgroup memory; the adapter allows {storage}",
                    tile_bytes(10)
                ),
            })?;
        let log_tile = variant.log_tile;
        let r = log_n.saturating_sub(log_tile);
        let max_k = log_tile - LOG_MIN_COLUMNS;
        let count = r.div_ceil(max_k);
        let mut columns = Vec::with_capacity(count as usize);
        let mut s0 = 0;
        for i in 0..count {
            // As even a split as possible, the longer passes first.
            let k = r / count + u32::from(i < r % count);
            columns.push((s0, k));
            s0 += k;
        }
        Ok(Self { log_n, variant, columns })
    }

    /// `log2 N`.
    #[must_use]
    pub fn log_n(&self) -> u32 {
        self.log_n
    }

    /// `log2` of the tile: values one workgroup holds (`4 << log_tile` bytes of workgroup
    /// memory).
    #[must_use]
    pub fn log_tile(&self) -> u32 {
        self.variant.log_tile
    }

    /// `log2` of the row pass's tile, `min(log_n, log_tile)`.
    fn row_log_tile(&self) -> u32 {
        self.log_n.min(self.log_tile())
    }

    /// Stages done by column passes, `log_n - row tile`.
    fn column_stages(&self) -> u32 {
        self.log_n - self.row_log_tile()
    }

    /// The column passes in forward order (the inverse runs them reversed): `(first stage,
    /// stages)`; empty when one tile holds a whole limb.
    #[must_use]
    pub fn column_passes(&self) -> &[(u32, u32)] {
        &self.columns
    }

    /// Passes over memory of one transform (forward or inverse, any number of limbs): one
    /// dispatch each, each reading and writing every word of the buffer once.
    #[must_use]
    pub fn passes(&self) -> u32 {
        self.columns.len() as u32 + 1
    }

    /// Words of twiddle table per limb one transform reads (forward or inverse; the values
    /// the row pass forms from them are not counted). Was `2N` (`T` and `T'` whole).
    #[must_use]
    pub fn twiddle_words(&self) -> usize {
        let (p, h, f) = self.table_shape();
        4 + 2 * p + 2 * h + f
    }

    /// `(P, H, F)`: column twiddles, local factors, stage factors per limb.
    fn table_shape(&self) -> (usize, usize, usize) {
        let r = self.column_stages();
        let lt = self.row_log_tile();
        ((1usize << r).max(2), 1usize << (lt - 1), (lt as usize) << r)
    }

    /// The table of one limb (layout in `ntt.wgsl`) from the CPU's tables.
    fn limb_table(&self, t: &NttTable, inverse: bool) -> Result<Vec<u32>> {
        let m = t.modulus();
        let q = m.value();
        let (tv, ts) = if inverse { t.inverse_twiddles() } else { t.forward_twiddles() };
        let at = |v: &[u32], i: usize| {
            v.get(i).copied().ok_or(Error::DimensionMismatch { what: "NTT twiddle index", expected: v.len(), found: i })
        };
        let (p, h, _) = self.table_shape();
        let r = self.column_stages();
        let two32 = 1u64 << 32;
        let d = (two32 % u64::from(q)) as u32;
        let mut out = Vec::with_capacity(self.twiddle_words());
        out.extend_from_slice(&[q, (two32 / u64::from(q)) as u32, d, m.shoup(d)]);
        for v in [tv, ts] {
            out.extend((0..p).map(|i| at(v, i)).collect::<Result<Vec<u32>>>()?);
        }
        // Local factors: T[b] = psi^(+-bitrev(b)), the inverse's first two unscaled.
        let mut local = (0..h).map(|i| at(tv, i)).collect::<Result<Vec<u32>>>()?;
        if inverse {
            if let Some(l0) = local.get_mut(0) {
                *l0 = 1 % q;
            }
            if let Some(l1) = local.get_mut(1) {
                // V[1] = psi^(-N/2) N^{-1}.
                *l1 = m.mul(*l1, m.reduce_u64(t.n() as u64));
            }
        }
        let companions: Vec<u32> = local.iter().map(|&w| m.shoup(w)).collect();
        out.extend_from_slice(&local);
        out.extend_from_slice(&companions);
        for s in r..self.log_n {
            for tt in 0..1usize << r {
                out.push(at(tv, (1usize << s) + (tt << (s - r)))?);
            }
        }
        Ok(out)
    }
}

impl GpuBackend {
    /// The NTT's plan for `2^log_n` on this backend's device ([`NttPlan::new`] with the
    /// device's limits).
    ///
    /// Errors: as [`NttPlan::new`].
    pub fn ntt_plan(&self, log_n: u32) -> Result<NttPlan> {
        NttPlan::new(log_n, self.dev.limits())
    }

    /// Passes over memory of one NTT (forward or inverse, any number of limbs) of `2^log_n`
    /// values per limb on this device: 1 up to `N = 2^12`, 2 up to `2^17` on every WebGPU
    /// adapter (the table at [`NttPlan`]). Each pass is one dispatch
    /// that reads and writes the whole buffer once, plus its share of the twiddle table
    /// ([`NttPlan::twiddle_words`] words per limb and transform).
    ///
    /// Errors: as [`NttPlan::new`].
    pub fn ntt_passes(&self, log_n: u32) -> Result<u32> {
        Ok(self.ntt_plan(log_n)?.passes())
    }

    /// [`Backend::ntt_forward`](crate::backend::Backend::ntt_forward) (or `ntt_inverse` when
    /// `inverse`) with the given plan instead of the device's own: the same outputs with, for
    /// instance, the smaller tiles an adapter with less workgroup memory would use.
    ///
    /// Errors: a plan for another ring degree ([`Error::DimensionMismatch`]); a tile larger
    /// than the device's workgroup memory ([`Error::AdapterLimit`]); otherwise as the
    /// transform.
    pub fn ntt_with_plan(&self, buf: &mut GpuBuffer, basis: &[usize], inverse: bool, plan: &NttPlan) -> Result<()> {
        self.check(if inverse { "ntt_inverse input" } else { "ntt_forward input" }, buf, basis.len())?;
        run(self, buf, basis, inverse, plan)
    }
}

impl GpuBackend {
    /// [`Backend::ntt_inverse_from`](crate::backend::Backend::ntt_inverse_from) with the given
    /// plan instead of the device's own (as [`GpuBackend::ntt_with_plan`]).
    ///
    /// Errors: as [`GpuBackend::ntt_with_plan`].
    pub fn ntt_inverse_from_with_plan(
        &self,
        input: InverseInput<'_, GpuBuffer>,
        basis: &[usize],
        keep: bool,
        plan: &NttPlan,
    ) -> Result<(GpuBuffer, Option<GpuBuffer>)> {
        inverse_from(self, input, basis, keep, plan)
    }
}

/// In-place negacyclic NTT of every limb with the device's plan.
pub(super) fn ntt(be: &GpuBackend, buf: &mut GpuBuffer, basis: &[usize], inverse: bool) -> Result<()> {
    run(be, buf, basis, inverse, &be.ntt_plan(be.log_n())?)
}

fn run(be: &GpuBackend, buf: &mut GpuBuffer, basis: &[usize], inverse: bool, plan: &NttPlan) -> Result<()> {
    check_plan(be, plan)?;
    if basis.is_empty() {
        return Ok(());
    }
    let (table, common, threads) = prepare(be, basis, inverse, plan)?;
    if inverse {
        be.dev.dispatch(&plan.variant.inv_rows, &common, &[&*table, &buf.buf], threads)?;
        columns(be, buf, plan, &table, &common, threads, true)
    } else {
        columns(be, buf, plan, &table, &common, threads, false)?;
        be.dev.dispatch(&plan.variant.fwd_rows, &common, &[&*table, &buf.buf], threads)
    }
}

/// A plan for this ring's degree whose tile the device's workgroup memory holds.
fn check_plan(be: &GpuBackend, plan: &NttPlan) -> Result<()> {
    let log_n = be.log_n();
    if plan.log_n != log_n {
        return Err(Error::DimensionMismatch {
            what: "NTT plan's log2 degree",
            expected: log_n as usize,
            found: plan.log_n as usize,
        });
    }
    let storage = be.dev.limits().max_compute_workgroup_storage_size;
    if tile_bytes(plan.log_tile()) > storage {
        return Err(Error::AdapterLimit {
            reason: format!(
                "an NTT tile of {} bytes of workgroup memory; the adapter allows {storage}",
                tile_bytes(plan.log_tile())
            ),
        });
    }
    Ok(())
}

/// The twiddle table of `basis` (resident), the parameters every pass starts with and the
/// invocations of every pass.
fn prepare(
    be: &GpuBackend,
    basis: &[usize],
    inverse: bool,
    plan: &NttPlan,
) -> Result<(Arc<wgpu::Buffer>, [u32; 5], u64)> {
    let mut key = basis.to_vec();
    key.push(plan.log_tile() as usize);
    let kind = if inverse { "ntt inverse tables" } else { "ntt forward tables" };
    let table = be.table(kind, &key, || {
        let mut out = Vec::with_capacity(basis.len() * plan.twiddle_words());
        for &idx in basis {
            out.extend(plan.limb_table(be.ctx.ntt_table(idx)?, inverse)?);
        }
        Ok(out)
    })?;
    let r = plan.column_stages();
    let groups = u64::try_from(basis.len()).map_err(|_| Error::SizeOverflow { what: "NTT workgroups" })? << r;
    let common = [
        be.log_n(),
        plan.row_log_tile(),
        r,
        u32::try_from(plan.twiddle_words()).map_err(|_| Error::SizeOverflow { what: "NTT table" })?,
        u32::try_from(groups).map_err(|_| Error::SizeOverflow { what: "NTT workgroups" })?,
    ];
    Ok((table, common, groups * WORKGROUP_SIZE))
}

/// The column passes on `buf` in place: forward order, or reversed for the inverse.
fn columns(
    be: &GpuBackend,
    buf: &GpuBuffer,
    plan: &NttPlan,
    table: &wgpu::Buffer,
    common: &[u32; 5],
    threads: u64,
    inverse: bool,
) -> Result<()> {
    let v = plan.variant;
    let (kernel, passes): (&Kernel, Vec<(u32, u32)>) = if inverse {
        (&v.inv_columns, plan.columns.iter().rev().copied().collect())
    } else {
        (&v.fwd_columns, plan.columns.clone())
    };
    for (s0, k) in passes {
        let mut params = common.to_vec();
        params.extend_from_slice(&[s0, k]);
        be.dev.dispatch(kernel, &params, &[table, &buf.buf], threads)?;
    }
    Ok(())
}

/// [`Backend::ntt_inverse_from`](crate::backend::Backend::ntt_inverse_from) with the device's
/// plan: the first pass (the inverse row pass of `ntt/from.wgsl`) forms the input from its
/// sources, writes the pass's result to a new buffer and, with `keep`, the formed input to
/// another; the column passes then run on the new buffer in place. The same dispatches as the
/// in-place transform, with no copy, element-wise or automorphism dispatch in front.
pub(super) fn inverse_from(
    be: &GpuBackend,
    input: InverseInput<'_, GpuBuffer>,
    basis: &[usize],
    keep: bool,
    plan: &NttPlan,
) -> Result<(GpuBuffer, Option<GpuBuffer>)> {
    check_plan(be, plan)?;
    let (form, src0, src1) = match input {
        InverseInput::Copy(a) => (0u32, a, a),
        InverseInput::Product(a, b) => (1, a, b),
        InverseInput::Automorphism(a, _) => (2, a, a),
    };
    be.check("ntt_inverse_from input", src0, basis.len())?;
    be.check("ntt_inverse_from input", src1, basis.len())?;
    let aux = match input {
        InverseInput::Copy(_) => None,
        InverseInput::Product(..) => Some(be.table("limbs", basis, || super::kernels::limb_table(be, basis))?),
        InverseInput::Automorphism(_, g) => {
            Some(be.table("galois permutation", &[g], || Ok(be.ctx.galois_permutation(g)?.to_vec()))?)
        }
    };
    let words = src0.words;
    let out = be.output(words)?;
    let kept = if keep { Some(be.output(words)?) } else { None };
    if basis.is_empty() {
        return Ok((out, kept));
    }
    let (table, common, threads) = prepare(be, basis, true, plan)?;
    // Without `keep` the kernel stores nothing there; binding 6 still needs a writable buffer
    // of its own.
    let scratch;
    let keep_buf = match &kept {
        Some(k) => &k.buf,
        None => {
            scratch = be.output(1)?;
            &scratch.buf
        }
    };
    let mut params = common.to_vec();
    params.extend_from_slice(&[form, u32::from(keep)]);
    let aux_buf = aux.as_deref().unwrap_or(&*table);
    let v = plan.variant;
    be.dev.dispatch(
        &v.inv_rows_from,
        &params,
        &[&*table, &out.buf, &src0.buf, &src1.buf, aux_buf, keep_buf],
        threads,
    )?;
    columns(be, &out, plan, &table, &common, threads, true)?;
    Ok((out, kept))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::math::primes;
    use crate::math::zq::Modulus;

    fn limits(storage: u32) -> wgpu::Limits {
        wgpu::Limits { max_compute_workgroup_storage_size: storage, ..wgpu::Limits::default() }
    }

    #[test]
    fn passes_per_degree_and_tile() {
        let passes =
            |storage: u32| (1..=17).map(|l| NttPlan::new(l, &limits(storage)).unwrap().passes()).collect::<Vec<u32>>();
        let want = |one: u32, three: u32| -> Vec<u32> {
            (1..=17)
                .map(|l| {
                    if l <= one {
                        1
                    } else if l >= three {
                        3
                    } else {
                        2
                    }
                })
                .collect()
        };
        // 16 KiB (WebGPU's minimum) and more: one pass up to 2^12, two up to 2^17.
        for storage in [16 * 1024, 32 * 1024, 64 * 1024] {
            assert_eq!(passes(storage), want(12, 18), "{storage} bytes");
            assert_eq!(NttPlan::new(14, &limits(storage)).unwrap().log_tile(), 12);
        }
        // wgpu's downlevel 16,352 bytes: 2048-value tiles.
        assert_eq!(passes(16_352), want(11, 18));
        assert_eq!(passes(8 * 1024), want(11, 18));
        // 4 KiB: three passes from 2^16.
        assert_eq!(passes(4 * 1024), want(10, 16));
        assert_eq!(NttPlan::new(17, &limits(4096)).unwrap().column_passes(), &[(0, 4), (4, 3)]);
        assert_eq!(NttPlan::new(16, &limits(16384)).unwrap().column_passes(), &[(0, 4)]);
        assert!(NttPlan::new(12, &limits(16384)).unwrap().column_passes().is_empty());
    }

    #[test]
    fn too_small_adapters_and_bad_degrees_are_errors() {
        assert!(matches!(NttPlan::new(10, &limits(4095)), Err(Error::AdapterLimit { .. })));
        let few = wgpu::Limits { max_compute_invocations_per_workgroup: 128, ..wgpu::Limits::default() };
        assert!(matches!(NttPlan::new(10, &few), Err(Error::AdapterLimit { .. })));
        let narrow = wgpu::Limits { max_compute_workgroup_size_x: 64, ..wgpu::Limits::default() };
        assert!(matches!(NttPlan::new(10, &narrow), Err(Error::AdapterLimit { .. })));
        for log_n in [0, 18, 40] {
            assert!(matches!(NttPlan::new(log_n, &limits(16384)), Err(Error::InvalidRingDegree { .. })));
        }
    }

    #[test]
    fn twiddle_words_are_compact() {
        let words = |log_n| NttPlan::new(log_n, &limits(16384)).unwrap().twiddle_words();
        assert_eq!([words(12), words(14), words(16), words(17)], [4116, 4156, 4324, 4548]);
        for log_n in 4..=17 {
            assert!(words(log_n) < 2 << log_n, "2^{log_n}");
        }
    }

    /// `(hi)` of `a * b` (the WGSL's `mul_hi`).
    fn mul_hi(a: u32, b: u32) -> u32 {
        ((u64::from(a) * u64::from(b)) >> 32) as u32
    }

    fn shoup_mul(a: u32, w: u32, ws: u32, q: u32) -> u32 {
        let r = a.wrapping_mul(w).wrapping_sub(mul_hi(a, ws).wrapping_mul(q));
        if r >= q {
            r - q
        } else {
            r
        }
    }

    /// The twiddles the kernels use, read from a limb's table exactly as `ntt.wgsl` does (u32
    /// wrapping arithmetic), against the CPU's `T[k]`, `T'[k]` for every `k` a stage uses.
    fn check_table(plan: &NttPlan, t: &NttTable, inverse: bool) {
        let tab = plan.limb_table(t, inverse).unwrap();
        assert_eq!(tab.len(), plan.twiddle_words());
        let (tv, ts) = if inverse { t.inverse_twiddles() } else { t.forward_twiddles() };
        let (p, h, _) = plan.table_shape();
        let (q, c, d, ds) = (tab[0], tab[1], tab[2], tab[3]);
        let companion = |w: u32| {
            let mut e = mul_hi(w, ds);
            if w.wrapping_mul(d).wrapping_sub(e.wrapping_mul(q)) >= q {
                e += 1;
            }
            w.wrapping_mul(c).wrapping_add(e)
        };
        let (log_n, r, lt) = (plan.log_n, plan.column_stages(), plan.row_log_tile());
        // Column passes: D[k] for the stages below r, and D[0], D[1] (the inverse's last stage).
        for k in 0..p {
            assert_eq!((tab[4 + k], tab[4 + p + k]), (tv[k], ts[k]), "D[{k}]");
        }
        // Row pass: stage s >= r, tile tt, local block b.
        for s in r..log_n {
            let d = s - r;
            for tt in 0..1usize << r {
                let f = tab[4 + 2 * p + 2 * h + ((d as usize) << r) + tt];
                for b in 0..1usize << d {
                    let k = (1usize << s) + (tt << d) + b;
                    if inverse && k < 2 {
                        continue;
                    }
                    let w = shoup_mul(f, tab[4 + 2 * p + b], tab[4 + 2 * p + h + b], q);
                    assert_eq!((w, companion(w)), (tv[k], ts[k]), "T[{k}], log_n {log_n}, lt {lt}");
                }
            }
        }
    }

    #[test]
    fn compact_tables_give_the_cpu_twiddles() {
        for log_n in 1..=17u32 {
            let n = 1u64 << log_n;
            let mut qs = primes::ntt_primes(30, n, 1, &[]).unwrap();
            // Narrower primes where they exist (small q: large c = floor(2^32 / q)).
            for bits in [20, log_n + 2] {
                if let Ok(p) = primes::ntt_primes(bits.max(log_n + 2), n, 1, &qs) {
                    qs.extend(p);
                }
            }
            for q in qs {
                let t = NttTable::new(Modulus::new(q).unwrap(), n as usize).unwrap();
                for storage in [16384, 8192, 4096] {
                    let plan = NttPlan::new(log_n, &limits(storage)).unwrap();
                    check_table(&plan, &t, false);
                    check_table(&plan, &t, true);
                }
            }
        }
    }

    #[test]
    fn companion_formula_is_exact_for_every_residue_of_small_primes() {
        // Every w < q, against floor(w 2^32 / q) in u64.
        for q in [17u32, 97, 257, 7681, 12289, 65537] {
            let two32 = 1u64 << 32;
            let (c, d) = ((two32 / u64::from(q)) as u32, (two32 % u64::from(q)) as u32);
            let ds = ((u64::from(d) << 32) / u64::from(q)) as u32;
            for w in 0..q {
                let mut e = mul_hi(w, ds);
                if w.wrapping_mul(d).wrapping_sub(e.wrapping_mul(q)) >= q {
                    e += 1;
                }
                assert_eq!(w.wrapping_mul(c).wrapping_add(e), ((u64::from(w) << 32) / u64::from(q)) as u32);
            }
        }
    }
}
