//! `wgfhe._wgfhe`: the native module of the Python package `wgfhe` (see `python/wgfhe/` for
//! the package and its type stubs).
//!
//! A `Client` holds the only secret key and exchanges bytes in the library's wire format; a
//! `Server` is built from parameters and evaluation-key bytes and has no way to decrypt.
//! Every library error becomes a `wgfhe.WgfheError` with the library's message; long work runs
//! with the interpreter released (other Python threads run meanwhile) and reports progress
//! through an optional callback.

mod core;

use std::collections::HashMap;
use std::sync::{Mutex, OnceLock, PoisonError};

use numpy::{AllowTypeChange, IntoPyArray, PyArray1, PyArray2, PyArrayLike1, PyArrayLike2};
use pyo3::create_exception;
use pyo3::exceptions::PyException;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyTuple};
use wgfhe::backend::config::EnvConfig;
use wgfhe::backend::{BackendChoice, BackendKind};
use wgfhe::bgv::Bgv;
use wgfhe::compress::Variant;
use wgfhe::params::{self as lib_params, Parameters, TestRing};
use wgfhe::ring::RingContext;
use wgfhe::serial::Scheme;
use wgfhe_mnist::cnn::{QuantCnn, CLASSES};
use wgfhe_mnist::cnn_infer::{CnnCircuit, ReluPath, BLOCK};
use wgfhe_mnist::lr::QuantLr;
use wgfhe_mnist::mnist::{Image, PIXELS};
use wgfhe_mnist::split::{cnn_client_columns, cnn_scores, lr_client_columns};

use crate::core::{BinOp, ClientOps, Fail, OpenClient, OpenServer, PlainOp, Res, ServerOps, Values};

create_exception!(
    _wgfhe,
    WgfheError,
    PyException,
    "An error of the wgfhe library (bad bytes, wrong key, parameter mismatch, ...)."
);

fn lib_err(e: wgfhe::Error) -> PyErr {
    WgfheError::new_err(e.to_string())
}

impl From<Fail> for PyErr {
    fn from(f: Fail) -> Self {
        match f {
            Fail::Lib(e) => lib_err(e),
            Fail::Py(e) => e,
        }
    }
}

/// `?` for the library's results inside Python-facing functions.
trait OrPy<T> {
    fn py_err(self) -> PyResult<T>;
}

impl<T> OrPy<T> for wgfhe::Result<T> {
    fn py_err(self) -> PyResult<T> {
        self.map_err(lib_err)
    }
}

/// The backend for a name (`auto`, `gpu`, `cpu`), opened once per process and name.
fn backend(name: &str) -> PyResult<BackendChoice> {
    static OPENED: OnceLock<Mutex<HashMap<String, BackendChoice>>> = OnceLock::new();
    let mut opened = OPENED.get_or_init(|| Mutex::new(HashMap::new())).lock().unwrap_or_else(PoisonError::into_inner);
    if let Some(b) = opened.get(name) {
        return Ok(b.clone());
    }
    let env = EnvConfig::from_vars(|var| std::env::var_os(var)).py_err()?;
    let kind: BackendKind = name.parse().py_err()?;
    let out = BackendChoice::open(kind, env.device).py_err()?;
    if let Some(e) = out.fallback {
        eprintln!("wgfhe: {e}; using the CPU backend");
    }
    let b = out.choice;
    opened.insert(name.to_owned(), b.clone());
    Ok(b)
}

fn variant(name: &str) -> PyResult<Variant> {
    Variant::parse(name).py_err()
}

fn relu_path(relu: &str, keep: f64) -> PyResult<ReluPath> {
    match relu {
        "lut" if keep == 1.0 => Ok(ReluPath::Table),
        "lut" => {
            Err(lib_err(wgfhe::Error::InvalidField { field: "keep", reason: "keep applies to relu='digits' only" }))
        }
        "digits" => ReluPath::digits(keep).py_err(),
        _ => Err(lib_err(wgfhe::Error::InvalidField { field: "relu", reason: "must be 'lut' or 'digits'" })),
    }
}

