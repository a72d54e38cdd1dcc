//! The BGV instance of [`Ops`]: ciphertext nodes with their depths, lazy relinearisation,
//! the level and constant caches, and the peak count of live ciphertexts.

use super::*;

/// A ciphertext during the evaluation, with its depth and an id for the level and
/// relinearisation caches.
pub(crate) struct Node<B: Backend> {
    pub ct: Ciphertext<B>,
    pub depth: usize,
    id: usize,
    _live: Live,
}

/// Counts the nodes alive: one token per node, given back when the node (or what is left of
/// it after its ciphertext is moved out) is dropped.
pub(super) struct Live(Rc<Cell<usize>>);

impl Live {
    fn new(count: &Rc<Cell<usize>>) -> Self {
        count.set(count.get() + 1);
        Self(Rc::clone(count))
    }
}

impl Drop for Live {
    fn drop(&mut self) {
        self.0.set(self.0.get().saturating_sub(1));
    }
}

/// The evaluator's operations on BGV ciphertexts.
pub(crate) struct BgvOps<'a, B: Backend> {
    bgv: &'a Bgv<B>,
    keys: &'a EvaluationKeys<B>,
    t: Modulus,
    next_id: usize,
    /// HMULTs (tensor products) done so far.
    pub hmults: usize,
    /// Relinearisations done so far.
    pub relins: usize,
    /// Powers switched down to a lower level, by (node id, level, whether the source was the
    /// relinearised form).
    switched: HashMap<(usize, usize, bool), Ciphertext<B>>,
    /// Degree-2 nodes relinearised (after their automatic switch), by node id.
    relinearised: HashMap<usize, Ciphertext<B>>,
    /// Constant plaintexts by value.
    constants: HashMap<u32, Plaintext>,
    /// Nodes alive (the input, powers, pending products, results).
    live: Rc<Cell<usize>>,
    /// The most ciphertexts held at once: nodes alive plus cached switched and relinearised
    /// forms (the temporaries inside one operation not counted).
    pub peak_ciphertexts: usize,
    /// Whether powers are released after their last use and collapsed to one level's copy
    /// (false: every power and its switched copies are held to the end, as before).
    pub release_powers: bool,
}

impl<'a, B: Backend> BgvOps<'a, B> {
    pub(crate) fn new(bgv: &'a Bgv<B>, keys: &'a EvaluationKeys<B>) -> Result<Self> {
        let t = Modulus::new(u64::from(bgv.plaintext_modulus()))?;
        Ok(Self {
            bgv,
            keys,
            t,
            next_id: 0,
            hmults: 0,
            relins: 0,
            switched: HashMap::new(),
            relinearised: HashMap::new(),
            constants: HashMap::new(),
            live: Rc::new(Cell::new(0)),
            peak_ciphertexts: 0,
            release_powers: true,
        })
    }

    pub(crate) fn node(&mut self, ct: Ciphertext<B>, depth: usize) -> Node<B> {
        self.next_id += 1;
        let node = Node { ct, depth, id: self.next_id, _live: Live::new(&self.live) };
        self.note_peak();
        node
    }

    /// Ciphertexts held now: nodes alive and cached forms.
    pub(crate) fn held(&self) -> usize {
        self.live.get() + self.switched.len() + self.relinearised.len()
    }

    fn note_peak(&mut self) {
        self.peak_ciphertexts = self.peak_ciphertexts.max(self.held());
    }

    /// The constant plaintext `c` in every slot (cached).
    pub(crate) fn constant(&mut self, c: u32) -> Result<&Plaintext> {
        Ok(match self.constants.entry(c) {
            Entry::Occupied(e) => e.into_mut(),
            Entry::Vacant(e) => {
                let slots = self.bgv.encoder().slots();
                e.insert(self.bgv.encoder().encode(&vec![u64::from(c); slots])?)
            }
        })
    }

    /// Relinearises a degree-2 node once (switched down as far as its noise allows first, as a
    /// product's operand would be) and caches the result.
    fn relinearise(&mut self, node: &Node<B>) -> Result<()> {
        if node.ct.degree() < 2 || self.relinearised.contains_key(&node.id) {
            return Ok(());
        }
        // Switched down only as far as the degree-2 rounding floor allows, relinearised, then
        // down again to the degree-1 floor (the noise an eager relinearisation would leave).
        let low = self.bgv.mod_switch_auto(&node.ct)?;
        let ct = self.bgv.mod_switch_auto(&self.bgv.relinearize(&low, self.keys)?)?;
        self.relins += 1;
        self.relinearised.insert(node.id, ct);
        self.note_peak();
        Ok(())
    }

