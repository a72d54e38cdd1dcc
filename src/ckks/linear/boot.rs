//! The bootstrapping transforms: [`BootTransforms`] (grouped CoeffToSlot and SlotToCoeff
//! stages of one slot count and level budgets, and every rotation they use), their cost
//! estimate ([`BootCost`]), their prepared form ([`PreparedBoot`]), and the slot-level steps
//! around them (the subring trace, the real/imaginary split). The generic transform and its
//! baby-step giant-step evaluation are in the [parent module](super).

use std::collections::BTreeSet;

use num_complex::Complex64;

use super::*;

/// What one homomorphic transform (a chain of grouped stages) costs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TransformCost {
    /// Levels consumed (one per group).
    pub levels: usize,
    /// Plaintext-ciphertext products (diagonals).
    pub diagonals: usize,
    /// Rotations, one key switch each.
    pub rotations: usize,
    /// ModUps with hoisted baby steps.
    pub mod_ups: usize,
}

impl TransformCost {
    fn of(plans: &[&BsgsPlan]) -> Self {
        Self {
            levels: plans.len(),
            diagonals: plans.iter().map(|p| p.diagonal_count()).sum(),
            rotations: plans.iter().map(|p| p.rotation_count()).sum(),
            mod_ups: plans.iter().map(|p| p.hoisted_mod_ups()).sum(),
        }
    }
}

/// The key-switching cost of CoeffToSlot and SlotToCoeff for one bootstrap.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct BootCost {
    /// Rotations of the subring trace (sparse slots; 0 for full slots).
    pub trace_rotations: usize,
    /// CoeffToSlot's grouped stages.
    pub coeff_to_slot: TransformCost,
    /// SlotToCoeff's grouped stages.
    pub slot_to_coeff: TransformCost,
    /// Distinct rotation keys (trace and both transforms).
    pub rotation_keys: usize,
}

impl BootCost {
    /// Key switches of the trace, CoeffToSlot, the real/imaginary split (one conjugation) and
    /// SlotToCoeff of one ciphertext.
    #[must_use]
    pub fn key_switches(&self) -> usize {
        self.trace_rotations + self.coeff_to_slot.rotations + 1 + self.slot_to_coeff.rotations
    }

    /// The cost computed from the diagonal offsets alone (no matrix values: cheap at any size),
    /// equal to [`BootTransforms::cost`] of the same shape. Errors: as [`BootTransforms::new`].
    pub fn estimate(ring_degree: usize, slots: usize, cts_levels: usize, stc_levels: usize) -> Result<Self> {
        let gap = check_boot_shape(ring_degree, slots)?;
        let log = slots.trailing_zeros() as usize;
        // Offsets of stage s (h = 2^(s-1)): 0, h, -h.
        let stage = |s: usize| -> BTreeSet<usize> {
            let h = 1usize << (s - 1);
            [0, h % slots, (slots - h) % slots].into_iter().collect()
        };
        let merge = |order: &[usize], levels: usize| -> Result<Vec<BsgsPlan>> {
            let mut rest = order;
            let mut plans = Vec::with_capacity(levels);
            for size in group_sizes(order.len(), levels)? {
                let (group, tail) = rest.split_at(size);
                rest = tail;
                let mut acc: BTreeSet<usize> = [0].into_iter().collect();
                for &s in group {
                    let st = stage(s);
                    acc = acc.iter().flat_map(|&a| st.iter().map(move |&b| (a + b) % slots)).collect();
                }
                plans.push(BsgsPlan::new(slots, acc)?);
            }
            Ok(plans)
        };
        let stc_order: Vec<usize> = (1..=log).collect();
        let cts_order: Vec<usize> = (1..=log).rev().collect();
        let cts = merge(&cts_order, cts_levels)?;
        let stc = merge(&stc_order, stc_levels)?;
        let trace = trace_steps(ring_degree, slots, gap);
        Ok(Self::from_plans(&trace, &cts.iter().collect::<Vec<_>>(), &stc.iter().collect::<Vec<_>>()))
    }