/// A progress callback as a Rust closure that takes the interpreter for each call.
fn progress_fn(cb: Option<Py<PyAny>>) -> impl FnMut(usize, usize) -> Res<()> + Send {
    move |done, total| match &cb {
        Some(f) => Python::attach(|py| f.call1(py, (done, total)).map(drop)).map_err(Fail::Py),
        None => Ok(()),
    }
}

/// Images as `(count, 784)` bytes, from a `(count, 784)` or `(count, 28, 28)` array.
fn images_of(images: &Bound<'_, PyAny>) -> PyResult<Vec<Image>> {
    let np = images.py().import("numpy")?;
    let flat = np.call_method1("ascontiguousarray", (images, "uint8"))?;
    let count: usize = flat.getattr("shape")?.get_item(0)?.extract()?;
    let flat = flat.call_method1("reshape", (count, PIXELS))?;
    let arr: PyArrayLike2<'_, u8, AllowTypeChange> = flat.extract()?;
    let view = arr.as_array();
    view.rows()
        .into_iter()
        .map(|row| {
            let mut img = [0u8; PIXELS];
            for (d, s) in img.iter_mut().zip(row.iter()) {
                *d = *s;
            }
            Ok(img)
        })
        .collect()
}

/// A validated parameter set.
#[pyclass(frozen, module = "wgfhe")]
struct Params {
    inner: Parameters,
}

#[pymethods]
impl Params {
    /// The set's name.
    #[getter]
    fn name(&self) -> String {
        self.inner.name().to_owned()
    }

    /// `"bgv"` or `"ckks"`.
    #[getter]
    fn scheme(&self) -> &'static str {
        match self.inner.scheme() {
            Scheme::Bgv => "bgv",
            Scheme::Ckks => "ckks",
        }
    }

    /// `log2 N`.
    #[getter]
    fn log_n(&self) -> u32 {
        self.inner.log_n()
    }

    /// The ring degree `N`.
    #[getter]
    fn n(&self) -> usize {
        self.inner.n()
    }

    /// Slots of one ciphertext (BGV: `N` when `t` batches, else 0; CKKS: `N/2`).
    #[getter]
    fn slots(&self) -> usize {
        match self.inner.scheme() {
            Scheme::Bgv if self.inner.batching() => self.inner.n(),
            Scheme::Bgv => 0,
            Scheme::Ckks => self.inner.n() / 2,
        }
    }

    /// The plaintext modulus `t` (BGV) or `None`.
    #[getter]
    fn plaintext_modulus(&self) -> Option<u64> {
        self.inner.plaintext_modulus()
    }

    /// `log2` of the scale (CKKS) or `None`.
    #[getter]
    fn log_scale(&self) -> Option<u32> {
        self.inner.log_scale()
    }

    /// The parameter id (first 8 bytes of the SHA-256 of the canonical encoding).
    #[getter]
    fn id(&self) -> u64 {
        self.inner.id()
    }

    /// Whether this is an insecure test set.
    #[getter]
    fn insecure(&self) -> bool {
        self.inner.is_insecure()
    }

    /// Images of one CNN batch (`slots / 256`).
    #[getter]
    fn cnn_batch_size(&self) -> usize {
        self.slots() / BLOCK
    }

    /// The set as a `Parameters` wire object.
    fn to_bytes<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        PyBytes::new(py, &self.inner.to_bytes())
    }

    fn __repr__(&self) -> String {
        format!(
            "Params(name={:?}, scheme={:?}, n={}, slots={}{})",
            self.inner.name(),
            self.scheme(),
            self.inner.n(),
            self.slots(),
            if self.inner.is_insecure() { ", INSECURE" } else { "" }
        )
    }

    fn __eq__(&self, other: &Self) -> bool {
        self.inner.id() == other.inner.id()
    }

    fn __hash__(&self) -> u64 {
        self.inner.id()
    }

    /// Pickling (Ray ships parameters this way): the wire bytes and the insecure flag.
    fn __reduce__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        let f = py.import("wgfhe._wgfhe")?.getattr("params_from_bytes")?;
        let args = (PyBytes::new(py, &self.inner.to_bytes()), self.inner.is_insecure());
        PyTuple::new(py, [f.into_any(), args.into_pyobject(py)?.into_any()])
    }
}

