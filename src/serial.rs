//! The versioned binary wire format.
//!
//! Every object is a 28-byte header followed by a payload, all integers little-endian:
//!
//! | offset | size | field |
//! |---|---|---|
//! | 0 | 4 | magic `b"WGFH"` |
//! | 4 | 2 | format version (`u16`, currently 3, [`FORMAT_VERSION`]) |
//! | 6 | 1 | object type ([`ObjectType`] tag) |
//! | 7 | 1 | scheme ([`Scheme::tag`]) |
//! | 8 | 8 | parameter id (`u64`, see [`crate::params::Parameters::id`]) |
//! | 16 | 8 | payload length in bytes (`u64`), equal to the number of bytes that follow the header |
//! | 24 | 4 | checksum (`u32`): CRC-32C of header bytes `0..24` followed by the whole payload |
//!
//! # Integrity check
//!
//! [`read_object`] checks the magic, the version and the payload length, then recomputes the
//! checksum over bytes `0..24` and the payload and compares it with the stored one
//! ([`Error::Checksum`]) before it parses anything else: the object type, scheme and parameter
//! id are covered too, so every change to them, to the checksum field or to the payload is a
//! checksum error, while a change to the magic, version or length fields is
//! [`Error::BadMagic`], [`Error::UnsupportedVersion`] or [`Error::LengthMismatch`] (a version
//! changed to 1 reads the length field against a 24-byte header and fails the length check).
//!
//! The checksum is CRC-32C (Castagnoli, the `crc32c` crate: SSE4.2 / ARMv8 CRC instructions
//! with a software fallback, several GB/s, so hashing a multi-megabyte key or ciphertext costs a
//! fraction of parsing it). A CRC was chosen over a hash for its guarantees: CRC-32C detects
//! every single-bit and single-byte error, every odd number of flipped bits, and every burst of
//! up to 32 bits, whatever the object's size, and any three flipped bits in objects up to
//! 2^31 bits (256 MiB); CRC-32/IEEE (`crc32fast`) guarantees the same for bursts but catches
//! every three-bit error only up to about 11 KiB, and `xxh3` or BLAKE3 give no burst guarantee
//! at all (only a 2^-64 or 2^-256 chance of a miss, at a higher cost for BLAKE3). Any other
//! damage slips through with probability about 2^-32.
//!
//! The checksum is **not** authentication. It detects accidental damage (storage, transfer,
//! truncated or spliced files); anyone can change an object and recompute it
//! ([`update_checksum`] does exactly that), and FHE ciphertexts are malleable by design: a
//! ciphertext with a valid checksum may still be one an adversary computed. Authenticate
//! objects with a MAC or signature at the application layer where that matters.
//!
//! # Version 1
//!
//! Version 1 objects (written before the checksum existed) have the 24-byte header above without
//! the checksum field ([`HEADER_LEN_V1`]). They still load, **without any integrity check**:
//! every other validation applies, and the [`Header::checksum`] that [`read_object`] returns is
//! `None` for them (the library has no warning channel; callers who want to refuse unchecked
//! objects test that field, or [`Header::version`]). Writers always emit version 3, whose header is version 2's; version 3 differs only in that its seeds name generator 2 (see `math::sampling::Generator`).
//!
//! Payloads are written with [`Writer`] and read with [`Reader`], whose every read is bounds
//! checked ([`Error::Truncated`]). Blocks of RNS residues (limb-major `[limb][N]` `u32`) are
//! written by [`write_residues`]: one packing-mode byte (0 = plain `u32` little-endian words),
//! then the words. Readers check sizes before allocating and check every residue against its
//! modulus, so hostile input yields a typed error, never a panic or a huge allocation.
//!
//! # Example
//!
//! The header of a BGV ciphertext, field by field, and the round trip (CPU backend, an
//! explicitly insecure `N = 2^10` ring):
//!
//! ```
//! use wgfhe::bgv::Bgv;
//! use wgfhe::params::{self, TestRing};
//! use wgfhe::serial::{ObjectType, Scheme, HEADER_LEN};
//!
//! let p = params::insecure_test_bgv(TestRing { log_n: 10, q_primes: 3, p_primes: 1, dnum: 3 }, 65537)?;
//! let bgv = Bgv::cpu(&p)?;
//! let sk = bgv.gen_secret_key_from_seed(&[3; 32])?;
//! let ct = bgv.encrypt_symmetric(&sk, &bgv.encoder().encode(&[7, 8, 9])?)?;
//!
//! let bytes = bgv.ciphertext_to_bytes_unseeded(&ct)?;
//! assert_eq!(&bytes[0..4], b"WGFH");
//! assert_eq!(u16::from_le_bytes(bytes[4..6].try_into()?), 3);
//! assert_eq!(bytes[6], ObjectType::Ciphertext.tag());
//! assert_eq!(bytes[7], Scheme::Bgv.tag());
//! assert_eq!(u64::from_le_bytes(bytes[8..16].try_into()?), p.id());
//! assert_eq!(u64::from_le_bytes(bytes[16..24].try_into()?), (bytes.len() - HEADER_LEN) as u64);
//! let crc = crc32c::crc32c_append(crc32c::crc32c(&bytes[..24]), &bytes[HEADER_LEN..]);
//! assert_eq!(u32::from_le_bytes(bytes[24..28].try_into()?), crc);
//! // The payload holds both polynomials: 3 limbs of 1024 u32 residues each.
//! assert!(bytes.len() - HEADER_LEN >= 2 * 3 * 1024 * 4);
//!
//! // A fresh symmetric encryption is written with the seed of c_1 in place of c_1.
//! let seeded = bgv.ciphertext_to_bytes(&ct)?;
//! assert_eq!(seeded[6], ObjectType::SeededCiphertext.tag());
//! assert!(seeded.len() < bytes.len() / 2 + 128);
//! for b in [&bytes, &seeded] {
//!     let back = bgv.ciphertext_from_bytes(b)?;
//!     assert_eq!(bgv.encoder().decode(&bgv.decrypt(&sk, &back)?)?[..4], [7, 8, 9, 0]);
//! }
//! // Damaged input is a typed error.
//! assert!(bgv.ciphertext_from_bytes(&bytes[..bytes.len() - 1]).is_err());
//! let mut bad_magic = bytes.clone();
//! bad_magic[0] ^= 1;
//! assert!(bgv.ciphertext_from_bytes(&bad_magic).is_err());
//! // Any damaged payload byte fails the checksum before anything is parsed.
//! let mut flipped = bytes.clone();
//! flipped[HEADER_LEN + 100] ^= 0x10;
//! assert!(matches!(bgv.ciphertext_from_bytes(&flipped), Err(wgfhe::Error::Checksum { .. })));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::math::zq::Modulus;