    /// Drops the cached forms of node `id` (a node consumed or released: every intermediate
    /// product of a table would otherwise keep its relinearised copy until the whole set is
    /// evaluated, hundreds of ciphertexts for a large set).
    fn forget(&mut self, id: usize) {
        self.relinearised.remove(&id);
        self.switched.retain(|&(node, _, _), _| node != id);
    }

    /// `node` of degree 1: itself or its cached relinearisation.
    fn operand<'s>(&'s self, node: &'s Node<B>) -> &'s Ciphertext<B> {
        self.relinearised.get(&node.id).unwrap_or(&node.ct)
    }

    /// `node` (its relinearised form if there is one) at `level` (switched once per level and
    /// cached).
    fn at_level<'s>(&'s mut self, node: &'s Node<B>, level: usize) -> Result<&'s Ciphertext<B>> {
        let (source, relinearised) = match self.relinearised.get(&node.id) {
            Some(ct) => (ct, true),
            None => (&node.ct, false),
        };
        if source.level() == level {
            return Ok(source);
        }
        let key = (node.id, level, relinearised);
        if !self.switched.contains_key(&key) {
            let ct = self.bgv.mod_switch_to_level(source, level)?;
            self.switched.insert(key, ct);
            let held = self.live.get() + self.switched.len() + self.relinearised.len();
            self.peak_ciphertexts = self.peak_ciphertexts.max(held);
        }
        self.switched.get(&key).ok_or(internal("switched form missing"))
    }

    /// `prod_{level < i <= from} q_i^-1 mod t`: what switching from `from` down to `level`
    /// multiplies into the correction factor.
    fn switch_factor(&self, from: usize, level: usize) -> Result<u32> {
        let low = self.bgv.level_correction(level)?;
        let high = self.bgv.level_correction(from)?;
        let inv = self.inv(high)?;
        Ok(self.t.mul(low, inv))
    }

    fn inv(&self, a: u32) -> Result<u32> {
        self.t.inv(a).ok_or(Error::InvalidCorrectionFactor { factor: u64::from(a), t: u64::from(self.t.value()) })
    }
}

/// The component-wise sum of two polynomial vectors of possibly different lengths (a degree-1
/// and a degree-2 ciphertext: the missing `c_2` is zero).
pub(super) fn add_components<B: Backend>(
    backend: &B,
    a: Vec<RnsPoly<B, Eval>>,
    b: Vec<RnsPoly<B, Eval>>,
) -> Result<Vec<RnsPoly<B, Eval>>> {
    let (long, short) = if a.len() >= b.len() { (a, b) } else { (b, a) };
    let mut out = Vec::with_capacity(long.len());
    let mut short = short.into_iter();
    for p in long {
        out.push(match short.next() {
            Some(q) => p.add(backend, &q)?,
            None => p,
        });
    }
    Ok(out)
}

