#!/usr/bin/env bash
# The whole test suite (the README's test command): the Rust workspace's tests, then the
# Python package: builds the wheel with maturin (into target/wheels, sharing target/ and
# Cargo.lock with the workspace, so wgpu and the library are not compiled twice), installs it
# with the pinned dependencies of python/pyproject.toml into python/.venv (git-ignored) and
# runs the pytest suite, the Ray example's test and the `wgfhe serve` client's test included.
#
# Environment: PYTHON (default python3, >= 3.11 for tomllib), SKIP_CARGO_TEST=1 to run only
# the Python part.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ "${SKIP_CARGO_TEST:-0}" != 1 ]; then
  echo "== cargo test --release --workspace"
  cargo test --release --workspace
else
  # The Python tests run `wgfhe serve` (tests/test_remote.py): build what `cargo test` would
  # have built (same features, so nothing is compiled twice), without running it.
  cargo test --release --workspace --no-run --quiet
fi
export WGFHE_BIN="$PWD/target/release/wgfhe"

echo "== Python package: wheel, virtual environment, pytest"
venv=python/.venv
if [ ! -x "$venv/bin/python" ]; then
  "${PYTHON:-python3}" -m venv "$venv"
fi
py="$venv/bin/python"
# The pins: maturin (build-system.requires) and the `test` extra (numpy, pytest, ray).
"$py" - > "$venv/pins.txt" <<'PY'
import tomllib
with open("python/pyproject.toml", "rb") as f:
    d = tomllib.load(f)
print("\n".join(d["build-system"]["requires"] + d["project"]["optional-dependencies"]["test"]))
PY
"$py" -m pip install --quiet --disable-pip-version-check -r "$venv/pins.txt"
rm -f target/wheels/wgfhe-*.whl
"$venv/bin/maturin" build --release --quiet -m python/Cargo.toml -o target/wheels
"$py" -m pip install --quiet --disable-pip-version-check --force-reinstall --no-deps target/wheels/wgfhe-*.whl
"$py" -c "import wgfhe; print(wgfhe.list_params())"
"$py" -m pytest -q python/tests
