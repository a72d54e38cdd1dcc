"""Type stubs of the native module ``wgfhe._wgfhe`` (re-exported by ``wgfhe``)."""

from typing import Callable, List, Optional, Sequence, Tuple

import numpy as np
import numpy.typing as npt

Progress = Callable[[int, int], object]
"""``progress(done, total)``, called after each batch; an exception it raises stops the work."""

class WgfheError(Exception):
    """An error of the library (bad bytes, wrong key, parameter mismatch, ...)."""

class Params:
    """A validated parameter set. Picklable (as its wire bytes)."""

    @property
    def name(self) -> str: ...
    @property
    def scheme(self) -> str:
        """``"bgv"`` or ``"ckks"``."""
    @property
    def log_n(self) -> int: ...
    @property
    def n(self) -> int: ...
    @property
    def slots(self) -> int:
        """Slots of a ciphertext (BGV: N when t batches, else 0; CKKS: N/2)."""
    @property
    def plaintext_modulus(self) -> Optional[int]: ...
    @property
    def log_scale(self) -> Optional[int]: ...
    @property
    def id(self) -> int: ...
    @property
    def insecure(self) -> bool: ...
    @property
    def cnn_batch_size(self) -> int:
        """Images per CNN batch (slots / 256)."""
    def to_bytes(self) -> bytes: ...
    def __eq__(self, other: object) -> bool: ...
    def __hash__(self) -> int: ...

def params(name: str) -> Params:
    """The shipped or application set called ``name`` (128-bit secure)."""

def list_params() -> List[str]:
    """Names accepted by :func:`params`."""

def params_from_bytes(data: bytes, insecure: bool = False) -> Params:
    """Loads a ``Parameters`` wire object; insecure test sets need ``insecure=True``."""

def insecure_test_params(
    scheme: str,
    log_n: int,
    q_primes: int,
    p_primes: int,
    dnum: int,
    t: Optional[int] = None,
    log_scale: Optional[int] = None,
) -> Params:
    """An explicitly INSECURE set for tests: ``scheme="bgv"`` with ``t`` or ``"ckks"`` with ``log_scale``."""

class Client:
    """Holds the secret key (it never leaves the object); encrypts, decrypts, makes evaluation keys."""

    def __init__(self, params: Params, backend: str = "auto", seed: Optional[bytes] = None) -> None:
        """``backend``: ``"auto"``, ``"gpu"`` or ``"cpu"``; ``seed`` (32 bytes): reproducible tests only."""
    @property
    def params(self) -> Params: ...
    @property
    def backend(self) -> str: ...
    def evaluation_keys(self, rotations: Sequence[int] = ..., swap: bool = False) -> bytes:
        """Relinearisation key, rotation keys for ``rotations``, row-swap/conjugation key if ``swap``."""
    def encrypt(self, values: npt.ArrayLike, variant: str = "cso") -> bytes:
        """Integers (BGV, under a BXT variant) or reals (CKKS) into one ciphertext."""
    def decrypt(self, ciphertext: bytes) -> npt.NDArray[np.generic]:
        """Signed int64 slots (BGV) or float64 slots (CKKS)."""
    def encrypt_lr(self, pixels: npt.ArrayLike, variant: str = "cso") -> List[bytes]:
        """One ciphertext per pixel for a batch of ``(count, dim)`` pixels."""
    def decrypt_lr(self, ciphertext: bytes, count: int) -> npt.NDArray[np.int64]:
        """The first ``count`` scores of a batch."""
    def encrypt_cnn(self, images: npt.ArrayLike, variant: str = "cso") -> List[bytes]:
        """The 25 input ciphertexts of a batch of ``(count, 784)`` or ``(count, 28, 28)`` images."""
    def decrypt_cnn(self, ciphertext: bytes, count: int) -> npt.NDArray[np.int64]:
        """``(count, 10)`` scores of a batch."""

class Server:
    """Built from parameters and evaluation keys only: no secret key, no decryption."""

    def __init__(self, params: Params, evaluation_keys: bytes, backend: str = "auto") -> None: ...
    @property
    def params(self) -> Params: ...
    @property
    def backend(self) -> str: ...
    def add(self, a: bytes, b: bytes) -> bytes: ...
    def sub(self, a: bytes, b: bytes) -> bytes: ...
    def multiply(self, a: bytes, b: bytes) -> bytes:
        """Relinearised (CKKS: and rescaled)."""
    def negate(self, a: bytes) -> bytes: ...
    def rotate(self, a: bytes, steps: int) -> bytes: ...
    def add_plain(self, a: bytes, values: npt.ArrayLike) -> bytes: ...
    def sub_plain(self, a: bytes, values: npt.ArrayLike) -> bytes: ...
    def multiply_plain(self, a: bytes, values: npt.ArrayLike) -> bytes: ...
    def lr(
        self,
        model: LrModel,
        batches: Sequence[Sequence[bytes]],
        variant: str = "cso",
        progress: Optional[Progress] = None,
    ) -> List[bytes]:
        """One score ciphertext per batch of pixel ciphertexts."""
    def cnn(
        self,
        model: CnnModel,
        batches: Sequence[Sequence[bytes]],
        variant: str = "cso",
        relu: str = "lut",
        keep: float = 1.0,
        progress: Optional[Progress] = None,
    ) -> List[bytes]:
        """One scores ciphertext per batch of 25 input ciphertexts; ``relu``: ``"lut"`` or ``"digits"``."""

class LrModel:
    """The quantised logistic regression."""

    def __init__(self, weights: Sequence[int], bias: int, pixel_bits: int = 4) -> None: ...
    @staticmethod
    def from_json(text: str) -> LrModel: ...
    def to_json(self) -> str: ...
    @property
    def bound(self) -> int: ...
    def scores(self, pixels: npt.ArrayLike) -> npt.NDArray[np.int64]: ...

class CnnModel:
    """The integer CNN (conv 5x5/2, ReLU, FC, ReLU, FC10)."""

    @staticmethod
    def from_json(text: str) -> CnnModel: ...
    def to_json(self) -> str: ...
    def scores(self, images: npt.ArrayLike, relu: str = "lut", keep: float = 1.0) -> npt.NDArray[np.int64]:
        """``(count, 10)`` plaintext integer scores (with the ReLU faults of ``relu``/``keep``)."""
    def rotation_steps(self, params: Params, relu: str = "lut", keep: float = 1.0) -> List[int]: ...

def load_mnist_test(data_dir: str) -> Tuple[npt.NDArray[np.uint8], npt.NDArray[np.uint8]]:
    """MNIST test images ``(10000, 28, 28)`` and labels from ``data_dir`` (as ``wgfhe mnist`` fetches them)."""
