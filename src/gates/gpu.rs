//! Batched bootstrapping on the `wgpu` backend: many independent gates per dispatch sequence.
//!
//! The blind rotation is `steps` sequential steps per gate; the batch runs them for all its
//! gates at once, three dispatches per step (kernels of
//! [`crate::backend::gpu::sources::gates_kernels`]): decomposition with forward NTT (one
//! workgroup per gate and row), the key products with lazy two-word accumulation (one invocation
//! per gate and slot), the inverse NTT (one workgroup per gate and component). The accumulators'
//! initial values (the rotated test vectors) are made on the host, and the tail of the bootstrap
//! (extraction, key switching, modulus switches) runs on the host with the CPU code, so the
//! outputs are the CPU reference's words whenever the accumulators are, which the tests check.

use std::sync::Arc;

use crate::backend::gpu::sources::gates_kernels;
use crate::backend::gpu::GpuDevice;
use crate::error::{Error, Result};
use crate::math::ntt::bit_reverse;

use super::rotate::rotate_test_vector;
use super::{extract_and_switch, EvaluationKey, Gate, GateEvaluator, LweCiphertext};

/// A bootstrapping key resident on a GPU, with the step tables.
#[derive(Debug)]
pub struct GpuGateKey {
    device: Arc<GpuDevice>,
    key: Arc<EvaluationKey>,
    /// The CPU evaluator of the same key, for the linear steps around the bootstraps.
    ev: GateEvaluator,
    bk: wgpu::Buffer,
    tables: wgpu::Buffer,
}

impl GpuGateKey {
    /// Uploads `key`'s bootstrapping key and tables to `device`.
    ///
    /// Errors with [`Error::InvalidGateParameters`] for `N > 2048` (the kernels hold one
    /// polynomial in workgroup memory) and with the device's errors.
    pub fn new(device: &Arc<GpuDevice>, key: &Arc<EvaluationKey>) -> Result<Self> {
        let p = key.ctx.params();
        if p.log_ring > 11 {
            return Err(Error::InvalidGateParameters {
                name: p.name.clone(),
                reason: "the GPU kernels need N <= 2048".into(),
            });
        }
        let t = &key.ctx.tables;
        let n = p.ring_n();
        let m = &t.m;
        // W: psi^bitrev(k); V: psi^-bitrev(k) (unfolded).
        let psi = t.ntt.psi();
        let psi_inv = m.inv(psi).ok_or(Error::InvalidModulus { modulus: u64::from(p.ring_q), reason: "psi" })?;
        let mut tables = Vec::with_capacity(5 * n);
        let (w, _) = t.ntt.forward_twiddles();
        tables.extend_from_slice(w);
        tables.extend((0..n).map(|k| m.pow(psi_inv, bit_reverse(k, p.log_ring) as u64)));
        tables.extend_from_slice(&t.mono);
        tables.extend_from_slice(&t.exps);
        Ok(Self {
            device: Arc::clone(device),
            key: Arc::clone(key),
            ev: GateEvaluator::new(Arc::clone(key)),
            bk: device.upload(key.bootstrapping_key())?,
            tables: device.upload(&tables)?,
        })
    }

    /// Bootstraps every ciphertext of `cts` through `tv` (as [`super::GateEvaluator::bootstrap`]
    /// does one), all in one dispatch sequence.
    ///
    /// Errors with [`Error::GateKeyMismatch`] for a ciphertext of another key and with the
    /// device's errors.
    pub fn bootstrap_batch(&self, cts: &[LweCiphertext], tv: &[u32]) -> Result<Vec<LweCiphertext>> {
        let ctx = &self.key.ctx;
        let p = ctx.params();
        let t = &ctx.tables;
        let n = p.ring_n();
        let gates = cts.len();
        if gates == 0 {
            return Ok(Vec::new());
        }
        if tv.len() != n {
            return Err(Error::DimensionMismatch { what: "test vector", expected: n, found: tv.len() });
        }
        let shift = p.log_ring + 1 - p.log_q;
        let two_n_mask = (2u32 << p.log_ring) - 1;
        let mut a2n = Vec::with_capacity(gates * p.n);
        let mut acc = vec![0u32; gates * 2 * n];
        for (ct, chunk) in cts.iter().zip(acc.chunks_exact_mut(2 * n)) {
            if ct.key_id != self.key.key_id {
                return Err(Error::GateKeyMismatch { expected: self.key.key_id, found: ct.key_id });
            }
            if ct.a.len() != p.n {
                return Err(Error::DimensionMismatch { what: "LWE mask", expected: p.n, found: ct.a.len() });
            }
            a2n.extend(ct.a.iter().map(|&x| (x << shift) & two_n_mask));
            let b2n = (ct.b << shift) & two_n_mask;
            let (_, body) = chunk.split_at_mut(n);
            rotate_test_vector(&t.m, tv, b2n as usize, body);
        }
        let mut acc_ntt = acc.clone();
        for half in acc_ntt.chunks_exact_mut(n) {
            t.ntt.forward(half)?;
        }
        let dev = &self.device;
        let acc_buf = dev.upload(&acc)?;
        let acc_ntt_buf = dev.upload(&acc_ntt)?;
        let a2n_buf = dev.upload(&a2n)?;
        let rows = p.rows();
        let digits = dev.zeros(gates * rows * n)?;
        let m = &t.m;
        let (q, k, mu) = (m.value(), m.bits(), m.barrett_mu());
        let log_n = p.log_ring;
        let secret = match p.secret {
            super::LweSecret::Ternary => 0,
            super::LweSecret::Binary => 1,
            super::LweSecret::BlockBinary => 2,
        };
        let (n_inv, _) = t.ntt.n_inv();
        let [decompose, product, inverse] = gates_kernels();
        let keys = p.secret.keys_per_step() as u32;
        let dparams = [q, k, mu, log_n, rows as u32, p.digits as u32, p.skipped as u32, p.log_bg];
        let iparams = [q, k, mu, log_n, n_inv];
        for g in 0..p.steps() {
            dev.dispatch(decompose, &dparams, &[&self.tables, &acc_buf, &digits], (gates * rows * 256) as u64)?;
            let kparams = [q, k, mu, log_n, rows as u32, keys, secret, p.n as u32, g as u32, gates as u32, t.radix.0];
            dev.dispatch(
                product,
                &kparams,
                &[&self.tables, &digits, &self.bk, &a2n_buf, &acc_ntt_buf],
                (gates * n) as u64,
            )?;
            dev.dispatch(inverse, &iparams, &[&self.tables, &acc_ntt_buf, &acc_buf], (gates * 2 * 256) as u64)?;
        }
        let acc = dev.download(&acc_buf, gates * 2 * n)?;
        acc.chunks_exact(2 * n).map(|a| extract_and_switch(&self.key, a)).collect()
    }

