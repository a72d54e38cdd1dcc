//! Wire format of keys (see [`crate::serial`] for the container).
//!
//! | object | payload |
//! |---|---|
//! | `SecretKey` | `N` as `u32`, then `N` bytes, each `0`, `1` or `0xff` (-1) |
//! | `PublicKey` | seed of `a` (generator `u8` = 1, length `u8` = 32, bytes), residue block of `b` over `Q` |
//! | `RelinKey`, `GaloisKey` | Galois element `u64` (0 for relinearisation), digit count `u32`, seed of the `a_j`, then one residue block of `b_j` over `Q P` per digit |
//!
//! Every key object carries the container's CRC-32C, checked before the payload is parsed (a
//! damaged seed would otherwise regenerate a different, silently wrong key half).
//!
//! The uniform halves of keys are always stored as seeds. On load they are regenerated into
//! backend buffers ([`KeyForm::Expanded`], what `from_bytes` does), or key-switching keys keep
//! only the seed ([`KeyForm::Seeded`], `from_bytes_as`). A loaded secret key draws its future
//! seeds and errors from the operating system.

use super::{CiphertextCore, GaloisKey, KeyDigit, KeySwitchKey, PublicKey, RelinKey, SecretKey};
use crate::backend::Backend;
use crate::error::{Error, Result};
use crate::math::sampling::{self, fresh_seed, Generator, Purpose, Seed, SEED_BYTES};
use crate::poly::{Coeff, Eval, Representation, RnsPoly};
use crate::ring::Basis;
use crate::serial::{
    read_object, read_residues, write_object, write_residues, write_residues_packed, Header, ObjectType, Reader, Writer,
};

/// The in-memory form a loaded key-switching key takes (see [`KeySwitchKey`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum KeyForm {
    /// Every `a_j` regenerated into a backend buffer.
    #[default]
    Expanded,
    /// Only the seed kept; the `a_j` are regenerated where key switching uses them.
    Seeded,
    /// As [`KeyForm::Seeded`], with each `b_j` bit-packed at its primes' widths as it is read
    /// (the `cso+k` form; unpacked inside the key-switching inner product). Loading holds at
    /// most one unpacked `b_j` at a time.
    SeededPacked,
}

/// How a ciphertext is written: one type for every ciphertext writer of BGV and CKKS
/// ([`crate::bgv::Bgv::ciphertext_to_bytes_as`], [`crate::ckks::Ckks::ciphertext_to_bytes_as`]).
/// Every form loads through the same reader.
///
/// ```
/// use wgfhe::rlwe::WireForm;
///
/// assert_eq!(WireForm::default(), WireForm::SEEDED);
/// assert!(WireForm::SEEDED_PACKED.seeded && WireForm::SEEDED_PACKED.packed);
/// assert!(!WireForm::UNSEEDED.seeded);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct WireForm {
    /// A ciphertext that still holds the seed of its `c_1` (a fresh symmetric encryption) is
    /// written as `c_0` and that seed; otherwise, and always when false, every polynomial is
    /// written.
    pub seeded: bool,
    /// Residues bit-packed to `bits(q_i)` bits each (packing mode 1) instead of one `u32` each.
    pub packed: bool,
}

impl WireForm {
    /// Seeded where possible, one word per residue (what `ciphertext_to_bytes` writes).
    pub const SEEDED: Self = Self { seeded: true, packed: false };
    /// Seeded where possible, residues bit-packed.
    pub const SEEDED_PACKED: Self = Self { seeded: true, packed: true };
    /// Every polynomial written, one word per residue.
    pub const UNSEEDED: Self = Self { seeded: false, packed: false };
    /// Every polynomial written, residues bit-packed.
    pub const UNSEEDED_PACKED: Self = Self { seeded: false, packed: true };
}

impl Default for WireForm {
    fn default() -> Self {
        Self::SEEDED
    }
}