/// The shipped or application parameter set called `name` (see `list_params()`).
#[pyfunction]
fn params(name: &str) -> PyResult<Params> {
    Ok(Params { inner: lib_params::by_name(name).py_err()? })
}

/// Names of the shipped and application parameter sets (all 128-bit secure).
#[pyfunction]
fn list_params() -> Vec<String> {
    lib_params::shipped().into_iter().chain(lib_params::application_literals()).map(|l| l.name).collect()
}

/// Loads a `Parameters` wire object; insecure test sets load only with `insecure=True`.
#[pyfunction]
#[pyo3(signature = (data, insecure = false))]
fn params_from_bytes(data: &[u8], insecure: bool) -> PyResult<Params> {
    let inner = if insecure { Parameters::from_bytes_insecure_for_tests(data) } else { Parameters::from_bytes(data) }
        .py_err()?;
    Ok(Params { inner })
}

/// An explicitly INSECURE parameter set for tests and examples: `scheme` `"bgv"` (plaintext
/// modulus `t`) or `"ckks"` (`log_scale`), `2^log_n` ring, the given prime counts.
#[pyfunction]
#[pyo3(signature = (scheme, log_n, q_primes, p_primes, dnum, t = None, log_scale = None))]
fn insecure_test_params(
    scheme: &str,
    log_n: u32,
    q_primes: usize,
    p_primes: usize,
    dnum: usize,
    t: Option<u64>,
    log_scale: Option<u32>,
) -> PyResult<Params> {
    let ring = TestRing { log_n, q_primes, p_primes, dnum };
    let inner = match (scheme, t, log_scale) {
        ("bgv", Some(t), None) => lib_params::insecure_test_bgv(ring, t),
        ("ckks", None, Some(s)) => lib_params::insecure_test_ckks(ring, s),
        _ => Err(wgfhe::Error::InvalidField {
            field: "scheme",
            reason: "give scheme='bgv' with t, or scheme='ckks' with log_scale",
        }),
    }
    .py_err()?;
    Ok(Params { inner })
}

/// The client: holds the secret key (which never leaves it), encrypts, decrypts and makes the
/// evaluation keys a server needs.
#[pyclass(frozen, module = "wgfhe")]
struct Client {
    core: Box<dyn ClientOps>,
    params: Parameters,
}

#[pymethods]
impl Client {
    /// A client with a fresh secret key on `backend` (`"auto"`, `"gpu"` or `"cpu"`). `seed`
    /// (32 bytes) derives the key and all randomness: for reproducible tests only.
    #[new]
    #[pyo3(signature = (params, backend = "auto", seed = None))]
    fn new(py: Python<'_>, params: &Params, backend: &str, seed: Option<&[u8]>) -> PyResult<Self> {
        let seed = seed
            .map(|s| {
                <[u8; 32]>::try_from(s)
                    .map_err(|_| lib_err(wgfhe::Error::InvalidField { field: "seed", reason: "must be 32 bytes" }))
            })
            .transpose()?;
        let choice = crate::backend(backend)?;
        let p = params.inner.clone();
        let core = py.detach(|| choice.with_backend(RingContext::new(&p)?, OpenClient(seed))).py_err()?;
        Ok(Self { core, params: params.inner.clone() })
    }

    /// The parameters.
    #[getter]
    fn params(&self) -> Params {
        Params { inner: self.params.clone() }
    }