/// The homomorphic encryption scheme.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Scheme {
    /// Brakerski-Gentry-Vaikuntanathan: exact arithmetic modulo a plaintext modulus `t`.
    Bgv,
    /// Cheon-Kim-Kim-Song: approximate arithmetic on complex numbers.
    Ckks,
}

impl Scheme {
    /// Wire tag: 1 = BGV, 2 = CKKS.
    #[must_use]
    pub const fn tag(self) -> u8 {
        match self {
            Self::Bgv => 1,
            Self::Ckks => 2,
        }
    }

    /// Parses a wire tag ([`Error::InvalidField`] for an unknown one).
    pub fn from_tag(tag: u8) -> Result<Self> {
        match tag {
            1 => Ok(Self::Bgv),
            2 => Ok(Self::Ckks),
            _ => Err(Error::InvalidField { field: "scheme", reason: "unknown scheme tag" }),
        }
    }

    /// Display name, `"BGV"` or `"CKKS"`.
    #[must_use]
    pub const fn name(self) -> &'static str {
        match self {
            Self::Bgv => "BGV",
            Self::Ckks => "CKKS",
        }
    }
}

/// Magic bytes opening every object.
pub const MAGIC: [u8; 4] = *b"WGFH";
/// Current format version (3: seeds name generator 2, `math::sampling::Generator`; the header
/// is version 2's, with its CRC-32C).
pub const FORMAT_VERSION: u16 = 3;
/// Format version 2: the header of version 3, seeds of the old generator (id 1) only; still
/// read (their uniform halves are regenerated with the old generator at load).
pub const FORMAT_VERSION_V2: u16 = 2;
/// The previous format version (no checksum), still read.
pub const FORMAT_VERSION_V1: u16 = 1;
/// Length of the object header in bytes (current version).
pub const HEADER_LEN: usize = 28;
/// Length of a version-1 header in bytes (no checksum field).
pub const HEADER_LEN_V1: usize = 24;
/// Bytes of the header that the checksum covers (all but the checksum field itself).
const CHECKED_HEADER_LEN: usize = 24;
/// Packing mode of residue blocks: plain `u32` little-endian words.
pub const PACKING_PLAIN_U32: u8 = 0;
/// Packing mode of residue blocks: each limb's residues packed to `bits(q)` bits each,
/// least-significant bit first, the limb's bit stream padded with zero bits to a whole byte.
pub const PACKING_BITS: u8 = 1;

/// Type of a serialized object.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum ObjectType {
    /// A parameter set.
    Parameters = 1,
    /// A secret key.
    SecretKey = 2,
    /// A public key.
    PublicKey = 3,
    /// A relinearisation key.
    RelinKey = 4,
    /// One Galois key.
    GaloisKey = 5,
    /// A plaintext.
    Plaintext = 6,
    /// A ciphertext.
    Ciphertext = 7,
    /// A ciphertext whose uniform part is replaced by a seed.
    SeededCiphertext = 8,
    /// A set of evaluation keys: a relinearisation key and Galois keys (`rlwe::EvaluationKeys`).
    GaloisKeySet = 9,
    /// The keys of a CKKS bootstrapping: evaluation keys at their levels and the sparse-secret
    /// switching keys (`ckks::BootKeys`).
    BootKeys = 10,
}

impl ObjectType {
    /// The wire tag.
    #[must_use]
    pub const fn tag(self) -> u8 {
        self as u8
    }

    /// Display name (used in [`Error::ObjectTypeMismatch`]).
    #[must_use]
    pub const fn name(self) -> &'static str {
        match self {
            Self::Parameters => "Parameters",
            Self::SecretKey => "SecretKey",
            Self::PublicKey => "PublicKey",
            Self::RelinKey => "RelinKey",
            Self::GaloisKey => "GaloisKey",
            Self::Plaintext => "Plaintext",
            Self::Ciphertext => "Ciphertext",
            Self::SeededCiphertext => "SeededCiphertext",
            Self::GaloisKeySet => "GaloisKeySet",
            Self::BootKeys => "BootKeys",
        }
    }
}

impl TryFrom<u8> for ObjectType {
    type Error = Error;

