"""``wgfhe.RemoteServer`` against a real ``wgfhe serve`` process: the encrypted LR and CNN round
trips (every score checked against the plaintext model and the in-process ``Server``), the same
application code run on ``Server`` and on ``RemoteServer`` (byte-identical answers), the
server's refusals as typed errors, and the frame codec on bad bytes.

The server binary is ``$WGFHE_BIN`` or ``target/release/wgfhe`` (scripts/test.sh builds it
first); a missing binary fails the test, never skips it."""

import os
import pathlib
import socket
import subprocess
import threading

import numpy as np
import pytest

import wgfhe
from wgfhe.remote import FRAME_MAGIC, RemoteError, decode_frame, encode_frame

ROOT = pathlib.Path(__file__).resolve().parents[2]
TOKENS = ("token-alice", "token-bob")


def _binary() -> pathlib.Path:
    path = pathlib.Path(os.environ.get("WGFHE_BIN", ROOT / "target" / "release" / "wgfhe"))
    if not path.is_file():
        pytest.fail(f"no wgfhe binary at {path}: run `cargo build --release -p wgfhe-cli` or set WGFHE_BIN")
    return path


@pytest.fixture(scope="module")
def model():
    rng = np.random.default_rng(35)
    return wgfhe.LrModel(rng.integers(-7, 8, size=784).tolist(), -40)