    /// The backend in use (`"cpu"` or the GPU's).
    #[getter]
    fn backend(&self) -> &'static str {
        self.core.backend_name()
    }

    /// The evaluation keys as one wire object: relinearisation, a rotation key per step in
    /// `rotations`, and the row-swap (BGV) or conjugation (CKKS) key if `swap`.
    #[pyo3(signature = (rotations = Vec::new(), swap = false))]
    fn evaluation_keys<'py>(&self, py: Python<'py>, rotations: Vec<i64>, swap: bool) -> PyResult<Bound<'py, PyBytes>> {
        let bytes = py.detach(|| self.core.evaluation_keys(&rotations, swap)).py_err()?;
        Ok(PyBytes::new(py, &bytes))
    }

    /// Encrypts slot values: integers (BGV, reduced mod t, the BXT `variant`'s wire form) or
    /// reals (CKKS).
    #[pyo3(signature = (values, variant = "cso"))]
    fn encrypt<'py>(
        &self,
        py: Python<'py>,
        values: &Bound<'py, PyAny>,
        variant: &str,
    ) -> PyResult<Bound<'py, PyBytes>> {
        let bytes = match self.params.scheme() {
            Scheme::Bgv => {
                let col = vec![int_values(values)?];
                let var = crate::variant(variant)?;
                py.detach(|| self.core.encrypt_ints(&col, var)).py_err()?.pop().unwrap_or_default()
            }
            Scheme::Ckks => {
                let v = real_values(values)?;
                py.detach(|| self.core.encrypt_reals(&v)).py_err()?
            }
        };
        Ok(PyBytes::new(py, &bytes))
    }

    /// Decrypts a ciphertext: signed integers (BGV, in `(-t/2, t/2]`) or reals (CKKS).
    fn decrypt<'py>(&self, py: Python<'py>, ciphertext: &[u8]) -> PyResult<Bound<'py, PyAny>> {
        Ok(match self.params.scheme() {
            Scheme::Bgv => py.detach(|| self.core.decrypt_ints(ciphertext)).py_err()?.into_pyarray(py).into_any(),
            Scheme::Ckks => py.detach(|| self.core.decrypt_reals(ciphertext)).py_err()?.into_pyarray(py).into_any(),
        })
    }

    /// The logistic regression's input ciphertexts for a batch of images (`(count, dim)`
    /// pixels, each below `2^pixel_bits`, `count <= slots`): one ciphertext per pixel.
    #[pyo3(signature = (pixels, variant = "cso"))]
    fn encrypt_lr<'py>(
        &self,
        py: Python<'py>,
        pixels: PyArrayLike2<'py, u8, AllowTypeChange>,
        variant: &str,
    ) -> PyResult<Vec<Bound<'py, PyBytes>>> {
        let view = pixels.as_array();
        let rows: Vec<Vec<u8>> = view.rows().into_iter().map(|r| r.to_vec()).collect();
        let dim = view.ncols();
        let var = crate::variant(variant)?;
        let slots = self.params().slots();
        let cts = py
            .detach(|| {
                let refs: Vec<&[u8]> = rows.iter().map(Vec::as_slice).collect();
                let cols = lr_client_columns(&refs, dim, slots)?;
                let cols: Vec<Vec<i64>> = cols.into_iter().map(|c| c.into_iter().map(|x| x as i64).collect()).collect();
                self.core.encrypt_ints(&cols, var)
            })
            .py_err()?;
        Ok(cts.iter().map(|c| PyBytes::new(py, c)).collect())
    }

    /// The scores of the first `count` images of a batch from the LR's result ciphertext.
    fn decrypt_lr<'py>(&self, py: Python<'py>, ciphertext: &[u8], count: usize) -> PyResult<Bound<'py, PyArray1<i64>>> {
        let mut slots = py.detach(|| self.core.decrypt_ints(ciphertext)).py_err()?;
        if count > slots.len() {
            return Err(lib_err(wgfhe::Error::DimensionMismatch {
                what: "images in a batch",
                expected: slots.len(),
                found: count,
            }));
        }
        slots.truncate(count);
        Ok(slots.into_pyarray(py))
    }

    /// The CNN's 25 input ciphertexts for a batch of images (`(count, 784)` or
    /// `(count, 28, 28)` bytes, `count <= params.cnn_batch_size`).
    #[pyo3(signature = (images, variant = "cso"))]
    fn encrypt_cnn<'py>(
        &self,
        py: Python<'py>,
        images: &Bound<'py, PyAny>,
        variant: &str,
    ) -> PyResult<Vec<Bound<'py, PyBytes>>> {
        let imgs = images_of(images)?;
        let var = crate::variant(variant)?;
        let slots = self.params().slots();
        let cts = py
            .detach(|| {
                let refs: Vec<&Image> = imgs.iter().collect();
                let cols = cnn_client_columns(&refs, slots)?;
                let cols: Vec<Vec<i64>> = cols.into_iter().map(|c| c.into_iter().map(|x| x as i64).collect()).collect();
                self.core.encrypt_ints(&cols, var)
            })
            .py_err()?;
        Ok(cts.iter().map(|c| PyBytes::new(py, c)).collect())
    }

    /// The ten scores of each of the first `count` images of a batch, `(count, 10)`, from
    /// the CNN's result ciphertext.
    fn decrypt_cnn<'py>(
        &self,
        py: Python<'py>,
        ciphertext: &[u8],
        count: usize,
    ) -> PyResult<Bound<'py, PyArray2<i64>>> {
        let scores = py.detach(|| cnn_scores(&self.core.decrypt_ints(ciphertext)?, count)).py_err()?;
        matrix(py, scores)
    }
}

