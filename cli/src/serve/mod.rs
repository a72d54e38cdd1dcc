//! `wgfhe serve`: encrypted inference over HTTP. Clients upload evaluation keys, send
//! ciphertexts and get encrypted scores back; the server never holds a secret key. The
//! protocol and deployment are in `docs/serve.md`.

mod engine;
mod http;
mod metrics;
mod remote;
mod store;
mod wire;

use std::collections::HashSet;
use std::io::Write;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use clap::Args;
use sha2::{Digest, Sha256};
use wgfhe::backend::BackendKind;
use wgfhe::params::Parameters;
use wgfhe::ring::RingContext;
use wgfhe::Error;
use wgfhe_mnist::cnn::QuantCnn;
use wgfhe_mnist::lr::QuantLr;

use self::http::AppState;
use self::metrics::Metrics;
use self::store::Store;

pub(crate) use self::remote::{run as infer, InferArgs};

/// `wgfhe serve` options.
#[derive(Debug, Args)]
pub(crate) struct ServeArgs {
    /// Address to listen on (port 0: any free port; the bound address is printed on stdout).
    #[arg(long, default_value = "127.0.0.1:8480")]
    listen: SocketAddr,
    /// Models directory: `params.bin` (the parameter set's wire object) and at least one of
    /// `lr.json` (the quantised logistic regression) and `cnn.json` (the integer CNN), as
    /// `wgfhe models --out DIR` writes them.
    #[arg(long)]
    models: PathBuf,
    /// Backend: auto, gpu or cpu (default: WGFHE_BACKEND, else auto).
    #[arg(long)]
    backend: Option<BackendKind>,
    /// File of accepted bearer tokens, one a line; without it, no authentication.
    #[arg(long)]
    token_file: Option<PathBuf>,
    /// Key-set store directory (default: `<models>/keys`).
    #[arg(long)]
    store: Option<PathBuf>,
    /// Computations at once.
    #[arg(long, default_value_t = 2)]
    max_concurrency: usize,
    /// Requests waiting for a computation slot before 429.
    #[arg(long, default_value_t = 64)]
    max_queue: u64,
    /// Per-request time limit (waiting and computing), seconds.
    #[arg(long, default_value_t = 120.0)]
    request_timeout_s: f64,
    /// Largest request body, bytes.
    #[arg(long, default_value_t = 256 << 20)]
    max_body_bytes: usize,
    /// Time a client has to send a whole request body, seconds (408 past it).
    #[arg(long, default_value_t = 60.0)]
    body_timeout_s: f64,
    /// Bytes of parsed evaluation keys held on the backend (device memory on a GPU) between
    /// requests; the least recently used key sets leave first (never the disk).
    #[arg(long, default_value_t = 4 << 30)]
    device_budget_bytes: u64,
    /// Accept an insecure test parameter set in `params.bin` (tests and demos only).
    #[arg(long)]
    insecure_test_params: bool,
}

fn io_err(operation: &'static str, path: Option<&Path>, e: &std::io::Error) -> Error {
    Error::Io { operation, path: path.map(Path::to_path_buf), kind: e.kind(), reason: e.to_string() }
}

fn read(path: &Path) -> wgfhe::Result<Vec<u8>> {
    std::fs::read(path).map_err(|e| io_err("read", Some(path), &e))
}

/// The text of `dir/name` if it exists.
fn model_json(dir: &Path, name: &'static str) -> wgfhe::Result<Option<String>> {
    let path = dir.join(name);
    if !path.exists() {
        return Ok(None);
    }
    String::from_utf8(read(&path)?).map(Some).map_err(|_| Error::InvalidField { field: name, reason: "not UTF-8" })
}

