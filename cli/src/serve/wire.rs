//! Bodies and errors on the HTTP side.
//!
//! A batch of wire objects travels as one binary frame (`application/octet-stream`): the magic
//! `WGFB`, a `u32` version (1) and a `u32` count, little-endian, then each object as a `u64`
//! little-endian length and its bytes. Every object inside is a library wire object with its
//! own version, parameter id and checksum. Errors are JSON:
//! `{"error": {"kind": "...", "message": "..."}}`.

use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};

/// The frame's magic.
pub(crate) const MAGIC: &[u8; 4] = b"WGFB";
/// The frame's version.
pub(crate) const VERSION: u32 = 1;

/// A typed error answer.
#[derive(Debug)]
pub(crate) struct ApiError {
    /// The HTTP status.
    pub status: StatusCode,
    /// A stable machine-readable kind.
    pub kind: &'static str,
    /// A human-readable message (never key, ciphertext or token content).
    pub message: String,
    /// Seconds for `Retry-After` (429 only).
    pub retry_after: Option<u64>,
}

impl ApiError {
    /// An error of `status` and `kind`.
    pub(crate) fn new(status: StatusCode, kind: &'static str, message: impl Into<String>) -> Self {
        Self { status, kind, message: message.into(), retry_after: None }
    }

    /// 400: a malformed body.
    pub(crate) fn malformed(message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, "malformed", message)
    }

    /// A library error met while reading or evaluating the client's objects: 422 when the
    /// object is well-formed but for other parameters, of the wrong shape, the key set lacks a key
    /// the model needs or the noise estimate runs past the budget, 400 otherwise.
    pub(crate) fn from_lib(e: &wgfhe::Error) -> Self {
        use wgfhe::Error as E;
        match e {
            E::ParameterMismatch { .. } | E::SchemeMismatch { .. } | E::LevelMismatch { .. } => {
                Self::new(StatusCode::UNPROCESSABLE_ENTITY, "wrong_parameters", e.to_string())
            }
            E::DimensionMismatch { .. } | E::BoundTooLarge { .. } | E::CorrectionMismatch { .. } => {
                Self::new(StatusCode::UNPROCESSABLE_ENTITY, "wrong_shape", e.to_string())
            }
            E::MissingRelinKey | E::MissingGaloisKey { .. } => {
                Self::new(StatusCode::UNPROCESSABLE_ENTITY, "missing_keys", e.to_string())
            }
            E::NoiseBudgetExhausted { .. } => {
                Self::new(StatusCode::UNPROCESSABLE_ENTITY, "noise_budget", e.to_string())
            }
            E::Io { .. } => Self::new(StatusCode::INTERNAL_SERVER_ERROR, "internal", e.to_string()),
            _ => Self::malformed(e.to_string()),
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body = serde_json::json!({"error": {"kind": self.kind, "message": self.message}});
        let mut res = (self.status, axum::Json(body)).into_response();
        if let Some(s) = self.retry_after {
            if let Ok(v) = HeaderValue::from_str(&s.to_string()) {
                res.headers_mut().insert(header::RETRY_AFTER, v);
            }
        }
        res
    }
}

/// Encodes objects as one frame.
pub(crate) fn encode(objects: &[Vec<u8>]) -> Vec<u8> {
    let total: usize = objects.iter().map(|o| o.len() + 8).sum();
    let mut out = Vec::with_capacity(12 + total);
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&VERSION.to_le_bytes());
    out.extend_from_slice(&(objects.len() as u32).to_le_bytes());
    for o in objects {
        out.extend_from_slice(&(o.len() as u64).to_le_bytes());
        out.extend_from_slice(o);
    }
    out
}

fn take<'a>(body: &mut &'a [u8], n: usize, what: &str) -> Result<&'a [u8], ApiError> {
    let Some((head, rest)) = body.split_at_checked(n) else {
        return Err(ApiError::malformed(format!("frame truncated in {what}")));
    };
    *body = rest;
    Ok(head)
}

fn le_u32(b: &[u8]) -> u32 {
    b.iter().rev().fold(0u32, |acc, &x| (acc << 8) | u32::from(x))
}

fn le_u64(b: &[u8]) -> u64 {
    b.iter().rev().fold(0u64, |acc, &x| (acc << 8) | u64::from(x))
}

/// Decodes a frame of at most `max_count` objects, borrowing each from `body`. Lengths are
/// checked against the bytes present before anything is allocated.
pub(crate) fn decode(mut body: &[u8], max_count: usize) -> Result<Vec<&[u8]>, ApiError> {
    if take(&mut body, 4, "the magic")? != MAGIC {
        return Err(ApiError::malformed("not a WGFB frame (bad magic)"));
    }
    let version = le_u32(take(&mut body, 4, "the version")?);
    if version != VERSION {
        return Err(ApiError::malformed(format!("frame version {version} unsupported (this server reads {VERSION})")));
    }
    let count = le_u32(take(&mut body, 4, "the count")?) as usize;
    if count > max_count {
        return Err(ApiError::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "wrong_shape",
            format!("{count} objects in a frame; at most {max_count}"),
        ));
    }
    let mut out = Vec::with_capacity(count);
    for i in 0..count {
        let len = le_u64(take(&mut body, 8, "a length")?);
        if len > body.len() as u64 {
            return Err(ApiError::malformed(format!(
                "object {i} declares {len} bytes; only {} remain in the body",
                body.len()
            )));
        }
        out.push(take(&mut body, len as usize, "an object")?);
    }
    if !body.is_empty() {
        return Err(ApiError::malformed(format!("{} bytes after the last object", body.len())));
    }
    Ok(out)
}
