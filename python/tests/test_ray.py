"""examples/ray_mnist.py on a local Ray cluster with two workers, at an explicitly INSECURE
small ring: the servers (Ray actors) never hold a secret key, the evaluation keys go through
the object store once, and every decrypted score equals the integer model's."""

import numpy as np
import pytest
import ray

import wgfhe


@pytest.fixture(scope="module")
def cluster():
    ray.init(
        num_cpus=2,
        object_store_memory=100 * 1024 * 1024,
        include_dashboard=False,
        log_to_driver=False,
        configure_logging=False,
    )
    yield
    ray.shutdown()


def test_ray_cnn_batches_on_two_workers(cluster, ray_mnist):
    params = ray_mnist.insecure_demo_params()
    assert params.insecure
    images = ray_mnist.synthetic_images(16)
    report = ray_mnist.run(params, ray_mnist.small_model(), images, workers=2, backend="cpu")
    assert report["mismatches"] == 0
    assert (report["images"], report["batches"], report["workers"]) == (16, 4, 2)
    # Two distinct server processes took batches.
    assert len(report["server_pids"]) == 2


def test_ray_servers_hold_no_secret(cluster, ray_mnist):
    params = ray_mnist.insecure_demo_params()
    client = wgfhe.Client(params, backend="cpu")
    keys = ray.put(client.evaluation_keys())
    server = ray_mnist.CnnServer.remote(params, keys, ray_mnist.small_model(), "cpu")
    assert ray.get(server.has_decrypt.remote()) is False
    ray.kill(server)


def test_the_integer_model_is_not_trivial(ray_mnist):
    # The check above would be weak if the model gave every image the same scores.
    model = wgfhe.CnnModel.from_json(ray_mnist.small_model())
    scores = model.scores(ray_mnist.synthetic_images(16))
    assert scores.shape == (16, 10)
    assert len({tuple(r) for r in scores}) > 8 and np.any(scores != 0)