/// Reads the `b_j` residue blocks of the digits `indices` (their stream numbers) over `basis`
/// and holds them in `form`: `a_j` regenerated from `seed` for [`KeyForm::Expanded`], each
/// `b_j` packed as soon as it is read for [`KeyForm::SeededPacked`].
pub(crate) fn read_key_digits<B: Backend>(
    backend: &B,
    r: &mut Reader<'_>,
    form: KeyForm,
    (generator, seed): (Generator, &Seed),
    indices: &[usize],
    basis: &Basis,
) -> Result<Vec<KeyDigit<B>>> {
    let n = backend.context().n();
    let moduli = backend.context().moduli_of(basis)?;
    let mut digits = Vec::with_capacity(indices.len());
    for &j in indices {
        let words = read_residues(r, &moduli, n)?;
        let index = u32::try_from(j).map_err(|_| Error::SizeOverflow { what: "digit index" })?;
        let plain = || -> Result<super::KeyPoly<B>> {
            Ok(RnsPoly::<B, Eval>::from_host(backend, &words, basis.clone())?.into())
        };
        // A key of the old generator keeps its a_j in every form (no kernel regenerates them).
        let a = || regenerate(backend, generator, seed, Purpose::KeySwitchA, index, basis.clone());
        let legacy = generator != Generator::CURRENT;
        let (b, a) = match form {
            KeyForm::Expanded => (plain()?, Some(a()?)),
            KeyForm::Seeded => (plain()?, if legacy { Some(a()?) } else { None }),
            // Packed from the bytes just read: one upload, no round trip through the backend.
            KeyForm::SeededPacked => (
                super::KeyPoly::packed_from_host(backend, &words, basis.clone())?,
                if legacy { Some(a()?) } else { None },
            ),
        };
        digits.push(KeyDigit { b, a, index });
    }
    Ok(digits)
}

/// The uniform polynomial `(seed, purpose, index)` over `basis` from `generator`: the
/// backend's own kernel for [`Generator::CURRENT`]; for the old generator of version-1 and
/// version-2 objects, each limb generated on the host ([`sampling::uniform_limb_with`]) and
/// uploaded.
pub(crate) fn regenerate<B: Backend>(
    backend: &B,
    generator: Generator,
    seed: &Seed,
    purpose: Purpose,
    index: u32,
    basis: Basis,
) -> Result<RnsPoly<B, Eval>> {
    if generator == Generator::CURRENT {
        return RnsPoly::<B, Eval>::uniform(backend, seed, purpose, index, basis);
    }
    let ctx = backend.context();
    let n = ctx.n();
    let mut words = vec![0u32; basis.len() * n];
    for (limb, m) in words.chunks_exact_mut(n.max(1)).zip(ctx.moduli_of(&basis)?) {
        sampling::uniform_limb_with(generator, seed, purpose, index, &m, limb)?;
    }
    RnsPoly::<B, Eval>::from_host(backend, &words, basis)
}

/// Reads generator id ([`Generator::from_id`]: 1 in version-1 and version-2 objects, 2 in
/// those written now), seed length and seed.
pub(crate) fn read_seed(r: &mut Reader) -> Result<(Generator, Seed)> {
    let generator = Generator::from_id(r.get_u8()?)?;
    let len = usize::from(r.get_u8()?);
    if len != SEED_BYTES {
        return Err(Error::BadSeedLength { found: len, expected: SEED_BYTES });
    }
    let bytes = r.get_bytes(len)?;
    let mut seed = [0u8; SEED_BYTES];
    seed.copy_from_slice(bytes);
    Ok((generator, seed))
}

/// Writes generator id, seed length and seed.
pub(crate) fn write_seed(w: &mut Writer, generator: Generator, seed: &Seed) {
    w.put_u8(generator.id());
    w.put_u8(SEED_BYTES as u8);
    w.put_bytes(seed);
}

/// [`Error::ParameterMismatch`] or [`Error::SchemeMismatch`] unless the header names the
/// backend's parameters.
pub(crate) fn check_header<B: Backend>(backend: &B, h: &Header) -> Result<()> {
    let params = backend.context().params();
    if h.param_id != params.id() {
        return Err(Error::ParameterMismatch { expected: params.id(), found: h.param_id });
    }
    if h.scheme != params.scheme() {
        return Err(Error::SchemeMismatch { expected: params.scheme().name(), found: h.scheme.name() });
    }
    Ok(())
}

