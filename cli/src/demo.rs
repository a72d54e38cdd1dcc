//! `wgfhe demo`: an encrypted BGV computation end to end, checked against the clear result.

use std::time::Instant;
use wgfhe::rlwe::KeyRequest;

use wgfhe::backend::{Backend, BackendTask};
use wgfhe::bgv::{max_depth, Bgv};
use wgfhe::params::{self, Scheme};
use wgfhe::ring::RingContext;

/// Runs `wgfhe demo --params NAME` on the backend `WGFHE_BACKEND` chooses.
pub(crate) fn run(name: &str) -> wgfhe::Result<()> {
    let params = params::by_name(name)?;
    if params.scheme() != Scheme::Bgv {
        return Err(wgfhe::Error::InvalidParameters {
            reason: format!(
                "{name} is a CKKS set and the demo runs BGV: give a BGV set, such as --params bgv-n13 (`wgfhe params` \
                 lists them)"
            ),
        });
    }
    crate::env::open_backend(None)?.with_backend(RingContext::new(&params)?, Demo)
}

/// The plaintext modulus of a BGV set, as printed.
fn bgv_t(params: &params::Parameters) -> String {
    params.plaintext_modulus().map_or_else(|| "none".to_owned(), |t| t.to_string())
}

/// The demo's computation, on any backend.
struct Demo;

impl BackendTask for Demo {
    type Output = ();

    fn run<B: Backend>(self, backend: B) -> wgfhe::Result<()> {
        let params = backend.context().params().clone();
        println!(
            "parameters {}: N = {}, log2(QP) = {:.1}, t = {}, depth {} (estimated), backend {}",
            params.name(),
            params.n(),
            params.log_qp(),
            bgv_t(&params),
            max_depth(&params),
            backend.name()
        );
        let start = Instant::now();
        let bgv = Bgv::new(backend)?;
        let sk = bgv.gen_secret_key()?;
        let keys = bgv.gen_evaluation_keys(&sk, &KeyRequest::rotations(&[1, -3]).with_row_swap())?;
        println!("keys generated in {:.2?}", start.elapsed());
        let t = u64::from(bgv.plaintext_modulus());
        let slots = bgv.encoder().slots();
        let x: Vec<u64> = (0..slots as u64).map(|i| (i * 7 + 3) % t).collect();
        let y: Vec<u64> = (0..slots as u64).map(|i| (i * i + 1) % t).collect();
        let w: Vec<u64> = (0..slots as u64).map(|i| i % 5 + 1).collect();
        let enc = bgv.encoder();
        let ct_x = bgv.encrypt_symmetric(&sk, &enc.encode(&x)?)?;
        let ct_y = bgv.encrypt_symmetric(&sk, &enc.encode(&y)?)?;
        let pt_w = enc.encode(&w)?;
        let start = Instant::now();
        // r = rotate(x*y + w*x, 1) + y, then one more product with x, then a final modulus switch.
        let xy = bgv.mul_relin(&ct_x, &ct_y, &keys)?;
        let wx = bgv.mul_plain(&bgv.mod_switch_to_level(&ct_x, xy.level())?, &pt_w)?;
        let sum = bgv.add(&xy, &wx)?;
        let rot = bgv.rotate_columns(&sum, 1, &keys)?;
        let r = bgv.add(&rot, &bgv.mod_switch_to_level(&ct_y, rot.level())?)?;
        let r2 = bgv.mul_relin(&r, &ct_x, &keys)?;
        let out = bgv.mod_switch_to_min(&r2)?;
        let elapsed = start.elapsed();
        let got = enc.decode(&bgv.decrypt(&sk, &out)?)?;
        let half = slots / 2;
        let inner: Vec<u64> = x.iter().zip(&y).zip(&w).map(|((&a, &b), &c)| (a * b % t + c * a % t) % t).collect();
        let want: Vec<u64> = (0..slots)
            .zip(x.iter().zip(&y))
            .map(|(k, (&xk, &yk))| {
                let (row, col) = (k / half, k % half);
                let s = inner.get(row * half + (col + 1) % half).copied().unwrap_or(0);
                (s + yk) % t * xk % t
            })
            .collect();
        let ok = got == want;
        println!(
            "computed rotate(x*y + w*x, 1) + y, times x, on {slots} slots in {elapsed:.2?}: final level {}, \
             estimated noise 2^{:.1}, check {}",
            out.level(),
            out.noise_estimate(),
            if ok { "PASSED" } else { "FAILED" }
        );
        if !ok {
            return Err(wgfhe::Error::Verification {
                what: "the decrypted result differs".into(),
                reference: "the clear computation",
            });
        }
        Ok(())
    }
}
