//! Wire form of compressed ciphertexts: the BGV ciphertext objects ([`crate::bgv`]'s wire
//! format). A seeded `a` half is written as its seed; under the packing variants every residue
//! block uses packing mode 1, and a packed in-memory limb block is written as it is stored (for
//! `N >= 32` the two layouts are the same bytes). A lazy half is generated first (one kernel).
//! Loading is the BGV loader (the object's checksum, every residue checked below its prime,
//! padding bits checked zero),
//! then the variant's compression.

use super::{Bxt, BxtCiphertext, Half, Repr};
use crate::backend::fused::Format;
use crate::backend::Backend;
use crate::error::{Error, Result};
use crate::poly::Eval;
use crate::poly::Representation;
use crate::rlwe::wire::write_seed;
use crate::serial::{write_object, ObjectType, Writer, PACKING_BITS};

impl<B: Backend> Bxt<'_, B> {
    /// Serialises a compressed ciphertext (readable by [`crate::bgv::Bgv::ciphertext_from_bytes`]).
    pub fn to_bytes(&self, ct: &BxtCiphertext<B>) -> Result<Vec<u8>> {
        let bgv = self.bgv();
        let (b, a, meta) = match &ct.repr {
            Repr::Plain(c) => return bgv.ciphertext_to_bytes(c),
            Repr::Halves { b, a, meta } => (b, a, meta),
        };
        let ctx = bgv.backend().context();
        if !self.variant().packs() || ctx.n() < 32 {
            let plain = self.materialize(ct)?;
            return if self.variant().packs() {
                bgv.ciphertext_to_bytes_packed(&plain)
            } else {
                bgv.ciphertext_to_bytes(&plain)
            };
        }
        let mut w = Writer::new();
        w.put_u32(u32::try_from(meta.level).map_err(|_| Error::SizeOverflow { what: "level" })?);
        w.put_u8(1);
        w.put_u32(meta.correction);
        w.put_f64(meta.noise_log2);
        w.put_u8(Eval::TAG);
        let object = if let Half::Seeded(seed) = a {
            write_seed(&mut w, crate::math::sampling::Generator::CURRENT, seed);
            self.put_packed(&mut w, b, meta.level)?;
            ObjectType::SeededCiphertext
        } else {
            self.put_packed(&mut w, b, meta.level)?;
            self.put_packed(&mut w, a, meta.level)?;
            ObjectType::Ciphertext
        };
        let params = bgv.params();
        Ok(write_object(object, params.scheme(), params.id(), w.as_bytes()))
    }

    /// Writes a half as a mode-1 residue block: a packed half as stored, anything else packed by
    /// one kernel first.
    fn put_packed(&self, w: &mut Writer, half: &Half<B>, level: usize) -> Result<()> {
        let be = self.bgv().backend();
        let words = match half {
            Half::Packed(p) => be.download(p.buffer())?,
            _ => {
                let basis = be.context().q_basis(level)?;
                let mut pb = super::ProgramBuilder::new(be, &basis)?;
                let e = pb.half(half)?;
                let program = crate::backend::fused::Program {
                    basis: &basis,
                    operands: pb.operands,
                    outputs: vec![(e, Format::Packed)],
                };
                let buf = be
                    .fused(&program)?
                    .into_iter()
                    .next()
                    .ok_or(Error::Backend { backend: "fused", reason: "no output".into() })?;
                be.download(&buf)?
            }
        };
        w.put_u8(PACKING_BITS);
        let bytes: Vec<u8> = words.iter().flat_map(|x| x.to_le_bytes()).collect();
        w.put_bytes(&bytes);
        Ok(())
    }

    /// Loads a ciphertext (any BGV ciphertext object) into this variant's form.
    pub fn from_bytes(&self, bytes: &[u8]) -> Result<BxtCiphertext<B>> {
        self.compress(self.bgv().ciphertext_from_bytes(bytes)?)
    }
}