/// Opens a ciphertext object, plain or seeded (told apart by the container's type byte), checks
/// its header against `backend`, and reads the two fields every scheme's ciphertext starts
/// with: the level (at most `max_level`) and the degree (1 or 2). Returns the object type, the
/// reader positioned at the scheme's own fields, the level and the degree.
pub(crate) fn open_ciphertext<'a, B: Backend>(
    backend: &B,
    bytes: &'a [u8],
    max_level: usize,
) -> Result<(ObjectType, Reader<'a>, usize, usize)> {
    let object = match bytes.get(6).copied().map(ObjectType::try_from) {
        Some(Ok(ObjectType::SeededCiphertext)) => ObjectType::SeededCiphertext,
        _ => ObjectType::Ciphertext,
    };
    let (h, payload) = read_object(bytes, object)?;
    check_header(backend, &h)?;
    let mut r = Reader::new(payload);
    let level = r.get_u32()? as usize;
    if level > max_level {
        return Err(Error::LevelOutOfRange { level, max: max_level });
    }
    let degree = usize::from(r.get_u8()?);
    if degree == 0 {
        return Err(Error::CiphertextDegree { degree, expected: 1 });
    }
    if degree > 2 {
        return Err(Error::CountTooLarge { what: "ciphertext degree", found: degree as u64, limit: 2 });
    }
    Ok((object, r, level, degree))
}

/// Writes a ciphertext core's polynomials after its scheme's own fields, as BGV and CKKS lay
/// them out: the representation tag (Eval), then the seed and `c_0` if the core is seeded and
/// `seeded` allows it, else every polynomial; residues bit-packed to `bits(q_i)` bits each if
/// `packed`. Returns the object type the payload belongs in.
pub(crate) fn write_core_polys<B: Backend>(
    w: &mut Writer,
    backend: &B,
    core: &CiphertextCore<B>,
    WireForm { seeded, packed }: WireForm,
) -> Result<ObjectType> {
    let ctx = backend.context();
    let moduli = ctx.moduli_of(&ctx.q_basis(core.level())?)?;
    let n = ctx.n();
    let put = |w: &mut Writer, data: &[u32]| -> Result<()> {
        if packed {
            write_residues_packed(w, data, &moduli, n)
        } else {
            write_residues(w, data);
            Ok(())
        }
    };
    w.put_u8(Eval::TAG);
    Ok(match (core.seed().filter(|_| seeded), core.polys()) {
        (Some(seed), [c0, _]) => {
            // A core keeps a seed only for the current generator (old ones are expanded at load).
            write_seed(w, Generator::CURRENT, seed);
            put(w, &c0.to_host(backend)?)?;
            ObjectType::SeededCiphertext
        }
        _ => {
            for p in core.polys() {
                put(w, &p.to_host(backend)?)?;
            }
            ObjectType::Ciphertext
        }
    })
}

/// Reads what [`write_core_polys`] wrote for a ciphertext of `degree` (already checked to be 1
/// or 2) at `level` (already checked against the chain) in an `object` payload: checks the
/// representation tag, the generator and seed (seeded objects are degree 1 only) and every
/// residue, regenerates a seeded `c_1`, and ends the payload.
pub(crate) fn read_core<B: Backend>(
    mut r: Reader<'_>,
    backend: &B,
    object: ObjectType,
    level: usize,
    degree: usize,
    param_id: u64,
) -> Result<CiphertextCore<B>> {
    let tag = r.get_u8()?;
    if tag != Eval::TAG {
        return Err(Error::InvalidRepresentation { tag });
    }
    let ctx = backend.context();
    let basis = ctx.q_basis(level)?;
    let moduli = ctx.moduli_of(&basis)?;
    let n = ctx.n();
    let mut seed = None;
    let mut polys = Vec::with_capacity(degree + 1);
    if object == ObjectType::SeededCiphertext {
        if degree != 1 {
            return Err(Error::SeedNotAllowed { reason: "only degree-1 ciphertexts can be seeded" });
        }
        let (generator, s) = read_seed(&mut r)?;
        let c0 = read_residues(&mut r, &moduli, n)?;
        polys.push(RnsPoly::<B, Eval>::from_host(backend, &c0, basis.clone())?);
        // `c_1` is the seed's stream: the core may keep the seed if it is the current
        // generator's; an old object's `c_1` is expanded and its seed dropped.
        polys.push(regenerate(backend, generator, &s, Purpose::CiphertextA, 0, basis)?);
        seed = (generator == Generator::CURRENT).then_some(s);
    } else {
        for _ in 0..=degree {
            let c = read_residues(&mut r, &moduli, n)?;
            polys.push(RnsPoly::<B, Eval>::from_host(backend, &c, basis.clone())?);
        }
    }
    r.finish()?;
    CiphertextCore::from_parts(polys, seed, param_id)
}

