//! CPU-vs-GPU equivalence checks: every kernel on seeded random inputs (run twice on the GPU, for
//! determinism) and whole seeded scheme programs with every intermediate ciphertext compared
//! word for word. Used by `wgfhe verify` and by the test suite.

use std::sync::Arc;

use num_complex::Complex64;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::Serialize;

use crate::backend::gpu::GpuDevice;
use crate::backend::{Backend, CpuBackend, GpuBackend};
use crate::bgv::Bgv;
use crate::ckks::{Ckks, ScalePolicy};
use crate::error::Result;
use crate::math::sampling::Purpose;
use crate::params::{Parameters, Scheme};
use crate::ring::RingContext;

/// One comparison.
#[derive(Debug, Clone, Serialize)]
pub struct Check {
    /// Kernel or program name.
    pub name: String,
    /// Parameter set.
    pub params: String,
    /// Whether both backends (and both GPU runs) produced the same words.
    pub identical: bool,
    /// Words that differ (counting a length difference as one).
    pub mismatches: usize,
}

fn compare(name: &str, params: &Parameters, want: &[u32], got: &[u32], again: &[u32]) -> Check {
    let mut mismatches = want.iter().zip(got).filter(|(a, b)| a != b).count();
    mismatches += usize::from(want.len() != got.len());
    mismatches += got.iter().zip(again).filter(|(a, b)| a != b).count() + usize::from(got.len() != again.len());
    Check { name: name.to_string(), params: params.name().to_string(), identical: mismatches == 0, mismatches }
}

fn random_residues(be: &CpuBackend, basis: &[usize], rng: &mut ChaCha8Rng) -> Result<Vec<u32>> {
    let n = be.context().n();
    let mut out = Vec::with_capacity(basis.len() * n);
    for &i in basis {
        let q = be.context().modulus(i)?.value();
        out.extend((0..n).map(|_| rng.random_range(0..q)));
    }
    Ok(out)
}