    fn from_plans(trace: &[i64], cts: &[&BsgsPlan], stc: &[&BsgsPlan]) -> Self {
        let keys: BTreeSet<i64> =
            trace.iter().copied().chain(cts.iter().chain(stc).flat_map(|p| p.rotations())).collect();
        Self {
            trace_rotations: trace.len(),
            coeff_to_slot: TransformCost::of(cts),
            slot_to_coeff: TransformCost::of(stc),
            rotation_keys: keys.len(),
        }
    }
}

/// Checks a ring degree and a slot count for bootstrapping transforms; returns the gap.
fn check_boot_shape(ring_degree: usize, slots: usize) -> Result<usize> {
    log2_exact("ring degree", ring_degree)?;
    if !slots.is_power_of_two() || slots < 2 || 2 * slots > ring_degree {
        return Err(Error::SlotCount { slots, min: 2, max: ring_degree / 2 });
    }
    Ok(ring_degree / (2 * slots))
}

/// The rotations of the subring trace: `n 2^i` for `n 2^i < N/2`.
fn trace_steps(ring_degree: usize, slots: usize, gap: usize) -> Vec<i64> {
    (0..gap.trailing_zeros()).map(|i| (slots << i) as i64).take_while(|&s| 2 * (s as usize) < ring_degree).collect()
}

/// The rotation steps of the trace to the subring of `n` slots in a ring of degree `N`
/// ([`Ckks::subring_trace`]): `n, 2n, 4n, ..., N/4` (none for full slots). Errors: as
/// [`BootTransforms::new`].
pub fn trace_rotations(ring_degree: usize, slots: usize) -> Result<Vec<i64>> {
    let gap = check_boot_shape(ring_degree, slots)?;
    Ok(trace_steps(ring_degree, slots, gap))
}

/// The CoeffToSlot and SlotToCoeff transforms of bootstrapping for one slot count and level
/// budgets: grouped stages ([`group_stages`]), CoeffToSlot's first group scaled by the CtS
/// scalar over `gap` (the trace of sparse slots multiplies by `gap`).
#[derive(Debug, Clone, PartialEq)]
pub struct BootTransforms {
    ring_degree: usize,
    slots: usize,
    cts_scalar: f64,
    cts: Vec<LinearTransform>,
    stc: Vec<LinearTransform>,
}

impl BootTransforms {
    /// The transforms of `slots` slots (a power of two in `2..=N/2`) in a ring of degree
    /// `ring_degree`, CoeffToSlot in `cts_levels` levels and SlotToCoeff in `stc_levels` (each in
    /// `1..=log2 slots`), CoeffToSlot multiplied by `cts_scalar` (bootstrapping folds its
    /// normalisation there). CoeffToSlot maps slots `z` to `cts_scalar rev(E^{-1} z)` (after the
    /// trace for sparse slots), SlotToCoeff maps `rev(u)` to `E u`.
    ///
    /// Errors: a ring degree that is not a power of two ([`Error::TransformShape`] with
    /// [`ShapeError::NotPowerOfTwo`]), a slot count out of range ([`Error::SlotCount`]), a level
    /// budget out of range ([`Error::TransformShape`] with [`ShapeError::LevelBudget`]), a
    /// scalar zero or not finite ([`Error::InvalidField`]).
    pub fn new(
        ring_degree: usize,
        slots: usize,
        cts_levels: usize,
        stc_levels: usize,
        cts_scalar: f64,
    ) -> Result<Self> {
        let gap = check_boot_shape(ring_degree, slots)?;
        let mut cts = group_stages(&coeff_to_slot_stages(slots)?, cts_levels)?;
        if let Some(first) = cts.first_mut() {
            *first = first.scaled(Complex64::new(cts_scalar / gap as f64, 0.0))?;
        }
        let stc = group_stages(&slot_to_coeff_stages(slots)?, stc_levels)?;
        Ok(Self { ring_degree, slots, cts_scalar, cts, stc })
    }

    /// The number of slots.
    #[must_use]
    pub fn slots(&self) -> usize {
        self.slots
    }

    /// The ring degree `N`.
    #[must_use]
    pub fn ring_degree(&self) -> usize {
        self.ring_degree
    }

