//! `wgfhe verify`: CPU-vs-GPU equivalence checks. Every method of the
//! [`Backend`] trait that computes something, on seeded random inputs (run twice on the
//! candidate, for determinism), and whole seeded scheme programs with every intermediate
//! ciphertext and the full decryption compared word for word. On a device with native 64-bit
//! integers or immediates the kernels are checked again on a second device forced onto the
//! emulated products and the parameter arena (checks named `... (emulated, arena)`).
//!
//! The checks compare a *reference* backend with a *candidate*: the CPU reference and the GPU
//! for `wgfhe verify`, and in the tests also a candidate that flips one bit
//! (`wgfhe::testing::FlipOneBit`), to show that every comparison can fail.

use std::sync::Arc;
use wgfhe::rlwe::KeyRequest;

use num_complex::Complex64;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::Serialize;
use wgfhe::backend::fused::{self, Expr, Format, Operand, Program, Traffic};
use wgfhe::backend::gpu::{Arithmetic, DeviceOptions, GpuDevice};
use wgfhe::backend::key_switching::modup_targets;
use wgfhe::backend::{Backend, ConvertPart, CpuBackend, GpuBackend, InnerProductInput, KeyDigitRef};
use wgfhe::bgv::Bgv;
use wgfhe::ckks::{Ckks, ScalePolicy};
use wgfhe::math::rounding::Rounding;
use wgfhe::math::sampling::Purpose;
use wgfhe::params::{self, Parameters, Scheme};
use wgfhe::ring::RingContext;
use wgfhe::{Error, Result};

/// Options of `wgfhe verify`.
#[derive(Debug, clap::Args)]
pub(crate) struct VerifyArgs {
    /// Parameter sets to check (repeatable); default: the insecure test sets and
    /// bgv-n13 and ckks-n13.
    #[arg(long)]
    params: Vec<String>,
    /// Seed of the random inputs.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

/// Runs `wgfhe verify`: prints every check, and fails with [`Error::Verification`] if any
/// differs.
pub(crate) fn run(a: &VerifyArgs) -> Result<()> {
    let dev = Arc::new(GpuDevice::new()?);
    // Where the device multiplies with native 64-bit integers or passes parameters as
    // immediates, the kernels are checked again on a second device forced onto the emulated
    // products and the parameter arena.
    let emulated = if dev.arithmetic() == Arithmetic::NativeInt64 || dev.uses_immediates() {
        Some(Arc::new(GpuDevice::with_options(DeviceOptions {
            emulate_int64: true,
            no_immediates: true,
            ..DeviceOptions::default()
        })?))
    } else {
        None
    };
    let ring = params::TestRing { log_n: 10, q_primes: 5, p_primes: 2, dnum: 3 };
    let sets: Vec<Parameters> = if a.params.is_empty() {
        vec![
            params::insecure_test_bgv(ring, 65537)?,
            params::insecure_test_ckks(ring, 30)?,
            params::by_name("bgv-n13")?,
            params::by_name("ckks-n13")?,
        ]
    } else {
        a.params.iter().map(|n| params::by_name(n)).collect::<Result<_>>()?
    };
    let mut checks = Vec::new();
    for p in &sets {
        let cpu = CpuBackend::new(RingContext::new(p)?);
        let gpu = GpuBackend::new(RingContext::new(p)?, Arc::clone(&dev));
        checks.extend(kernel_checks(&cpu, &gpu, a.seed)?);
        if let Some(e) = &emulated {
            let gpu = GpuBackend::new(RingContext::new(p)?, Arc::clone(e));
            checks.extend(kernel_checks(&cpu, &gpu, a.seed)?.into_iter().map(|mut c| {
                c.name = format!("{} (emulated, arena)", c.name);
                c
            }));
        }
        checks.push(program_check(cpu, gpu, a.seed as u8)?);
    }
    let passed = checks.iter().filter(|c| c.identical).count();
    let failed = checks.len() - passed;
    if a.json {
        let value = serde_json::json!({
            "adapter": dev.summary(),
            "params": sets.iter().map(|p| p.name().to_string()).collect::<Vec<_>>(),
            "checks": checks,
            "passed": passed,
            "failed": failed,
        });
        println!("{value:#}");
    } else {
        println!("adapter: {:?}", dev.summary());
        for c in &checks {
            println!("{:<8} {:<44} {}", if c.identical { "ok" } else { "DIFFERS" }, c.name, c.params);
        }
        println!("{passed} passed, {failed} failed");
    }
    if failed > 0 {
        return Err(Error::Verification {
            what: format!("{failed} of {} checks of the GPU backend differ", checks.len()),
            reference: "the CPU backend",
        });
    }
    Ok(())
}

/// One comparison.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Check {
    /// Kernel or program name.
    pub(crate) name: String,
    /// Parameter set.
    pub(crate) params: String,
    /// Whether both backends (and both candidate runs) produced the same words.
    pub(crate) identical: bool,
    /// Words that differ (counting a length difference as one).
    pub(crate) mismatches: usize,
}