fn tokens(path: &Path) -> wgfhe::Result<HashSet<[u8; 32]>> {
    let text =
        String::from_utf8(read(path)?).map_err(|_| Error::InvalidField { field: "token file", reason: "not UTF-8" })?;
    let set: HashSet<[u8; 32]> =
        text.lines().map(str::trim).filter(|l| !l.is_empty()).map(|t| Sha256::digest(t.as_bytes()).into()).collect();
    if set.is_empty() {
        return Err(Error::InvalidField { field: "token file", reason: "holds no token" });
    }
    Ok(set)
}

/// Builds the state (models, parameters, backend, store) and serves until SIGTERM or ctrl-c,
/// finishing the requests already accepted.
pub(crate) fn run(args: &ServeArgs) -> wgfhe::Result<()> {
    let raw = read(&args.models.join("params.bin"))?;
    let params = if args.insecure_test_params {
        Parameters::from_bytes_insecure_for_tests(&raw)
    } else {
        Parameters::from_bytes(&raw)
    }?;
    let lr = model_json(&args.models, "lr.json")?.map(|t| QuantLr::from_json(&t)).transpose()?.map(Arc::new);
    let cnn = model_json(&args.models, "cnn.json")?.map(|t| QuantCnn::from_json(&t)).transpose()?.map(Arc::new);
    if lr.is_none() && cnn.is_none() {
        return Err(Error::InvalidField { field: "--models", reason: "holds neither lr.json nor cnn.json" });
    }
    let backend = crate::env::open_backend(args.backend)?;
    let engine: Arc<dyn engine::Engine> = Arc::from(backend.with_backend(
        RingContext::new(&params)?,
        engine::OpenEngine { lr: lr.as_deref(), cnn: cnn.as_deref(), key_budget: args.device_budget_bytes },
    )?);
    let store_dir = args.store.clone().unwrap_or_else(|| args.models.join("keys"));
    let store = Store::open(&store_dir).map_err(|e| Error::InvalidField { field: "store", reason: leak_reason(&e) })?;
    let tokens = args.token_file.as_deref().map(tokens).transpose()?;
    let state = Arc::new(AppState {
        engine,
        params,
        lr,
        cnn,
        store: Arc::new(store),
        tokens,
        slots: Arc::new(tokio::sync::Semaphore::new(args.max_concurrency.max(1))),
        max_queue: args.max_queue,
        timeout: Duration::from_secs_f64(args.request_timeout_s.clamp(0.001, 86_400.0)),
        max_body: args.max_body_bytes,
        body_timeout: Duration::from_secs_f64(args.body_timeout_s.clamp(0.001, 86_400.0)),
        metrics: Metrics::default(),
    });
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| io_err("start the runtime", None, &e))?;
    rt.block_on(serve(args.listen, state))
}

fn leak_reason(e: &store::StoreError) -> &'static str {
    match e {
        store::StoreError::Io(_) => "the store directory cannot be created",
        _ => "the store cannot be opened",
    }
}

async fn serve(addr: SocketAddr, state: Arc<AppState>) -> wgfhe::Result<()> {
    let listener = tokio::net::TcpListener::bind(addr).await.map_err(|e| io_err("listen", None, &e))?;
    let bound = listener.local_addr().map_err(|e| io_err("listen", None, &e))?;
    let backend = match state.engine.adapter() {
        Some(a) => format!("gpu ({}, {})", a.name, a.backend),
        None => state.engine.backend_name().to_owned(),
    };
    {
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "listening on http://{bound}");
        let _ = out.flush();
    }
    eprintln!("wgfhe serve: {} on {backend}, listening on {bound}", state.params.name());
    axum::serve(listener, http::router(state))
        .with_graceful_shutdown(shutdown())
        .await
        .map_err(|e| io_err("serve", None, &e))?;
    eprintln!("wgfhe serve: stopped");
    Ok(())
}

/// Resolves on ctrl-c or SIGTERM.
async fn shutdown() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        () = ctrl_c => {},
        () = term => {},
    }
    eprintln!("wgfhe serve: shutting down, finishing accepted requests");
}
