//! The routes and their handlers.

use std::collections::HashSet;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::body::{Body, Bytes};
use axum::extract::rejection::BytesRejection;
use axum::extract::{DefaultBodyLimit, MatchedPath, Path, Request, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{delete, get, post};
use axum::{Json, Router};
use sha2::{Digest, Sha256};
use tokio::sync::Semaphore;
use wgfhe::params::Parameters;
use wgfhe_mnist::cnn::QuantCnn;
use wgfhe_mnist::lr::QuantLr;

use super::engine::{CnnRelu, Engine, EngineError};
use super::metrics::Metrics;
use super::store::{Owner, Store, StoreError};
use super::wire::{self, ApiError};

/// The header naming the key set of an inference.
pub(crate) const KEY_SET_HEADER: &str = "x-wgfhe-key-set";

/// Everything the handlers share, built once at start.
pub(crate) struct AppState {
    /// The compute.
    pub engine: Arc<dyn Engine>,
    /// The parameter set every object must belong to.
    pub params: Parameters,
    /// The logistic regression, if the models directory has one.
    pub lr: Option<Arc<QuantLr>>,
    /// The CNN, if the models directory has one (its circuits live in the engine).
    pub cnn: Option<Arc<QuantCnn>>,
    /// Key sets.
    pub store: Arc<Store>,
    /// SHA-256 of each accepted token; `None`: no authentication.
    pub tokens: Option<HashSet<Owner>>,
    /// Compute slots.
    pub slots: Arc<Semaphore>,
    /// Most requests waiting for a slot before 429.
    pub max_queue: u64,
    /// Per-request limit (waiting and computing).
    pub timeout: Duration,
    /// Largest body accepted.
    pub max_body: usize,
    /// Time a client has to send a whole request body.
    pub body_timeout: Duration,
    /// Counters.
    pub metrics: Metrics,
}

type St = State<Arc<AppState>>;

/// The router.
pub(crate) fn router(state: Arc<AppState>) -> Router {
    let limit = state.max_body;
    Router::new()
        .route("/healthz", get(|| async { "ok\n" }))
        .route("/metrics", get(metrics))
        .route("/v1/info", get(info))
        .route("/v1/params", get(params))
        .route("/v1/models/{model}", get(model))
        .route("/v1/keys", post(put_keys))
        .route("/v1/keys/{id}", delete(delete_keys))
        .route("/v1/infer/{model}", post(infer))
        .fallback(|| async { ApiError::new(StatusCode::NOT_FOUND, "not_found", "no such route") })
        .layer(DefaultBodyLimit::max(limit))
        .layer(middleware::from_fn_with_state(Arc::clone(&state), observe))
        .with_state(state)
}

/// Counts and logs each request: method, route template, status, milliseconds; never bodies,
/// headers or ids.
async fn observe(State(st): St, req: Request, next: Next) -> Response {
    let start = Instant::now();
    let route = req.extensions().get::<MatchedPath>().map_or("other", |m| m.as_str()).to_owned();
    let method = req.method().clone();
    // A declared length over the limit is refused before any of the body is read.
    let declared = req.headers().get(header::CONTENT_LENGTH).and_then(|v| v.to_str().ok()?.parse::<u64>().ok());
    let res = if declared.is_some_and(|n| n > st.max_body as u64) {
        ApiError::new(StatusCode::PAYLOAD_TOO_LARGE, "too_large", "declared body length over the server's limit")
            .into_response()
    } else {
        match read_body(&st, req).await {
            Ok(req) => next.run(req).await,
            Err(e) => e.into_response(),
        }
    };
    let secs = start.elapsed().as_secs_f64();
    st.metrics.record(&route, res.status().as_u16(), secs);
    eprintln!("{method} {route} {} {:.1} ms", res.status().as_u16(), secs * 1e3);
    res
}

/// The request with its whole body read, within the body deadline (a client that sends it
/// slower, or stops sending, is answered 408 and holds nothing of the server's after) and the
/// body limit (413): no handler and no compute slot ever waits on a client's upload.
async fn read_body(st: &AppState, req: Request) -> Result<Request, ApiError> {
    let (parts, body) = req.into_parts();
    match tokio::time::timeout(st.body_timeout, axum::body::to_bytes(body, st.max_body)).await {
        Err(_) => Err(ApiError::new(
            StatusCode::REQUEST_TIMEOUT,
            "body_timeout",
            "the body did not arrive within the server's body deadline",
        )),
        Ok(Err(e)) => {
            if e.into_inner().downcast_ref::<http_body_util::LengthLimitError>().is_some() {
                Err(ApiError::new(StatusCode::PAYLOAD_TOO_LARGE, "too_large", "body over the server's limit"))
            } else {
                Err(ApiError::malformed("the body could not be read (the connection failed)"))
            }
        }
        Ok(Ok(bytes)) => Ok(Request::from_parts(parts, Body::from(bytes))),
    }
}

async fn metrics(State(st): St) -> impl IntoResponse {
    let text = st.metrics.render(st.engine.as_ref());
    ([(header::CONTENT_TYPE, "text/plain; version=0.0.4")], text)
}

async fn info(State(st): St) -> impl IntoResponse {
    let p = &st.params;
    let mut models: Vec<_> = st
        .lr
        .iter()
        .map(|m| serde_json::json!({"name": "lr", "inputs": m.weights().len(), "pixel_bits": m.pixel_bits(), "variant": "cso"}))
        .collect();
    if st.cnn.is_some() {
        for relu in CnnRelu::ALL {
            if let Some(steps) = st.engine.cnn_rotations(relu) {
                models.push(serde_json::json!({
                    "name": relu.name(), "inputs": CNN_INPUTS, "images_per_batch": st.engine.slots() / CNN_BLOCK,
                    "relu": if relu == CnnRelu::Table { "lut" } else { "digits" }, "variant": "cso",
                    "rotations": steps, "model": "/v1/models/cnn",
                }));
            }
        }
    }
    Json(serde_json::json!({
        "params": {"name": p.name(), "id": format!("{:#018x}", p.id()), "log_n": p.log_n(), "n": p.n(),
                   "insecure": p.is_insecure()},
        "models": models,
        "backend": st.engine.backend_name(),
        "device": st.engine.adapter().map(|a| serde_json::json!({
            "name": a.name, "api": a.backend, "type": a.device_type, "driver": a.driver,
            "software": a.is_software(),
        })),
        "auth": st.tokens.is_some(),
        "limits": {"max_body_bytes": st.max_body, "body_timeout_s": st.body_timeout.as_secs_f64(), "max_queue": st.max_queue, "timeout_s": st.timeout.as_secs_f64()},
    }))
}

async fn params(State(st): St) -> impl IntoResponse {
    ([(header::CONTENT_TYPE, "application/octet-stream")], st.params.to_bytes())
}

/// The CNN's input ciphertexts a batch (25 5x5 patch positions).
const CNN_INPUTS: usize = 25;
/// Slots an image takes in a CNN batch.
const CNN_BLOCK: usize = wgfhe_mnist::split::BLOCK;

async fn model(State(st): St, Path(name): Path<String>) -> Result<Response, ApiError> {
    let json = match (name.as_str(), &st.lr, &st.cnn) {
        ("lr", Some(m), _) => m.to_json(),
        ("cnn", _, Some(m)) => m.to_json(),
        _ => return Err(unknown_model(&name)),
    }
    .map_err(|e| ApiError::from_lib(&e))?;
    Ok(([(header::CONTENT_TYPE, "application/json")], json).into_response())
}

fn unknown_model(name: &str) -> ApiError {
    let shown: String = name.chars().filter(char::is_ascii_alphanumeric).take(32).collect();
    ApiError::new(StatusCode::NOT_FOUND, "unknown_model", format!("no model '{shown}' on this server"))
}

/// The caller's owner hash: 401 without a token, 403 with one the server does not accept.
fn caller(st: &AppState, headers: &HeaderMap) -> Result<Owner, ApiError> {
    let Some(tokens) = &st.tokens else { return Ok([0; 32]) };
    let Some(value) = headers.get(header::AUTHORIZATION) else {
        return Err(ApiError::new(StatusCode::UNAUTHORIZED, "unauthenticated", "missing Authorization: Bearer token"));
    };
    let token = value.to_str().ok().and_then(|v| v.strip_prefix("Bearer ")).map(str::trim);
    let Some(token) = token else {
        return Err(ApiError::new(StatusCode::UNAUTHORIZED, "unauthenticated", "Authorization is not a Bearer token"));
    };
    let h: Owner = Sha256::digest(token.as_bytes()).into();
    if tokens.contains(&h) {
        Ok(h)
    } else {
        Err(ApiError::new(StatusCode::FORBIDDEN, "forbidden", "token not accepted"))
    }
}

fn body(b: Result<Bytes, BytesRejection>) -> Result<Bytes, ApiError> {
    b.map_err(|r| {
        if r.status() == StatusCode::PAYLOAD_TOO_LARGE {
            ApiError::new(StatusCode::PAYLOAD_TOO_LARGE, "too_large", "body over the server's limit")
        } else {
            ApiError::malformed(format!("body could not be read: {}", r.body_text()))
        }
    })
}

fn store_err(e: StoreError) -> ApiError {
    match e {
        StoreError::NotFound => ApiError::new(StatusCode::NOT_FOUND, "unknown_key_set", "no such key set"),
        StoreError::Corrupt => ApiError::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "corrupt_key_set",
            "the stored key set failed its checksum and is refused; upload the keys again",
        ),
        StoreError::Io(m) => ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, "internal", format!("storage: {m}")),
        StoreError::Random(m) => {
            ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, "internal", format!("randomness: {m}"))
        }
    }
}