fn object<B: Backend>(backend: &B, kind: ObjectType, w: &Writer) -> Vec<u8> {
    let params = backend.context().params();
    write_object(kind, params.scheme(), params.id(), w.as_bytes())
}

impl<B: Backend> SecretKey<B> {
    /// Serialises the secret (handle the bytes as the secret they are).
    pub fn to_bytes(&self, backend: &B) -> Result<Vec<u8>> {
        self.check_params(backend)?;
        let mut w = Writer::new();
        w.put_u32(u32::try_from(self.coeffs.len()).map_err(|_| Error::SizeOverflow { what: "secret length" })?);
        for &c in &self.coeffs {
            w.put_u8(c as u8);
        }
        Ok(object(backend, ObjectType::SecretKey, &w))
    }

    /// Loads a secret key; its future seeds and errors come from the operating system.
    pub fn from_bytes(backend: &B, bytes: &[u8]) -> Result<Self> {
        let (h, payload) = read_object(bytes, ObjectType::SecretKey)?;
        check_header(backend, &h)?;
        let ctx = backend.context();
        let mut r = Reader::new(payload);
        let n = r.get_u32()? as usize;
        if n != ctx.n() {
            return Err(Error::KeyDimensions { reason: "secret length differs from N" });
        }
        let raw = r.get_bytes(n)?;
        r.finish()?;
        let coeffs = raw
            .iter()
            .map(|&b| match b {
                0 => Ok(0i8),
                1 => Ok(1),
                0xff => Ok(-1),
                _ => Err(Error::InvalidField { field: "secret coefficient", reason: "not in {-1, 0, 1}" }),
            })
            .collect::<Result<Vec<i8>>>()?;
        let wide: Vec<i64> = coeffs.iter().map(|&c| i64::from(c)).collect();
        let eval =
            RnsPoly::<B, Coeff>::from_signed(backend, &wide, ctx.qp_basis(ctx.q_count() - 1)?)?.into_eval(backend)?;
        Ok(SecretKey { coeffs, eval, param_id: ctx.params().id(), state: SecretKey::<B>::new_state(&fresh_seed()?) })
    }
}

impl<B: Backend> PublicKey<B> {
    /// Serialises the public key (`a` as its seed).
    pub fn to_bytes(&self, backend: &B) -> Result<Vec<u8>> {
        super::check_param_id(backend, self.param_id)?;
        let mut w = Writer::new();
        write_seed(&mut w, self.generator, &self.seed);
        write_residues(&mut w, &self.b.to_host(backend)?);
        Ok(object(backend, ObjectType::PublicKey, &w))
    }

    /// Loads a public key.
    pub fn from_bytes(backend: &B, bytes: &[u8]) -> Result<Self> {
        let (h, payload) = read_object(bytes, ObjectType::PublicKey)?;
        check_header(backend, &h)?;
        let ctx = backend.context();
        let basis = ctx.q_basis(ctx.q_count() - 1)?;
        let mut r = Reader::new(payload);
        let (generator, seed) = read_seed(&mut r)?;
        let b = read_residues(&mut r, &ctx.moduli_of(&basis)?, ctx.n())?;
        r.finish()?;
        let b = RnsPoly::<B, Eval>::from_host(backend, &b, basis.clone())?;
        let a = regenerate(backend, generator, &seed, Purpose::PublicKeyA, 0, basis)?;
        Ok(PublicKey { b, a, seed, generator, param_id: ctx.params().id() })
    }
}

