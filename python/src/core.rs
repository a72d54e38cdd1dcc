//! The backend-generic halves of the bindings: a client that holds a secret key and a server
//! that holds only evaluation keys, each behind an object-safe trait so that one Python class
//! serves every backend. Everything crossing these traits is bytes (the wire format) or plain
//! numbers.

use std::sync::{Mutex, MutexGuard, PoisonError};
use wgfhe::rlwe::KeyRequest;

use pyo3::PyErr;
use wgfhe::backend::{Backend, BackendTask};
use wgfhe::bgv::{Bgv, PlaintextCache};
use wgfhe::ckks::{Ckks, ScalePolicy};
use wgfhe::compress::{Bxt, Variant};
use wgfhe::rlwe::{EvaluationKeys, KeyForm, SecretKey};
use wgfhe::serial::Scheme;
use wgfhe::Error;
use wgfhe_mnist::cnn::QuantCnn;
use wgfhe_mnist::cnn_infer::{CnnCircuit, CnnStats, ReluPath, PREPARED_BUDGET};
use wgfhe_mnist::lr::QuantLr;
use wgfhe_mnist::split::lr_server_score;

/// A failure of the library or of Python code called back (a progress callback).
pub(crate) enum Fail {
    /// The library's typed error.
    Lib(Error),
    /// An exception raised by a callback.
    Py(PyErr),
}

impl From<Error> for Fail {
    fn from(e: Error) -> Self {
        Self::Lib(e)
    }
}

impl From<PyErr> for Fail {
    fn from(e: PyErr) -> Self {
        Self::Py(e)
    }
}

pub(crate) type Res<T> = std::result::Result<T, Fail>;

/// `progress(done, total)`; an error stops the work.
pub(crate) type Progress<'a> = &'a mut (dyn FnMut(usize, usize) -> Res<()> + Send);

/// A binary ciphertext operation of the server.
#[derive(Clone, Copy, Debug)]
pub(crate) enum BinOp {
    Add,
    Sub,
    Mul,
}

/// A ciphertext-plaintext operation of the server.
#[derive(Clone, Copy, Debug)]
pub(crate) enum PlainOp {
    Add,
    Sub,
    Mul,
}

/// Plaintext values: integers (BGV) or reals (CKKS).
pub(crate) enum Values {
    Ints(Vec<i64>),
    Reals(Vec<f64>),
}

/// A scheme on a backend.
#[expect(clippy::large_enum_variant, reason = "one per client or server, never moved in a loop")]
enum Ctx<B: Backend> {
    Bgv(Bgv<B>),
    Ckks(Ckks<B>),
}

impl<B: Backend> Ctx<B> {
    fn open(backend: B) -> wgfhe::Result<Self> {
        Ok(match backend.context().params().scheme() {
            Scheme::Bgv => Self::Bgv(Bgv::new(backend)?),
            Scheme::Ckks => Self::Ckks(Ckks::new(backend, ScalePolicy::Single)?),
        })
    }

    fn backend(&self) -> &B {
        match self {
            Self::Bgv(s) => s.backend(),
            Self::Ckks(s) => s.backend(),
        }
    }

    fn bgv(&self) -> wgfhe::Result<&Bgv<B>> {
        match self {
            Self::Bgv(s) => Ok(s),
            Self::Ckks(_) => Err(Error::SchemeMismatch { expected: "BGV", found: "CKKS" }),
        }
    }

    fn ckks(&self) -> wgfhe::Result<&Ckks<B>> {
        match self {
            Self::Ckks(s) => Ok(s),
            Self::Bgv(_) => Err(Error::SchemeMismatch { expected: "CKKS", found: "BGV" }),
        }
    }
}

