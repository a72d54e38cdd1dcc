"""Encrypted MNIST CNN inference scaled out on Ray.

The client (this process) generates the keys, encrypts the images batch by batch and decrypts
the scores; the servers are Ray actors, one per GPU when the cluster has GPUs and otherwise one
per CPU, each a ``wgfhe.Server`` built from the parameters and the evaluation keys only (no
secret key; a ``Server`` has no decrypt). The evaluation keys go into Ray's object store once
(``ray.put``) and every actor reads them from there. The client checks every decrypted score
against the plaintext integer model.

Two modes:

* ``--insecure-demo`` (what the tests run): a small sparse model, synthetic images and an
  explicitly INSECURE ``N = 2^10`` ring (4 images per batch), seconds per batch.
* real data: ``--data data/mnist --model data/mnist/cnn-<hash>.json`` (the model JSON that
  ``wgfhe mnist --model cnn`` caches next to the data it fetches) on ``--params bgv-cnn-n16``
  (256 images per batch; about 15 minutes and 9 GB per batch on a 2-core CPU).

Run: ``python examples/ray_mnist.py --insecure-demo --images 16 --workers 2``.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from typing import Any, Dict, List, Optional

import numpy as np
import ray

import wgfhe

CLASSES = 10
TAPS = 25
POSITIONS = 169


def small_model(seed: int = 9) -> str:
    """A small sparse integer CNN (2 channels, 5 hidden units) whose ReLU tables are short
    enough for the insecure demo ring, as JSON."""
    rng = np.random.default_rng(seed)
    channels, hidden = 2, 5
    conv_w = np.zeros(channels * TAPS, dtype=np.int64)
    for c in range(channels):
        conv_w[c * TAPS + rng.integers(TAPS)] = 1
        conv_w[c * TAPS + rng.integers(TAPS)] -= 1
        conv_w[c * TAPS + 12] += 1
    features = channels * POSITIONS
    fc1_w = np.zeros(hidden * features, dtype=np.int64)
    for n in range(hidden):
        for _ in range(3):
            fc1_w[n * features + rng.integers(features)] = 1 if rng.random() < 0.5 else -1
    fc2_w = rng.integers(-2, 3, size=CLASSES * hidden)
    model = {
        "channels": channels,
        "hidden": hidden,
        "conv_w": conv_w.tolist(),
        "conv_b": [-3, 2],
        "act1": {"shift": 2, "clip": 7},
        "fc1_w": fc1_w.tolist(),
        "fc1_b": [n - 2 for n in range(hidden)],
        "act2": {"shift": 0, "clip": 7},
        "fc2_w": fc2_w.tolist(),
        "fc2_b": [m % 3 for m in range(CLASSES)],
    }
    return json.dumps(model)


def synthetic_images(count: int, seed: int = 4) -> np.ndarray:
    """``(count, 28, 28)`` uint8 images: about 30% ink of random intensity."""
    rng = np.random.default_rng(seed)
    ink = rng.random((count, 28, 28)) < 0.3
    return np.where(ink, rng.integers(0, 256, size=(count, 28, 28)), 0).astype(np.uint8)


def insecure_demo_params() -> wgfhe.Params:
    """The explicitly INSECURE test ring of the Rust CNN tests: N = 2^10, 24 + 6 primes."""
    return wgfhe.insecure_test_params("bgv", 10, 24, 6, 4, t=65537)


@ray.remote
class CnnServer:
    """One server: parameters and evaluation keys only."""

    def __init__(self, params: wgfhe.Params, keys: bytes, model_json: str, backend: str) -> None:
        self.server = wgfhe.Server(params, keys, backend=backend)
        self.model = wgfhe.CnnModel.from_json(model_json)

    def has_decrypt(self) -> bool:
        return hasattr(self.server, "decrypt")

    def run(self, index: int, inputs: List[bytes], variant: str, relu: str, keep: float):
        start = time.perf_counter()
        [scores] = self.server.cnn(self.model, [inputs], variant=variant, relu=relu, keep=keep)
        return index, scores, time.perf_counter() - start, os.getpid()


def run(
    params: wgfhe.Params,
    model_json: str,
    images: np.ndarray,
    workers: int,
    backend: str = "cpu",
    variant: str = "cso",
    relu: str = "lut",
    keep: float = 1.0,
    threads_per_worker: Optional[int] = None,
) -> Dict[str, Any]:
    """Runs the CNN on ``images`` under encryption on ``workers`` Ray actors (``ray.init()``
    must have been called) and checks every decrypted score against the integer model.
    Returns the timings and counts; raises ``AssertionError`` on any score mismatch."""
    start = time.perf_counter()
    model = wgfhe.CnnModel.from_json(model_json)
    client = wgfhe.Client(params, backend=backend)
    keys = client.evaluation_keys(rotations=model.rotation_steps(params, relu=relu, keep=keep))
    keys_ref = ray.put(keys)  # once, into the object store; every actor reads it from there
    keygen_s = time.perf_counter() - start

    gpus = ray.cluster_resources().get("GPU", 0)
    options: Dict[str, Any] = {"num_gpus": 1} if gpus >= 1 else {"num_cpus": 1}
    if threads_per_worker is not None:
        options["runtime_env"] = {"env_vars": {"RAYON_NUM_THREADS": str(threads_per_worker)}}
    actors = [CnnServer.options(**options).remote(params, keys_ref, model_json, backend) for _ in range(workers)]
    assert not any(ray.get([a.has_decrypt.remote() for a in actors])), "a server can decrypt"

    per = params.cnn_batch_size
    batches = [images[i : i + per] for i in range(0, len(images), per)]
    pending = []
    encrypt_s = 0.0
    for i, batch in enumerate(batches):
        t = time.perf_counter()
        inputs = client.encrypt_cnn(batch, variant=variant)
        encrypt_s += time.perf_counter() - t
        pending.append(actors[i % workers].run.remote(i, inputs, variant, relu, keep))
    results = ray.get(pending)

    expected = model.scores(images, relu=relu, keep=keep)
    mismatches = 0
    for index, scores, _, _ in results:
        batch = batches[index]
        got = client.decrypt_cnn(scores, len(batch))
        want = expected[index * per : index * per + len(batch)]
        mismatches += int(np.sum(np.any(got != want, axis=1)))
    assert mismatches == 0, f"{mismatches} images decrypted to scores other than the integer model's"
    for a in actors:
        ray.kill(a)
    return {
        "images": len(images),
        "batches": len(batches),
        "workers": workers,
        "gpus": gpus,
        "server_pids": sorted({pid for _, _, _, pid in results}),
        "keygen_s": keygen_s,
        "encrypt_s": encrypt_s,
        "batch_s": [s for _, _, s, _ in sorted(results, key=lambda r: r[0])],
        "wall_s": time.perf_counter() - start,
        "mismatches": mismatches,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--insecure-demo", action="store_true", help="small model, synthetic images, INSECURE N=2^10 ring")
    ap.add_argument("--data", help="MNIST directory (as `wgfhe mnist` fetches it)")
    ap.add_argument("--model", help="the CNN's JSON (as `wgfhe mnist --model cnn` caches it)")
    ap.add_argument("--params", default="bgv-cnn-n16")
    ap.add_argument("--images", type=int, default=16)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--backend", default="auto", choices=["auto", "gpu", "cpu"])
    ap.add_argument("--variant", default="cso")
    ap.add_argument("--relu", default="lut", choices=["lut", "digits"])
    ap.add_argument("--keep", type=float, default=1.0)
    ap.add_argument("--threads-per-worker", type=int, help="RAYON_NUM_THREADS of each server (default: all cores)")
    ap.add_argument("--address", help="an existing Ray cluster (default: start a local one)")
    a = ap.parse_args()
    if a.insecure_demo:
        params, model_json, images = insecure_demo_params(), small_model(), synthetic_images(a.images)
    else:
        if not (a.data and a.model):
            ap.error("give --data and --model, or --insecure-demo")
        params = wgfhe.params(a.params)
        with open(a.model) as f:
            model_json = f.read()
        images = wgfhe.load_mnist_test(a.data)[0][: a.images]
    if a.address:
        ray.init(address=a.address)
    else:
        ray.init(num_cpus=max(a.workers, 1), object_store_memory=200 * 1024 * 1024, include_dashboard=False)
    report = run(params, model_json, images, a.workers, a.backend, a.variant, a.relu, a.keep, a.threads_per_worker)
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