    /// The CoeffToSlot scalar (without the `1/gap` of the trace).
    #[must_use]
    pub fn cts_scalar(&self) -> f64 {
        self.cts_scalar
    }

    /// CoeffToSlot's grouped stages, in application order (one level each).
    #[must_use]
    pub fn coeff_to_slot(&self) -> &[LinearTransform] {
        &self.cts
    }

    /// SlotToCoeff's grouped stages, in application order (one level each).
    #[must_use]
    pub fn slot_to_coeff(&self) -> &[LinearTransform] {
        &self.stc
    }

    /// The rotations of the subring trace ([`trace_rotations`]).
    #[must_use]
    pub fn trace_rotations(&self) -> Vec<i64> {
        trace_steps(self.ring_degree, self.slots, self.ring_degree / (2 * self.slots))
    }

    /// Every rotation step the trace, CoeffToSlot and SlotToCoeff use, sorted, without
    /// duplicates; the real/imaginary split also needs the conjugation key.
    #[must_use]
    pub fn rotations(&self) -> Vec<i64> {
        let set: BTreeSet<i64> = self
            .trace_rotations()
            .into_iter()
            .chain(self.cts.iter().chain(&self.stc).flat_map(LinearTransform::rotations))
            .collect();
        set.into_iter().collect()
    }

    /// Rotations, ModUps and products of one CoeffToSlot and one SlotToCoeff.
    #[must_use]
    pub fn cost(&self) -> BootCost {
        let cts: Vec<&BsgsPlan> = self.cts.iter().map(LinearTransform::bsgs).collect();
        let stc: Vec<&BsgsPlan> = self.stc.iter().map(LinearTransform::bsgs).collect();
        BootCost::from_plans(&self.trace_rotations(), &cts, &stc)
    }
}

/// [`BootTransforms`] with every group's diagonals prepared at the level it runs at
/// ([`Ckks::prepare_boot`]).
#[derive(Debug)]
pub struct PreparedBoot<B: Backend> {
    ring_degree: usize,
    slots: usize,
    cts: Vec<PreparedTransform<B>>,
    stc: Vec<PreparedTransform<B>>,
}

impl<B: Backend> PreparedBoot<B> {
    /// The level CoeffToSlot's input must be at.
    #[must_use]
    pub fn cts_level(&self) -> Option<usize> {
        self.cts.first().map(PreparedTransform::level)
    }

    /// The level SlotToCoeff's input must be at.
    #[must_use]
    pub fn stc_level(&self) -> Option<usize> {
        self.stc.first().map(PreparedTransform::level)
    }

    /// Bytes of every lifted diagonal on the backend.
    #[must_use]
    pub fn resident_bytes(&self, backend: &B) -> u64 {
        self.cts.iter().chain(&self.stc).map(|p| p.resident_bytes(backend)).sum()
    }
}

impl<B: Backend> Ckks<B> {
    /// The trace to the subring of `Y = X^gap` for `ct`'s slot count `n` (`gap = N/(2n)`): the
    /// sum of the `gap` automorphisms `X -> X^(5^(n t))`, `t < gap`, by `log2 gap` rotations and
    /// additions ([`trace_rotations`]). Coefficients at multiples of `gap` are multiplied by
    /// `gap`, the others become zero (plus noise); the slots are multiplied by `gap`. No level
    /// is consumed. The identity for full slots.
    pub fn subring_trace(&self, ct: &Ciphertext<B>, keys: &EvaluationKeys<B>) -> Result<Ciphertext<B>> {
        self.check_ct(ct)?;
        let n = self.params().n();
        let mut acc = ct.duplicate(self.backend())?;
        if 2 * ct.slots < n {
            for s in trace_rotations(n, ct.slots)? {
                acc = self.add(&acc, &self.rotate(&acc, s, keys)?)?;
            }
        }
        Ok(acc)
    }