/// What a client does: the only holder of a secret key.
pub(crate) trait ClientOps: Send + Sync {
    /// The backend's name.
    fn backend_name(&self) -> &'static str;
    /// Relinearisation key and rotation keys (BGV column rotations or CKKS rotations), plus the
    /// row swap (BGV) or conjugation (CKKS) key if asked, as one key-set object.
    fn evaluation_keys(&self, steps: &[i64], swap: bool) -> wgfhe::Result<Vec<u8>>;
    /// Encrypts each slot vector (BGV, signed integers; under the BXT variant's wire form).
    fn encrypt_ints(&self, columns: &[Vec<i64>], variant: Variant) -> wgfhe::Result<Vec<Vec<u8>>>;
    /// Decrypts a BGV ciphertext to signed slot values.
    fn decrypt_ints(&self, ct: &[u8]) -> wgfhe::Result<Vec<i64>>;
    /// Encrypts real slot values (CKKS, at the default scale).
    fn encrypt_reals(&self, values: &[f64]) -> wgfhe::Result<Vec<u8>>;
    /// Decrypts a CKKS ciphertext to the real parts of its slots.
    fn decrypt_reals(&self, ct: &[u8]) -> wgfhe::Result<Vec<f64>>;
}

struct Client<B: Backend> {
    ctx: Ctx<B>,
    sk: SecretKey<B>,
}

impl<B: Backend> ClientOps for Client<B> {
    fn backend_name(&self) -> &'static str {
        self.ctx.backend().name()
    }

    fn evaluation_keys(&self, steps: &[i64], swap: bool) -> wgfhe::Result<Vec<u8>> {
        let keys = match &self.ctx {
            Ctx::Bgv(s) => s.gen_evaluation_keys(&self.sk, &KeyRequest::rotations(steps).with_swap_if(swap))?,
            Ctx::Ckks(s) => s.gen_evaluation_keys(&self.sk, &KeyRequest::rotations(steps).with_swap_if(swap))?,
        };
        keys.to_bytes(self.ctx.backend())
    }

    fn encrypt_ints(&self, columns: &[Vec<i64>], variant: Variant) -> wgfhe::Result<Vec<Vec<u8>>> {
        let bgv = self.ctx.bgv()?;
        let bxt = Bxt::new(bgv, variant);
        columns.iter().map(|c| bxt.to_bytes(&bxt.encrypt(&self.sk, &bgv.encoder().encode_signed(c)?)?)).collect()
    }

    fn decrypt_ints(&self, ct: &[u8]) -> wgfhe::Result<Vec<i64>> {
        let bgv = self.ctx.bgv()?;
        bgv.encoder().decode_signed(&bgv.decrypt(&self.sk, &bgv.ciphertext_from_bytes(ct)?)?)
    }

    fn encrypt_reals(&self, values: &[f64]) -> wgfhe::Result<Vec<u8>> {
        let ckks = self.ctx.ckks()?;
        ckks.ciphertext_to_bytes(&ckks.encrypt_symmetric(&self.sk, &ckks.encode_real(values)?)?)
    }

    fn decrypt_reals(&self, ct: &[u8]) -> wgfhe::Result<Vec<f64>> {
        let ckks = self.ctx.ckks()?;
        Ok(ckks.decrypt(&self.sk, &ckks.ciphertext_from_bytes(ct)?)?.iter().map(|z| z.re).collect())
    }
}

/// Opens a client (a fresh secret key, or one from `seed`) on the backend it is run on.
pub(crate) struct OpenClient(pub Option<[u8; 32]>);

impl BackendTask for OpenClient {
    type Output = Box<dyn ClientOps>;

    fn run<B: Backend>(self, backend: B) -> wgfhe::Result<Self::Output> {
        let ctx = Ctx::open(backend)?;
        let sk = match (&ctx, self.0) {
            (Ctx::Bgv(s), Some(seed)) => s.gen_secret_key_from_seed(&seed)?,
            (Ctx::Bgv(s), None) => s.gen_secret_key()?,
            (Ctx::Ckks(s), Some(seed)) => s.gen_secret_key_from_seed(&seed)?,
            (Ctx::Ckks(s), None) => s.gen_secret_key()?,
        };
        Ok(Box::new(Client { ctx, sk }))
    }
}