/// Words of `a` and `b` that differ, a length difference counting as one.
fn differing(a: &[u32], b: &[u32]) -> usize {
    a.iter().zip(b).filter(|(x, y)| x != y).count() + usize::from(a.len() != b.len())
}

/// The reference's words `want` against the candidate's two runs.
fn compare(name: &str, params: &Parameters, want: &[u32], got: &[u32], again: &[u32]) -> Check {
    let mismatches = differing(want, got) + differing(got, again);
    Check { name: name.to_string(), params: params.name().to_string(), identical: mismatches == 0, mismatches }
}

/// [`Error::ParameterMismatch`] unless `candidate` computes in the ring of `params`.
fn same_ring<C: Backend>(params: &Parameters, candidate: &C) -> Result<()> {
    let found = candidate.context().params().id();
    if found != params.id() {
        return Err(Error::ParameterMismatch { expected: params.id(), found });
    }
    Ok(())
}

/// Uniform residues over `basis`.
fn random_residues(ctx: &RingContext, basis: &[usize], rng: &mut ChaCha8Rng) -> Result<Vec<u32>> {
    let n = ctx.n();
    let mut out = Vec::with_capacity(basis.len() * n);
    for &i in basis {
        let q = ctx.modulus(i)?.value();
        out.extend((0..n).map(|_| rng.random_range(0..q)));
    }
    Ok(out)
}

/// One operand of a fused program, host side.
enum FusedInput {
    /// Residues over a basis, stored as `format`.
    Buffer { words: Vec<u32>, basis: Vec<usize>, format: Format },
    /// A regenerated uniform stream.
    Uniform { seed: [u8; 32], purpose: Purpose, index: u32 },
    /// One constant per output limb.
    Scalar(Vec<u32>),
}

/// `words` (over `basis`) bit-packed as [`Format::Packed`] says.
fn packed(ctx: &RingContext, basis: &[usize], words: &[u32]) -> Result<Vec<u32>> {
    let (layout, total) = fused::packed_layout(ctx, basis)?;
    let mut out = vec![0u32; total];
    for ((limb, (start, len)), &i) in words.chunks(ctx.n()).zip(layout).zip(basis) {
        let dst = out.get_mut(start..start + len).ok_or(Error::SizeOverflow { what: "packed limb" })?;
        fused::pack_limb(limb, ctx.modulus(i)?.bits(), dst);
    }
    Ok(out)
}

/// Runs a fused program on `be` (operands uploaded from `inputs`) and downloads its outputs,
/// concatenated.
fn run_fused<B: Backend>(
    be: &B,
    basis: &[usize],
    inputs: &[FusedInput],
    outputs: &[(Expr, Format)],
) -> Result<Vec<u32>> {
    let bufs = inputs
        .iter()
        .map(|i| match i {
            FusedInput::Buffer { words, .. } => be.upload(words).map(Some),
            _ => Ok(None),
        })
        .collect::<Result<Vec<_>>>()?;
    let operands = inputs
        .iter()
        .zip(&bufs)
        .map(|(i, b)| match (i, b) {
            (FusedInput::Buffer { basis, format, .. }, Some(buf)) => {
                Ok(Operand::Buffer { buf, basis, format: *format, traffic: Traffic::Ciphertext, limb_offset: 0 })
            }
            (FusedInput::Uniform { seed, purpose, index }, _) => {
                Ok(Operand::Uniform { seed: *seed, purpose: *purpose, index: *index })
            }
            (FusedInput::Scalar(s), _) => Ok(Operand::Scalar(s.clone())),
            (FusedInput::Buffer { .. }, None) => Err(Error::InvalidField { field: "fused", reason: "not uploaded" }),
        })
        .collect::<Result<Vec<_>>>()?;
    let program = Program { basis, operands, outputs: outputs.to_vec() };
    let mut words = Vec::new();
    for out in be.fused(&program)? {
        words.extend(be.download(&out)?);
    }
    Ok(words)
}

/// Which digits of a key store their `a_j` (the others are regenerated from the seed).
type StoredDigits = fn(usize) -> bool;

/// The host operands of one key-switching inner product.
struct InnerProductHost<'a> {
    c: &'a [u32],
    converted: &'a [u32],
    q_basis: &'a [usize],
    p_basis: &'a [usize],
    digits: &'a [Vec<usize>],
    keys: &'a [(Vec<u32>, Vec<u32>)],
    key_basis: &'a [usize],
    seed: [u8; 32],
}

