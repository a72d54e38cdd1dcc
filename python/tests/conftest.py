"""Shared fixtures: explicitly INSECURE small rings (tests only) and the Ray example's module."""

import importlib.util
import pathlib

import pytest

import wgfhe

ROOT = pathlib.Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def bgv_params():
    # N = 2^10, 3 + 1 primes, t = 786433 (batches, and holds the LR's worst-case score).
    return wgfhe.insecure_test_params("bgv", 10, 3, 1, 3, t=786433)


@pytest.fixture(scope="session")
def ckks_params():
    return wgfhe.insecure_test_params("ckks", 10, 5, 2, 3, log_scale=30)


@pytest.fixture(scope="session")
def ray_mnist():
    """examples/ray_mnist.py as a module."""
    spec = importlib.util.spec_from_file_location("ray_mnist", ROOT / "examples" / "ray_mnist.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