    /// Parses a wire tag ([`Error::UnknownObjectType`] outside 1..=10).
    fn try_from(tag: u8) -> Result<Self> {
        Ok(match tag {
            1 => Self::Parameters,
            2 => Self::SecretKey,
            3 => Self::PublicKey,
            4 => Self::RelinKey,
            5 => Self::GaloisKey,
            6 => Self::Plaintext,
            7 => Self::Ciphertext,
            8 => Self::SeededCiphertext,
            9 => Self::GaloisKeySet,
            10 => Self::BootKeys,
            _ => return Err(Error::UnknownObjectType { tag }),
        })
    }
}

/// A parsed object header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Header {
    /// Format version: [`FORMAT_VERSION`], or [`FORMAT_VERSION_V1`] for an old object.
    pub version: u16,
    /// The verified checksum; `None` for a version-1 object, which was loaded unchecked.
    pub checksum: Option<u32>,
    /// Object type.
    pub object: ObjectType,
    /// Scheme of the parameters the object belongs to.
    pub scheme: Scheme,
    /// Id of those parameters.
    pub param_id: u64,
    /// Payload length in bytes.
    pub payload_len: u64,
}

/// Growable little-endian byte writer.
#[derive(Clone, Debug, Default)]
pub struct Writer {
    buf: Vec<u8>,
}

impl Writer {
    /// An empty writer.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// An empty writer with room for `capacity` bytes.
    #[must_use]
    pub fn with_capacity(capacity: usize) -> Self {
        Self { buf: Vec::with_capacity(capacity) }
    }

    /// Appends one byte.
    pub fn put_u8(&mut self, x: u8) {
        self.buf.push(x);
    }

    /// Appends a `u16`, little-endian.
    pub fn put_u16(&mut self, x: u16) {
        self.buf.extend_from_slice(&x.to_le_bytes());
    }

    /// Appends a `u32`, little-endian.
    pub fn put_u32(&mut self, x: u32) {
        self.buf.extend_from_slice(&x.to_le_bytes());
    }

    /// Appends a `u64`, little-endian.
    pub fn put_u64(&mut self, x: u64) {
        self.buf.extend_from_slice(&x.to_le_bytes());
    }

    /// Appends an `f64` as its IEEE-754 bits, little-endian.
    pub fn put_f64(&mut self, x: f64) {
        self.put_u64(x.to_bits());
    }

    /// Appends raw bytes (no length prefix).
    pub fn put_bytes(&mut self, bytes: &[u8]) {
        self.buf.extend_from_slice(bytes);
    }

    /// Appends a residue block: packing mode 0, then every word as `u32` little-endian (no
    /// length prefix: the reader knows limbs and N from the parameters).
    pub fn put_residues(&mut self, data: &[u32]) {
        self.buf.reserve(1 + 4 * data.len());
        self.put_u8(PACKING_PLAIN_U32);
        for &x in data {
            self.put_u32(x);
        }
    }

    /// Number of bytes written.
    #[must_use]
    pub fn len(&self) -> usize {
        self.buf.len()
    }

    /// Whether nothing was written.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.buf.is_empty()
    }

    /// The bytes written so far.
    #[must_use]
    pub fn as_bytes(&self) -> &[u8] {
        &self.buf
    }

    /// The bytes written.
    #[must_use]
    pub fn into_bytes(self) -> Vec<u8> {
        self.buf
    }
}

/// Bounds-checked little-endian reader over a byte slice.
#[derive(Clone, Debug)]
pub struct Reader<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    /// A reader at the start of `bytes`.
    #[must_use]
    pub fn new(bytes: &'a [u8]) -> Self {
        Self { bytes, pos: 0 }
    }

    /// Offset of the next read from the start of the slice.
    #[must_use]
    pub fn offset(&self) -> usize {
        self.pos
    }

    /// Bytes left to read.
    #[must_use]
    pub fn remaining(&self) -> usize {
        self.bytes.len().saturating_sub(self.pos)
    }

    /// Ensures `needed` more bytes exist without reading them ([`Error::Truncated`] with the
    /// number of missing bytes otherwise). Use before allocating for a declared size.
    pub fn ensure(&self, needed: usize) -> Result<()> {
        let remaining = self.remaining();
        if needed > remaining {
            return Err(Error::Truncated { offset: self.pos, needed: needed - remaining });
        }
        Ok(())
    }

    /// The next `len` bytes ([`Error::Truncated`] if fewer remain).
    pub fn get_bytes(&mut self, len: usize) -> Result<&'a [u8]> {
        self.ensure(len)?;
        let end = self.pos + len;
        let out = self.bytes.get(self.pos..end).ok_or(Error::Truncated { offset: self.pos, needed: len })?;
        self.pos = end;
        Ok(out)
    }

    fn get_array<const K: usize>(&mut self) -> Result<[u8; K]> {
        let mut a = [0u8; K];
        a.copy_from_slice(self.get_bytes(K)?);
        Ok(a)
    }

    /// Reads one byte.
    pub fn get_u8(&mut self) -> Result<u8> {
        Ok(u8::from_le_bytes(self.get_array()?))
    }

    /// Reads a little-endian `u16`.
    pub fn get_u16(&mut self) -> Result<u16> {
        Ok(u16::from_le_bytes(self.get_array()?))
    }

    /// Reads a little-endian `u32`.
    pub fn get_u32(&mut self) -> Result<u32> {
        Ok(u32::from_le_bytes(self.get_array()?))
    }

    /// Reads a little-endian `u64`.
    pub fn get_u64(&mut self) -> Result<u64> {
        Ok(u64::from_le_bytes(self.get_array()?))
    }

    /// Reads an `f64` from its little-endian IEEE-754 bits (any bit pattern, NaN included).
    pub fn get_f64(&mut self) -> Result<f64> {
        Ok(f64::from_bits(self.get_u64()?))
    }

    /// Ends reading: [`Error::TrailingBytes`] if any byte is left.
    pub fn finish(self) -> Result<()> {
        match self.remaining() {
            0 => Ok(()),
            count => Err(Error::TrailingBytes { count }),
        }
    }
}