/// Rows of ten scores as a `(rows, 10)` array.
fn matrix(py: Python<'_>, rows: Vec<Vec<i64>>) -> PyResult<Bound<'_, PyArray2<i64>>> {
    let count = rows.len();
    let flat: Vec<i64> = rows.into_iter().flatten().collect();
    let a = numpy::ndarray::Array2::from_shape_vec((count, CLASSES), flat)
        .map_err(|e| pyo3::exceptions::PyValueError::new_err(e.to_string()))?;
    Ok(a.into_pyarray(py))
}

/// The server: built from parameters and evaluation-key bytes only. It holds no secret key and
/// has no decryption: it loads ciphertexts, evaluates and returns ciphertext bytes.
#[pyclass(frozen, module = "wgfhe")]
struct Server {
    core: Box<dyn ServerOps>,
    params: Parameters,
}

fn plain_values(scheme: Scheme, values: &Bound<'_, PyAny>) -> PyResult<Values> {
    Ok(match scheme {
        Scheme::Bgv => Values::Ints(int_values(values)?),
        Scheme::Ckks => Values::Reals(real_values(values)?),
    })
}

/// The numpy dtype kind (`"i"`, `"u"`, `"b"`, `"f"`, ...) of `values` as an array.
fn kind(values: &Bound<'_, PyAny>) -> PyResult<String> {
    values.py().import("numpy")?.call_method1("asarray", (values,))?.getattr("dtype")?.getattr("kind")?.extract()
}

/// Integers (BGV slot values): integer or boolean arrays only, never a silent cast of reals.
fn int_values(values: &Bound<'_, PyAny>) -> PyResult<Vec<i64>> {
    if !matches!(kind(values)?.as_str(), "i" | "u" | "b") {
        return Err(lib_err(wgfhe::Error::InvalidField { field: "values", reason: "BGV takes integers" }));
    }
    Ok(values.extract::<PyArrayLike1<'_, i64, AllowTypeChange>>()?.as_array().to_vec())
}

/// Reals (CKKS slot values): integer or real arrays.
fn real_values(values: &Bound<'_, PyAny>) -> PyResult<Vec<f64>> {
    if !matches!(kind(values)?.as_str(), "i" | "u" | "b" | "f") {
        return Err(lib_err(wgfhe::Error::InvalidField { field: "values", reason: "CKKS takes real numbers" }));
    }
    Ok(values.extract::<PyArrayLike1<'_, f64, AllowTypeChange>>()?.as_array().to_vec())
}

#[pymethods]
impl Server {
    /// A server for `params` with the client's evaluation keys (`Client.evaluation_keys()`),
    /// on `backend` (`"auto"`, `"gpu"` or `"cpu"`).
    #[new]
    #[pyo3(signature = (params, evaluation_keys, backend = "auto"))]
    fn new(py: Python<'_>, params: &Params, evaluation_keys: &[u8], backend: &str) -> PyResult<Self> {
        let choice = crate::backend(backend)?;
        let p = params.inner.clone();
        let core = py.detach(|| choice.with_backend(RingContext::new(&p)?, OpenServer(evaluation_keys))).py_err()?;
        Ok(Self { core, params: params.inner.clone() })
    }

    /// The parameters.
    #[getter]
    fn params(&self) -> Params {
        Params { inner: self.params.clone() }
    }

    /// The backend in use.
    #[getter]
    fn backend(&self) -> &'static str {
        self.core.backend_name()
    }

    /// `a + b`.
    fn add<'py>(&self, py: Python<'py>, a: &[u8], b: &[u8]) -> PyResult<Bound<'py, PyBytes>> {
        self.binary(py, BinOp::Add, a, b)
    }

    /// `a - b`.
    fn sub<'py>(&self, py: Python<'py>, a: &[u8], b: &[u8]) -> PyResult<Bound<'py, PyBytes>> {
        self.binary(py, BinOp::Sub, a, b)
    }

    /// `a * b`, relinearised (CKKS: and rescaled).
    fn multiply<'py>(&self, py: Python<'py>, a: &[u8], b: &[u8]) -> PyResult<Bound<'py, PyBytes>> {
        self.binary(py, BinOp::Mul, a, b)
    }

    /// `-a`.
    fn negate<'py>(&self, py: Python<'py>, a: &[u8]) -> PyResult<Bound<'py, PyBytes>> {
        let out = py.detach(|| self.core.negate(a)).py_err()?;
        Ok(PyBytes::new(py, &out))
    }

    /// `a` rotated left by `steps` slots (BGV: within each row of `slots/2`); needs the
    /// rotation key of `steps`.
    fn rotate<'py>(&self, py: Python<'py>, a: &[u8], steps: i64) -> PyResult<Bound<'py, PyBytes>> {
        let out = py.detach(|| self.core.rotate(a, steps)).py_err()?;
        Ok(PyBytes::new(py, &out))
    }

    /// `a + values` (a plaintext the server encodes).
    fn add_plain<'py>(&self, py: Python<'py>, a: &[u8], values: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyBytes>> {
        self.plain(py, PlainOp::Add, a, values)
    }

    /// `a - values`.
    fn sub_plain<'py>(&self, py: Python<'py>, a: &[u8], values: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyBytes>> {
        self.plain(py, PlainOp::Sub, a, values)
    }

    /// `a * values` (CKKS: rescaled).
    fn multiply_plain<'py>(
        &self,
        py: Python<'py>,
        a: &[u8],
        values: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyBytes>> {
        self.plain(py, PlainOp::Mul, a, values)
    }

    /// The logistic regression on each batch (a list of the pixel ciphertexts of
    /// `Client.encrypt_lr`): one score ciphertext per batch. `progress(done, total)` is called
    /// after each batch.
    #[pyo3(signature = (model, batches, variant = "cso", progress = None))]
    fn lr<'py>(
        &self,
        py: Python<'py>,
        model: &LrModel,
        batches: Vec<Vec<Vec<u8>>>,
        variant: &str,
        progress: Option<Py<PyAny>>,
    ) -> PyResult<Vec<Bound<'py, PyBytes>>> {
        let var = crate::variant(variant)?;
        let mut cb = progress_fn(progress);
        let out = py.detach(|| self.core.lr(&model.inner, &batches, var, &mut cb))?;
        Ok(out.iter().map(|c| PyBytes::new(py, c)).collect())
    }

    /// The CNN on each batch (a list of the 25 ciphertexts of `Client.encrypt_cnn`): one
    /// scores ciphertext per batch. `relu` is `"lut"` (exact tables) or `"digits"` (digit
    /// extraction and a sign test on the top `keep` fraction of the digits). `progress(done,
    /// total)` is called after each batch.
    #[pyo3(signature = (model, batches, variant = "cso", relu = "lut", keep = 1.0, progress = None))]
    #[allow(clippy::too_many_arguments, reason = "keyword arguments of a Python method")]
    fn cnn<'py>(
        &self,
        py: Python<'py>,
        model: &CnnModel,
        batches: Vec<Vec<Vec<u8>>>,
        variant: &str,
        relu: &str,
        keep: f64,
        progress: Option<Py<PyAny>>,
    ) -> PyResult<Vec<Bound<'py, PyBytes>>> {
        let var = crate::variant(variant)?;
        let relu = relu_path(relu, keep)?;
        let mut cb = progress_fn(progress);
        let out = py.detach(|| self.core.cnn(&model.inner, relu, &batches, var, &mut cb))?;
        Ok(out.iter().map(|c| PyBytes::new(py, c)).collect())
    }
}

