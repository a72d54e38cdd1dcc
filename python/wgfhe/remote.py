"""The client of ``wgfhe serve``: encrypted inference over HTTP.

A :class:`RemoteServer` stands where a local :class:`wgfhe.Server` would: the secret key stays
in the caller's :class:`wgfhe.Client`; only evaluation keys and ciphertexts cross the network.
Built with the evaluation keys, it answers the model calls of ``Server`` with the same
arguments and the same answers, so code switches by changing one line::

    server = wgfhe.Server(params, keys)
    server = wgfhe.RemoteServer(url, token=token, evaluation_keys=keys)
    scores = server.lr(model, batches)                 # or server.cnn(model, batches, relu="lut")
It speaks the protocol of ``docs/serve.md`` with the standard library's ``urllib`` (plain HTTP:
put TLS in a proxy).

Every refusal of the server is raised as :class:`RemoteError` (a :class:`wgfhe.WgfheError`)
carrying the HTTP status, the server's stable error ``kind`` and, for 429, its ``Retry-After``.
"""

from __future__ import annotations

import json
import struct
import urllib.error
import urllib.parse
import urllib.request
from typing import Any, Callable, Dict, List, Optional, Sequence, Union

from ._wgfhe import CnnModel, LrModel, Params, WgfheError, params_from_bytes

FRAME_MAGIC = b"WGFB"
"""The first four bytes of a frame."""
FRAME_VERSION = 1
"""The frame version this client writes and reads."""
KEY_SET_HEADER = "x-wgfhe-key-set"
"""The request header naming the key set of an inference."""
CNN_INPUTS = 25
"""Input ciphertexts of one CNN batch."""
CNN_MODELS = {"lut": "cnn", "digits": "cnn-digits"}
"""The server's model name of each CNN ReLU path (``relu`` as in ``Server.cnn``)."""

__all__ = [
    "CNN_INPUTS",
    "CNN_MODELS",
    "FRAME_MAGIC",
    "FRAME_VERSION",
    "KEY_SET_HEADER",
    "RemoteError",
    "RemoteServer",
    "decode_frame",
    "encode_frame",
]


class RemoteError(WgfheError):
    """A request the server refused, or an answer this client cannot read.

    ``status`` is the HTTP status (``None`` when no answer came: connection refused, timeout,
    an unreadable answer), ``kind`` the server's error kind (``"unauthenticated"``, ``"forbidden"``,
    ``"malformed"``, ``"wrong_shape"``, ``"wrong_parameters"``, ``"unknown_key_set"``,
    ``"too_large"``, ``"missing_keys"``, ``"busy"``, ``"timeout"``, ... or ``"transport"``, ``"bad_answer"`` and
    ``"no_model"`` for failures on this side) and ``retry_after`` the seconds a 429 asks
    the client to wait.
    """

    def __init__(self, status: Optional[int], kind: str, message: str, retry_after: Optional[int] = None) -> None:
        self.status = status
        self.kind = kind
        self.message = message
        self.retry_after = retry_after
        where = f"HTTP {status}" if status is not None else "no answer"
        super().__init__(f"{where} ({kind}): {message}")


def encode_frame(objects: Sequence[bytes]) -> bytes:
    """A ``WGFB`` frame: magic, version and count (``u32``), then each object as a ``u64``
    length and its bytes, all little-endian."""
    parts = [FRAME_MAGIC, struct.pack("<II", FRAME_VERSION, len(objects))]
    for obj in objects:
        obj = bytes(obj)
        parts.append(struct.pack("<Q", len(obj)))
        parts.append(obj)
    return b"".join(parts)


def decode_frame(data: bytes, max_count: int) -> List[bytes]:
    """The objects of a frame of at most ``max_count`` objects; every length is checked against
    the bytes present before anything is sliced. Raises :class:`RemoteError` (``bad_answer``)."""

    def bad(message: str) -> RemoteError:
        return RemoteError(None, "bad_answer", message)

    if len(data) < 12 or data[:4] != FRAME_MAGIC:
        raise bad("not a WGFB frame (bad magic or shorter than its head)")
    version, count = struct.unpack_from("<II", data, 4)
    if version != FRAME_VERSION:
        raise bad(f"frame version {version} unsupported (this client reads {FRAME_VERSION})")
    if count > max_count:
        raise bad(f"{count} objects in a frame; at most {max_count} expected")
    out, at = [], 12
    for i in range(count):
        if len(data) - at < 8:
            raise bad(f"frame truncated in the length of object {i}")
        (length,) = struct.unpack_from("<Q", data, at)
        at += 8
        if length > len(data) - at:
            raise bad(f"object {i} declares {length} bytes; only {len(data) - at} remain")
        out.append(data[at : at + length])
        at += length
    if at != len(data):
        raise bad(f"{len(data) - at} bytes after the last object")
    return out