/// What a server does: evaluation from evaluation keys and ciphertexts. There is no secret
/// key anywhere in it, and no way to decrypt.
pub(crate) trait ServerOps: Send + Sync {
    /// The backend's name.
    fn backend_name(&self) -> &'static str;
    /// `a op b` (multiplication relinearised; CKKS products also rescaled).
    fn binary(&self, op: BinOp, a: &[u8], b: &[u8]) -> wgfhe::Result<Vec<u8>>;
    /// `a op plaintext(values)` (CKKS products rescaled).
    fn plain(&self, op: PlainOp, a: &[u8], values: &Values) -> wgfhe::Result<Vec<u8>>;
    /// `-a`.
    fn negate(&self, a: &[u8]) -> wgfhe::Result<Vec<u8>>;
    /// Rotation by `steps` slots (BGV: within each row of slots).
    fn rotate(&self, a: &[u8], steps: i64) -> wgfhe::Result<Vec<u8>>;
    /// The logistic regression's score on each batch of pixel ciphertexts.
    fn lr(
        &self,
        model: &QuantLr,
        batches: &[Vec<Vec<u8>>],
        variant: Variant,
        progress: Progress<'_>,
    ) -> Res<Vec<Vec<u8>>>;
    /// The CNN's scores on each batch of 25 input ciphertexts.
    fn cnn(
        &self,
        model: &QuantCnn,
        relu: ReluPath,
        batches: &[Vec<Vec<u8>>],
        variant: Variant,
        progress: Progress<'_>,
    ) -> Res<Vec<Vec<u8>>>;
}

struct Server<B: Backend> {
    ctx: Ctx<B>,
    keys: Mutex<EvaluationKeys<B>>,
}

impl<B: Backend> Server<B> {
    fn keys(&self) -> MutexGuard<'_, EvaluationKeys<B>> {
        self.keys.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The keys in the form `variant` evaluates with (seeded under `cso+k`, expanded
    /// otherwise), converted in place when the form differs.
    fn keys_for(&self, variant: Variant) -> wgfhe::Result<MutexGuard<'_, EvaluationKeys<B>>> {
        let mut keys = self.keys();
        let want_seeded = variant == Variant::CsoK;
        let empty = keys.relin.is_none() && keys.galois.is_empty();
        if !empty && keys.is_seeded() != want_seeded {
            *keys =
                if want_seeded { std::mem::take(&mut *keys).into_seeded() } else { keys.expand(self.ctx.backend())? };
        }
        Ok(keys)
    }
}

