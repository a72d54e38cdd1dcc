//! The compute half of the server: one backend-generic engine, built once at start, that
//! checks evaluation keys and evaluates the models on wire-format ciphertexts. It holds no
//! client's secret key, so it cannot decrypt what clients send. Its one secret key is a
//! throwaway made at start to run each model once on encryptions of its own (building the
//! device pipelines and the CNN's prepared plaintexts before the first request); that key
//! never meets a client's data and is dropped before the server listens.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Instant;

use wgfhe::backend::gpu::{AdapterSummary, DeviceCounters, DeviceMemory};
use wgfhe::backend::{Backend, BackendTask};
use wgfhe::bgv::{Bgv, PlaintextCache};
use wgfhe::compress::{Bxt, Variant};
use wgfhe::rlwe::{EvaluationKeys, KeyForm, KeyRequest};
use wgfhe_mnist::cnn::QuantCnn;
use wgfhe_mnist::cnn_infer::{CnnCircuit, CnnStats, ReluPath, PREPARED_BUDGET};
use wgfhe_mnist::lr::QuantLr;
use wgfhe_mnist::mnist::PIXELS;
use wgfhe_mnist::split::{lr_client_columns, lr_server_score};

use super::store::StoreError;

/// The CNN's ReLU path a request asks for (its model name on the wire).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CnnRelu {
    /// `cnn`: exact ReLU tables.
    Table,
    /// `cnn-digits`: digit extraction and a sign test on every digit (exact).
    Digits,
}

impl CnnRelu {
    /// Both paths, in the order `/v1/info` lists them.
    pub(crate) const ALL: [Self; 2] = [Self::Table, Self::Digits];

    /// The model name of the path.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Self::Table => "cnn",
            Self::Digits => "cnn-digits",
        }
    }

    /// The path a model name asks for.
    pub(crate) fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|r| r.name() == name)
    }

    fn path(self) -> wgfhe::Result<ReluPath> {
        match self {
            Self::Table => Ok(ReluPath::Table),
            Self::Digits => ReluPath::digits(1.0),
        }
    }
}