impl Server {
    fn binary<'py>(&self, py: Python<'py>, op: BinOp, a: &[u8], b: &[u8]) -> PyResult<Bound<'py, PyBytes>> {
        let out = py.detach(|| self.core.binary(op, a, b)).py_err()?;
        Ok(PyBytes::new(py, &out))
    }

    fn plain<'py>(
        &self,
        py: Python<'py>,
        op: PlainOp,
        a: &[u8],
        values: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyBytes>> {
        let v = plain_values(self.params.scheme(), values)?;
        let out = py.detach(|| self.core.plain(op, a, &v)).py_err()?;
        Ok(PyBytes::new(py, &out))
    }
}

/// The quantised logistic regression (integer weights, 4-bit pixels by default).
#[pyclass(frozen, module = "wgfhe")]
struct LrModel {
    inner: QuantLr,
}

#[pymethods]
impl LrModel {
    /// A model with integer `weights`, `bias` and pixels below `2^pixel_bits`.
    #[new]
    #[pyo3(signature = (weights, bias, pixel_bits = 4))]
    fn new(weights: Vec<i64>, bias: i64, pixel_bits: u32) -> PyResult<Self> {
        Ok(Self { inner: QuantLr::new(weights, bias, pixel_bits).py_err()? })
    }

    /// A model from its JSON (as `to_json` writes it).
    #[staticmethod]
    fn from_json(text: &str) -> PyResult<Self> {
        Ok(Self { inner: QuantLr::from_json(text).py_err()? })
    }