impl<B: Backend> ServerOps for Server<B> {
    fn backend_name(&self) -> &'static str {
        self.ctx.backend().name()
    }

    fn binary(&self, op: BinOp, a: &[u8], b: &[u8]) -> wgfhe::Result<Vec<u8>> {
        match &self.ctx {
            Ctx::Bgv(s) => {
                let (x, y) = (s.ciphertext_from_bytes(a)?, s.ciphertext_from_bytes(b)?);
                let r = match op {
                    BinOp::Add => s.add(&x, &y)?,
                    BinOp::Sub => s.sub(&x, &y)?,
                    BinOp::Mul => s.mul_relin(&x, &y, &self.keys())?,
                };
                s.ciphertext_to_bytes(&r)
            }
            Ctx::Ckks(s) => {
                let (x, y) = (s.ciphertext_from_bytes(a)?, s.ciphertext_from_bytes(b)?);
                let r = match op {
                    BinOp::Add => s.add(&x, &y)?,
                    BinOp::Sub => s.sub(&x, &y)?,
                    BinOp::Mul => s.rescale(&s.mul_relin(&x, &y, &self.keys())?)?,
                };
                s.ciphertext_to_bytes(&r)
            }
        }
    }

    fn plain(&self, op: PlainOp, a: &[u8], values: &Values) -> wgfhe::Result<Vec<u8>> {
        let wrong = |expected: &'static str| Error::InvalidField {
            field: "plaintext values",
            reason: if expected == "BGV" { "BGV takes integers" } else { "CKKS takes real numbers" },
        };
        match (&self.ctx, values) {
            (Ctx::Bgv(s), Values::Ints(v)) => {
                let x = s.ciphertext_from_bytes(a)?;
                let pt = s.encoder().encode_signed(v)?;
                let r = match op {
                    PlainOp::Add => s.add_plain(&x, &pt)?,
                    PlainOp::Sub => s.sub_plain(&x, &pt)?,
                    PlainOp::Mul => s.mul_plain(&x, &pt)?,
                };
                s.ciphertext_to_bytes(&r)
            }
            (Ctx::Ckks(s), Values::Reals(v)) => {
                let x = s.ciphertext_from_bytes(a)?;
                let r = match op {
                    PlainOp::Add | PlainOp::Sub => {
                        let signed: Vec<f64> =
                            if matches!(op, PlainOp::Sub) { v.iter().map(|z| -z).collect() } else { v.clone() };
                        let pt = s.encode(&reals(&signed), x.scale(), x.slots(), x.level())?;
                        s.add_plain(&x, &pt)?
                    }
                    PlainOp::Mul => {
                        let pt = s.encode(&reals(v), s.default_scale(), x.slots(), x.level())?;
                        s.rescale(&s.mul_plain(&x, &pt)?)?
                    }
                };
                s.ciphertext_to_bytes(&r)
            }
            (Ctx::Bgv(_), Values::Reals(_)) => Err(wrong("BGV")),
            (Ctx::Ckks(_), Values::Ints(_)) => Err(wrong("CKKS")),
        }
    }

    fn negate(&self, a: &[u8]) -> wgfhe::Result<Vec<u8>> {
        match &self.ctx {
            Ctx::Bgv(s) => s.ciphertext_to_bytes(&s.neg(&s.ciphertext_from_bytes(a)?)?),
            Ctx::Ckks(s) => s.ciphertext_to_bytes(&s.neg(&s.ciphertext_from_bytes(a)?)?),
        }
    }

    fn rotate(&self, a: &[u8], steps: i64) -> wgfhe::Result<Vec<u8>> {
        match &self.ctx {
            Ctx::Bgv(s) => {
                s.ciphertext_to_bytes(&s.rotate_columns(&s.ciphertext_from_bytes(a)?, steps, &self.keys())?)
            }
            Ctx::Ckks(s) => s.ciphertext_to_bytes(&s.rotate(&s.ciphertext_from_bytes(a)?, steps, &self.keys())?),
        }
    }

    fn lr(
        &self,
        model: &QuantLr,
        batches: &[Vec<Vec<u8>>],
        variant: Variant,
        progress: Progress<'_>,
    ) -> Res<Vec<Vec<u8>>> {
        let bxt = Bxt::new(self.ctx.bgv()?, variant);
        let mut out = Vec::with_capacity(batches.len());
        for batch in batches {
            let inputs = batch.iter().map(|b| bxt.from_bytes(b)).collect::<wgfhe::Result<Vec<_>>>()?;
            out.push(bxt.to_bytes(&lr_server_score(&bxt, model, &inputs)?)?);
            progress(out.len(), batches.len())?;
        }
        Ok(out)
    }

    fn cnn(
        &self,
        model: &QuantCnn,
        relu: ReluPath,
        batches: &[Vec<Vec<u8>>],
        variant: Variant,
        progress: Progress<'_>,
    ) -> Res<Vec<Vec<u8>>> {
        let bgv = self.ctx.bgv()?;
        let circuit = CnnCircuit::with_relu(bgv, model, relu)?;
        let bxt = Bxt::new(bgv, variant);
        let keys = self.keys_for(variant)?;
        // The circuit's plaintexts, prepared on first use and reused by the later batches.
        let mut cache = PlaintextCache::new(PREPARED_BUDGET);
        let mut stats = CnnStats::default();
        let mut out = Vec::with_capacity(batches.len());
        for batch in batches {
            let inputs = batch.iter().map(|b| bxt.from_bytes(b)).collect::<wgfhe::Result<Vec<_>>>()?;
            let scores = circuit.evaluate_with(&bxt, &keys, &inputs, &mut cache, &mut stats)?;
            out.push(bgv.ciphertext_to_bytes(&scores)?);
            progress(out.len(), batches.len())?;
        }
        Ok(out)
    }
}

fn reals(v: &[f64]) -> Vec<num_complex::Complex64> {
    v.iter().map(|&x| num_complex::Complex64::new(x, 0.0)).collect()
}

/// Opens a server from evaluation-key bytes on the backend it is run on.
pub(crate) struct OpenServer<'a>(pub &'a [u8]);

impl BackendTask for OpenServer<'_> {
    type Output = Box<dyn ServerOps>;

    fn run<B: Backend>(self, backend: B) -> wgfhe::Result<Self::Output> {
        let keys = EvaluationKeys::from_bytes_as(&backend, self.0, KeyForm::Expanded)?;
        Ok(Box::new(Server { ctx: Ctx::open(backend)?, keys: Mutex::new(keys) }))
    }
}