/// What the HTTP layer asks of the compute. `Send + Sync`: shared by the blocking workers.
pub(crate) trait Engine: Send + Sync {
    /// The backend's name (`cpu` or `gpu`).
    fn backend_name(&self) -> &'static str;
    /// The GPU adapter under the backend (`None` on the CPU).
    fn adapter(&self) -> Option<AdapterSummary>;
    /// The device memory the GPU's buffers hold now (`None` on the CPU).
    fn device_memory(&self) -> Option<DeviceMemory>;
    /// What the GPU has counted so far: dispatches, pipelines built, ... (`None` on the CPU).
    fn device_counters(&self) -> Option<DeviceCounters>;
    /// What the start's warm-up built: the CNN's prepared plaintexts (over both paths) and
    /// their resident bytes; and the plaintexts requests have prepared since (zero while
    /// every request finds its plaintexts prepared).
    fn prepared(&self) -> Prepared;
    /// Parses evaluation-key bytes against the server's parameters (the wire checks: magic,
    /// version, checksum, parameter id). Returns nothing: a check before storing.
    fn check_keys(&self, bytes: &[u8]) -> wgfhe::Result<()>;
    /// The logistic regression on one batch of pixel ciphertexts (one per weight): the score
    /// ciphertext's bytes.
    fn lr(&self, model: &QuantLr, inputs: &[&[u8]]) -> wgfhe::Result<Vec<u8>>;
    /// Slots of a ciphertext at the server's parameters (0 without batching).
    fn slots(&self) -> usize;
    /// The rotation steps the CNN's `relu` path needs keys for (`None`: no CNN is served).
    fn cnn_rotations(&self, relu: CnnRelu) -> Option<&[i64]>;
    /// The CNN (`relu` path) on one batch of its input ciphertexts with the evaluation keys of
    /// key set `id`: the scores ciphertext's bytes. The keys are those the engine holds parsed
    /// ([`KeyCache`]), else `load`'s bytes, parsed and then held. Errors: no CNN served
    /// ([`wgfhe::Error::InvalidField`]), `load`'s, and the library's on bad keys or ciphertexts.
    fn cnn(&self, relu: CnnRelu, id: &str, load: LoadKeys<'_>, inputs: &[&[u8]]) -> Result<Vec<u8>, EngineError>;
    /// Drops the parsed keys of `id` (a deleted key set).
    fn forget_keys(&self, id: &str);
    /// Bytes and key sets of the parsed keys held now.
    fn resident_keys(&self) -> (u64, usize);
}

/// The prepared plaintexts of [`Engine::prepared`].
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Prepared {
    /// Built at start.
    pub at_start: u64,
    /// Their resident bytes.
    pub bytes: u64,
    /// Prepared by requests since.
    pub on_request: u64,
}

/// Reads a key set's bytes from the store (when the engine does not hold it parsed).
pub(crate) type LoadKeys<'a> = &'a mut dyn FnMut() -> Result<Vec<u8>, StoreError>;

/// What an engine call can fail with.
#[derive(Debug)]
pub(crate) enum EngineError {
    /// Reading the key set from the store.
    Store(StoreError),
    /// The library.
    Lib(wgfhe::Error),
}

impl From<wgfhe::Error> for EngineError {
    fn from(e: wgfhe::Error) -> Self {
        Self::Lib(e)
    }
}

/// Parsed evaluation keys by key-set id, held on the engine's backend (on a GPU: in device
/// memory) under a budget of their resident bytes: the least recently used leave first, and a
/// key set larger than the budget is used and not held. Leaving the cache never touches the
/// disk; a request drops nothing another request is using (the keys are shared).
pub(crate) struct KeyCache<B: Backend> {
    budget: u64,
    inner: Mutex<CacheInner<B>>,
}

struct CacheInner<B: Backend> {
    /// id -> (keys, resident bytes, last use tick).
    map: HashMap<String, (Arc<EvaluationKeys<B>>, u64, u64)>,
    tick: u64,
    bytes: u64,
}

impl<B: Backend> KeyCache<B> {
    /// An empty cache of `budget` bytes.
    pub(crate) fn new(budget: u64) -> Self {
        Self { budget, inner: Mutex::new(CacheInner { map: HashMap::new(), tick: 0, bytes: 0 }) }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, CacheInner<B>> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The keys of `id` if held (marked as used now).
    pub(crate) fn get(&self, id: &str) -> Option<Arc<EvaluationKeys<B>>> {
        let mut c = self.lock();
        c.tick += 1;
        let tick = c.tick;
        c.map.get_mut(id).map(|(keys, _, t)| {
            *t = tick;
            Arc::clone(keys)
        })
    }

    /// Holds `keys` (of `bytes` resident bytes) for `id`, evicting the least recently used
    /// until they fit; not held if they alone exceed the budget.
    pub(crate) fn insert(&self, id: &str, keys: Arc<EvaluationKeys<B>>, bytes: u64) {
        let mut c = self.lock();
        if let Some((_, old, _)) = c.map.remove(id) {
            c.bytes = c.bytes.saturating_sub(old);
        }
        if bytes > self.budget {
            return;
        }
        while c.bytes + bytes > self.budget {
            let Some(oldest) = c.map.iter().min_by_key(|(_, (_, _, t))| *t).map(|(k, _)| k.clone()) else { break };
            if let Some((_, old, _)) = c.map.remove(&oldest) {
                c.bytes = c.bytes.saturating_sub(old);
            }
        }
        c.tick += 1;
        let tick = c.tick;
        c.map.insert(id.to_owned(), (keys, bytes, tick));
        c.bytes += bytes;
    }

    /// Drops the keys of `id`.
    pub(crate) fn remove(&self, id: &str) {
        let mut c = self.lock();
        if let Some((_, old, _)) = c.map.remove(id) {
            c.bytes = c.bytes.saturating_sub(old);
        }
    }

    /// Resident bytes and key sets held.
    pub(crate) fn resident(&self) -> (u64, usize) {
        let c = self.lock();
        (c.bytes, c.map.len())
    }
}

/// One ReLU path's circuit and its prepared plaintexts, both built at start; each request
/// takes a [`PlaintextCache::share`] of them.
struct CnnPath<B: Backend> {
    circuit: CnnCircuit,
    cache: PlaintextCache<B>,
}

struct BgvEngine<B: Backend> {
    bgv: Bgv<B>,
    /// The table path; `None`: no CNN is served.
    table: Option<CnnPath<B>>,
    /// The digit path; `None`: not served.
    digits: Option<CnnPath<B>>,
    /// The parsed keys of the key sets used recently.
    keys: KeyCache<B>,
    /// Plaintexts requests prepared (a miss in the start's caches).
    prepared_on_request: AtomicU64,
}

impl<B: Backend> BgvEngine<B> {
    fn cnn_path(&self, relu: CnnRelu) -> Option<&CnnPath<B>> {
        match relu {
            CnnRelu::Table => self.table.as_ref(),
            CnnRelu::Digits => self.digits.as_ref(),
        }
    }
}

/// The byte slices of `objects`.
fn slices(objects: &[Vec<u8>]) -> Vec<&[u8]> {
    objects.iter().map(Vec::as_slice).collect()
}

/// The CNN circuit on a batch's input ciphertexts (wire bytes) with `cache`'s prepared
/// plaintexts: the scores ciphertext's bytes. What a request runs, and the start's warm-up.
fn evaluate_cnn<B: Backend>(
    bgv: &Bgv<B>,
    circuit: &CnnCircuit,
    keys: &EvaluationKeys<B>,
    inputs: &[&[u8]],
    cache: &mut PlaintextCache<B>,
) -> wgfhe::Result<Vec<u8>> {
    let bxt = Bxt::new(bgv, Variant::Cso);
    let cts = inputs.iter().map(|b| bxt.from_bytes(b)).collect::<wgfhe::Result<Vec<_>>>()?;
    let scores = circuit.evaluate_with(&bxt, keys, &cts, cache, &mut CnnStats::default())?;
    bgv.ciphertext_to_bytes(&scores)
}

impl<B: Backend> BgvEngine<B> {
    /// Runs every served model once as a request would, through the same calls from wire
    /// bytes to wire bytes (the key checks and parse, the ciphertexts' parse, the evaluation,
    /// the answer's serialisation), on encryptions under a throwaway secret key made here and
    /// dropped on return: this builds every device pipeline a request uses and fills each CNN
    /// path's prepared plaintexts at the levels and factors a client's batch reaches.
    fn warm_up(&mut self, lr: Option<&QuantLr>) -> wgfhe::Result<()> {
        let bgv = &self.bgv;
        let sk = bgv.gen_secret_key()?;
        let bxt = Bxt::new(bgv, Variant::Cso);
        let slots = bgv.encoder().slots();
        let wire = |columns: Vec<Vec<u64>>| -> wgfhe::Result<Vec<Vec<u8>>> {
            columns.iter().map(|c| bxt.to_bytes(&bxt.encrypt(&sk, &bgv.encoder().encode(c)?)?)).collect()
        };
        if let Some(model) = lr {
            let pixels = vec![0u8; model.weights().len()];
            let inputs = wire(lr_client_columns(&[&pixels], pixels.len(), slots)?)?;
            self.lr(model, &slices(&inputs))?;
        }
        for path in [&mut self.table, &mut self.digits].into_iter().flatten() {
            let steps = path.circuit.rotation_steps();
            let keys = bgv.gen_evaluation_keys(&sk, &KeyRequest::rotations(steps))?.to_bytes(bgv.backend())?;
            EvaluationKeys::from_bytes_as(bgv.backend(), &keys, KeyForm::Seeded)?;
            let keys = EvaluationKeys::from_bytes_as(bgv.backend(), &keys, KeyForm::Expanded)?;
            let worst = [255u8; PIXELS];
            let images = vec![&worst; path.circuit.images_per_batch()];
            let inputs = wire(path.circuit.client_inputs(&images, slots)?)?;
            evaluate_cnn(bgv, &path.circuit, &keys, &slices(&inputs), &mut path.cache)?;
        }
        bgv.backend().synchronize()
    }
}

impl<B: Backend> Engine for BgvEngine<B> {
    fn backend_name(&self) -> &'static str {
        self.bgv.backend().name()
    }

