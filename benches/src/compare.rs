//! `wgfhe bench --suite compare`: word-wise EQ, LT and MAX on encrypted digit vectors under
//! both digit conventions and every pruning level, and the ReLU and sign lookup tables, with
//! non-scalar multiplication counts, depth, medians of interleaved timings, the time per
//! comparison amortised over the slots, and the error rate against plaintext.
//!
//! Layouts: 4 digits, 16-bit integers (bases 16 and 15) for `t >= 2^18`, else 12-bit (bases 8
//! and 7). Inputs: every slot holds a pair of uniformly random integers of the declared width (`lt`
//! rows also run with `y = 0`, the sign test, where pruning behaves differently per
//! convention). `extract` rows extract the top digits of bounded values (floor base 2, balanced
//! base 3) and run the pruned sign test or LT on them, extraction included in the time. Keys,
//! encryptions and table compilation are outside the timed region; every (op, layout, keep)
//! runs once as a warm-up whose decryption gives the error rate (and is checked against the
//! plaintext model of pruning), then `reps` interleaved rounds.

use std::time::Instant;
use wgfhe::rlwe::KeyRequest;

use serde::Serialize;

use wgfhe::backend::Backend;
use wgfhe::bgv::{Bgv, Ciphertext, EvaluationKeys};
use wgfhe::compare::digits::{eq_pruned, lt_pruned, Convention, Digits};
use wgfhe::compare::extract::{layout_for_bound, less_than, sign_test, sign_test_model, DigitExtractor};
use wgfhe::compare::lut::{eval_lut, Bounded, Lut};
use wgfhe::compare::poly_eval::EvalStats;
use wgfhe::compare::wordwise::{compare, equal, max, EncryptedDigits};
use wgfhe::error::{Error, Result};
use wgfhe::rlwe::SecretKey;

use super::ReportHeader;

/// Pruning levels of the report.
pub const KEEPS: [f64; 4] = [1.0, 0.75, 0.5, 0.25];

/// One row of the report.
#[derive(Debug, Clone, Serialize)]
pub struct Row {
    /// `eq`, `lt`, `max`, `relu_lut`, `sign_lut` or `extract` (digit extraction of a bounded
    /// value followed by the pruned comparison: `vs_zero` the sign test, `uniform` LT of two
    /// extracted values).
    pub op: &'static str,
    /// Width of the compared integers (or of the table's domain, or of the extracted values,
    /// sign included).
    pub bits: u32,
    /// Digits of the layout (1 for tables).
    pub digits: usize,
    /// Digit base (0 for tables).
    pub base: u32,
    /// Fraction of the digits kept.
    pub keep: f64,
    /// `floor`, `balanced` or `lut`.
    pub convention: &'static str,
    /// `uniform` (random pairs) or `vs_zero` (sign test `x < 0`).
    pub inputs: &'static str,
    /// Non-scalar multiplications.
    pub hmults: usize,
    /// Multiplicative depth.
    pub depth: usize,
    /// Median wall time of one evaluation over all slots.
    pub median_ms: f64,
    /// `median_ms` per slot, in microseconds.
    pub per_comparison_us: f64,
    /// Fraction of slots whose decryption differs from the plaintext function (0 when exact).
    pub error_rate: f64,
}

/// The report of `wgfhe bench --suite compare --json`.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    /// Parameter set.
    pub params: String,
    /// Backend, device, threads and timed rounds.
    #[serde(flatten)]
    pub header: ReportHeader,
    /// Slots per ciphertext (comparisons per evaluation).
    pub slots: usize,
    /// The rows.
    pub rows: Vec<Row>,
}

/// The layouts compared, 4 digits each so that every pruning level keeps a different count:
/// 16-bit integers in base 16 (floor) and 15 (balanced) when MAX's values fit `t` (`t >= 2^18`),
/// else 12-bit integers in base 8 and 7.
fn layouts(t: u32) -> Result<Vec<(u32, Digits)>> {
    let (bits, even, odd) = if t >= 1 << 18 { (16, 16, 15) } else { (12, 8, 7) };
    Ok(vec![(bits, Digits::new(even, 4, Convention::Floor)?), (bits, Digits::new(odd, 4, Convention::Balanced)?)])
}

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn range(&mut self, lo: i64, hi: i64) -> i64 {
        let span = (hi - lo + 1) as u64;
        lo + (self.next() % span) as i64
    }
}

fn decrypt_signed<B: Backend>(bgv: &Bgv<B>, sk: &SecretKey<B>, ct: &Ciphertext<B>) -> Result<Vec<i64>> {
    bgv.encoder().decode_signed(&bgv.decrypt(sk, ct)?)
}

fn error_rate(got: &[i64], want: &[i64]) -> f64 {
    let wrong = got.iter().zip(want).filter(|(a, b)| a != b).count();
    wrong as f64 / want.len().max(1) as f64
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied().unwrap_or(0.0)
}

