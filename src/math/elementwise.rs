//! Element-wise modular arithmetic over whole limbs, for the CPU backend's `add`, `sub`, `mul`
//! and `mul_add` kernels.
//!
//! Each function runs one loop over a limb under run-time dispatch to the widest vector
//! extension the CPU has (`pulp`, as [`crate::math::ntt`] does), written so that the compiler
//! vectorises it: branch-free conditional subtractions (`r.min(r - q)`) and Barrett reduction
//! in 64-bit lanes whose products are 32 x 32 -> 64 bits. Every output is the canonical residue
//! [`Modulus::add`], [`Modulus::sub`] and [`Modulus::mul`] compute, bit for bit (the unit tests
//! compare them on random and edge-case inputs), so the backends stay bit-identical.

use super::zq::Modulus;

/// `out = a + b mod q`, element-wise (inputs in `[0, q)`).
pub(crate) fn add(m: &Modulus, out: &mut [u32], a: &[u32], b: &[u32]) {
    pulp::Arch::new().dispatch(Add { q: m.value(), out, a, b });
}

/// `out = a - b mod q`, element-wise (inputs in `[0, q)`).
pub(crate) fn sub(m: &Modulus, out: &mut [u32], a: &[u32], b: &[u32]) {
    pulp::Arch::new().dispatch(Sub { q: m.value(), out, a, b });
}

/// `out = a * b mod q` (Barrett), element-wise (inputs in `[0, q)`).
pub(crate) fn mul(m: &Modulus, out: &mut [u32], a: &[u32], b: &[u32]) {
    pulp::Arch::new().dispatch(Mul { m: Barrett::of(m), out, a, b });
}

/// `acc = acc + a * b mod q`, element-wise (inputs in `[0, q)`).
pub(crate) fn mul_add(m: &Modulus, acc: &mut [u32], a: &[u32], b: &[u32]) {
    pulp::Arch::new().dispatch(MulAdd { m: Barrett::of(m), acc, a, b });
}

/// The constants of [`Modulus::mul`]'s Barrett reduction.
#[derive(Clone, Copy)]
struct Barrett {
    q: u32,
    /// `k - 1` and `k + 1` for `k = bits(q)`.
    shift_lo: u32,
    shift_hi: u32,
    mu: u32,
}

impl Barrett {
    fn of(m: &Modulus) -> Self {
        Self { q: m.value(), shift_lo: m.bits() - 1, shift_hi: m.bits() + 1, mu: m.barrett_mu() }
    }

    /// [`Modulus::mul`]: the same steps as `reduce_wide(mul_wide(a, b))`, in u64 lanes.
    #[inline(always)]
    fn mul(self, a: u32, b: u32) -> u32 {
        let p = u64::from(a) * u64::from(b);
        let q1 = (p >> self.shift_lo) as u32;
        let q2 = ((u64::from(q1) * u64::from(self.mu)) >> self.shift_hi) as u32;
        let r = (p as u32).wrapping_sub(q2.wrapping_mul(self.q));
        let r = r.min(r.wrapping_sub(self.q));
        r.min(r.wrapping_sub(self.q))
    }
}

/// `a + b mod q` for `a, b < q`: [`Modulus::add`] without the branch.
#[inline(always)]
fn add_mod(a: u32, b: u32, q: u32) -> u32 {
    let s = a.wrapping_add(b);
    s.min(s.wrapping_sub(q))
}

struct Add<'a> {
    q: u32,
    out: &'a mut [u32],
    a: &'a [u32],
    b: &'a [u32],
}

impl pulp::NullaryFnOnce for Add<'_> {
    type Output = ();

    #[inline(always)]
    fn call(self) {
        let q = self.q;
        for ((o, &x), &y) in self.out.iter_mut().zip(self.a).zip(self.b) {
            *o = add_mod(x, y, q);
        }
    }
}

struct Sub<'a> {
    q: u32,
    out: &'a mut [u32],
    a: &'a [u32],
    b: &'a [u32],
}

impl pulp::NullaryFnOnce for Sub<'_> {
    type Output = ();

    #[inline(always)]
    fn call(self) {
        let q = self.q;
        for ((o, &x), &y) in self.out.iter_mut().zip(self.a).zip(self.b) {
            // a - b, plus q when it wrapped (a < b): the smaller of the two u32 values.
            let d = x.wrapping_sub(y);
            *o = d.min(d.wrapping_add(q));
        }
    }
}

struct Mul<'a> {
    m: Barrett,
    out: &'a mut [u32],
    a: &'a [u32],
    b: &'a [u32],
}

impl pulp::NullaryFnOnce for Mul<'_> {
    type Output = ();

    #[inline(always)]
    fn call(self) {
        let m = self.m;
        for ((o, &x), &y) in self.out.iter_mut().zip(self.a).zip(self.b) {
            *o = m.mul(x, y);
        }
    }
}

struct MulAdd<'a> {
    m: Barrett,
    acc: &'a mut [u32],
    a: &'a [u32],
    b: &'a [u32],
}

impl pulp::NullaryFnOnce for MulAdd<'_> {
    type Output = ();

    #[inline(always)]
    fn call(self) {
        let m = self.m;
        for ((o, &x), &y) in self.acc.iter_mut().zip(self.a).zip(self.b) {
            *o = add_mod(*o, m.mul(x, y), m.q);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    /// Random residues with the edge values 0, 1, q - 1 and q - 2 mixed in.
    fn residues(rng: &mut ChaCha8Rng, q: u32, len: usize) -> Vec<u32> {
        (0..len)
            .map(|i| match i % 7 {
                0 => 0,
                1 => q - 1,
                2 => 1 % q,
                3 => q.saturating_sub(2),
                _ => rng.random_range(0..q),
            })
            .collect()
    }

    /// Every function against the scalar `Modulus` methods (and `mul` against u64 `%`), for
    /// moduli from 2 to just below 2^30 and lengths that are not multiples of a vector width.
    #[test]
    fn same_bits_as_the_scalar_methods() {
        let mut rng = ChaCha8Rng::seed_from_u64(3);
        for q in [2u32, 3, 17, 65_537, 786_433, 1_073_184_769, (1 << 30) - 35, 12_289, 40_961] {
            let m = Modulus::new(u64::from(q)).unwrap();
            for len in [1usize, 7, 64, 1000] {
                let (a, b, c) = (residues(&mut rng, q, len), residues(&mut rng, q, len), residues(&mut rng, q, len));
                let mut out = vec![0u32; len];
                add(&m, &mut out, &a, &b);
                assert!(out.iter().zip(a.iter().zip(&b)).all(|(&o, (&x, &y))| o == m.add(x, y)), "add mod {q}");
                sub(&m, &mut out, &a, &b);
                assert!(out.iter().zip(a.iter().zip(&b)).all(|(&o, (&x, &y))| o == m.sub(x, y)), "sub mod {q}");
                mul(&m, &mut out, &a, &b);
                assert!(
                    out.iter().zip(a.iter().zip(&b)).all(|(&o, (&x, &y))| {
                        o == m.mul(x, y) && u64::from(o) == u64::from(x) * u64::from(y) % u64::from(q)
                    }),
                    "mul mod {q}"
                );
                let mut acc = c.clone();
                mul_add(&m, &mut acc, &a, &b);
                assert!(
                    acc.iter()
                        .zip(c.iter().zip(a.iter().zip(&b)))
                        .all(|(&o, (&z, (&x, &y)))| o == m.add(z, m.mul(x, y))),
                    "mul_add mod {q}"
                );
            }
        }
    }
}