/// Every kernel of the [`Backend`] trait on seeded random inputs, CPU against GPU, for one limb
/// and for every prime of `Q P`.
pub fn kernel_checks(params: &Parameters, dev: &Arc<GpuDevice>, seed: u64) -> Result<Vec<Check>> {
    let cpu = CpuBackend::new(RingContext::new(params)?);
    let gpu = GpuBackend::new(RingContext::new(params)?, Arc::clone(dev));
    let ctx = Arc::clone(cpu.context());
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let all = ctx.qp_basis(ctx.q_count() - 1)?;
    let n = ctx.n();
    let mut checks = Vec::new();
    for limbs in [1, all.len()] {
        let basis: Vec<usize> = all.iter().take(limbs).copied().collect();
        let a = random_residues(&cpu, &basis, &mut rng)?;
        let b = random_residues(&cpu, &basis, &mut rng)?;
        let c = random_residues(&cpu, &basis, &mut rng)?;
        let (ga, gb) = (gpu.upload(&a)?, gpu.upload(&b)?);
        let mut twice = |label: String, run: &dyn Fn() -> Result<Vec<u32>>, want: Vec<u32>| -> Result<()> {
            let (first, second) = (run()?, run()?);
            checks.push(compare(&format!("{label}/{limbs} limbs"), params, &want, &first, &second));
            Ok(())
        };
        twice("add".into(), &|| gpu.download(&gpu.add(&ga, &gb, &basis)?), cpu.add(&a, &b, &basis)?)?;
        twice("sub".into(), &|| gpu.download(&gpu.sub(&ga, &gb, &basis)?), cpu.sub(&a, &b, &basis)?)?;
        twice("neg".into(), &|| gpu.download(&gpu.neg(&ga, &basis)?), cpu.neg(&a, &basis)?)?;
        twice("mul".into(), &|| gpu.download(&gpu.mul(&ga, &gb, &basis)?), cpu.mul(&a, &b, &basis)?)?;
        let scalars =
            basis.iter().map(|&i| Ok(rng.random_range(0..ctx.modulus(i)?.value()))).collect::<Result<Vec<u32>>>()?;
        twice(
            "mul_scalar".into(),
            &|| gpu.download(&gpu.mul_scalar(&ga, &scalars, &basis)?),
            cpu.mul_scalar(&a, &scalars, &basis)?,
        )?;
        let mut want = c.clone();
        cpu.mul_add(&mut want, &a, &b, &basis)?;
        twice(
            "mul_add".into(),
            &|| {
                let mut acc = gpu.upload(&c)?;
                gpu.mul_add(&mut acc, &ga, &gb, &basis)?;
                gpu.download(&acc)
            },
            want,
        )?;
        for g in [3usize, 5, 2 * n - 1] {
            if g < 2 * n {
                twice(
                    format!("automorphism g={g}"),
                    &|| gpu.download(&gpu.automorphism(&ga, g, &basis)?),
                    cpu.automorphism(&a, g, &basis)?,
                )?;
            }
        }
        for inverse in [false, true] {
            let mut want = a.clone();
            if inverse {
                cpu.ntt_inverse(&mut want, &basis)?;
            } else {
                cpu.ntt_forward(&mut want, &basis)?;
            }
            twice(
                if inverse { "ntt_inverse" } else { "ntt_forward" }.into(),
                &|| {
                    let mut x = gpu.upload(&a)?;
                    if inverse {
                        gpu.ntt_inverse(&mut x, &basis)?;
                    } else {
                        gpu.ntt_forward(&mut x, &basis)?;
                    }
                    gpu.download(&x)
                },
                want,
            )?;
        }
        let seed_bytes = [seed as u8; 32];
        twice(
            "uniform".into(),
            &|| gpu.download(&gpu.uniform(&seed_bytes, Purpose::CiphertextA, 3, &basis)?),
            cpu.uniform(&seed_bytes, Purpose::CiphertextA, 3, &basis)?,
        )?;
        if limbs > 1 {
            let (from, to) = basis.split_at(limbs / 2);
            let part: Vec<u32> = a.iter().take(from.len() * n).copied().collect();
            let gpart = gpu.upload(&part)?;
            twice(
                "base_convert".into(),
                &|| gpu.download(&gpu.base_convert(&gpart, from, to)?),
                cpu.base_convert(&part, from, to)?,
            )?;
            for drop in [1, limbs - 1] {
                let (keep, dropped) = basis.split_at(limbs - drop);
                for t in [None, Some(65537u32)] {
                    twice(
                        format!("scale_down drop={drop} t={t:?}"),
                        &|| gpu.download(&gpu.scale_down(&ga, keep, dropped, t)?),
                        cpu.scale_down(&a, keep, dropped, t)?,
                    )?;
                }
            }
            let positions: Vec<usize> = (0..limbs).rev().collect();
            twice(
                "gather_limbs".into(),
                &|| gpu.download(&gpu.gather_limbs(&ga, &positions)?),
                cpu.gather_limbs(&a, &positions)?,
            )?;
        }
        // Key-switch inner product: two digits over `basis`, keys over all of Q P.
        let kb = [random_residues(&cpu, &all, &mut rng)?, random_residues(&cpu, &all, &mut rng)?];
        let ka = [random_residues(&cpu, &all, &mut rng)?, random_residues(&cpu, &all, &mut rng)?];
        let gkb = [gpu.upload(&kb[0])?, gpu.upload(&kb[1])?];
        let gka = [gpu.upload(&ka[0])?, gpu.upload(&ka[1])?];
        let (w0, w1) = cpu.key_switch_inner_product(&[&a, &b], &basis, &[(&kb[0], &ka[0]), (&kb[1], &ka[1])], &all)?;
        let run = |second: bool| -> Result<Vec<u32>> {
            let (o0, o1) =
                gpu.key_switch_inner_product(&[&ga, &gb], &basis, &[(&gkb[0], &gka[0]), (&gkb[1], &gka[1])], &all)?;
            gpu.download(if second { &o1 } else { &o0 })
        };
        twice("key_switch_inner_product (b)".into(), &|| run(false), w0)?;
        twice("key_switch_inner_product (a)".into(), &|| run(true), w1)?;
    }
    Ok(checks)
}