/// Runs `f` on a blocking worker once a compute slot is free: 429 past the queue bound, 503
/// past the time limit (the work then finishes in the background, still holding its slot).
async fn compute<T: Send + 'static>(
    st: &Arc<AppState>,
    f: impl FnOnce() -> Result<T, ApiError> + Send + 'static,
) -> Result<T, ApiError> {
    let deadline = tokio::time::Instant::now() + st.timeout;
    if st.metrics.queued.fetch_add(1, Ordering::SeqCst) >= st.max_queue {
        st.metrics.queued.fetch_sub(1, Ordering::SeqCst);
        let mut e = ApiError::new(StatusCode::TOO_MANY_REQUESTS, "busy", "the queue is full; retry later");
        e.retry_after = Some(1);
        return Err(e);
    }
    let permit = tokio::time::timeout_at(deadline, Arc::clone(&st.slots).acquire_owned()).await;
    st.metrics.queued.fetch_sub(1, Ordering::SeqCst);
    let permit = match permit {
        Ok(Ok(p)) => p,
        Ok(Err(_)) => return Err(ApiError::new(StatusCode::SERVICE_UNAVAILABLE, "shutting_down", "server closing")),
        Err(_) => return Err(timeout()),
    };
    let state = Arc::clone(st);
    let job = tokio::task::spawn_blocking(move || {
        state.metrics.running.fetch_add(1, Ordering::SeqCst);
        let r = f();
        state.metrics.running.fetch_sub(1, Ordering::SeqCst);
        drop(permit);
        r
    });
    match tokio::time::timeout_at(deadline, job).await {
        Ok(Ok(r)) => r,
        Ok(Err(_)) => Err(ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, "internal", "the computation failed")),
        Err(_) => Err(timeout()),
    }
}