/// The checksum of an object: CRC-32C of the first 24 header bytes, then of the payload.
#[must_use]
pub fn checksum(header: &[u8], payload: &[u8]) -> u32 {
    crc32c::crc32c_append(crc32c::crc32c(header), payload)
}

/// A whole object: the 28-byte header (with the current version, `payload.len()` as the
/// payload length and the checksum) followed by `payload`.
#[must_use]
pub fn write_object(object: ObjectType, scheme: Scheme, param_id: u64, payload: &[u8]) -> Vec<u8> {
    let mut w = Writer::with_capacity(HEADER_LEN + payload.len());
    w.put_bytes(&MAGIC);
    w.put_u16(FORMAT_VERSION);
    w.put_u8(object.tag());
    w.put_u8(scheme.tag());
    w.put_u64(param_id);
    w.put_u64(payload.len() as u64);
    w.put_u32(checksum(w.as_bytes(), payload));
    w.put_bytes(payload);
    w.into_bytes()
}

/// Parses an object header and returns it with the payload slice.
///
/// Checks, in order: enough bytes for each header field ([`Error::Truncated`]), the magic
/// ([`Error::BadMagic`]), the version ([`Error::UnsupportedVersion`] for anything but 2 or 1),
/// that the declared payload length equals the number of bytes after the header
/// ([`Error::LengthMismatch`]; a truncated payload reports this too), the checksum over the
/// header and payload ([`Error::Checksum`]; versions 2 and 3, version-1 objects have none), the
/// object tag ([`Error::UnknownObjectType`]), the scheme tag ([`Error::InvalidField`]), and
/// that the object is `expected` ([`Error::ObjectTypeMismatch`]). The parameter id is the
/// caller's to check: it knows the parameters.
pub fn read_object(bytes: &[u8], expected: ObjectType) -> Result<(Header, &[u8])> {
    let mut r = Reader::new(bytes);
    if r.get_bytes(MAGIC.len())? != MAGIC {
        return Err(Error::BadMagic);
    }
    let version = r.get_u16()?;
    if ![FORMAT_VERSION, FORMAT_VERSION_V2, FORMAT_VERSION_V1].contains(&version) {
        return Err(Error::UnsupportedVersion { version });
    }
    let object_tag = r.get_u8()?;
    let scheme_tag = r.get_u8()?;
    let param_id = r.get_u64()?;
    let payload_len = r.get_u64()?;
    let stored = if version == FORMAT_VERSION_V1 { None } else { Some(r.get_u32()?) };
    let actual = r.remaining() as u64;
    if payload_len != actual {
        return Err(Error::LengthMismatch { declared: payload_len, actual });
    }
    let payload = r.get_bytes(r.remaining())?;
    if let Some(expected_sum) = stored {
        let header = bytes.get(..CHECKED_HEADER_LEN).ok_or(Error::Truncated { offset: 0, needed: HEADER_LEN })?;
        let found = checksum(header, payload);
        if found != expected_sum {
            return Err(Error::Checksum { expected: expected_sum, found });
        }
    }
    let object = ObjectType::try_from(object_tag)?;
    let scheme = Scheme::from_tag(scheme_tag)?;
    if object != expected {
        return Err(Error::ObjectTypeMismatch { expected: expected.name(), found: object.name() });
    }
    Ok((Header { version, checksum: stored, object, scheme, param_id, payload_len }, payload))
}

/// Recomputes and stores the checksum of a current-version object whose bytes were changed on
/// purpose (tests of the payload validators, tools that patch objects). Checks the magic,
/// version and payload length as [`read_object`] does, nothing else.
///
/// That this function exists is the point: the checksum detects accidental damage, it does not
/// authenticate anything.
pub fn update_checksum(bytes: &mut [u8]) -> Result<()> {
    let mut r = Reader::new(bytes);
    if r.get_bytes(MAGIC.len())? != MAGIC {
        return Err(Error::BadMagic);
    }
    let version = r.get_u16()?;
    if version != FORMAT_VERSION {
        return Err(Error::UnsupportedVersion { version });
    }
    r.get_bytes(CHECKED_HEADER_LEN - 6 - 8)?;
    let payload_len = r.get_u64()?;
    r.get_u32()?;
    let actual = r.remaining() as u64;
    if payload_len != actual {
        return Err(Error::LengthMismatch { declared: payload_len, actual });
    }
    let (head, payload) = bytes.split_at_mut(HEADER_LEN);
    let (checked, field) = head.split_at_mut(CHECKED_HEADER_LEN);
    field.copy_from_slice(&checksum(checked, payload).to_le_bytes());
    Ok(())
}