    fn adapter(&self) -> Option<AdapterSummary> {
        self.bgv.backend().adapter().cloned()
    }

    fn device_memory(&self) -> Option<DeviceMemory> {
        self.bgv.backend().device_memory()
    }

    fn device_counters(&self) -> Option<DeviceCounters> {
        self.bgv.backend().device_counters()
    }

    fn prepared(&self) -> Prepared {
        let paths = [&self.table, &self.digits];
        let caches = paths.iter().filter_map(|p| p.as_ref()).map(|p| &p.cache);
        let (at_start, bytes) = caches.fold((0, 0), |(n, b), c| (n + c.len() as u64, b + c.resident_bytes()));
        Prepared { at_start, bytes, on_request: self.prepared_on_request.load(Ordering::Relaxed) }
    }

    fn check_keys(&self, bytes: &[u8]) -> wgfhe::Result<()> {
        EvaluationKeys::from_bytes_as(self.bgv.backend(), bytes, KeyForm::Seeded).map(drop)
    }

    fn lr(&self, model: &QuantLr, inputs: &[&[u8]]) -> wgfhe::Result<Vec<u8>> {
        let bxt = Bxt::new(&self.bgv, Variant::Cso);
        let cts = inputs.iter().map(|b| bxt.from_bytes(b)).collect::<wgfhe::Result<Vec<_>>>()?;
        bxt.to_bytes(&lr_server_score(&bxt, model, &cts)?)
    }

