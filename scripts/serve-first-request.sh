#!/usr/bin/env bash
# Server-side latency of the first and later CNN requests of a fresh `wgfhe serve`, two
# binaries interleaved (an A/B), plus the time from launch to the "listening" line.
#
#   scripts/serve-first-request.sh OLD_BIN NEW_BIN MODELS_DIR [BACKEND] [REPS] [REQUESTS]
#
# MODELS_DIR holds params.bin (an insecure test set), cnn.json and a `tokens` file. Each
# request is one `wgfhe infer --remote --model cnn --images 4` by NEW_BIN (a fresh key set
# each, so every request parses its keys); its latency is the growth of the server's
# `wgfhe_request_seconds_sum` for the infer route.
set -euo pipefail
old=$1 new=$2 dir=$3 backend=${4:-cpu} reps=${5:-3} requests=${6:-4}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for rep in $(seq "$reps"); do
  for which in old new; do
    bin=$old
    [ "$which" = new ] && bin=$new
    rm -rf "$dir/keys"
    t0=$(date +%s.%N)
    "$bin" serve --listen 127.0.0.1:0 --backend "$backend" --insecure-test-params --models "$dir" \
      >"$work/out" 2>"$work/err" &
    pid=$!
    until grep -q listening "$work/out"; do sleep 0.02; done
    t1=$(date +%s.%N)
    addr=$(sed -n 's/listening on //p' "$work/out")
    lat="" prev=0
    for _ in $(seq "$requests"); do
      "$new" infer --remote "$addr" --model cnn --images 4 --insecure-test-params \
        --token-file "$dir/tokens" >/dev/null
      sum=$(curl -s "$addr/metrics" | sed -n 's/^wgfhe_request_seconds_sum{route="\/v1\/infer\/{model}"} //p')
      lat="$lat $(python3 -c "print(round(($sum - $prev) * 1000))")"
      prev=$sum
    done
    kill "$pid"
    wait "$pid" 2>/dev/null || true
    echo "$rep $which start_ms=$(python3 -c "print(round(($t1 - $t0) * 1000))") infer_ms:$lat"
  done
done
