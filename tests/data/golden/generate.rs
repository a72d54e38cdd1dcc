//! The generator of the golden wire objects in this folder (see README.md): built as an example
//! of the crate at the commit whose writer it records, never compiled by the current build.
//!
//! `cargo run --release --example golden_gen -- DIR` writes, into DIR, one file per object of
//! a fixed insecure test ring, keys from a fixed seed, plaintexts of fixed values.

use std::path::Path;

use num_complex::Complex64;
use wgfhe::bgv::Bgv;
use wgfhe::ckks::{Ckks, ScalePolicy};
use wgfhe::params::{self, TestRing};

fn main() -> wgfhe::Result<()> {
    let dir = std::env::args().nth(1).expect("usage: golden_gen DIR");
    let dir = Path::new(&dir);
    std::fs::create_dir_all(dir).expect("create DIR");
    let put = |name: &str, bytes: Vec<u8>| std::fs::write(dir.join(name), bytes).expect("write");

    let p = params::insecure_test_bgv(TestRing { log_n: 10, q_primes: 3, p_primes: 1, dnum: 3 }, 65537)?;
    let bgv = Bgv::cpu(&p)?;
    let be = bgv.backend();
    let sk = bgv.gen_secret_key_from_seed(&[3; 32])?;
    let values: Vec<u64> = (0..1024u64).map(|i| (i * 31 + 7) % 65537).collect();
    let pt = bgv.encoder().encode(&values)?;
    let ct = bgv.encrypt_symmetric(&sk, &pt)?;
    put("bgv_params.bin", p.to_bytes());
    put("bgv_secret_key.bin", sk.to_bytes(be)?);
    put("bgv_plaintext.bin", bgv.plaintext_to_bytes(&pt)?);
    put("bgv_ciphertext_seeded.bin", bgv.ciphertext_to_bytes(&ct)?);
    put("bgv_ciphertext.bin", bgv.ciphertext_to_bytes_unseeded(&ct)?);
    put("bgv_ciphertext_packed.bin", bgv.ciphertext_to_bytes_packed(&bgv.mod_switch(&ct, 1)?)?);
    put("bgv_relin_key.bin", bgv.gen_relin_key(&sk)?.to_bytes(be)?);
    put("bgv_public_key.bin", bgv.gen_public_key(&sk)?.to_bytes(be)?);
    put("bgv_galois_key_3.bin", bgv.gen_galois_key(&sk, 3)?.to_bytes(be)?);
    put("bgv_n13_params.bin", params::by_name("bgv-n13")?.to_bytes());

    let p = params::insecure_test_ckks(TestRing { log_n: 10, q_primes: 5, p_primes: 2, dnum: 3 }, 30)?;
    let ckks = Ckks::cpu(&p, ScalePolicy::Single)?;
    let be = ckks.backend();
    let sk = ckks.gen_secret_key_from_seed(&[4; 32])?;
    let values: Vec<Complex64> = (0..8).map(|i| Complex64::new(f64::from(i) / 8.0, -f64::from(i) / 16.0)).collect();
    let pt = ckks.encode(&values, ckks.default_scale(), 8, ckks.max_level())?;
    let ct = ckks.encrypt_symmetric(&sk, &pt)?;
    put("ckks_params.bin", p.to_bytes());
    put("ckks_secret_key.bin", sk.to_bytes(be)?);
    put("ckks_plaintext.bin", ckks.plaintext_to_bytes(&pt)?);
    put("ckks_ciphertext_seeded.bin", ckks.ciphertext_to_bytes(&ct)?);
    put("ckks_ciphertext.bin", ckks.ciphertext_to_bytes_unseeded(&ct)?);
    put("ckks_relin_key.bin", ckks.gen_relin_key(&sk)?.to_bytes(be)?);
    Ok(())
}
