//! `wgfhe params`: the shipped and application parameter sets, as a table or JSON.

use serde::Serialize;
use wgfhe::bgv::max_depth;
use wgfhe::ckks::{self, ScalePolicy};
use wgfhe::params::{self, Parameters, Scheme};

use crate::output;

/// One row of `wgfhe params --json`.
#[derive(Debug, Serialize)]
struct ParamRow {
    name: String,
    scheme: &'static str,
    n: usize,
    log_q: f64,
    log_p: f64,
    log_qp: f64,
    limbs: usize,
    special_limbs: usize,
    dnum: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    plaintext_modulus: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    log_scale: Option<u32>,
    max_depth: usize,
    security_bits: u32,
    insecure: bool,
}

fn round2(x: f64) -> f64 {
    (x * 100.0).round() / 100.0
}

fn row(p: &Parameters) -> ParamRow {
    ParamRow {
        name: p.name().to_string(),
        scheme: match p.scheme() {
            Scheme::Bgv => "bgv",
            Scheme::Ckks => "ckks",
        },
        n: p.n(),
        log_q: round2(p.log_q()),
        log_p: round2(p.log_p()) + 0.0,
        log_qp: round2(p.log_qp()),
        limbs: p.q().len(),
        special_limbs: p.p().len(),
        dnum: p.dnum(),
        plaintext_modulus: p.plaintext_modulus(),
        log_scale: p.literal().log_scale,
        max_depth: match p.scheme() {
            Scheme::Bgv => max_depth(p),
            Scheme::Ckks => ckks::max_depth(p, ScalePolicy::Single),
        },
        security_bits: p.security().bits(),
        insecure: p.is_insecure(),
    }
}

/// Runs `wgfhe params [--json]`.
pub(crate) fn run(json: bool) -> wgfhe::Result<()> {
    let rows = params::shipped()
        .into_iter()
        .chain(params::application_literals())
        .map(|lit| Parameters::new(lit).map(|p| row(&p)))
        .collect::<wgfhe::Result<Vec<_>>>()?;
    if json {
        return output::print_json("encoding of the parameter table", &rows);
    }
    println!(
        "{:<10} {:>6} {:>8} {:>7} {:>8} {:>5} {:>4} {:>4} {:>12} {:>5} {:>4}",
        "name", "N", "log Q", "log P", "log QP", "sec", "L+1", "k", "t / scale", "dnum", "depth"
    );
    for r in rows {
        let t_or_scale = match (r.plaintext_modulus, r.log_scale) {
            (Some(t), _) => t.to_string(),
            (None, Some(s)) => format!("2^{s}"),
            (None, None) => "-".to_string(),
        };
        println!(
            "{:<10} {:>6} {:>8.2} {:>7.2} {:>8.2} {:>5} {:>4} {:>4} {:>12} {:>5} {:>4}",
            r.name,
            r.n,
            r.log_q,
            r.log_p,
            r.log_qp,
            r.security_bits,
            r.limbs,
            r.special_limbs,
            t_or_scale,
            r.dnum,
            r.max_depth
        );
    }
    Ok(())
}
