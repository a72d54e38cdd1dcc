#!/usr/bin/env bash
# One device check for a machine with a real GPU: describes the adapter, compares every kernel
# and a BGV and a CKKS program with the CPU word for word, and runs the kernels, ledger and bxt
# benchmark suites on the GPU. Every result is written as JSON into OUT_DIR (with the stderr of
# each step beside it); a summary line per step goes to stdout.
#
#   scripts/gpu-check.sh OUT_DIR
#
# Uses the binary in $WGFHE_BIN if set, else builds `cargo build --release` (a warm target/ makes
# that quick). On an NVIDIA H200 every step passed in 86 s in all (2026-12-04; the boot step 16 s,
# the gates step 52 s, see benches/results/h200-2026-12-04/): kernels at N = 2^14..2^16,
# HMULT and rotation ledgers at bgv-n16 and bgv-bxt-n16, the bxt suite at bgv-n14 and
# bgv-bxt-n16, one CKKS hop at ckks-boot-n16 (a layer and a bootstrap on the GPU, twice after a
# warm-up, OpenFHE not run), and batched gate
# bootstrapping (1,024 ANDs per batch at gates-std128 and gates-std128-bb; the CPU side of that
# step runs the same batches on one thread, under a minute).
# A step that fails is reported and the script goes on; the exit code is the
# number of failed steps (0 when all passed). WGFHE_STEP_TIMEOUT (seconds) stops any one step
# that runs longer (reported as failed, exit status 124 in its stderr file).
set -uo pipefail

out="${1:?usage: scripts/gpu-check.sh OUT_DIR}"
mkdir -p "$out"
cd "$(dirname "$0")/.."

export WGFHE_BACKEND=gpu
export NODEVICE_SELECT=1

bin="${WGFHE_BIN:-}"
if [ -z "$bin" ]; then
    if ! cargo build --release --quiet 2>"$out/build.stderr"; then
        echo "gpu-check: build failed (see $out/build.stderr)"
        exit 1
    fi
    bin=target/release/wgfhe
fi

failed=0
step() {
    local name="$1"
    shift
    local start ms
    start=$(date +%s%N)
    local limit=()
    if [ -n "${WGFHE_STEP_TIMEOUT:-}" ]; then
        limit=(timeout "$WGFHE_STEP_TIMEOUT")
    fi
    if ${limit[@]+"${limit[@]}"} "$bin" "$@" >"$out/$name.json" 2>"$out/$name.stderr"; then
        ms=$((($(date +%s%N) - start) / 1000000))
        printf 'gpu-check: %-24s ok    %8d ms\n' "$name" "$ms"
    else
        ms=$((($(date +%s%N) - start) / 1000000))
        printf 'gpu-check: %-24s FAIL  %8d ms (see %s.stderr)\n' "$name" "$ms" "$name"
        failed=$((failed + 1))
    fi
}

step info info --json
step verify verify --json
step boot-ckks-boot-n16 bench --suite boot --params ckks-boot-n16 --reps 2 --hops 1 --threads 16 --no-openfhe --json
step kernels bench --suite kernels --log-n 14,15,16 --limbs 1,8 --reps 5 --json
step ledger-bgv-n16 bench --suite ledger --params bgv-n16 --jobs hmult_relin,rotation --threads 1 --reps 5 --json
step ledger-bgv-bxt-n16 bench --suite ledger --params bgv-bxt-n16 --jobs hmult_relin,rotation --threads 1 --reps 5 --json
step bxt-bgv-n14 bench --suite bxt --params bgv-n14 --reps 5 --json
step bxt-bgv-bxt-n16 bench --suite bxt --params bgv-bxt-n16 --reps 3 --json
step gates-gpu bench --suite gates --gate-params gates-std128,gates-std128-bb --gates and --reps 5 --gate-batch 1024 --gate-gpu --no-openfhe --json

echo "gpu-check: $failed step(s) failed; results in $out"
exit "$failed"