fn timeout() -> ApiError {
    ApiError::new(StatusCode::SERVICE_UNAVAILABLE, "timeout", "the request ran past the server's time limit")
}

async fn put_keys(State(st): St, headers: HeaderMap, b: Result<Bytes, BytesRejection>) -> Result<Response, ApiError> {
    let owner = caller(&st, &headers)?;
    let bytes = body(b)?;
    let state = Arc::clone(&st);
    let (id, size) = compute(&st, move || {
        state.engine.check_keys(&bytes).map_err(|e| ApiError::from_lib(&e))?;
        let size = bytes.len();
        let id = state.store.put(owner, bytes.to_vec()).map_err(store_err)?;
        Ok((id, size))
    })
    .await?;
    Ok((StatusCode::CREATED, Json(serde_json::json!({"id": id, "bytes": size}))).into_response())
}

/// Whether the caller owns key set `id`: 404 unknown, 403 another caller's.
fn owned(st: &AppState, id: &str, owner: &Owner) -> Result<(), ApiError> {
    if &st.store.owner(id).map_err(store_err)? != owner {
        return Err(ApiError::new(StatusCode::FORBIDDEN, "forbidden", "the key set belongs to another token"));
    }
    Ok(())
}

async fn delete_keys(State(st): St, headers: HeaderMap, Path(id): Path<String>) -> Result<Response, ApiError> {
    let owner = caller(&st, &headers)?;
    let state = Arc::clone(&st);
    tokio::task::spawn_blocking(move || {
        owned(&state, &id, &owner)?;
        state.engine.forget_keys(&id);
        state.store.delete(&id).map_err(store_err)
    })
    .await
    .map_err(|_| ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, "internal", "delete failed"))??;
    Ok(StatusCode::NO_CONTENT.into_response())
}

async fn infer(
    State(st): St,
    headers: HeaderMap,
    Path(name): Path<String>,
    b: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    let owner = caller(&st, &headers)?;
    let model = match (name.as_str(), &st.lr) {
        ("lr", Some(m)) => Served::Lr(Arc::clone(m)),
        _ => match CnnRelu::from_name(&name) {
            Some(relu) if st.engine.cnn_rotations(relu).is_some() => Served::Cnn(relu),
            _ => return Err(unknown_model(&name)),
        },
    };
    let Some(id) = headers.get(KEY_SET_HEADER).and_then(|v| v.to_str().ok()).map(str::to_owned) else {
        return Err(ApiError::malformed(format!("missing the {KEY_SET_HEADER} header")));
    };
    let bytes = body(b)?;
    let state = Arc::clone(&st);
    let out = compute(&st, move || {
        // The key set must exist and be the caller's even where the model needs no key (the
        // LR): the binding is what stops one client spending another's slot.
        owned(&state, &id, &owner)?;
        let lib = |e: wgfhe::Error| ApiError::from_lib(&e);
        let score = match &model {
            Served::Lr(m) => {
                let inputs = wire::decode(&bytes, m.weights().len())?;
                state.engine.lr(m, &inputs).map_err(lib)?
            }
            Served::Cnn(relu) => {
                let inputs = wire::decode(&bytes, CNN_INPUTS)?;
                let mut load = || state.store.get(&id).map(|set| set.keys);
                state.engine.cnn(*relu, &id, &mut load, &inputs).map_err(|e| match e {
                    EngineError::Store(e) => store_err(e),
                    EngineError::Lib(e) => lib(e),
                })?
            }
        };
        Ok(wire::encode(&[score]))
    })
    .await?;
    Ok(([(header::CONTENT_TYPE, "application/octet-stream")], out).into_response())
}

/// What an inference asks for.
enum Served {
    Lr(Arc<QuantLr>),
    Cnn(CnnRelu),
}