def _start(root: pathlib.Path) -> subprocess.Popen:
    (root / "tokens").write_text("\n".join(TOKENS) + "\n")
    return subprocess.Popen(
        [
            str(_binary()),
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--backend",
            "cpu",
            "--insecure-test-params",
            "--models",
            str(root),
            "--token-file",
            str(root / "tokens"),
            "--store",
            str(root / "store"),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )


def _serve(root: pathlib.Path):
    """Runs a server (CPU backend, insecure test set, two tokens) on the models in ``root``:
    yields its URL; stopped with SIGTERM, which must exit 0."""
    proc = _start(root)
    line = []
    reader = threading.Thread(target=lambda: line.append(proc.stdout.readline()), daemon=True)
    reader.start()
    reader.join(timeout=120)
    if not line or not line[0].startswith("listening on http://"):
        proc.kill()
        pytest.fail(f"the server printed no address (got {line!r})")
    yield line[0].strip().removeprefix("listening on ")
    proc.terminate()
    assert proc.wait(timeout=60) == 0


@pytest.fixture(scope="module")
def served(tmp_path_factory, bgv_params, model):
    """A server of the LR: its URL."""
    root = tmp_path_factory.mktemp("serve")
    (root / "params.bin").write_bytes(bgv_params.to_bytes())
    (root / "lr.json").write_text(model.to_json())
    yield from _serve(root)


@pytest.fixture(scope="module")
def served_cnn(tmp_path_factory, ray_mnist):
    """A server of the Ray example's small CNN on its insecure demo ring: its URL."""
    root = tmp_path_factory.mktemp("serve-cnn")
    (root / "params.bin").write_bytes(ray_mnist.insecure_demo_params().to_bytes())
    (root / "cnn.json").write_text(ray_mnist.small_model())
    yield from _serve(root)


def test_lr_round_trip_every_score_checked(served, bgv_params, model):
    remote = wgfhe.RemoteServer(served, token=TOKENS[0], insecure=True)
    assert remote.healthy()
    info = remote.info()
    assert info["models"][0]["name"] == "lr" and info["models"][0]["inputs"] == 784
    params = remote.params()
    assert params == bgv_params
    assert remote.lr_model().to_json() == model.to_json()

    client = wgfhe.Client(params, backend="cpu")
    key_set = remote.upload_keys(client.evaluation_keys())
    assert len(key_set) == 32 and int(key_set, 16) >= 0
    rng = np.random.default_rng(7)
    pixels = rng.integers(0, 16, size=(2 * 8, 784), dtype=np.uint8)
    batches = [client.encrypt_lr(pixels[i : i + 8]) for i in range(0, len(pixels), 8)]
    out = remote.lr_batches(key_set, batches)
    got = np.concatenate([client.decrypt_lr(ct, 8) for ct in out])
    np.testing.assert_array_equal(got, model.scores(pixels))

    remote.delete_keys(key_set)
    with pytest.raises(RemoteError) as e:
        remote.lr(key_set, batches[0])
    assert (e.value.status, e.value.kind) == (404, "unknown_key_set")


def test_refusals_are_typed(served):
    alice = wgfhe.RemoteServer(served, token=TOKENS[0], insecure=True)
    params = alice.params()
    client = wgfhe.Client(params, backend="cpu")
    keys = client.evaluation_keys()
    batch = client.encrypt_lr(np.ones((1, 784), dtype=np.uint8))

    with pytest.raises(RemoteError) as e:
        wgfhe.RemoteServer(served, insecure=True).upload_keys(keys)
    assert (e.value.status, e.value.kind) == (401, "unauthenticated")
    with pytest.raises(RemoteError) as e:
        wgfhe.RemoteServer(served, token="not-a-token", insecure=True).upload_keys(keys)
    assert (e.value.status, e.value.kind) == (403, "forbidden")

    key_set = alice.upload_keys(keys)
    bob = wgfhe.RemoteServer(served, token=TOKENS[1], insecure=True)
    with pytest.raises(RemoteError) as e:
        bob.lr(key_set, batch)
    assert (e.value.status, e.value.kind) == (403, "forbidden")
    with pytest.raises(RemoteError) as e:
        bob.delete_keys(key_set)
    assert e.value.status == 403

    # Bytes that are not evaluation keys; a ciphertext's bit flipped (its checksum fails).
    with pytest.raises(RemoteError) as e:
        alice.upload_keys(b"not keys")
    assert e.value.status == 400
    flipped = list(batch)
    flipped[3] = flipped[3][:-1] + bytes([flipped[3][-1] ^ 1])
    with pytest.raises(RemoteError) as e:
        alice.lr(key_set, flipped)
    assert e.value.status == 400
    # A ciphertext of other parameters.
    other = wgfhe.insecure_test_params("bgv", 10, 2, 1, 2, t=786433)
    foreign = wgfhe.Client(other, backend="cpu").encrypt_lr(np.ones((1, 784), dtype=np.uint8))
    with pytest.raises(RemoteError) as e:
        alice.lr(key_set, foreign)
    assert (e.value.status, e.value.kind) == (422, "wrong_parameters")
    # A batch of the wrong length is refused before it is sent.
    with pytest.raises(ValueError, match="783 ciphertexts"):
        alice.lr(key_set, batch[:-1])

    # Nothing was lost: the key set still serves alice.
    assert len(alice.lr(key_set, batch)) > 0
    alice.delete_keys(key_set)


def test_transport_failure_is_typed():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    remote = wgfhe.RemoteServer(f"http://127.0.0.1:{port}", timeout=5)
    assert not remote.healthy()
    with pytest.raises(RemoteError) as e:
        remote.info()
    assert (e.value.status, e.value.kind) == (None, "transport")
    assert isinstance(e.value, wgfhe.WgfheError)
    with pytest.raises(ValueError):
        wgfhe.RemoteServer("https://example.invalid")


def test_frame_codec():
    objects = [b"", b"a", bytes(range(256)) * 3]
    frame = encode_frame(objects)
    assert frame[:4] == FRAME_MAGIC
    assert decode_frame(frame, 3) == objects
    for bad, why in [
        (b"WGFX" + frame[4:], "bad magic"),
        (frame[:4] + (2).to_bytes(4, "little") + frame[8:], "version 2"),
        (frame[:-1], "declares"),
        (frame + b"x", "after the last object"),
        (frame[:14], "truncated"),
        (FRAME_MAGIC + (1).to_bytes(4, "little") + (1).to_bytes(4, "little") + (2**63).to_bytes(8, "little"), "declares"),
    ]:
        with pytest.raises(RemoteError, match=why) as e:
            decode_frame(bad, 3)
        assert e.value.kind == "bad_answer"
    with pytest.raises(RemoteError, match="at most 2"):
        decode_frame(frame, 2)


def test_cnn_round_trip_matches_the_local_server(served_cnn, ray_mnist):
    remote = wgfhe.RemoteServer(served_cnn, token=TOKENS[1], insecure=True)
    params = remote.params()
    assert params == ray_mnist.insecure_demo_params()
    model = remote.cnn_model()
    assert model.to_json() == wgfhe.CnnModel.from_json(ray_mnist.small_model()).to_json()
    listed = {m["name"]: m for m in remote.info()["models"]}
    # The digit path's depth exhausts this small ring's noise budget (the in-process server
    # refuses it the same way), so the server plans it at start and does not list it.
    assert set(listed) == {"cnn"}
    per = params.cnn_batch_size
    assert listed["cnn"]["images_per_batch"] == per and listed["cnn"]["inputs"] == 25
    assert listed["cnn"]["rotations"] == model.rotation_steps(params, "lut")

    client = wgfhe.Client(params, backend="cpu")
    keys = client.evaluation_keys(rotations=model.rotation_steps(params))
    key_set = remote.upload_keys(keys)
    local = wgfhe.Server(params, keys, backend="cpu")
    images = ray_mnist.synthetic_images(per + 2)
    batches = [client.encrypt_cnn(images[i : i + per]) for i in range(0, len(images), per)]
    counts = [len(images[i : i + per]) for i in range(0, len(images), per)]
    out = remote.cnn_batches(key_set, batches)
    got = np.concatenate([client.decrypt_cnn(ct, n) for ct, n in zip(out, counts)])
    np.testing.assert_array_equal(got, model.scores(images))
    assert out == local.cnn(model, batches), "the remote server's bytes differ from the local server's"
    with pytest.raises(wgfhe.WgfheError, match="noise budget"):
        local.cnn(model, batches[:1], relu="digits")
    with pytest.raises(RemoteError) as e:
        remote.cnn(key_set, batches[0], relu="digits")
    assert (e.value.status, e.value.kind) == (404, "unknown_model")

    # A key set without the rotation keys: 422 missing_keys, and nothing lost.
    bare = remote.upload_keys(client.evaluation_keys())
    with pytest.raises(RemoteError) as e:
        remote.cnn(bare, batches[0])
    assert (e.value.status, e.value.kind) == (422, "missing_keys")
    with pytest.raises(ValueError, match="relu"):
        remote.cnn(key_set, batches[0], relu="sigmoid")
    with pytest.raises(ValueError, match="24 ciphertexts"):
        remote.cnn(key_set, batches[0][:-1])
    with pytest.raises(RemoteError) as e:
        remote.lr(key_set, batches[0])
    assert e.value.kind == "no_model"
    assert len(remote.cnn(key_set, batches[0])) > 0
    remote.delete_keys(key_set)
    remote.delete_keys(bare)


def _lr_app(server, model, batches):
    """Application code written against ``wgfhe.Server``: only the line that builds ``server``
    differs between the local and the remote run."""
    seen = []
    out = server.lr(model, batches, progress=lambda done, total: seen.append((done, total)))
    assert seen == [(i + 1, len(batches)) for i in range(len(batches))]
    return out


def _cnn_app(server, model, batches):
    """As ``_lr_app``, for the CNN."""
    return server.cnn(model, batches, relu="lut")


def test_lr_switches_from_server_to_remote_server_by_one_line(served, bgv_params, model):
    client = wgfhe.Client(bgv_params, backend="cpu")
    keys = client.evaluation_keys()
    pixels = np.random.default_rng(11).integers(0, 16, size=(19, 784), dtype=np.uint8)
    counts = [len(pixels[i : i + 8]) for i in range(0, len(pixels), 8)]
    batches = [client.encrypt_lr(pixels[i : i + 8]) for i in range(0, len(pixels), 8)]

    local = _lr_app(wgfhe.Server(bgv_params, keys, backend="cpu"), model, batches)
    with wgfhe.RemoteServer(served, token=TOKENS[0], insecure=True, evaluation_keys=keys) as server:
        key_set = server.key_set
        assert key_set is not None and key_set in repr(server)
        remote = _lr_app(server, model, batches)
        # What the server cannot do as asked is refused before anything is sent.
        other = wgfhe.LrModel([1] * 784, 0)
        with pytest.raises(ValueError, match="differs from the one the server evaluates"):
            server.lr(other, batches)
        with pytest.raises(ValueError, match="variant"):
            server.lr(model, batches, variant="c")
        with pytest.raises(TypeError, match="LrModel"):
            server.lr(object(), batches)
        # The older form still works next to it, with the same bytes.
        assert server.lr(key_set, batches[0]) == local[0]
    assert remote == local, "the remote server's bytes differ from the local server's"
    got = np.concatenate([client.decrypt_lr(ct, n) for ct, n in zip(remote, counts)])
    np.testing.assert_array_equal(got, model.scores(pixels))

    # Leaving the `with` deleted the key set.
    unbound = wgfhe.RemoteServer(served, token=TOKENS[0], insecure=True)
    with pytest.raises(RemoteError) as e:
        unbound.lr(key_set, batches[0])
    assert (e.value.status, e.value.kind) == (404, "unknown_key_set")
    with pytest.raises(ValueError, match="no evaluation keys"):
        unbound.lr(model, batches)
    # bind(keys): the same, from an unbound server.
    bound = unbound.bind(keys)
    assert bound.key_set not in (None, key_set) and unbound.key_set is None
    assert _lr_app(bound, model, batches[:1]) == local[:1]
    bound.close()
    assert bound.key_set is None


def test_cnn_switches_from_server_to_remote_server_by_one_line(served_cnn, ray_mnist):
    params = ray_mnist.insecure_demo_params()
    model = wgfhe.CnnModel.from_json(ray_mnist.small_model())
    client = wgfhe.Client(params, backend="cpu")
    keys = client.evaluation_keys(rotations=model.rotation_steps(params))
    images = ray_mnist.synthetic_images(3)
    batches = [client.encrypt_cnn(images)]

    local = _cnn_app(wgfhe.Server(params, keys, backend="cpu"), model, batches)
    with wgfhe.RemoteServer(served_cnn, token=TOKENS[1], insecure=True, evaluation_keys=keys) as server:
        remote = _cnn_app(server, model, batches)
        with pytest.raises(ValueError, match="keep"):
            server.cnn(model, batches, relu="digits", keep=0.5)
    assert remote == local, "the remote server's bytes differ from the local server's"
    np.testing.assert_array_equal(client.decrypt_cnn(remote[0], len(images)), model.scores(images))