    fn slots(&self) -> usize {
        self.bgv.encoder().slots()
    }

    fn cnn_rotations(&self, relu: CnnRelu) -> Option<&[i64]> {
        self.cnn_path(relu).map(|p| p.circuit.rotation_steps())
    }

    fn cnn(&self, relu: CnnRelu, id: &str, load: LoadKeys<'_>, inputs: &[&[u8]]) -> Result<Vec<u8>, EngineError> {
        let path = self
            .cnn_path(relu)
            .ok_or(wgfhe::Error::InvalidField { field: "model", reason: "this CNN path is not served" })?;
        let keys = match self.keys.get(id) {
            Some(keys) => keys,
            None => {
                let bytes = load().map_err(EngineError::Store)?;
                let keys = Arc::new(EvaluationKeys::from_bytes_as(self.bgv.backend(), &bytes, KeyForm::Expanded)?);
                self.keys.insert(id, Arc::clone(&keys), keys.resident_bytes(self.bgv.backend()));
                keys
            }
        };
        // The start's prepared plaintexts, shared: concurrent requests neither wait for one
        // another nor copy them.
        let mut cache = path.cache.share();
        let scores = evaluate_cnn(&self.bgv, &path.circuit, &keys, inputs, &mut cache);
        self.prepared_on_request.fetch_add(cache.preparations(), Ordering::Relaxed);
        Ok(scores?)
    }

    fn forget_keys(&self, id: &str) {
        self.keys.remove(id);
    }

    fn resident_keys(&self) -> (u64, usize) {
        self.keys.resident()
    }
}

/// Opens the engine on the backend it is run on (BGV parameters only: the models are BGV),
/// with the CNN's circuits built when a CNN is given. Each path is planned once on a full batch
/// of all-255 images (the largest input norms, so the largest noise estimates any client's
/// batch can reach): the table path must build and plan (its error is the start's); the digit
/// path is served when it does, and otherwise left out (named on stderr), e.g. when its digits
/// do not hold the model's bounds or its depth exhausts the noise budget at these parameters.
///
/// Then every served model runs once, as a client's request would ([`BgvEngine::warm_up`]), so
/// that the first request is served like any other.
pub(crate) struct OpenEngine<'a> {
    /// The logistic regression, if served.
    pub lr: Option<&'a QuantLr>,
    /// The CNN, if served.
    pub cnn: Option<&'a QuantCnn>,
    /// The budget of parsed keys held ([`KeyCache`]).
    pub key_budget: u64,
}

impl BackendTask for OpenEngine<'_> {
    type Output = Box<dyn Engine>;

    fn run<B: Backend>(self, backend: B) -> wgfhe::Result<Self::Output> {
        let bgv = Bgv::new(backend)?;
        let (mut table, mut digits) = (None, None);
        if let Some(model) = self.cnn {
            let build = |relu: CnnRelu| -> wgfhe::Result<CnnPath<B>> {
                let circuit = CnnCircuit::with_relu(&bgv, model, relu.path()?)?;
                let worst = [255u8; PIXELS];
                let batch = vec![&worst; circuit.images_per_batch()];
                circuit.key_plan(bgv.params(), Variant::Cso, &batch)?;
                Ok(CnnPath { circuit, cache: PlaintextCache::new(PREPARED_BUDGET) })
            };
            table = Some(build(CnnRelu::Table)?);
            match build(CnnRelu::Digits) {
                Ok(p) => digits = Some(p),
                Err(e) => eprintln!("wgfhe serve: cnn-digits not served: {e}"),
            }
        }
        let mut engine = BgvEngine {
            bgv,
            table,
            digits,
            keys: KeyCache::new(self.key_budget),
            prepared_on_request: AtomicU64::new(0),
        };
        let warm = Instant::now();
        engine.warm_up(self.lr)?;
        eprintln!("wgfhe serve: models run once at start in {:.0} ms", warm.elapsed().as_secs_f64() * 1e3);
        Ok(Box::new(engine))
    }
}
