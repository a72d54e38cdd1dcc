//! The compute half of the server: one backend-generic engine, built once at start, that
//! checks evaluation keys and evaluates the models on wire-format ciphertexts. Nothing in it
//! can decrypt: it never holds a secret key.

use wgfhe::backend::{Backend, BackendTask};
use wgfhe::bgv::Bgv;
use wgfhe::compress::{Bxt, Variant};
use wgfhe::rlwe::{EvaluationKeys, KeyForm};
use wgfhe_mnist::lr::QuantLr;
use wgfhe_mnist::split::lr_server_score;

/// What the HTTP layer asks of the compute. `Send + Sync`: shared by the blocking workers.
pub(crate) trait Engine: Send + Sync {
    /// The backend's name (`cpu` or the GPU's).
    fn backend_name(&self) -> &'static str;
    /// Parses evaluation-key bytes against the server's parameters (the wire checks: magic,
    /// version, checksum, parameter id). Returns nothing: a check before storing.
    fn check_keys(&self, bytes: &[u8]) -> wgfhe::Result<()>;
    /// The logistic regression on one batch of pixel ciphertexts (one per weight): the score
    /// ciphertext's bytes.
    fn lr(&self, model: &QuantLr, inputs: &[&[u8]]) -> wgfhe::Result<Vec<u8>>;
}

struct BgvEngine<B: Backend> {
    bgv: Bgv<B>,
}

impl<B: Backend> Engine for BgvEngine<B> {
    fn backend_name(&self) -> &'static str {
        self.bgv.backend().name()
    }

    fn check_keys(&self, bytes: &[u8]) -> wgfhe::Result<()> {
        EvaluationKeys::from_bytes_as(self.bgv.backend(), bytes, KeyForm::Seeded).map(drop)
    }

    fn lr(&self, model: &QuantLr, inputs: &[&[u8]]) -> wgfhe::Result<Vec<u8>> {
        let bxt = Bxt::new(&self.bgv, Variant::Cso);
        let cts = inputs.iter().map(|b| bxt.from_bytes(b)).collect::<wgfhe::Result<Vec<_>>>()?;
        bxt.to_bytes(&lr_server_score(&bxt, model, &cts)?)
    }
}

/// Opens the engine on the backend it is run on (BGV parameters only: the models are BGV).
pub(crate) struct OpenEngine;

impl BackendTask for OpenEngine {
    type Output = Box<dyn Engine>;

    fn run<B: Backend>(self, backend: B) -> wgfhe::Result<Self::Output> {
        Ok(Box::new(BgvEngine { bgv: Bgv::new(backend)? }))
    }
}