    /// One two-input gate per pair, bootstrapped as a batch on the GPU: the same words as
    /// [`super::GateEvaluator::gate`] on each pair.
    pub fn gates(&self, gate: Gate, pairs: &[(&LweCiphertext, &LweCiphertext)]) -> Result<Vec<LweCiphertext>> {
        let inputs =
            pairs.iter().map(|(a, b)| self.ev.combine_gate(gate, a, b)).collect::<Result<Vec<LweCiphertext>>>()?;
        self.sign_batch(&inputs)
    }

    /// The majority of each triple, one bootstrap each, as a batch: the same words as
    /// [`super::GateEvaluator::majority`].
    pub fn majority(&self, triples: &[Triple<'_>]) -> Result<Vec<LweCiphertext>> {
        let inputs = triples
            .iter()
            .map(|(a, b, c)| self.ev.combine_majority(a, b, c))
            .collect::<Result<Vec<LweCiphertext>>>()?;
        self.sign_batch(&inputs)
    }

    /// `a & b & c` for each triple (two batches of two-input gates): the same words as
    /// [`super::GateEvaluator::and3`].
    pub fn and3(&self, triples: &[Triple<'_>]) -> Result<Vec<LweCiphertext>> {
        self.chain3(Gate::And, triples)
    }

    /// `a | b | c` for each triple (two batches of two-input gates): the same words as
    /// [`super::GateEvaluator::or3`].
    pub fn or3(&self, triples: &[Triple<'_>]) -> Result<Vec<LweCiphertext>> {
        self.chain3(Gate::Or, triples)
    }

    /// `s ? a : b` for each `(s, a, b)`: `AND(s, a)` and `AND(!s, b)` bootstrapped in one batch,
    /// then their `OR` in a second; the same words as [`super::GateEvaluator::mux`].
    pub fn mux(&self, triples: &[Triple<'_>]) -> Result<Vec<LweCiphertext>> {
        let nots = triples.iter().map(|(s, _, _)| self.ev.not(s)).collect::<Result<Vec<LweCiphertext>>>()?;
        let mut pairs: Vec<(&LweCiphertext, &LweCiphertext)> = triples.iter().map(|(s, a, _)| (*s, *a)).collect();
        pairs.extend(nots.iter().zip(triples).map(|(ns, (_, _, b))| (ns, *b)));
        let ands = self.gates(Gate::And, &pairs)?;
        let (x, y) = ands.split_at(triples.len());
        let ors: Vec<(&LweCiphertext, &LweCiphertext)> = x.iter().zip(y).collect();
        self.gates(Gate::Or, &ors)
    }

    /// `gate(gate(a, b), c)` for each triple, as two batches.
    fn chain3(&self, gate: Gate, triples: &[Triple<'_>]) -> Result<Vec<LweCiphertext>> {
        let first: Vec<(&LweCiphertext, &LweCiphertext)> = triples.iter().map(|(a, b, _)| (*a, *b)).collect();
        let x = self.gates(gate, &first)?;
        let second: Vec<(&LweCiphertext, &LweCiphertext)> =
            x.iter().zip(triples).map(|(x, (_, _, c))| (x, *c)).collect();
        self.gates(gate, &second)
    }

    /// Sign bootstraps of `inputs` as one batch (the sign test vector, then `+ q/8`).
    fn sign_batch(&self, inputs: &[LweCiphertext]) -> Result<Vec<LweCiphertext>> {
        let q = self.key.ctx.params().q();
        let mut out = self.bootstrap_batch(inputs, self.ev.sign_test_vector())?;
        for o in &mut out {
            o.b = o.b.wrapping_add(q / 8) & (q - 1);
        }
        Ok(out)
    }
}

/// Three inputs of a gate: `(a, b, c)`, or `(s, a, b)` for [`GpuGateKey::mux`].
pub type Triple<'a> = (&'a LweCiphertext, &'a LweCiphertext, &'a LweCiphertext);