/// Every intermediate ciphertext of a seeded BGV program (encrypt, HMULT + relinearise,
/// rotations, row swap, modulus switch, PMULT, decrypt), as words.
pub fn bgv_transcript<B: Backend>(be: B, seed: u8) -> Result<Vec<Vec<u32>>> {
    let bgv = Bgv::new(be)?;
    let sk = bgv.gen_secret_key_from_seed(&[seed; 32])?;
    let keys = bgv.gen_evaluation_keys(&sk, &[1, -2], true)?;
    let slots = bgv.encoder().slots();
    let t = u64::from(bgv.plaintext_modulus());
    let x: Vec<u64> = (0..slots as u64).map(|i| (i * 13 + 5) % t).collect();
    let pt = if slots > 0 { bgv.encoder().encode(&x)? } else { bgv.encoder().encode_coeffs(&[1, 2, 3])? };
    let mut out = Vec::new();
    let mut record = |ct: &crate::bgv::Ciphertext<B>| -> Result<()> {
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

/// Every intermediate ciphertext of a seeded CKKS program (encrypt, HMULT + relinearise,
/// rescale, rotation, conjugation, decrypt), as words.
pub fn ckks_transcript<B: Backend>(be: B, seed: u8) -> Result<Vec<Vec<u32>>> {
    let ckks = Ckks::new(be, ScalePolicy::Single)?;
    let sk = ckks.gen_secret_key_from_seed(&[seed; 32])?;
    let keys = ckks.gen_evaluation_keys(&sk, &[1, 3], true)?;
    let slots = ckks.encoder().max_slots();
    let x: Vec<Complex64> = (0..slots).map(|i| Complex64::new((i as f64 / slots as f64) - 0.5, 0.25)).collect();
    let pt = ckks.encode(&x, ckks.default_scale(), slots, ckks.max_level())?;
    let mut out = Vec::new();
    let mut record = |ct: &crate::ckks::Ciphertext<B>| -> Result<()> {
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
    let dec = ckks.decrypt(&sk, &conj)?;
    out.push(dec.iter().flat_map(|z| [z.re.to_bits() as u32, (z.re.to_bits() >> 32) as u32]).collect());
    Ok(out)
}

/// The transcript of the scheme of `params` on `be`.
pub fn transcript<B: Backend>(be: B, params: &Parameters, seed: u8) -> Result<Vec<Vec<u32>>> {
    match params.scheme() {
        Scheme::Bgv => bgv_transcript(be, seed),
        Scheme::Ckks => ckks_transcript(be, seed),
    }
}

/// Compares two transcripts word for word.
#[must_use]
pub fn compare_transcripts(name: &str, params: &Parameters, a: &[Vec<u32>], b: &[Vec<u32>]) -> Check {
    let mut mismatches = usize::from(a.len() != b.len());
    for (x, y) in a.iter().zip(b) {
        mismatches += usize::from(x.len() != y.len()) + x.iter().zip(y).filter(|(u, v)| u != v).count();
    }
    Check { name: name.to_string(), params: params.name().to_string(), identical: mismatches == 0, mismatches }
}

/// The scheme program of `params` on both backends, compared.
pub fn program_check(params: &Parameters, dev: &Arc<GpuDevice>, seed: u8) -> Result<Check> {
    let cpu = transcript(CpuBackend::new(RingContext::new(params)?), params, seed)?;
    let gpu = transcript(GpuBackend::new(RingContext::new(params)?, Arc::clone(dev)), params, seed)?;
    let name = match params.scheme() {
        Scheme::Bgv => "bgv program",
        Scheme::Ckks => "ckks program",
    };
    Ok(compare_transcripts(name, params, &cpu, &gpu))
}
