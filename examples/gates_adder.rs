//! An encrypted 8-bit adder and comparator built from bootstrapped gates, checked against plain
//! arithmetic: `cargo run --release --example gates_adder [-- gates-std128]` (default: the
//! insecure toy set, fast).
//!
//! Ripple-carry adder: sum bit `a ^ b ^ c`, carry `majority(a, b, c)` (one bootstrap). Unsigned
//! comparator `a < b`: from the least significant bit, `lt = mux(a_i ^ b_i, b_i, lt)`.

use std::sync::Arc;
use std::time::Instant;

use wgfhe::gates::{GateContext, GateEvaluator, LweCiphertext, SecretKey, TOY};
use wgfhe::math::sampling::Sampler;

fn main() -> wgfhe::Result<()> {
    let name = std::env::args().nth(1).unwrap_or_else(|| TOY.to_string());
    let ctx = GateContext::by_name(&name)?;
    // Keys and encryption randomness from the operating system.
    let sk = SecretKey::random(&ctx)?;
    let ek = Arc::new(sk.random_evaluation_key()?.expand(&ctx)?);
    let mut ev = GateEvaluator::new(ek);
    let mut rng = Sampler::fresh()?;
    let enc = |v: u8, rng: &mut Sampler| -> wgfhe::Result<Vec<LweCiphertext>> {
        (0..8).map(|i| sk.encrypt_bit((v >> i) & 1 == 1, rng)).collect()
    };
    let pairs = [(0u8, 0u8), (200, 99), (17, 250), (255, 1), (128, 128), (73, 73)];
    for (x, y) in pairs {
        let (a, b) = (enc(x, &mut rng)?, enc(y, &mut rng)?);
        let t0 = Instant::now();
        // Adder.
        let mut carry = sk.encrypt_bit(false, &mut rng)?;
        let mut sum = Vec::with_capacity(8);
        for (ai, bi) in a.iter().zip(&b) {
            let t = ev.xor(ai, bi)?;
            sum.push(ev.xor(&t, &carry)?);
            carry = ev.majority(ai, bi, &carry)?;
        }
        // Comparator a < b.
        let mut lt = sk.encrypt_bit(false, &mut rng)?;
        for (ai, bi) in a.iter().zip(&b) {
            let d = ev.xor(ai, bi)?;
            lt = ev.mux(&d, bi, &lt)?;
        }
        let secs = t0.elapsed().as_secs_f64();
        let mut s = 0u16;
        for (i, c) in sum.iter().enumerate() {
            s |= u16::from(sk.decrypt_bit(c)?) << i;
        }
        s |= u16::from(sk.decrypt_bit(&carry)?) << 8;
        let less = sk.decrypt_bit(&lt)?;
        let want = u16::from(x) + u16::from(y);
        println!("{x:3} + {y:3} = {s:3} (plain {want:3}), {x:3} < {y:3}: {less} (plain {}), {secs:.2} s", x < y);
        if s != want || less != (x < y) {
            return Err(wgfhe::Error::Verification {
                what: format!("the encrypted adder or comparator on {x}, {y}"),
                reference: "plain arithmetic",
            });
        }
    }
    println!("all {} pairs match plain arithmetic ({name})", pairs.len());
    Ok(())
}