class RemoteServer:
    """A ``wgfhe serve`` instance at ``url`` (``http://HOST:PORT``).

    ``token``: the bearer token (needed for key upload, inference and deletion when the server
    has a token file). ``timeout``: seconds each request may take. ``insecure``: accept an
    insecure test parameter set from :meth:`params` (tests only). ``evaluation_keys``
    (``Client.evaluation_keys()``): uploads them now and binds this server to their key set, so
    that ``lr(model, batches)`` and ``cnn(model, batches, relu=...)`` take ``Server``'s
    arguments (see :meth:`bind`); :meth:`close` (or ``with``) deletes that key set.
    """

    def __init__(
        self,
        url: str,
        token: Optional[str] = None,
        timeout: float = 600.0,
        insecure: bool = False,
        *,
        evaluation_keys: Optional[bytes] = None,
    ) -> None:
        parsed = urllib.parse.urlsplit(url)
        if parsed.scheme != "http" or not parsed.netloc:
            raise ValueError(f"url must be http://HOST:PORT, got {url!r}")
        if timeout <= 0:
            raise ValueError("timeout must be positive")
        self._base = f"http://{parsed.netloc}"
        self._token = token
        self._timeout = timeout
        self._insecure = insecure
        self._lr_inputs: Optional[int] = None
        self._models: Dict[str, str] = {}
        self.key_set: Optional[str] = None
        """The key set this server is bound to (``None``: unbound)."""
        if evaluation_keys is not None:
            self.key_set = self.upload_keys(evaluation_keys)

    def __repr__(self) -> str:
        bound = f", key_set={self.key_set!r}" if self.key_set is not None else ""
        return f"RemoteServer({self._base!r}{bound})"

    def __enter__(self) -> "RemoteServer":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def url(self) -> str:
        return self._base

    def bind(self, evaluation_keys: bytes) -> "RemoteServer":
        """A server like this one (URL, token, limits) bound to a fresh upload of
        ``evaluation_keys``: ``RemoteServer(url, token, evaluation_keys=keys)`` later."""
        return RemoteServer(
            self._base, self._token, self._timeout, self._insecure, evaluation_keys=evaluation_keys
        )

    def close(self) -> None:
        """Deletes the bound key set (if any) from the server; this server is then unbound."""
        if self.key_set is not None:
            key_set, self.key_set = self.key_set, None
            self.delete_keys(key_set)

    def _request(
        self,
        method: str,
        path: str,
        body: Optional[bytes] = None,
        headers: Optional[Dict[str, str]] = None,
        auth: bool = False,
        want: int = 200,
    ) -> bytes:
        req = urllib.request.Request(self._base + path, data=body, method=method)
        if body is not None:
            req.add_header("Content-Type", "application/octet-stream")
        for key, value in (headers or {}).items():
            req.add_header(key, value)
        if auth and self._token is not None:
            req.add_header("Authorization", f"Bearer {self._token}")
        try:
            with urllib.request.urlopen(req, timeout=self._timeout) as res:
                status, data = res.status, res.read()
        except urllib.error.HTTPError as e:
            raise _refusal(e.code, e.read(), e.headers.get("Retry-After")) from None
        except (urllib.error.URLError, OSError) as e:
            raise RemoteError(None, "transport", f"{method} {path}: {e}") from None
        if status != want:
            raise _refusal(status, data, None)
        return data

    def healthy(self) -> bool:
        """Whether ``GET /healthz`` answers ``ok``."""
        try:
            return self._request("GET", "/healthz").strip() == b"ok"
        except RemoteError:
            return False

    def info(self) -> Dict[str, Any]:
        """``GET /v1/info``: parameter set, models, backend, limits."""
        return _json(self._request("GET", "/v1/info"))

    def params(self) -> Params:
        """The server's parameter set (its wire object, checked here)."""
        return params_from_bytes(self._request("GET", "/v1/params"), insecure=self._insecure)

    def lr_model(self) -> LrModel:
        """The logistic regression the server evaluates (it publishes its plaintext model)."""
        return LrModel.from_json(self._request("GET", "/v1/models/lr").decode("utf-8", "replace"))

    def upload_keys(self, evaluation_keys: bytes) -> str:
        """``POST /v1/keys``: stores evaluation keys (``Client.evaluation_keys()``) and returns
        the key set's id."""
        answer = _json(self._request("POST", "/v1/keys", body=bytes(evaluation_keys), auth=True, want=201))
        key_set = answer.get("id")
        if not isinstance(key_set, str) or not key_set:
            raise RemoteError(201, "bad_answer", "the key upload answer has no id")
        return key_set

    def delete_keys(self, key_set: str) -> None:
        """``DELETE /v1/keys/ID``: the server forgets the key set (memory and disk)."""
        self._request("DELETE", f"/v1/keys/{urllib.parse.quote(key_set, safe='')}", auth=True, want=204)

    def lr(
        self,
        model: Union[LrModel, str],
        batches: Sequence[Any],
        variant: str = "cso",
        progress: Optional[Callable[[int, int], Any]] = None,
    ) -> Any:
        """As ``Server.lr(model, batches, variant, progress)`` on a bound server: one score
        ciphertext per batch of pixel ciphertexts (``Client.encrypt_lr``), the same bytes.
        ``model`` must be the model the server evaluates (:meth:`lr_model`; another is a
        ``ValueError``, as the server computes with its own), ``variant`` ``"cso"``.

        The older form ``lr(key_set, batch)``: one batch with key set ``key_set``, its score
        ciphertext."""
        if isinstance(model, str):
            return self._lr_one(model, batches)
        key_set = self._bound_model(model, "lr", variant)
        return self._each(batches, progress, lambda batch: self._lr_one(key_set, batch))

    def _lr_one(self, key_set: str, batch: Sequence[bytes]) -> bytes:
        """The logistic regression on one batch of pixel ciphertexts (``Client.encrypt_lr``,
        BXT variant ``cso``): the score ciphertext, for ``Client.decrypt_lr``."""
        if self._lr_inputs is None:
            self._lr_inputs = self._lr_input_count()
        if len(batch) != self._lr_inputs:
            raise ValueError(f"{len(batch)} ciphertexts in a batch; the model has {self._lr_inputs} inputs")
        data = self._request(
            "POST", "/v1/infer/lr", body=encode_frame(batch), headers={KEY_SET_HEADER: key_set}, auth=True
        )
        objects = decode_frame(data, 1)
        if not objects:
            raise RemoteError(200, "bad_answer", "the answer holds no ciphertext")
        return objects[0]

    def lr_batches(self, key_set: str, batches: Sequence[Sequence[bytes]]) -> List[bytes]:
        """``lr(key_set, batch)`` on each batch, in order (the shape of ``Server.lr``'s answer)."""
        return [self._lr_one(key_set, batch) for batch in batches]

    def cnn_model(self) -> CnnModel:
        """The CNN the server evaluates (its plaintext model, to check scores and to make the
        rotation keys: ``model.rotation_steps(params, relu)``)."""
        return CnnModel.from_json(self._request("GET", "/v1/models/cnn").decode("utf-8", "replace"))

    def cnn(
        self,
        model: Union[CnnModel, str],
        batches: Sequence[Any],
        variant: str = "cso",
        relu: str = "lut",
        keep: float = 1.0,
        progress: Optional[Callable[[int, int], Any]] = None,
    ) -> Any:
        """As ``Server.cnn(model, batches, variant, relu, keep, progress)`` on a bound server:
        one scores ciphertext per batch of 25 input ciphertexts (``Client.encrypt_cnn``), the
        same bytes. ``model`` must be the model the server evaluates (:meth:`cnn_model`),
        ``variant`` ``"cso"``, ``keep`` 1 (the server keeps every digit).

        The older form ``cnn(key_set, batch, relu)``: one batch with key set ``key_set``, its
        scores ciphertext."""
        if isinstance(model, str):
            # The older positional form: cnn(key_set, batch, relu).
            return self._cnn_one(model, batches, relu if variant == "cso" else variant)
        if keep != 1.0:
            raise ValueError(f"keep must be 1 on a remote server (it keeps every digit), got {keep}")
        key_set = self._bound_model(model, "cnn", variant)
        return self._each(batches, progress, lambda batch: self._cnn_one(key_set, batch, relu))

    def _cnn_one(self, key_set: str, batch: Sequence[bytes], relu: str = "lut") -> bytes:
        """The CNN on one batch of its 25 input ciphertexts (``Client.encrypt_cnn``, BXT
        variant ``cso``) with the key set's rotation keys: the scores ciphertext, for
        ``Client.decrypt_cnn``. ``relu``: ``"lut"`` (tables) or ``"digits"`` (every digit
        kept; both exact)."""
        if relu not in CNN_MODELS:
            raise ValueError(f"relu must be one of {sorted(CNN_MODELS)}, got {relu!r}")
        if len(batch) != CNN_INPUTS:
            raise ValueError(f"{len(batch)} ciphertexts in a batch; the CNN takes {CNN_INPUTS}")
        data = self._request(
            "POST",
            f"/v1/infer/{CNN_MODELS[relu]}",
            body=encode_frame(batch),
            headers={KEY_SET_HEADER: key_set},
            auth=True,
        )
        objects = decode_frame(data, 1)
        if not objects:
            raise RemoteError(200, "bad_answer", "the answer holds no ciphertext")
        return objects[0]

    def cnn_batches(self, key_set: str, batches: Sequence[Sequence[bytes]], relu: str = "lut") -> List[bytes]:
        """``cnn(key_set, batch, relu)`` on each batch, in order (the shape of ``Server.cnn``'s
        answer)."""
        return [self._cnn_one(key_set, batch, relu) for batch in batches]

    def _bound_model(self, model: Any, name: str, variant: str) -> str:
        """The bound key set, once ``model`` is checked to be the server's ``name`` model and
        ``variant`` the one the server takes."""
        if self.key_set is None:
            raise ValueError(
                "this RemoteServer holds no evaluation keys: build it with "
                "RemoteServer(url, token, evaluation_keys=keys) or use bind(keys)"
            )
        if variant != "cso":
            raise ValueError(f"variant must be 'cso' on a remote server, got {variant!r}")
        kind = LrModel if name == "lr" else CnnModel
        if not isinstance(model, kind):
            raise TypeError(f"model must be a {kind.__name__}, got {type(model).__name__}")
        if name not in self._models:
            self._models[name] = (self.lr_model() if name == "lr" else self.cnn_model()).to_json()
        if model.to_json() != self._models[name]:
            raise ValueError(f"the model differs from the one the server evaluates (GET /v1/models/{name})")
        return self.key_set

    @staticmethod
    def _each(
        batches: Sequence[Any], progress: Optional[Callable[[int, int], Any]], one: Callable[[Any], bytes]
    ) -> List[bytes]:
        out = []
        for batch in batches:
            out.append(one(batch))
            if progress is not None:
                progress(len(out), len(batches))
        return out

    def _lr_input_count(self) -> int:
        for model in self.info().get("models", []):
            if model.get("name") == "lr":
                inputs = model.get("inputs")
                if isinstance(inputs, int) and inputs > 0:
                    return inputs
        raise RemoteError(None, "no_model", "the server serves no logistic regression")


def _json(data: bytes) -> Dict[str, Any]:
    try:
        value = json.loads(data)
    except ValueError:
        raise RemoteError(None, "bad_answer", "the answer is not JSON") from None
    if not isinstance(value, dict):
        raise RemoteError(None, "bad_answer", "the answer is not a JSON object")
    return value


def _refusal(status: int, body: bytes, retry_after: Optional[str]) -> RemoteError:
    kind, message = "http", body[:200].decode("utf-8", "replace")
    try:
        error = json.loads(body).get("error", {})
        kind = str(error.get("kind", kind))
        message = str(error.get("message", message))
    except (ValueError, AttributeError):
        pass
    seconds = int(retry_after) if retry_after is not None and retry_after.isdigit() else None
    return RemoteError(status, kind, message, seconds)