impl<B: Backend> Ops for BgvOps<'_, B> {
    type V = Node<B>;

    fn mul(&mut self, a: &Node<B>, b: &Node<B>) -> Result<Node<B>> {
        self.relinearise(a)?;
        self.relinearise(b)?;
        let ct = self.bgv.switch_and_tensor(self.operand(a), self.operand(b))?;
        self.hmults += 1;
        Ok(self.node(ct, a.depth.max(b.depth) + 1))
    }

    fn lin(&mut self, terms: &[(u32, &Node<B>)], constant: u32, hint: Option<&Node<B>>) -> Result<Node<B>> {
        // Terms enter in their degree-1 form where they have been relinearised.
        let min_level =
            terms.iter().map(|(_, n)| self.operand(n).level()).min().ok_or(internal("empty combination"))?;
        let depth = terms.iter().map(|(_, n)| n.depth).max().unwrap_or(0);
        // The level and correction factor of the result: the hint's (switched down to the
        // terms' level if they are lower), else the first term's at the terms' level.
        let (level, target) = match (hint, terms.first()) {
            (Some(h), _) => {
                let level = min_level.min(h.ct.level());
                (level, self.t.mul(h.ct.correction, self.switch_factor(h.ct.level(), level)?))
            }
            (None, Some((_, n))) => {
                let first = self.operand(n);
                (min_level, self.t.mul(first.correction, self.switch_factor(first.level(), min_level)?))
            }
            (None, None) => return Err(internal("empty combination")),
        };
        // The combination is formed at the terms' common level and the one result is switched
        // down to `level`, rather than every term: caching each power at every level a block
        // is formed at held hundreds of ciphertexts (24 GB for one digit-extraction set at
        // N = 2^17), and the coefficients (up to t/2) then multiply the switched terms'
        // rounding noise instead of being divided by the dropped primes.
        let form = min_level;
        let form_target =
            if form == level { target } else { self.t.mul(target, self.inv(self.switch_factor(form, level)?)?) };
        let bgv = self.bgv;
        let t = self.t;
        // The running sum: its polynomials, noise and the terms' parameter id.
        let mut acc = None;
        for &(c, node) in terms {
            let ct = self.at_level(node, form)?;
            let inv = t
                .inv(ct.correction)
                .ok_or(Error::InvalidCorrectionFactor { factor: u64::from(ct.correction), t: u64::from(t.value()) })?;
            // c * x^i with factor f_i -> c * T / f_i times it carries factor T.
            let k = t.center(t.mul(t.mul(c, form_target), inv));
            let noise = ct.noise_log2 + (k.unsigned_abs() as f64).max(1.0).log2();
            let param_id = ct.param_id();
            let scaled = ct.core.polys().iter().map(|p| p.mul_int(bgv.backend(), k)).collect::<Result<Vec<_>>>()?;
            acc = Some(match acc {
                None => (scaled, noise, param_id),
                Some((sum, n, _)) => (add_components(bgv.backend(), sum, scaled)?, log2_add(n, noise), param_id),
            });
        }
        let (polys, noise, param_id) = acc.ok_or(internal("empty combination"))?;
        self.bgv.check_noise(noise, form)?;
        let formed = Ciphertext {
            core: CiphertextCore::from_parts(polys, None, param_id)?,
            correction: form_target,
            noise_log2: noise,
        };
        let mut ct = if form == level { formed } else { bgv.mod_switch_to_level(&formed, level)? };
        if constant != 0 {
            let pt = self.constant(constant)?;
            ct = bgv.add_plain(&ct, pt)?;
        }
        Ok(self.node(ct, depth))
    }

    fn add(&mut self, a: Node<B>, b: Node<B>) -> Result<Node<B>> {
        self.forget(a.id);
        self.forget(b.id);
        let level = a.ct.level().min(b.ct.level());
        let a_ct = if a.ct.level() == level { a.ct } else { self.bgv.mod_switch_to_level(&a.ct, level)? };
        let b_ct = if b.ct.level() == level { b.ct } else { self.bgv.mod_switch_to_level(&b.ct, level)? };
        let ct = self.bgv.add(&a_ct, &b_ct)?;
        Ok(self.node(ct, a.depth.max(b.depth)))
    }

    fn add_const(&mut self, a: Node<B>, c: u32) -> Result<Node<B>> {
        self.forget(a.id);
        let bgv = self.bgv;
        let pt = self.constant(c)?;
        let ct = bgv.add_plain(&a.ct, pt)?;
        Ok(self.node(ct, a.depth))
    }

    fn finish(&mut self, v: Node<B>) -> Result<Node<B>> {
        if v.ct.degree() < 2 {
            return Ok(v);
        }
        self.relinearise(&v)?;
        let ct = self.relinearised.remove(&v.id).ok_or(internal("relinearisation missing"))?;
        self.forget(v.id);
        Ok(self.node(ct, v.depth))
    }

    fn release(&mut self, v: Node<B>) {
        self.forget(v.id);
    }

    fn settle(&mut self, v: &mut Node<B>) {
        if let Some(ct) = self.relinearised.remove(&v.id) {
            v.ct = ct;
            self.forget(v.id);
        }
    }

    fn tracks_powers(&self) -> bool {
        self.release_powers
    }

    fn level(&self, v: &Node<B>) -> usize {
        self.operand(v).level()
    }

    fn collapse(&mut self, v: &mut Node<B>, level: usize) -> Result<()> {
        // The very copy `at_level` would make (or has made) for the combinations at `level`.
        let key = (v.id, level, self.relinearised.contains_key(&v.id));
        let ct = match self.switched.remove(&key) {
            Some(ct) => ct,
            None => self.bgv.mod_switch_to_level(self.operand(v), level)?,
        };
        self.forget(v.id);
        v.ct = ct;
        Ok(())
    }
}