impl InnerProductHost<'_> {
    /// Uploads the operands to `be` and returns the three outputs (`q0`, `q1`, `p`)
    /// concatenated; digit `j`'s `a_j` is stored where `stored(j)`, regenerated otherwise.
    fn run<B: Backend>(&self, be: &B, stored: StoredDigits) -> Result<Vec<u32>> {
        let (c, converted) = (be.upload(self.c)?, be.upload(self.converted)?);
        let bufs = self.keys.iter().map(|(b, a)| Ok((be.upload(b)?, be.upload(a)?))).collect::<Result<Vec<_>>>()?;
        let key: Vec<KeyDigitRef<'_, B::Buffer>> = bufs
            .iter()
            .zip(0u32..)
            .map(|((b, a), j)| KeyDigitRef { b, b_packed: false, a: stored(j as usize).then_some(a), index: j })
            .collect();
        let sums = be.key_switch_inner_product(&InnerProductInput {
            c: &c,
            converted: &converted,
            q_basis: self.q_basis,
            p_basis: self.p_basis,
            digits: self.digits,
            key: &key,
            key_basis: self.key_basis,
            seed: &self.seed,
        })?;
        Ok([be.download(&sums.q0)?, be.download(&sums.q1)?, be.download(&sums.p)?].concat())
    }
}