    /// The model as JSON.
    fn to_json(&self) -> PyResult<String> {
        self.inner.to_json().py_err()
    }

    /// The worst-case `|score|` (the plaintext modulus must exceed twice it).
    #[getter]
    fn bound(&self) -> u64 {
        self.inner.bound()
    }

    /// The plaintext scores `sum w_i x_i + b` of `(count, dim)` pixels.
    fn scores<'py>(
        &self,
        py: Python<'py>,
        pixels: PyArrayLike2<'py, u8, AllowTypeChange>,
    ) -> PyResult<Bound<'py, PyArray1<i64>>> {
        let view = pixels.as_array();
        let s = view.rows().into_iter().map(|r| self.inner.score(&r.to_vec())).collect::<wgfhe::Result<Vec<_>>>();
        Ok(s.py_err()?.into_pyarray(py))
    }
}

/// The integer CNN (conv 5x5 stride 2, ReLU, FC, ReLU, FC10), as `wgfhe mnist --model cnn`
/// trains and caches it.
#[pyclass(frozen, module = "wgfhe")]
struct CnnModel {
    inner: QuantCnn,
}

#[pymethods]
impl CnnModel {
    /// A model from its JSON (validated).
    #[staticmethod]
    fn from_json(text: &str) -> PyResult<Self> {
        Ok(Self { inner: QuantCnn::from_json(text).py_err()? })
    }