    /// CoeffToSlot: the subring trace for sparse slots, then CoeffToSlot's grouped stages (one
    /// level each). For a ciphertext of plaintext `c` at scale `Delta`, slot `j` of the result
    /// holds `cts_scalar u_{rev(j)}`, `u_k = (c[gap k] + i c[gap k + N/2]) / Delta`. Keys: the
    /// plan's [`BootTransforms::rotations`]. Errors: a plan for another ring or slot count
    /// ([`Error::DimensionMismatch`]), and those of [`Ckks::linear_transform`].
    pub fn coeff_to_slot(
        &self,
        ct: &Ciphertext<B>,
        plan: &BootTransforms,
        keys: &EvaluationKeys<B>,
    ) -> Result<Ciphertext<B>> {
        self.check_plan(ct, plan)?;
        let mut x = self.subring_trace(ct, keys)?;
        for lt in &plan.cts {
            x = self.linear_transform(&x, lt, keys)?;
        }
        Ok(x)
    }

    /// SlotToCoeff: SlotToCoeff's grouped stages (one level each). Slots holding `rev(u)` become
    /// `E u`: the plaintext's grid coefficients are `u` (real parts at `gap k`, imaginary
    /// parts at `gap k + N/2`). Errors: as [`Ckks::coeff_to_slot`].
    pub fn slot_to_coeff(
        &self,
        ct: &Ciphertext<B>,
        plan: &BootTransforms,
        keys: &EvaluationKeys<B>,
    ) -> Result<Ciphertext<B>> {
        self.check_plan(ct, plan)?;
        let mut x = ct.duplicate(self.backend())?;
        for lt in &plan.stc {
            x = self.linear_transform(&x, lt, keys)?;
        }
        Ok(x)
    }

    /// The diagonals of `plan` prepared for CoeffToSlot's input at `cts_level` and
    /// SlotToCoeff's at `stc_level` (each group one level below the previous one).
    pub fn prepare_boot(&self, plan: &BootTransforms, cts_level: usize, stc_level: usize) -> Result<PreparedBoot<B>> {
        let k = self.policy.primes_per_level();
        let chain = |transforms: &[LinearTransform], top: usize| -> Result<Vec<PreparedTransform<B>>> {
            transforms
                .iter()
                .enumerate()
                .map(|(i, lt)| {
                    let level = top.checked_sub(i * k).ok_or(Error::DepthExhausted { level: top, wanted: i * k })?;
                    self.prepare_transform(lt, level)
                })
                .collect()
        };
        Ok(PreparedBoot {
            ring_degree: plan.ring_degree,
            slots: plan.slots,
            cts: chain(&plan.cts, cts_level)?,
            stc: chain(&plan.stc, stc_level)?,
        })
    }

    /// [`Ckks::coeff_to_slot`] with prepared diagonals (the same words); `ct` must be at the
    /// prepared CoeffToSlot level ([`Error::LevelMismatch`]).
    pub fn coeff_to_slot_prepared(
        &self,
        ct: &Ciphertext<B>,
        prepared: &PreparedBoot<B>,
        keys: &EvaluationKeys<B>,
    ) -> Result<Ciphertext<B>> {
        self.check_shape(ct, prepared.ring_degree, prepared.slots)?;
        let mut x = self.subring_trace(ct, keys)?;
        for p in &prepared.cts {
            x = self.linear_transform_prepared(&x, p, keys, Hoisting::Hoisted)?;
        }
        Ok(x)
    }

    /// [`Ckks::slot_to_coeff`] with prepared diagonals (the same words); `ct` must be at the
    /// prepared SlotToCoeff level ([`Error::LevelMismatch`]).
    pub fn slot_to_coeff_prepared(
        &self,
        ct: &Ciphertext<B>,
        prepared: &PreparedBoot<B>,
        keys: &EvaluationKeys<B>,
    ) -> Result<Ciphertext<B>> {
        self.check_shape(ct, prepared.ring_degree, prepared.slots)?;
        let mut x = ct.duplicate(self.backend())?;
        for p in &prepared.stc {
            x = self.linear_transform_prepared(&x, p, keys, Hoisting::Hoisted)?;
        }
        Ok(x)
    }