/// Every kernel of the [`Backend`] trait on seeded random inputs, `reference` against
/// `candidate` (both on the same ring), for one limb and for every prime of `Q P`: the data
/// movers (`upload`/`download` under every check, `zeros`, `len`, `duplicate`, `truncate`,
/// `gather_limbs`) and every arithmetic kernel, `fused` included. The candidate
/// runs each twice; both runs must match the reference. `name`, `context`, `synchronize` and
/// `max_fused_buffers` compute nothing and are not compared.
///
/// A kernel's own check comes before any other use of it on the candidate, so a fault in the
/// kernel's first output shows up under the kernel's name.
pub(crate) fn kernel_checks<R: Backend, C: Backend>(reference: &R, candidate: &C, seed: u64) -> Result<Vec<Check>> {
    let ctx = Arc::clone(reference.context());
    let params = ctx.params().clone();
    same_ring(&params, candidate)?;
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let all = ctx.qp_basis(ctx.q_count() - 1)?;
    let n = ctx.n();
    let mut checks = Vec::new();
    for limbs in [1, all.len()] {
        let basis: Vec<usize> = all.iter().take(limbs).copied().collect();
        let a = random_residues(&ctx, &basis, &mut rng)?;
        let b = random_residues(&ctx, &basis, &mut rng)?;
        let c = random_residues(&ctx, &basis, &mut rng)?;
        let (ra, rb) = (reference.upload(&a)?, reference.upload(&b)?);
        let (ca, cb) = (candidate.upload(&a)?, candidate.upload(&b)?);
        let mut twice = |label: String, run: &dyn Fn() -> Result<Vec<u32>>, want: Vec<u32>| -> Result<()> {
            let (first, second) = (run()?, run()?);
            candidate.synchronize()?;
            checks.push(compare(&format!("{label}/{limbs} limbs"), &params, &want, &first, &second));
            Ok(())
        };
        twice(
            "add".into(),
            &|| candidate.download(&candidate.add(&ca, &cb, &basis)?),
            reference.download(&reference.add(&ra, &rb, &basis)?)?,
        )?;
        twice(
            "sub".into(),
            &|| candidate.download(&candidate.sub(&ca, &cb, &basis)?),
            reference.download(&reference.sub(&ra, &rb, &basis)?)?,
        )?;
        twice(
            "neg".into(),
            &|| candidate.download(&candidate.neg(&ca, &basis)?),
            reference.download(&reference.neg(&ra, &basis)?)?,
        )?;
        twice(
            "mul".into(),
            &|| candidate.download(&candidate.mul(&ca, &cb, &basis)?),
            reference.download(&reference.mul(&ra, &rb, &basis)?)?,
        )?;
        let scalars =
            basis.iter().map(|&i| Ok(rng.random_range(0..ctx.modulus(i)?.value()))).collect::<Result<Vec<u32>>>()?;
        twice(
            "mul_scalar".into(),
            &|| candidate.download(&candidate.mul_scalar(&ca, &scalars, &basis)?),
            reference.download(&reference.mul_scalar(&ra, &scalars, &basis)?)?,
        )?;
        let mut acc = reference.upload(&c)?;
        reference.mul_add(&mut acc, &ra, &rb, &basis)?;
        twice(
            "mul_add".into(),
            &|| {
                let mut acc = candidate.upload(&c)?;
                candidate.mul_add(&mut acc, &ca, &cb, &basis)?;
                candidate.download(&acc)
            },
            reference.download(&acc)?,
        )?;
        // The tensor product of (a, b) and (b, c): all three outputs, one after another.
        let (rc, cc) = (reference.upload(&c)?, candidate.upload(&c)?);
        let concat = |be: &dyn Fn() -> Result<[Vec<u32>; 3]>| -> Result<Vec<u32>> { Ok(be()?.concat()) };
        let want = concat(&|| {
            let out = reference.tensor([&ra, &rb], [&rb, &rc], &basis)?;
            Ok([reference.download(&out[0])?, reference.download(&out[1])?, reference.download(&out[2])?])
        })?;
        twice(
            "tensor".into(),
            &|| {
                concat(&|| {
                    let out = candidate.tensor([&ca, &cb], [&cb, &cc], &basis)?;
                    Ok([candidate.download(&out[0])?, candidate.download(&out[1])?, candidate.download(&out[2])?])
                })
            },
            want,
        )?;
        for g in [3usize, 5, 2 * n - 1] {
            if g < 2 * n {
                twice(
                    format!("automorphism g={g}"),
                    &|| candidate.download(&candidate.automorphism(&ca, g, &basis)?),
                    reference.download(&reference.automorphism(&ra, g, &basis)?)?,
                )?;
            }
        }
        for inverse in [false, true] {
            let mut want = reference.upload(&a)?;
            if inverse {
                reference.ntt_inverse(&mut want, &basis)?;
            } else {
                reference.ntt_forward(&mut want, &basis)?;
            }
            twice(
                if inverse { "ntt_inverse" } else { "ntt_forward" }.into(),
                &|| {
                    let mut x = candidate.upload(&a)?;
                    if inverse {
                        candidate.ntt_inverse(&mut x, &basis)?;
                    } else {
                        candidate.ntt_forward(&mut x, &basis)?;
                    }
                    candidate.download(&x)
                },
                reference.download(&want)?,
            )?;
        }
        let seed_bytes = [seed as u8; 32];
        twice(
            "uniform".into(),
            &|| candidate.download(&candidate.uniform(&seed_bytes, Purpose::CiphertextA, 3, &basis)?),
            reference.download(&reference.uniform(&seed_bytes, Purpose::CiphertextA, 3, &basis)?)?,
        )?;
        if limbs > 1 {
            // Three conversions in one call: a prefix, a suffix read in place, and every other
            // limb (not consecutive in the input).
            let (lo, hi) = basis.split_at(limbs / 2);
            let even: Vec<usize> = basis.iter().step_by(2).copied().collect();
            let odd: Vec<usize> = basis.iter().skip(1).step_by(2).copied().collect();
            let parts: [ConvertPart<'_>; 3] = [(lo, hi), (hi, lo), (&even, &odd)];
            twice(
                "base_convert".into(),
                &|| candidate.download(&candidate.base_convert(&ca, &basis, &parts)?),
                reference.download(&reference.base_convert(&ra, &basis, &parts)?)?,
            )?;
            for drop in [1, limbs - 1] {
                let (keep, dropped) = basis.split_at(limbs - drop);
                // The dropped limbs of a and of b: one polynomial, or two in one buffer.
                let one: Vec<u32> = a.split_at(keep.len() * n).1.to_vec();
                let two: Vec<u32> = [&one[..], b.split_at(keep.len() * n).1].concat();
                for (polys, words) in [(1, &one), (2, &two)] {
                    let (rd, cd) = (reference.upload(words)?, candidate.upload(words)?);
                    for t in [None, Some(65537u32)] {
                        for rounding in [Rounding::Joint, Rounding::PrimeByPrime] {
                            twice(
                                format!("scale_down_correction drop={drop} t={t:?} {rounding:?} polys={polys}"),
                                &|| {
                                    candidate
                                        .download(&candidate.scale_down_correction(&cd, keep, dropped, t, rounding)?)
                                },
                                reference
                                    .download(&reference.scale_down_correction(&rd, keep, dropped, t, rounding)?)?,
                            )?;
                        }
                    }
                }
            }
            let positions: Vec<usize> = (0..limbs).rev().collect();
            twice(
                "gather_limbs".into(),
                &|| candidate.download(&candidate.gather_limbs(&ca, &positions)?),
                reference.download(&reference.gather_limbs(&ra, &positions)?)?,
            )?;
            // Key-switch inner product: the chain primes of `basis` (the rest special), cut
            // into the parameters' digits and into one digit per prime (more digits than one
            // GPU pass takes); keys over all of Q P with every a_j stored, regenerated, or
            // mixed.
            let lq = ctx.q_count().min(limbs - 1);
            let (q_basis, p_basis) = basis.split_at(lq);
            let by_params: Vec<Vec<usize>> = (0..params.dnum())
                .map(|j| params.digit_range(j).filter(|&i| i < lq).collect::<Vec<_>>())
                .filter(|d| !d.is_empty())
                .collect();
            let singletons: Vec<Vec<usize>> = q_basis.iter().map(|&i| vec![i]).collect();
            for digits in [by_params, singletons] {
                let targets = modup_targets(q_basis, p_basis, &digits);
                let conv = random_residues(&ctx, &targets.concat(), &mut rng)?;
                let keys: Vec<(Vec<u32>, Vec<u32>)> = (0..digits.len())
                    .map(|_| Ok((random_residues(&ctx, &all, &mut rng)?, random_residues(&ctx, &all, &mut rng)?)))
                    .collect::<Result<_>>()?;
                let cq: Vec<u32> = a.split_at(lq * n).0.to_vec();
                let op = InnerProductHost {
                    c: &cq,
                    converted: &conv,
                    q_basis,
                    p_basis,
                    digits: &digits,
                    keys: &keys,
                    key_basis: &all,
                    seed: [seed as u8 ^ 0x33; 32],
                };
                let modes: [(&str, StoredDigits); 3] =
                    [("stored", |_| true), ("seeded", |_| false), ("mixed", |j| j % 2 == 1)];
                for (label, stored) in modes {
                    twice(
                        format!("key_switch_inner_product ({label}, {} digits)", digits.len()),
                        &|| op.run(candidate, stored),
                        op.run(reference, stored)?,
                    )?;
                }
            }
        }
        // Fused: stored (plain and packed, one over a superset basis), regenerated and constant
        // operands; a plain and a packed output.
        let g = 2 * n - 1;
        let wide = random_residues(&ctx, &all, &mut rng)?;
        let inputs = [
            FusedInput::Buffer { words: a.clone(), basis: basis.clone(), format: Format::Words },
            FusedInput::Buffer { words: packed(&ctx, &basis, &b)?, basis: basis.clone(), format: Format::Packed },
            FusedInput::Uniform { seed: [seed as u8 ^ 0x5a; 32], purpose: Purpose::CiphertextA, index: 7 },
            FusedInput::Scalar(scalars.clone()),
            FusedInput::Buffer { words: wide, basis: all.to_vec(), format: Format::Words },
        ];
        let l = Expr::load;
        let outputs = [
            (Expr::add(Expr::mul(l(0), l(1)), Expr::galois(g, Expr::sub(l(2), l(4)))), Format::Words),
            (Expr::Sum(vec![Expr::neg(Expr::mul(l(3), l(2))), l(1), Expr::mul(l(4), l(0))]), Format::Packed),
        ];
        twice(
            "fused".into(),
            &|| run_fused(candidate, &basis, &inputs, &outputs),
            run_fused(reference, &basis, &inputs, &outputs)?,
        )?;
        // The data movers.
        let words = basis.len() * n;
        twice(
            "zeros".into(),
            &|| candidate.download(&candidate.zeros(words)?),
            reference.download(&reference.zeros(words)?)?,
        )?;
        twice(
            "len".into(),
            &|| Ok(vec![u32::try_from(candidate.len(&ca)).unwrap_or(u32::MAX)]),
            vec![u32::try_from(reference.len(&ra)).unwrap_or(u32::MAX)],
        )?;
        twice(
            "truncate".into(),
            &|| candidate.download(&candidate.truncate(candidate.upload(&a)?, n / 2)?),
            reference.download(&reference.truncate(reference.upload(&a)?, n / 2)?)?,
        )?;
        // A copy, then the copy transformed in place: the original must not change.
        let copied = |be_copy: Vec<u32>, original_after: Vec<u32>| [be_copy, original_after].concat();
        let mut rdup = reference.duplicate(&ra)?;
        let rcopy = reference.download(&rdup)?;
        reference.ntt_forward(&mut rdup, &basis)?;
        twice(
            "duplicate".into(),
            &|| {
                let x = candidate.upload(&a)?;
                let mut dup = candidate.duplicate(&x)?;
                let copy = candidate.download(&dup)?;
                candidate.ntt_forward(&mut dup, &basis)?;
                Ok(copied(copy, candidate.download(&x)?))
            },
            copied(rcopy, reference.download(&ra)?),
        )?;
    }
    Ok(checks)
}

/// Every intermediate ciphertext of a seeded BGV program (encrypt, HMULT + relinearise,
/// rotations, row swap, modulus switch, PMULT, decrypt), as words.
pub(crate) fn bgv_transcript<B: Backend>(be: B, seed: u8) -> Result<Vec<Vec<u32>>> {
    let bgv = Bgv::new(be)?;
    let sk = bgv.gen_secret_key_from_seed(&[seed; 32])?;
    let keys = bgv.gen_evaluation_keys(&sk, &KeyRequest::rotations(&[1, -2]).with_row_swap())?;
    let slots = bgv.encoder().slots();
    let t = u64::from(bgv.plaintext_modulus());
    let x: Vec<u64> = (0..slots as u64).map(|i| (i * 13 + 5) % t).collect();
    let pt = if slots > 0 { bgv.encoder().encode(&x)? } else { bgv.encoder().encode_coeffs(&[1, 2, 3])? };
    let mut out = Vec::new();
    let mut record = |ct: &wgfhe::bgv::Ciphertext<B>| -> Result<()> {
        for p in ct.polys() {
            out.push(p.to_host(bgv.backend())?);
        }
        Ok(())
    };
    let a = bgv.encrypt_symmetric(&sk, &pt)?;
    let b = bgv.encrypt_symmetric(&sk, &pt)?;
    record(&a)?;
    let prod = bgv.mul_relin(&a, &b, &keys)?;
    record(&prod)?;
    let rot = bgv.rotate_columns(&prod, 1, &keys)?;
    record(&rot)?;
    let swap = bgv.rotate_rows(&rot, &keys)?;
    record(&swap)?;
    let low = bgv.mod_switch(&swap, 1)?;
    record(&low)?;
    let pm = bgv.mul_plain(&low, &pt)?;
    record(&pm)?;
    out.push(bgv.decrypt(&sk, &pm)?.coefficients().to_vec());
    Ok(out)
}

/// The bits of the real and imaginary parts of `values`, as `u32` words.
fn complex_words(values: &[Complex64]) -> Vec<u32> {
    values
        .iter()
        .flat_map(|z| [z.re.to_bits(), z.im.to_bits()])
        .flat_map(|bits| [bits as u32, (bits >> 32) as u32])
        .collect()
}

/// Every intermediate ciphertext of a seeded CKKS program (encrypt, HMULT + relinearise,
/// rescale, rotation, conjugation) and its decryption (real and imaginary parts), as words.
pub(crate) fn ckks_transcript<B: Backend>(be: B, seed: u8) -> Result<Vec<Vec<u32>>> {
    let ckks = Ckks::new(be, ScalePolicy::Single)?;
    let sk = ckks.gen_secret_key_from_seed(&[seed; 32])?;
    let keys = ckks.gen_evaluation_keys(&sk, &KeyRequest::rotations(&[1, 3]).with_conjugation())?;
    let slots = ckks.encoder().max_slots();
    let x: Vec<Complex64> = (0..slots).map(|i| Complex64::new((i as f64 / slots as f64) - 0.5, 0.25)).collect();
    let pt = ckks.encode(&x, ckks.default_scale(), slots, ckks.max_level())?;
    let mut out = Vec::new();
    let mut record = |ct: &wgfhe::ckks::Ciphertext<B>| -> Result<()> {
        for p in ct.polys() {
            out.push(p.to_host(ckks.backend())?);
        }
        Ok(())
    };
    let a = ckks.encrypt_symmetric(&sk, &pt)?;
    record(&a)?;
    let prod = ckks.rescale(&ckks.mul_relin(&a, &a, &keys)?)?;
    record(&prod)?;
    let rot = ckks.rotate(&prod, 3, &keys)?;
    record(&rot)?;
    let conj = ckks.conjugate(&rot, &keys)?;
    record(&conj)?;
    out.push(complex_words(&ckks.decrypt(&sk, &conj)?));
    Ok(out)
}

/// The transcript of the scheme of `be`'s parameters.
pub(crate) fn transcript<B: Backend>(be: B, seed: u8) -> Result<Vec<Vec<u32>>> {
    match be.context().params().scheme() {
        Scheme::Bgv => bgv_transcript(be, seed),
        Scheme::Ckks => ckks_transcript(be, seed),
    }
}

/// Compares two transcripts word for word.
pub(crate) fn compare_transcripts(name: &str, params: &Parameters, a: &[Vec<u32>], b: &[Vec<u32>]) -> Check {
    let mut mismatches = usize::from(a.len() != b.len());
    for (x, y) in a.iter().zip(b) {
        mismatches += differing(x, y);
    }
    Check { name: name.to_string(), params: params.name().to_string(), identical: mismatches == 0, mismatches }
}

/// The scheme program of the backends' parameters on `reference` and on `candidate`, compared.
pub(crate) fn program_check<R: Backend, C: Backend>(reference: R, candidate: C, seed: u8) -> Result<Check> {
    let params = reference.context().params().clone();
    same_ring(&params, &candidate)?;
    let want = transcript(reference, seed)?;
    let got = transcript(candidate, seed)?;
    let name = match params.scheme() {
        Scheme::Bgv => "bgv program",
        Scheme::Ckks => "ckks program",
    };
    Ok(compare_transcripts(name, &params, &want, &got))
}

#[cfg(test)]
mod tests {
    //! The harness against itself (CPU against CPU, and against a backend that flips one bit:
    //! every comparison must be able to fail) and, when an adapter exists, the GPU against the
    //! CPU. Without an adapter the GPU tests print `SKIPPED: <reason>`; `WGFHE_REQUIRE_GPU=1`
    //! (set in CI) turns that into a failure.

    use std::sync::{Arc, OnceLock};

    use num_complex::Complex64;
    use wgfhe::backend::gpu::{Arithmetic, DeviceOptions, GpuDevice};
    use wgfhe::backend::{CpuBackend, GpuBackend};
    use wgfhe::params::{self, Parameters, TestRing};
    use wgfhe::ring::RingContext;
    use wgfhe::testing::FlipOneBit;

    use super::{complex_words, kernel_checks, program_check, Check};

    /// The kernels [`FlipOneBit`] can tamper with (every kernel with an output but the data
    /// movers `zeros`, `duplicate` and `truncate`).
    const TAMPERABLE: [&str; 16] = [
        "add",
        "sub",
        "neg",
        "mul",
        "mul_scalar",
        "mul_add",
        "tensor",
        "automorphism",
        "ntt_forward",
        "ntt_inverse",
        "uniform",
        "base_convert",
        "scale_down_correction",
        "gather_limbs",
        "key_switch_inner_product",
        "fused",
    ];

    /// The shared device, or `None` (after printing `SKIPPED: <reason>`) when there is no
    /// adapter; with `WGFHE_REQUIRE_GPU=1` a missing adapter is a failure.
    fn device() -> Option<Arc<GpuDevice>> {
        static DEV: OnceLock<Result<Arc<GpuDevice>, String>> = OnceLock::new();
        match DEV.get_or_init(|| GpuDevice::new().map(Arc::new).map_err(|e| e.to_string())) {
            Ok(d) => Some(Arc::clone(d)),
            Err(reason) => {
                assert!(
                    std::env::var("WGFHE_REQUIRE_GPU").as_deref() != Ok("1"),
                    "WGFHE_REQUIRE_GPU=1 but no GPU: {reason}"
                );
                println!("SKIPPED: {reason}");
                None
            }
        }
    }

    fn small_bgv() -> Parameters {
        params::insecure_test_bgv(TestRing { log_n: 4, q_primes: 3, p_primes: 2, dnum: 3 }, 97).unwrap()
    }

    fn cpu(p: &Parameters) -> CpuBackend {
        CpuBackend::new(RingContext::new(p).unwrap())
    }

    fn failures(checks: &[Check]) -> Vec<&Check> {
        checks.iter().filter(|c| !c.identical).collect()
    }

    #[test]
    fn kernel_checks_cover_every_kernel_and_pass_on_equal_backends() {
        let p = small_bgv();
        let checks = kernel_checks(&cpu(&p), &cpu(&p), 1).unwrap();
        assert!(failures(&checks).is_empty(), "{:?}", failures(&checks));
        for kernel in TAMPERABLE.iter().chain(&["zeros", "len", "duplicate", "truncate"]) {
            for limbs in [1, p.q().len() + p.p().len()] {
                let multi_limb_only =
                    ["base_convert", "scale_down_correction", "gather_limbs", "key_switch_inner_product"]
                        .contains(kernel);
                if limbs == 1 && multi_limb_only {
                    continue;
                }
                let suffix = format!("/{limbs} limbs");
                assert!(
                    checks.iter().any(|c| c.name.starts_with(kernel) && c.name.ends_with(&suffix)),
                    "no check of {kernel} at {limbs} limbs"
                );
            }
        }
    }

    #[test]
    fn kernel_checks_name_the_kernel_that_flipped_a_bit() {
        let p = small_bgv();
        for kernel in TAMPERABLE {
            let checks = kernel_checks(&cpu(&p), &FlipOneBit::new(cpu(&p), kernel, 3), 1).unwrap();
            let failed = failures(&checks);
            assert!(!failed.is_empty(), "a flipped bit in one {kernel} output went unnoticed");
            assert!(failed.iter().all(|c| c.name.starts_with(kernel) && c.mismatches > 0), "{kernel}: {failed:?}");
        }
    }

    #[test]
    fn program_checks_detect_one_flipped_bit() {
        let ring = TestRing { log_n: 10, q_primes: 5, p_primes: 2, dnum: 3 };
        for p in [params::insecure_test_bgv(ring, 65537).unwrap(), params::insecure_test_ckks(ring, 30).unwrap()] {
            assert!(program_check(cpu(&p), cpu(&p), 7).unwrap().identical, "{}", p.name());
            for kernel in ["mul", "ntt_forward", "base_convert", "key_switch_inner_product", "scale_down_correction"] {
                let check = program_check(cpu(&p), FlipOneBit::new(cpu(&p), kernel, 3), 7).unwrap();
                assert!(!check.identical, "{}: a flipped bit in one {kernel} output went unnoticed", p.name());
            }
        }
    }

    #[test]
    fn ckks_decryptions_are_compared_in_full() {
        let re = |im: f64| complex_words(&[Complex64::new(0.5, im)]);
        assert_ne!(re(0.25), re(-0.25), "the imaginary part is compared");
        assert_ne!(complex_words(&[Complex64::new(0.5, 0.0)]), complex_words(&[Complex64::new(0.5 + 1e-15, 0.0)]));
        assert_eq!(complex_words(&[Complex64::new(1.0, 2.0), Complex64::new(3.0, 4.0)]).len(), 8);
    }

    fn gpu_kernels_match_cpu(p: &Parameters, seed: u64) {
        let Some(dev) = device() else { return };
        gpu_kernels_match_cpu_on(&dev, p, seed);
    }

    fn gpu_kernels_match_cpu_on(dev: &Arc<GpuDevice>, p: &Parameters, seed: u64) {
        let dev = Arc::clone(dev);
        let gpu = GpuBackend::new(RingContext::new(p).unwrap(), dev);
        let checks = kernel_checks(&cpu(p), &gpu, seed).unwrap();
        assert!(checks.len() > 30, "only {} checks ran", checks.len());
        assert!(failures(&checks).is_empty(), "{}: kernels differ from the CPU: {:?}", p.name(), failures(&checks));
    }

    #[test]
    fn gpu_kernels_match_cpu_small_rings() {
        // N = 16 and 128: sizes below and not multiples of the 256-thread workgroup.
        gpu_kernels_match_cpu(&small_bgv(), 1);
        let p = params::insecure_test_bgv(TestRing { log_n: 7, q_primes: 4, p_primes: 2, dnum: 2 }, 257).unwrap();
        gpu_kernels_match_cpu(&p, 2);
    }

    #[test]
    fn gpu_kernels_match_cpu_n1024_to_n16384() {
        let bgv = TestRing { log_n: 10, q_primes: 4, p_primes: 2, dnum: 2 };
        gpu_kernels_match_cpu(&params::insecure_test_bgv(bgv, 65537).unwrap(), 3);
        let ckks = TestRing { log_n: 12, q_primes: 5, p_primes: 2, dnum: 3 };
        gpu_kernels_match_cpu(&params::insecure_test_ckks(ckks, 30).unwrap(), 4);
        let ckks = TestRing { log_n: 14, q_primes: 3, p_primes: 1, dnum: 3 };
        gpu_kernels_match_cpu(&params::insecure_test_ckks(ckks, 30).unwrap(), 5);
    }

    /// The kernels on the emulated 64-bit products and on the parameter arena, each on a device
    /// of its own (the shared device uses native 64-bit integers and immediates where the adapter
    /// has them), and a BGV program.
    #[test]
    fn gpu_kernels_match_cpu_on_every_device_path() {
        let Some(_) = device() else { return };
        let paths = [
            DeviceOptions { emulate_int64: true, ..DeviceOptions::default() },
            DeviceOptions { no_immediates: true, ..DeviceOptions::default() },
        ];
        for (i, options) in paths.into_iter().enumerate() {
            let dev = Arc::new(GpuDevice::with_options(options).unwrap());
            if options.emulate_int64 {
                assert_eq!(dev.arithmetic(), Arithmetic::Emulated);
            }
            assert!(!(options.no_immediates && dev.uses_immediates()));
            let seed = 10 * i as u64;
            gpu_kernels_match_cpu_on(&dev, &small_bgv(), seed + 1);
            let bgv = TestRing { log_n: 10, q_primes: 4, p_primes: 2, dnum: 2 };
            gpu_kernels_match_cpu_on(&dev, &params::insecure_test_bgv(bgv, 65537).unwrap(), seed + 2);
            // More limbs than immediates hold for mul_scalar and uniform: the arena either way.
            let ckks = TestRing { log_n: 12, q_primes: 14, p_primes: 3, dnum: 7 };
            gpu_kernels_match_cpu_on(&dev, &params::insecure_test_ckks(ckks, 30).unwrap(), seed + 3);
            let p =
                params::insecure_test_bgv(TestRing { log_n: 10, q_primes: 5, p_primes: 2, dnum: 3 }, 65537).unwrap();
            let gpu = GpuBackend::new(RingContext::new(&p).unwrap(), Arc::clone(&dev));
            let check = program_check(cpu(&p), gpu, seed as u8 + 4).unwrap();
            assert!(check.identical, "{}: CPU and GPU transcripts differ: {check:?}", p.name());
        }
    }

    #[test]
    fn gpu_scheme_programs_match_cpu() {
        let Some(dev) = device() else { return };
        let ring = TestRing { log_n: 10, q_primes: 5, p_primes: 2, dnum: 3 };
        for p in [
            params::insecure_test_bgv(ring, 65537).unwrap(),
            params::by_name("bgv-n13").unwrap(),
            params::insecure_test_ckks(ring, 30).unwrap(),
            params::by_name("ckks-n13").unwrap(),
        ] {
            let gpu = GpuBackend::new(RingContext::new(&p).unwrap(), Arc::clone(&dev));
            let check = program_check(cpu(&p), gpu, 7).unwrap();
            assert!(check.identical, "{}: CPU and GPU transcripts differ: {check:?}", p.name());
        }
    }
}