/// Reads a residue block of `moduli.len()` limbs of `n` words each, limb-major `[limb][n]`.
///
/// Errors: a mode byte other than 0 ([`Error::UnknownPacking`]); `limbs * n * 4` overflowing
/// ([`Error::SizeOverflow`]); fewer bytes than that ([`Error::Truncated`], checked before
/// allocating); a word not below its limb's modulus ([`Error::ResidueOutOfRange`], the first
/// one in storage order). Output residues are in `[0, q_limb)`.
pub fn read_residues(r: &mut Reader, moduli: &[Modulus], n: usize) -> Result<Vec<u32>> {
    let mode = r.get_u8()?;
    if mode == PACKING_BITS {
        return read_packed(r, moduli, n);
    }
    if mode != PACKING_PLAIN_U32 {
        return Err(Error::UnknownPacking { mode });
    }
    let count = moduli.len().checked_mul(n).ok_or(Error::SizeOverflow { what: "residue count" })?;
    let len = count.checked_mul(4).ok_or(Error::SizeOverflow { what: "residue block size" })?;
    r.ensure(len)?;
    let raw = r.get_bytes(len)?;
    let mut out = Vec::with_capacity(count);
    if n == 0 {
        return Ok(out);
    }
    for ((limb, m), block) in moduli.iter().enumerate().zip(raw.chunks_exact(4 * n)) {
        for (index, word) in block.chunks_exact(4).enumerate() {
            let mut a = [0u8; 4];
            a.copy_from_slice(word);
            let x = u32::from_le_bytes(a);
            if x >= m.value() {
                return Err(Error::ResidueOutOfRange { limb, index });
            }
            out.push(x);
        }
    }
    Ok(out)
}

/// Writes a residue block (packing mode 0, then `data` as `u32` little-endian words). The same
/// as [`Writer::put_residues`].
pub fn write_residues(w: &mut Writer, data: &[u32]) {
    w.put_residues(data);
}

/// Bytes of one packed limb of `n` residues of `bits` bits.
fn packed_limb_bytes(n: usize, bits: u32) -> Result<usize> {
    n.checked_mul(bits as usize).map(|b| b.div_ceil(8)).ok_or(Error::SizeOverflow { what: "packed limb size" })
}

/// Writes a residue block in packing mode 1 ([`PACKING_BITS`]): limb `i` (`n` residues, each
/// below `moduli[i]`) as a stream of `bits(q_i)`-bit values, least-significant bit first, padded
/// with zero bits to a whole byte. `data` must hold `moduli.len() * n` residues.
pub fn write_residues_packed(w: &mut Writer, data: &[u32], moduli: &[Modulus], n: usize) -> Result<()> {
    if data.len() != moduli.len().saturating_mul(n) {
        return Err(Error::DimensionMismatch {
            what: "packed residues",
            expected: moduli.len() * n,
            found: data.len(),
        });
    }
    w.put_u8(PACKING_BITS);
    if n == 0 {
        return Ok(());
    }
    for (m, limb) in moduli.iter().zip(data.chunks_exact(n)) {
        let bits = m.bits();
        let mut bytes = vec![0u8; packed_limb_bytes(n, bits)?];
        let (mut acc, mut filled, mut pos) = (0u64, 0u32, 0usize);
        for &x in limb {
            acc |= u64::from(x & ((1u32 << bits) - 1)) << filled;
            filled += bits;
            while filled >= 8 {
                if let Some(b) = bytes.get_mut(pos) {
                    *b = acc as u8;
                }
                acc >>= 8;
                filled -= 8;
                pos += 1;
            }
        }
        if filled > 0 {
            if let Some(b) = bytes.get_mut(pos) {
                *b = acc as u8;
            }
        }
        w.put_bytes(&bytes);
    }
    Ok(())
}