    /// The rotation and conjugation keys of one CoeffToSlot (input at `cts_level`), the
    /// real/imaginary split of its output, and one SlotToCoeff (input at `stc_level`), each at
    /// the highest level it is used at (for [`crate::rlwe::gen_planned_keys`]; merge with the
    /// plan of the rest of bootstrapping by [`KeyPlan::merge`]). No relinearisation key.
    /// Errors: [`Error::DepthExhausted`] for a budget deeper than the levels given.
    pub fn boot_key_plan(&self, plan: &BootTransforms, cts_level: usize, stc_level: usize) -> Result<KeyPlan> {
        let k = self.policy.primes_per_level();
        let mut key_plan = KeyPlan::default();
        let put = |steps: &[i64], level: usize, out: &mut KeyPlan| {
            for &s in steps {
                let g = self.rotation_element(s);
                let l = out.galois.entry(g).or_insert(level);
                *l = (*l).max(level);
            }
        };
        put(&plan.trace_rotations(), cts_level, &mut key_plan);
        for (transforms, top) in [(&plan.cts, cts_level), (&plan.stc, stc_level)] {
            for (i, lt) in transforms.iter().enumerate() {
                let level = top.checked_sub(i * k).ok_or(Error::DepthExhausted { level: top, wanted: i * k })?;
                put(&lt.rotations(), level, &mut key_plan);
            }
        }
        let after_cts = cts_level
            .checked_sub(plan.cts.len() * k)
            .ok_or(Error::DepthExhausted { level: cts_level, wanted: plan.cts.len() * k })?;
        let conj = key_plan.galois.entry(self.conjugation_element()).or_insert(after_cts);
        *conj = (*conj).max(after_cts);
        Ok(key_plan)
    }

    fn check_plan(&self, ct: &Ciphertext<B>, plan: &BootTransforms) -> Result<()> {
        self.check_shape(ct, plan.ring_degree, plan.slots)
    }

    fn check_shape(&self, ct: &Ciphertext<B>, ring_degree: usize, slots: usize) -> Result<()> {
        let n = self.params().n();
        if ring_degree != n {
            return Err(Error::DimensionMismatch { what: "transform ring degree", expected: n, found: ring_degree });
        }
        if slots != ct.slots {
            return Err(Error::DimensionMismatch { what: "transform slots", expected: ct.slots, found: slots });
        }
        Ok(())
    }

    /// `ct` times `i` (`sign = 1`) or `-i` (`sign = -1`) in every slot: a product with the
    /// monomial `±X^(N/2)` (exact, no level, same scale), since `zeta^(g N/2) = i` for every
    /// slot's `g = 1 mod 4`.
    pub fn mul_by_i(&self, ct: &Ciphertext<B>, sign: i8) -> Result<Ciphertext<B>> {
        let n = self.params().n();
        let mut coeffs = vec![0i128; n];
        // Parameters hold N >= 2, so `N/2` is a coefficient.
        let c = coeffs.get_mut(n / 2).ok_or(Error::InvalidRingDegree {
            n: n as u64,
            min_log: crate::params::MIN_LOG_N,
            max_log: crate::params::MAX_LOG_N,
        })?;
        *c = if sign < 0 { -1 } else { 1 };
        let pt = Plaintext { coeffs, scale: 1.0, slots: ct.slots, level: ct.level(), param_id: self.params().id() };
        self.mul_plain(ct, &pt)
    }

    /// The real and imaginary parts of the slots, doubled: `(w + conj w, -i (w - conj w))` =
    /// `(2 Re w, 2 Im w)`, with one conjugation (key: [`Ckks::conjugation_element`]) and no
    /// level (fold the `1/2` into the CoeffToSlot scalar).
    pub fn split_real_imag(
        &self,
        ct: &Ciphertext<B>,
        keys: &EvaluationKeys<B>,
    ) -> Result<(Ciphertext<B>, Ciphertext<B>)> {
        let conj = self.conjugate(ct, keys)?;
        let re = self.add(ct, &conj)?;
        let im = self.mul_by_i(&self.sub(ct, &conj)?, -1)?;
        Ok((re, im))
    }

    /// `re + i im` (no level): joins what [`Ckks::split_real_imag`] separated. Errors: operands
    /// at different levels or scales.
    pub fn combine_real_imag(&self, re: &Ciphertext<B>, im: &Ciphertext<B>) -> Result<Ciphertext<B>> {
        self.add(re, &self.mul_by_i(im, 1)?)
    }
}