/// A timed evaluation and the row it belongs to.
type Job<'a> = Box<dyn Fn() -> Result<()> + 'a>;

/// Default width of the values whose digits the `extract` rows extract (sign included).
pub const EXTRACT_BITS: u32 = 6;

/// The digit layouts of the `extract` rows for values bounded by `bound`: floor digits in base
/// 2 and balanced digits in base 3, the fewest digits covering the bound.
fn extract_layouts(bound: u64) -> Result<Vec<Digits>> {
    Ok(vec![layout_for_bound(bound, 2, Convention::Floor)?, layout_for_bound(bound, 3, Convention::Balanced)?])
}

/// Runs the suite on `backend` (`reps` timed rounds; the tables' domain is
/// `[-(2^(lut_bits-1) - 1), 2^(lut_bits-1) - 1]`).
///
/// The `extract` rows run on values in `[-(2^(extract_bits-1) - 1), 2^(extract_bits-1) - 1]`
/// (none for `extract_bits = 0`; the CLI's default is [`EXTRACT_BITS`]): per layout and pruning
/// level, the top digits are extracted homomorphically ([`wgfhe::compare::extract`]) and
/// compared with 0 (`vs_zero`, the sign test) or with the digits of a second extracted value
/// (`uniform`, LT); the timed region is the whole pipeline, extraction included.
pub fn run_with_extract<B: Backend>(
    backend: B,
    device: String,
    reps: usize,
    lut_bits: u32,
    extract_bits: u32,
) -> Result<Report> {
    let reps = reps.max(1);
    let bgv_owned = Bgv::new(backend)?;
    let bgv = &bgv_owned;
    let sk = bgv.gen_secret_key()?;
    let keys_owned: EvaluationKeys<B> = bgv.gen_evaluation_keys(&sk, &KeyRequest::relinearisation())?;
    let keys = &keys_owned;
    let slots = bgv.encoder().slots();
    let t = bgv.plaintext_modulus();
    let mut rng = Rng(0x2545_f491_4f6c_dd1d);
    let mut rows = Vec::new();

    // Word-wise comparisons.
    let mut cases = Vec::new();
    for (bits, layout) in layouts(t)? {
        let (lo, hi) = layout.range();
        let xs: Vec<i64> = (0..slots).map(|_| rng.range(lo, hi)).collect();
        let ys: Vec<i64> = (0..slots).map(|_| rng.range(lo, hi)).collect();
        let zeros = vec![0i64; slots];
        let ex = EncryptedDigits::encrypt(bgv, &sk, layout, &xs)?;
        let ey = EncryptedDigits::encrypt(bgv, &sk, layout, &ys)?;
        let ez = EncryptedDigits::encrypt(bgv, &sk, layout, &zeros)?;
        cases.push((bits, layout, xs, ys, zeros, ex, ey, ez));
    }
    // Lookup-table input on [-B', B'], B' = 2^(lut_bits - 1) - 1.
    let domain = (1u64 << lut_bits.saturating_sub(1).min(30)) - 1;
    let values: Vec<i64> = (0..slots).map(|_| rng.range(-(domain as i64), domain as i64)).collect();
    let tm = wgfhe::math::zq::Modulus::new(u64::from(t))?;
    let pt = bgv.encoder().encode(&values.iter().map(|&v| u64::from(tm.reduce_i64(v))).collect::<Vec<_>>())?;
    let x = Bounded::fresh(bgv, bgv.encrypt_symmetric(&sk, &pt)?, domain)?;
    let tables = [("relu_lut", Lut::relu(t, domain)?, 0), ("sign_lut", Lut::sign(t, domain)?, 1)];
    let extract_inputs = if extract_bits >= 2 {
        let bound = (1u64 << (extract_bits.min(30) - 1)) - 1;
        let b = bound as i64;
        let mut xs: Vec<i64> = vec![0, 1, -1, b, -b];
        xs.truncate(slots);
        while xs.len() < slots {
            xs.push(rng.range(-b, b));
        }
        let ys: Vec<i64> = (0..slots).map(|_| rng.range(-b, b)).collect();
        let enc = |v: &[i64]| -> Result<Bounded<B>> {
            let pt = bgv.encoder().encode(&v.iter().map(|&x| u64::from(tm.reduce_i64(x))).collect::<Vec<_>>())?;
            Bounded::fresh(bgv, bgv.encrypt_symmetric(&sk, &pt)?, bound)
        };
        let (ex, ey) = (enc(&xs)?, enc(&ys)?);
        let mut extractors = Vec::new();
        for layout in extract_layouts(bound)? {
            for keep in KEEPS {
                let kept = layout.kept(keep)?;
                extractors.push((layout, keep, kept, DigitExtractor::top_digits(t, bound, layout, kept)?));
            }
        }
        Some((xs, ys, ex, ey, extractors))
    } else {
        None
    };
    let mut timed: Vec<(usize, Job<'_>)> = Vec::new();
    for (bits, layout, xs, ys, zeros, ex, ey, ez) in &cases {
        let dx: Vec<Vec<i64>> = xs.iter().map(|&v| layout.decompose(v)).collect::<Result<_>>()?;
        let dy: Vec<Vec<i64>> = ys.iter().map(|&v| layout.decompose(v)).collect::<Result<_>>()?;
        let dz: Vec<Vec<i64>> = zeros.iter().map(|&v| layout.decompose(v)).collect::<Result<_>>()?;
        for keep in KEEPS {
            let kept = layout.kept(keep)?;
            let conv = layout.convention().name();
            let mk = |op, inputs, hmults, depth, err| Row {
                op,
                bits: *bits,
                digits: layout.count(),
                base: layout.base(),
                keep,
                convention: conv,
                inputs,
                hmults,
                depth,
                median_ms: 0.0,
                per_comparison_us: 0.0,
                error_rate: err,
            };
            // LT on random pairs, the error against the exact x < y.
            let c = compare(bgv, keys, ex, ey, kept)?;
            let got = decrypt_signed(bgv, &sk, &c.lt)?;
            let want: Vec<i64> = xs.iter().zip(ys.iter()).map(|(a, b)| i64::from(a < b)).collect();
            rows.push(mk("lt", "uniform", c.stats.hmults, c.stats.depth, error_rate(&got, &want)));
            // The circuit computes the pruned comparison exactly: check it against the
            // plaintext reference of pruning, slot by slot.
            let reference: Vec<i64> = dx.iter().zip(&dy).map(|(a, b)| i64::from(lt_pruned(a, b, kept))).collect();
            if got != reference {
                return Err(Error::Backend {
                    backend: "compare",
                    reason: "encrypted LT differs from its plaintext reference".into(),
                });
            }
            timed.push((rows.len() - 1, Box::new(move || compare(bgv, keys, ex, ey, kept).map(|_| ()))));
            // LT against zero: the sign test.
            let c0 = compare(bgv, keys, ex, ez, kept)?;
            let got = decrypt_signed(bgv, &sk, &c0.lt)?;
            let want: Vec<i64> = xs.iter().map(|&a| i64::from(a < 0)).collect();
            let reference: Vec<i64> = dx.iter().zip(&dz).map(|(a, b)| i64::from(lt_pruned(a, b, kept))).collect();
            if got != reference {
                return Err(Error::Backend {
                    backend: "compare",
                    reason: "encrypted sign test differs from its reference".into(),
                });
            }
            rows.push(mk("lt", "vs_zero", c0.stats.hmults, c0.stats.depth, error_rate(&got, &want)));
            timed.push((rows.len() - 1, Box::new(move || compare(bgv, keys, ex, ez, kept).map(|_| ()))));
            // EQ.
            let (e, stats) = equal(bgv, keys, ex, ey, kept)?;
            let got = decrypt_signed(bgv, &sk, &e)?;
            let want: Vec<i64> = xs.iter().zip(ys.iter()).map(|(a, b)| i64::from(a == b)).collect();
            let reference: Vec<i64> = dx.iter().zip(&dy).map(|(a, b)| i64::from(eq_pruned(a, b, kept))).collect();
            if got != reference {
                return Err(Error::Backend {
                    backend: "compare",
                    reason: "encrypted EQ differs from its reference".into(),
                });
            }
            rows.push(mk("eq", "uniform", stats.hmults, stats.depth, error_rate(&got, &want)));
            timed.push((rows.len() - 1, Box::new(move || equal(bgv, keys, ex, ey, kept).map(|_| ()))));
            // MAX, where the values fit the plaintext space.
            let (lo, hi) = layout.range();
            if (hi.max(-lo) as u64) * 2 < (u64::from(t) - 1) / 2 {
                let (m, stats) = max(bgv, keys, ex, ey, kept)?;
                let got = decrypt_signed(bgv, &sk, &m)?;
                let want: Vec<i64> = xs.iter().zip(ys.iter()).map(|(a, b)| *a.max(b)).collect();
                rows.push(mk("max", "uniform", stats.hmults, stats.depth, error_rate(&got, &want)));
                timed.push((rows.len() - 1, Box::new(move || max(bgv, keys, ex, ey, kept).map(|_| ()))));
            }
        }
    }

    // Lookup tables.
    for (op, table, kind) in &tables {
        let (out, stats) = eval_lut(bgv, keys, &x, table)?;
        let got = decrypt_signed(bgv, &sk, &out)?;
        let want: Vec<i64> = values.iter().map(|&v| if *kind == 0 { v.max(0) } else { v.signum() }).collect();
        rows.push(Row {
            op,
            bits: lut_bits,
            digits: 1,
            base: 0,
            keep: 1.0,
            convention: "lut",
            inputs: "uniform",
            hmults: stats.hmults,
            depth: stats.depth,
            median_ms: 0.0,
            per_comparison_us: 0.0,
            error_rate: error_rate(&got, &want),
        });
        let x = &x;
        timed.push((rows.len() - 1, Box::new(move || eval_lut(bgv, keys, x, table).map(|_| ()))));
    }

    // Digit extraction and the pruned comparisons on the extracted digits.
    if let Some((xs, ys, ex, ey, extractors)) = &extract_inputs {
        for (layout, keep, kept, extractor) in extractors {
            let kept = *kept;
            let mk = |inputs, stats: EvalStats, err| Row {
                op: "extract",
                bits: extract_bits,
                digits: layout.count(),
                base: layout.base(),
                keep: *keep,
                convention: layout.convention().name(),
                inputs,
                hmults: stats.hmults,
                depth: stats.depth,
                median_ms: 0.0,
                per_comparison_us: 0.0,
                error_rate: err,
            };
            let (neg, stats) = sign_test(bgv, keys, ex, extractor)?;
            let got = decrypt_signed(bgv, &sk, &neg)?;
            let model: Vec<i64> =
                xs.iter().map(|&v| sign_test_model(layout, kept, v).map(i64::from)).collect::<Result<_>>()?;
            if got != model {
                return Err(Error::Backend {
                    backend: "compare",
                    reason: "sign test on extracted digits differs from its plaintext model".into(),
                });
            }
            let want: Vec<i64> = xs.iter().map(|&v| i64::from(v < 0)).collect();
            rows.push(mk("vs_zero", stats, error_rate(&got, &want)));
            timed.push((rows.len() - 1, Box::new(move || sign_test(bgv, keys, ex, extractor).map(|_| ()))));
            let c = less_than(bgv, keys, ex, ey, extractor)?;
            let got = decrypt_signed(bgv, &sk, &c.lt)?;
            let model: Vec<i64> = xs
                .iter()
                .zip(ys)
                .map(|(&a, &b)| Ok(i64::from(lt_pruned(&layout.decompose(a)?, &layout.decompose(b)?, kept))))
                .collect::<Result<_>>()?;
            if got != model {
                return Err(Error::Backend {
                    backend: "compare",
                    reason: "LT of extracted digits differs from its plaintext model".into(),
                });
            }
            let want: Vec<i64> = xs.iter().zip(ys).map(|(a, b)| i64::from(a < b)).collect();
            rows.push(mk("uniform", c.stats, error_rate(&got, &want)));
            timed.push((rows.len() - 1, Box::new(move || less_than(bgv, keys, ex, ey, extractor).map(|_| ()))));
        }
    }

    // Interleaved timed rounds.
    let mut times: Vec<Vec<f64>> = vec![Vec::new(); rows.len()];
    for _ in 0..reps {
        for (i, job) in &timed {
            let start = Instant::now();
            job()?;
            bgv.backend().synchronize()?;
            if let Some(v) = times.get_mut(*i) {
                v.push(start.elapsed().as_secs_f64() * 1e3);
            }
        }
    }
    for (row, t) in rows.iter_mut().zip(times) {
        row.median_ms = median(t);
        row.per_comparison_us = row.median_ms * 1e3 / slots.max(1) as f64;
    }
    Ok(Report {
        params: bgv.params().name().to_string(),
        header: ReportHeader::new(bgv.backend().name(), device, reps),
        slots,
        rows,
    })
}

impl Report {
    /// A fixed-width table.
    #[must_use]
    pub fn table(&self) -> String {
        use std::fmt::Write as _;
        let mut s = String::new();
        let _ = writeln!(
            s,
            "{} on {} ({}), {} slots, {} threads, median of {} interleaved rounds",
            self.params, self.header.backend, self.header.device, self.slots, self.header.threads, self.header.reps
        );
        let _ = writeln!(
            s,
            "{:<9} {:>4} {:>3} {:>4} {:>5} {:<9} {:<8} {:>6} {:>5} {:>10} {:>9} {:>8}",
            "op", "bits", "l", "base", "keep", "conv", "inputs", "hmults", "depth", "median ms", "us/cmp", "errors"
        );
        for r in &self.rows {
            let _ = writeln!(
                s,
                "{:<9} {:>4} {:>3} {:>4} {:>5.2} {:<9} {:<8} {:>6} {:>5} {:>10.1} {:>9.2} {:>8.5}",
                r.op,
                r.bits,
                r.digits,
                r.base,
                r.keep,
                r.convention,
                r.inputs,
                r.hmults,
                r.depth,
                r.median_ms,
                r.per_comparison_us,
                r.error_rate
            );
        }
        s
    }
}