    /// The model as JSON.
    fn to_json(&self) -> PyResult<String> {
        self.inner.to_json().py_err()
    }

    /// The integer model's ten scores of each image, `(count, 10)`, with the ReLU faults of
    /// `relu`/`keep` (exact for `"lut"` and for `"digits"` with `keep=1`): what an encrypted
    /// run must decrypt to.
    #[pyo3(signature = (images, relu = "lut", keep = 1.0))]
    fn scores<'py>(
        &self,
        py: Python<'py>,
        images: &Bound<'py, PyAny>,
        relu: &str,
        keep: f64,
    ) -> PyResult<Bound<'py, PyArray2<i64>>> {
        let faults = relu_path(relu, keep)?.faults();
        let rows: Vec<Vec<i64>> = images_of(images)?.iter().map(|img| self.inner.scores_with(img, faults)).collect();
        matrix(py, rows)
    }

    /// The rotation steps the server's circuit for `params` needs keys for (pass them to
    /// `Client.evaluation_keys`).
    #[pyo3(signature = (params, relu = "lut", keep = 1.0))]
    fn rotation_steps(&self, py: Python<'_>, params: &Params, relu: &str, keep: f64) -> PyResult<Vec<i64>> {
        let relu = relu_path(relu, keep)?;
        let p = params.inner.clone();
        py.detach(|| {
            let bgv = Bgv::cpu(&p)?;
            Ok(CnnCircuit::with_relu(&bgv, &self.inner, relu)?.rotation_steps().to_vec())
        })
        .py_err()
    }
}

/// The MNIST test images and labels from `data_dir` (as `wgfhe mnist` fetches them; every
/// file's SHA-256 is checked): `(images (10000, 28, 28) uint8, labels (10000,) uint8)`.
#[pyfunction]
fn load_mnist_test<'py>(py: Python<'py>, data_dir: &str) -> PyResult<(Bound<'py, PyAny>, Bound<'py, PyArray1<u8>>)> {
    let data = py.detach(|| wgfhe_mnist::mnist::load(std::path::Path::new(data_dir))).py_err()?;
    let flat: Vec<u8> = data.test.images().iter().flat_map(|i| i.iter().copied()).collect();
    let count = data.test.len();
    let images = flat.into_pyarray(py).call_method1("reshape", (count, 28, 28))?;
    Ok((images, data.test.labels().to_vec().into_pyarray(py)))
}

#[pymodule]
fn _wgfhe(m: &Bound<'_, PyModule>) -> PyResult<()> {
    // Mesa's device-selection layer prints an error on every Vulkan instance of a process
    // without a display session; switch it off as the command line does, once, at import and
    // before any instance exists (`wgfhe::backend::gpu::should_quiet_device_select`). The
    // library itself never changes the environment.
    let env = EnvConfig::from_vars(|var| std::env::var_os(var)).py_err()?;
    if env.quiet_device_select {
        std::env::set_var("NODEVICE_SELECT", "1");
    }
    if let Some(level) = env.simd {
        let _ = wgfhe::math::simd::SimdLevel::set_active(level);
    }
    m.add("WgfheError", m.py().get_type::<WgfheError>())?;
    m.add_class::<Params>()?;
    m.add_class::<Client>()?;
    m.add_class::<Server>()?;
    m.add_class::<LrModel>()?;
    m.add_class::<CnnModel>()?;
    m.add_function(wrap_pyfunction!(params, m)?)?;
    m.add_function(wrap_pyfunction!(list_params, m)?)?;
    m.add_function(wrap_pyfunction!(params_from_bytes, m)?)?;
    m.add_function(wrap_pyfunction!(insecure_test_params, m)?)?;
    m.add_function(wrap_pyfunction!(load_mnist_test, m)?)?;
    Ok(())
}