impl<B: Backend> KeySwitchKey<B> {
    fn write(&self, backend: &B, w: &mut Writer, galois_element: u64) -> Result<()> {
        super::check_param_id(backend, self.param_id)?;
        w.put_u64(galois_element);
        w.put_u32(u32::try_from(self.digits.len()).map_err(|_| Error::SizeOverflow { what: "digit count" })?);
        write_seed(w, self.generator, &self.seed);
        let ctx = backend.context();
        if self.basis()? != &ctx.qp_basis(ctx.q_count() - 1)? {
            return Err(Error::KeyDimensions { reason: "only a key over the full Q P has a wire form" });
        }
        for d in &self.digits {
            write_residues(w, &d.b.to_host(backend)?);
        }
        Ok(())
    }

    fn read(backend: &B, r: &mut Reader, form: KeyForm) -> Result<(Self, u64)> {
        let ctx = backend.context();
        let params = ctx.params();
        let galois_element = r.get_u64()?;
        let count = r.get_u32()? as usize;
        // The stream indices key generation used: the numbers of the non-empty digits.
        let indices: Vec<usize> = (0..params.dnum()).filter(|&j| !params.digit_range(j).is_empty()).collect();
        let want = indices.len();
        if count > want {
            return Err(Error::CountTooLarge { what: "key digits", found: count as u64, limit: want as u64 });
        }
        if count != want {
            return Err(Error::KeyDimensions { reason: "digit count differs from the parameters" });
        }
        let (generator, seed) = read_seed(r)?;
        let digits =
            read_key_digits(backend, r, form, (generator, &seed), &indices, &ctx.qp_basis(ctx.q_count() - 1)?)?;
        Ok((Self { digits, seed, generator, param_id: params.id() }, galois_element))
    }
}

impl<B: Backend> RelinKey<B> {
    /// Serialises the relinearisation key (`a_j` as one seed).
    pub fn to_bytes(&self, backend: &B) -> Result<Vec<u8>> {
        let mut w = Writer::new();
        self.0.write(backend, &mut w, 0)?;
        Ok(object(backend, ObjectType::RelinKey, &w))
    }

    /// Loads a relinearisation key in the expanded form.
    pub fn from_bytes(backend: &B, bytes: &[u8]) -> Result<Self> {
        Self::from_bytes_as(backend, bytes, KeyForm::Expanded)
    }

    /// Loads a relinearisation key in the given form.
    pub fn from_bytes_as(backend: &B, bytes: &[u8], form: KeyForm) -> Result<Self> {
        let (h, payload) = read_object(bytes, ObjectType::RelinKey)?;
        check_header(backend, &h)?;
        let mut r = Reader::new(payload);
        let (key, g) = KeySwitchKey::read(backend, &mut r, form)?;
        r.finish()?;
        if g != 0 {
            return Err(Error::InvalidField { field: "galois element", reason: "must be 0 in a relinearisation key" });
        }
        Ok(RelinKey(key))
    }
}

impl<B: Backend> GaloisKey<B> {
    /// Serialises the Galois key (`a_j` as one seed).
    pub fn to_bytes(&self, backend: &B) -> Result<Vec<u8>> {
        let mut w = Writer::new();
        self.key.write(backend, &mut w, self.galois_element as u64)?;
        Ok(object(backend, ObjectType::GaloisKey, &w))
    }

    /// Loads a Galois key in the expanded form.
    pub fn from_bytes(backend: &B, bytes: &[u8]) -> Result<Self> {
        Self::from_bytes_as(backend, bytes, KeyForm::Expanded)
    }

    /// Loads a Galois key in the given form.
    pub fn from_bytes_as(backend: &B, bytes: &[u8], form: KeyForm) -> Result<Self> {
        let (h, payload) = read_object(bytes, ObjectType::GaloisKey)?;
        check_header(backend, &h)?;
        let mut r = Reader::new(payload);
        let (key, g) = KeySwitchKey::read(backend, &mut r, form)?;
        r.finish()?;
        let two_n = 2 * backend.context().n() as u64;
        if g % 2 == 0 || g >= two_n {
            return Err(Error::InvalidField { field: "galois element", reason: "must be odd and below 2N" });
        }
        Ok(GaloisKey { galois_element: g as usize, key })
    }
}
