"""wgfhe: GPU-accelerated fully homomorphic encryption (BGV and CKKS) from Python.

A :class:`Client` holds the only secret key: it encrypts numpy arrays, decrypts, and makes the
evaluation keys a :class:`Server` needs. A server is built from parameters and evaluation-key
bytes alone; it has no way to decrypt. Keys and ciphertexts travel as ``bytes`` in the
library's versioned, checksummed wire format, so they can be stored, sent, or put in Ray's
object store.

Errors of the library are raised as :class:`WgfheError` with the library's message.

:class:`RemoteServer` (module :mod:`wgfhe.remote`) is the client of ``wgfhe serve``: the same
client-side calls, with the server's half over HTTP.
"""

from ._wgfhe import (
    Client,
    CnnModel,
    LrModel,
    Params,
    Server,
    WgfheError,
    insecure_test_params,
    list_params,
    load_mnist_test,
    params,
    params_from_bytes,
)
from .remote import RemoteError, RemoteServer

__all__ = [
    "Client",
    "CnnModel",
    "LrModel",
    "Params",
    "RemoteError",
    "RemoteServer",
    "Server",
    "WgfheError",
    "insecure_test_params",
    "list_params",
    "load_mnist_test",
    "params",
    "params_from_bytes",
]