/// Reads the body of a mode-1 block (after the mode byte): checks the size before allocating
/// ([`Error::Truncated`]), every unpacked residue against its modulus
/// ([`Error::ResidueOutOfRange`]) and that the padding bits of every limb are zero
/// ([`Error::NonZeroPadding`]).
fn read_packed(r: &mut Reader, moduli: &[Modulus], n: usize) -> Result<Vec<u32>> {
    let mut total = 0usize;
    for m in moduli {
        total =
            total.checked_add(packed_limb_bytes(n, m.bits())?).ok_or(Error::SizeOverflow { what: "packed block" })?;
    }
    r.ensure(total)?;
    let mut out = Vec::with_capacity(moduli.len().saturating_mul(n));
    for (limb, m) in moduli.iter().enumerate() {
        let bits = m.bits();
        let bytes = r.get_bytes(packed_limb_bytes(n, bits)?)?;
        let mask = (1u64 << bits) - 1;
        let (mut acc, mut filled) = (0u64, 0u32);
        let mut it = bytes.iter();
        for index in 0..n {
            while filled < bits {
                // The limb holds exactly ceil(n * bits / 8) bytes, so a byte is always left
                // here; a missing one would be truncation, never a silent zero.
                let b = it.next().copied().ok_or(Error::DimensionMismatch {
                    what: "packed limb bytes",
                    expected: bytes.len() + 1,
                    found: bytes.len(),
                })?;
                acc |= u64::from(b) << filled;
                filled += 8;
            }
            let x = (acc & mask) as u32;
            acc >>= bits;
            filled -= bits;
            if x >= m.value() {
                return Err(Error::ResidueOutOfRange { limb, index });
            }
            out.push(x);
        }
        // What is left of the last byte must be zero padding.
        if acc != 0 || it.next().is_some() {
            return Err(Error::NonZeroPadding);
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_layout_is_as_documented() {
        let payload = [0xaau8, 0xbb, 0xcc];
        let bytes = write_object(ObjectType::Ciphertext, Scheme::Ckks, 0x0102_0304_0506_0708, &payload);
        let head: Vec<u8> = [
            &b"WGFH"[..],
            &[3, 0],                   // version
            &[7],                      // Ciphertext
            &[2],                      // CKKS
            &[8, 7, 6, 5, 4, 3, 2, 1], // id
            &[3, 0, 0, 0, 0, 0, 0, 0], // payload length
        ]
        .concat();
        let crc = crc32c::crc32c(&[&head[..], &payload].concat());
        let want = [&head[..], &crc.to_le_bytes(), &payload].concat();
        assert_eq!(bytes, want);
        let (h, p) = read_object(&bytes, ObjectType::Ciphertext).unwrap();
        assert_eq!(
            h,
            Header {
                version: 3,
                checksum: Some(crc),
                object: ObjectType::Ciphertext,
                scheme: Scheme::Ckks,
                param_id: 0x0102_0304_0506_0708,
                payload_len: 3
            }
        );
        assert_eq!(p, &payload);
        // Empty payload.
        let bytes = write_object(ObjectType::SecretKey, Scheme::Bgv, 7, &[]);
        assert_eq!(bytes.len(), HEADER_LEN);
        let (h, p) = read_object(&bytes, ObjectType::SecretKey).unwrap();
        assert_eq!((h.payload_len, p.len()), (0, 0));
    }

    /// The CRC-32C check value of the standard test string, and the crate's append form.
    #[test]
    fn crc32c_known_answer() {
        assert_eq!(crc32c::crc32c(b"123456789"), 0xe306_9283);
        assert_eq!(checksum(b"12345", b"6789"), 0xe306_9283);
    }

    /// A version-2 object rewritten as version 1 (checksum field dropped).
    fn as_v1(v2: &[u8]) -> Vec<u8> {
        let mut b = [&v2[..CHECKED_HEADER_LEN], &v2[HEADER_LEN..]].concat();
        b[4..6].copy_from_slice(&FORMAT_VERSION_V1.to_le_bytes());
        b
    }

    #[test]
    fn version_1_objects_load_unchecked() {
        let good = write_object(ObjectType::PublicKey, Scheme::Bgv, 42, &[1, 2, 3, 4]);
        let v1 = as_v1(&good);
        assert_eq!(v1.len(), HEADER_LEN_V1 + 4);
        let (h, p) = read_object(&v1, ObjectType::PublicKey).unwrap();
        assert_eq!((h.version, h.checksum, h.param_id, h.payload_len, p), (1, None, 42, 4, &[1u8, 2, 3, 4][..]));
        // No check: a damaged version-1 payload loads as it is.
        let mut b = v1.clone();
        b[HEADER_LEN_V1] ^= 0xff;
        assert_eq!(read_object(&b, ObjectType::PublicKey).unwrap().1, &[0xfe, 2, 3, 4]);
        // The header fields are still validated.
        let mut b = v1.clone();
        b[6] = 0;
        assert_eq!(read_object(&b, ObjectType::PublicKey), Err(Error::UnknownObjectType { tag: 0 }));
        // update_checksum only handles the current version.
        assert_eq!(update_checksum(&mut v1.clone()), Err(Error::UnsupportedVersion { version: 1 }));
        // A version-2 object whose version field reads 1 fails the length check.
        let mut b = good.clone();
        b[4] = 1;
        assert_eq!(read_object(&b, ObjectType::PublicKey), Err(Error::LengthMismatch { declared: 4, actual: 8 }));
    }

    #[test]
    fn checksum_covers_header_and_payload() {
        let good = write_object(ObjectType::PublicKey, Scheme::Bgv, 42, &[1, 2, 3, 4]);
        let stored = u32::from_le_bytes(good[24..28].try_into().unwrap());
        // Object tag, scheme, id, checksum and payload bytes: every bit flip is a checksum error.
        for i in (6..16).chain(24..good.len()) {
            for bit in 0..8 {
                let mut b = good.clone();
                b[i] ^= 1 << bit;
                match read_object(&b, ObjectType::PublicKey) {
                    Err(Error::Checksum { expected, found }) => {
                        assert_eq!(expected, u32::from_le_bytes(b[24..28].try_into().unwrap()));
                        assert_eq!(found, checksum(&b[..24], &b[28..]));
                        assert!((24..28).contains(&i) || expected == stored);
                    }
                    other => panic!("byte {i} bit {bit}: {other:?}"),
                }
                // Resealed, the change is accepted by the container (or refused by the tag checks).
                update_checksum(&mut b).unwrap();
                if !(6..8).contains(&i) {
                    assert!(read_object(&b, ObjectType::PublicKey).is_ok(), "byte {i} bit {bit}");
                }
            }
        }
        let msg = Error::Checksum { expected: 0xdead_beef, found: 1 }.to_string();
        assert!(msg.contains("0xdeadbeef") && msg.contains("0x00000001") && msg.contains("damaged"), "{msg}");
    }

    #[test]
    fn object_tags() {
        for tag in 0..=255u8 {
            match ObjectType::try_from(tag) {
                Ok(t) => {
                    assert!((1..=10).contains(&tag));
                    assert_eq!(t.tag(), tag);
                }
                Err(e) => {
                    assert!(tag == 0 || tag > 10);
                    assert_eq!(e, Error::UnknownObjectType { tag });
                }
            }
        }
        assert_eq!(ObjectType::GaloisKeySet.tag(), 9);
        assert_eq!(ObjectType::BootKeys.tag(), 10);
        assert_eq!(ObjectType::Parameters.tag(), 1);
    }

    #[test]
    fn header_errors() {
        let good = write_object(ObjectType::PublicKey, Scheme::Bgv, 42, &[1, 2, 3, 4]);
        let expect = ObjectType::PublicKey;
        // Truncated header at every offset.
        for k in 0..HEADER_LEN {
            assert!(matches!(read_object(&good[..k], expect), Err(Error::Truncated { .. })), "k = {k}");
        }
        assert_eq!(read_object(&good[..5], expect), Err(Error::Truncated { offset: 4, needed: 1 }));
        // Truncated payload.
        for k in HEADER_LEN..good.len() {
            assert_eq!(
                read_object(&good[..k], expect),
                Err(Error::LengthMismatch { declared: 4, actual: (k - HEADER_LEN) as u64 })
            );
        }
        let mut b = good.clone();
        b[3] = b'X';
        assert_eq!(read_object(&b, expect), Err(Error::BadMagic));
        let mut b = good.clone();
        b[4..6].copy_from_slice(&4u16.to_le_bytes());
        assert_eq!(read_object(&b, expect), Err(Error::UnsupportedVersion { version: 4 }));
        let mut b = good.clone();
        b[4..6].copy_from_slice(&0u16.to_le_bytes());
        assert_eq!(read_object(&b, expect), Err(Error::UnsupportedVersion { version: 0 }));
        // Tags are checked after the checksum (reseal to reach them).
        for tag in [0u8, 11, 255] {
            let mut b = good.clone();
            b[6] = tag;
            assert!(matches!(read_object(&b, expect), Err(Error::Checksum { .. })));
            update_checksum(&mut b).unwrap();
            assert_eq!(read_object(&b, expect), Err(Error::UnknownObjectType { tag }));
        }
        for tag in [0u8, 3, 255] {
            let mut b = good.clone();
            b[7] = tag;
            update_checksum(&mut b).unwrap();
            assert!(matches!(read_object(&b, expect), Err(Error::InvalidField { field: "scheme", .. })));
        }
        assert_eq!(
            read_object(&good, ObjectType::RelinKey),
            Err(Error::ObjectTypeMismatch { expected: "RelinKey", found: "PublicKey" })
        );
        // Trailing bytes after the payload.
        let mut b = good.clone();
        b.push(0);
        assert_eq!(read_object(&b, expect), Err(Error::LengthMismatch { declared: 4, actual: 5 }));
        // Declared lengths that do not match, including absurd ones.
        for declared in [0u64, 3, 5, u64::MAX] {
            let mut b = good.clone();
            b[16..24].copy_from_slice(&declared.to_le_bytes());
            assert_eq!(read_object(&b, expect), Err(Error::LengthMismatch { declared, actual: 4 }));
        }
    }

    #[test]
    fn writer_reader_round_trip() {
        let mut w = Writer::new();
        assert!(w.is_empty());
        w.put_u8(0xfe);
        w.put_u16(0xbeef);
        w.put_u32(0xdead_beef);
        w.put_u64(0x0123_4567_89ab_cdef);
        w.put_f64(-3.19);
        w.put_f64(f64::from_bits(0x7ff8_0000_0000_1234)); // a NaN payload survives
        w.put_bytes(b"xyz");
        assert_eq!(w.len(), 1 + 2 + 4 + 8 + 8 + 8 + 3);
        let bytes = w.into_bytes();
        assert_eq!(&bytes[1..3], &[0xef, 0xbe]);
        let mut r = Reader::new(&bytes);
        assert_eq!(r.get_u8().unwrap(), 0xfe);
        assert_eq!(r.get_u16().unwrap(), 0xbeef);
        assert_eq!(r.get_u32().unwrap(), 0xdead_beef);
        assert_eq!(r.get_u64().unwrap(), 0x0123_4567_89ab_cdef);
        assert_eq!(r.get_f64().unwrap(), -3.19);
        assert_eq!(r.get_f64().unwrap().to_bits(), 0x7ff8_0000_0000_1234);
        assert_eq!(r.offset(), 31);
        assert_eq!(r.remaining(), 3);
        assert_eq!(r.get_u32(), Err(Error::Truncated { offset: 31, needed: 1 }));
        // A failed read consumes nothing.
        assert_eq!(r.offset(), 31);
        assert_eq!(r.clone().get_bytes(usize::MAX), Err(Error::Truncated { offset: 31, needed: usize::MAX - 3 }));
        assert_eq!(r.clone().finish(), Err(Error::TrailingBytes { count: 3 }));
        assert_eq!(r.get_bytes(3).unwrap(), b"xyz");
        assert_eq!(r.get_u8(), Err(Error::Truncated { offset: 34, needed: 1 }));
        assert!(r.finish().is_ok());
    }

    fn moduli() -> Vec<Modulus> {
        [97u64, 193, 257].iter().map(|&q| Modulus::new(q).unwrap()).collect()
    }

    #[test]
    fn residue_round_trip_and_layout() {
        let ms = moduli();
        let n = 4;
        let data: Vec<u32> = (0..ms.len() * n).map(|i| ((i * 37 + 5) as u32) % ms[i / n].value()).collect();
        let mut w = Writer::new();
        write_residues(&mut w, &data);
        w.put_u8(0x55);
        let bytes = w.into_bytes();
        assert_eq!(bytes.len(), 1 + 4 * data.len() + 1);
        assert_eq!(bytes[0], PACKING_PLAIN_U32);
        assert_eq!(&bytes[1..5], &data[0].to_le_bytes());
        let mut r = Reader::new(&bytes);
        assert_eq!(read_residues(&mut r, &ms, n).unwrap(), data);
        assert_eq!(r.get_u8().unwrap(), 0x55);
        r.finish().unwrap();
        // Largest valid residues.
        let top: Vec<u32> = (0..ms.len() * n).map(|i| ms[i / n].value() - 1).collect();
        let mut w = Writer::new();
        w.put_residues(&top);
        let bytes = w.into_bytes();
        assert_eq!(read_residues(&mut Reader::new(&bytes), &ms, n).unwrap(), top);
        // n = 0 and no limbs.
        let mut w = Writer::new();
        w.put_residues(&[]);
        let bytes = w.into_bytes();
        assert!(read_residues(&mut Reader::new(&bytes), &ms, 0).unwrap().is_empty());
        assert!(read_residues(&mut Reader::new(&bytes), &[], 8).unwrap().is_empty());
    }

    #[test]
    fn residue_errors() {
        let ms = moduli();
        let n = 4;
        let data = vec![0u32; ms.len() * n];
        for (limb, index) in [(0usize, 0usize), (1, 3), (2, 2)] {
            for bad in [ms[limb].value(), u32::MAX] {
                let mut d = data.clone();
                d[limb * n + index] = bad;
                let mut w = Writer::new();
                w.put_residues(&d);
                let bytes = w.into_bytes();
                assert_eq!(
                    read_residues(&mut Reader::new(&bytes), &ms, n),
                    Err(Error::ResidueOutOfRange { limb, index })
                );
            }
        }
        // A value valid for one limb but not the next (193 < 257 but >= 97).
        let mut d = data.clone();
        d[1] = 193;
        let mut w = Writer::new();
        w.put_residues(&d);
        let bytes = w.into_bytes();
        assert_eq!(
            read_residues(&mut Reader::new(&bytes), &ms, n),
            Err(Error::ResidueOutOfRange { limb: 0, index: 1 })
        );
        // Unknown packing modes.
        for mode in [2u8, 3, 255] {
            let mut w = Writer::new();
            w.put_residues(&data);
            let mut bytes = w.into_bytes();
            bytes[0] = mode;
            assert_eq!(read_residues(&mut Reader::new(&bytes), &ms, n), Err(Error::UnknownPacking { mode }));
        }
        // Truncation at every length.
        let mut w = Writer::new();
        w.put_residues(&data);
        let bytes = w.into_bytes();
        for k in 0..bytes.len() {
            assert!(
                matches!(read_residues(&mut Reader::new(&bytes[..k]), &ms, n), Err(Error::Truncated { .. })),
                "k = {k}"
            );
        }
        assert_eq!(
            read_residues(&mut Reader::new(&bytes[..10]), &ms, n),
            Err(Error::Truncated { offset: 1, needed: 48 - 9 })
        );
        // Huge declared sizes: refused before allocating.
        assert!(matches!(read_residues(&mut Reader::new(&bytes), &ms, 1 << 40), Err(Error::Truncated { .. })));
        assert!(matches!(
            read_residues(&mut Reader::new(&bytes), &ms, usize::MAX / 2),
            Err(Error::SizeOverflow { .. })
        ));
        assert!(matches!(
            read_residues(&mut Reader::new(&bytes), &ms[..1], usize::MAX / 2),
            Err(Error::SizeOverflow { .. })
        ));
    }

    #[test]
    fn bit_packing_round_trips_and_rejects_bad_bits() {
        let moduli = [Modulus::new(1_073_479_681).unwrap(), Modulus::new(97).unwrap(), Modulus::new(65_537).unwrap()];
        let n = 3;
        let data = [1_073_479_680u32, 0, 12_345, 96, 1, 50, 65_536, 7, 0];
        let mut w = Writer::new();
        write_residues_packed(&mut w, &data, &moduli, n).unwrap();
        let bytes = w.into_bytes();
        // Mode byte, then ceil(3*30/8) = 12, ceil(3*7/8) = 3 and ceil(3*17/8) = 7 bytes.
        assert_eq!(bytes.len(), 1 + 12 + 3 + 7);
        let mut r = Reader::new(&bytes);
        assert_eq!(read_residues(&mut r, &moduli, n).unwrap(), data);
        r.finish().unwrap();
        // A padding bit of the first limb (bits 90..96 of its 12 bytes).
        let mut bad = bytes.clone();
        bad[12] |= 0x80;
        assert!(matches!(read_residues(&mut Reader::new(&bad), &moduli, n), Err(Error::NonZeroPadding)));
        // A residue of the second limb at 127 >= 97.
        let mut bad = bytes.clone();
        bad[13] |= 0x7f;
        assert!(matches!(
            read_residues(&mut Reader::new(&bad), &moduli, n),
            Err(Error::ResidueOutOfRange { limb: 1, index: 0 })
        ));
        // Truncation at every offset.
        for cut in 0..bytes.len() {
            assert!(read_residues(&mut Reader::new(&bytes[..cut]), &moduli, n).is_err(), "cut {cut}");
        }
        // Wrong data length.
        assert!(write_residues_packed(&mut Writer::new(), &data[..4], &moduli, n).is_err());
    }
}
