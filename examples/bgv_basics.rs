//! BGV in a few lines: encrypt two vectors, compute with add, PMULT, HMULT, a rotation and a
//! modulus switch, decrypt, and check every result against the same computation in the clear.
//!
//! Run with `cargo run --release --example bgv_basics`.

#![expect(clippy::indexing_slicing, reason = "example code indexes vectors it built itself")]

use wgfhe::bgv::Bgv;
use wgfhe::params;
use wgfhe::rlwe::KeyRequest;

fn main() -> wgfhe::Result<()> {
    // A shipped 128-bit set: N = 2^13, t = 65537 (full batching: 8192 slots as a 2 x 4096 matrix).
    let params = params::by_name("bgv-n13")?;
    let bgv = Bgv::cpu(&params)?;
    let t = u64::from(bgv.plaintext_modulus());
    let sk = bgv.gen_secret_key()?;
    let keys = bgv.gen_evaluation_keys(&sk, &KeyRequest::rotations(&[1]))?;
    let enc = bgv.encoder();
    let half = enc.slots() / 2;

    let x: Vec<u64> = (0..enc.slots() as u64).map(|i| i % 1000).collect();
    let y: Vec<u64> = (0..enc.slots() as u64).map(|i| (3 * i + 1) % 1000).collect();
    let ct_x = bgv.encrypt_symmetric(&sk, &enc.encode(&x)?)?;
    let ct_y = bgv.encrypt_symmetric(&sk, &enc.encode(&y)?)?;

    let check = |name: &str, got: Vec<u64>, want: Vec<u64>| {
        let ok = got == want;
        println!("{name:<28} {}", if ok { "ok" } else { "MISMATCH" });
        ok
    };
    let dec = |ct: &wgfhe::bgv::Ciphertext<_>| -> wgfhe::Result<Vec<u64>> { enc.decode(&bgv.decrypt(&sk, ct)?) };
    let mut all = true;

    let sum = bgv.add(&ct_x, &ct_y)?;
    all &= check("add", dec(&sum)?, x.iter().zip(&y).map(|(a, b)| (a + b) % t).collect());

    let w: Vec<u64> = (0..enc.slots() as u64).map(|i| i % 7).collect();
    let pm = bgv.mul_plain(&ct_x, &enc.encode(&w)?)?;
    all &= check("plaintext multiply", dec(&pm)?, x.iter().zip(&w).map(|(a, b)| a * b % t).collect());

    let prod = bgv.mul_relin(&ct_x, &ct_y, &keys)?;
    let xy: Vec<u64> = x.iter().zip(&y).map(|(a, b)| a * b % t).collect();
    all &= check("multiply + relinearise", dec(&prod)?, xy.clone());

    let rot = bgv.rotate_columns(&prod, 1, &keys)?;
    let want_rot: Vec<u64> = (0..xy.len()).map(|k| xy[(k / half) * half + (k % half + 1) % half]).collect();
    all &= check("rotate columns by 1", dec(&rot)?, want_rot.clone());

    let low = bgv.mod_switch_to_min(&rot)?;
    println!("modulus switch: level {} -> {}, correction factor {}", rot.level(), low.level(), low.correction_factor());
    all &= check("after modulus switch", dec(&low)?, want_rot);

    if all {
        println!("all results match the clear computation");
        Ok(())
    } else {
        Err(wgfhe::Error::Verification { what: "a result differs".into(), reference: "the clear computation" })
    }
}
