#!/usr/bin/env python3
r"""OpenFHE CKKS bootstrapping anchor for `ckks-boot-n16` (issue 21).

Set up with ./setup.sh, then run with the venv interpreter (one configuration per process, so
that the memory of one does not stack on the other):

    nice -n 5 benches/anchors/.venv/bin/python benches/anchors/openfhe_ckks_boot.py
    nice -n 5 benches/anchors/.venv/bin/python benches/anchors/openfhe_ckks_boot.py --keys-only
    nice -n 5 benches/anchors/.venv/bin/python benches/anchors/openfhe_ckks_boot.py \
        --log-n 15 --security none --levels-after 4
    nice -n 5 benches/anchors/.venv/bin/python benches/anchors/openfhe_ckks_boot.py \
        --secret uniform --log-n 15 --security none --levels-after 1

Single-threaded: OMP_NUM_THREADS is put into the environment (from --threads, default 1)
*before* openfhe is imported (its OpenMP runtime reads it at load time).

Parameters (defaults): ring dimension 2^16 (--log-n), 2^15 slots (full packing, --log-slots),
SecurityLevel HEStd_128_classic (OpenFHE checks log2(QP) against its own 128-bit table and
refuses a chain that does not fit), secret SPARSE_TERNARY (default: the configuration that fits
128 bits at N = 2^16 with the examples' sizes and levels left, see below) or UNIFORM_TERNARY,
FLEXIBLEAUTO scaling with scaling mod size 59 and first mod size 60: the scaling technique and
sizes of OpenFHE's own CKKS bootstrapping examples (simple-ckks-bootstrapping with 64-bit
native integers), level budget [3, 3] (CoeffsToSlots, SlotsToCoeffs), dim1 [0, 0] (OpenFHE
picks the baby-step size), HYBRID key switching with OpenFHE's default number of digits.
Multiplicative depth = --levels-after + GetBootstrapDepth([3, 3], secret), as in the examples.
--levels-after (the levels left for computation after a bootstrap) defaults to the largest
value in [1, --levels-after-max] (default 4, the depth-4 layer of a ckks-boot-n16 hop) that
OpenFHE accepts at this N and security level, found by trying GenCryptoContext from the top
down. 0 is never chosen by default: with the depth equal to the bootstrapping depth the input
sits at OpenFHE's last level and the measured precision is not that of a bootstrap (43 bits at
N = 2^12 against 18.4 with one level after).

At N = 2^16 under HEStd_128_classic: the sparse secret with 59/60 admits 4 levels after; the
uniform secret with 59/60 admits only 0, and with --scaling-mod-size 50 it admits 4 (log2 Q =
1261; its 49 rotation keys serialize to 5.09 GB) but EvalBootstrap then refuses to run at
N = 2^15 ("Degree [10] must be less than or equal to the correction factor [8]") and gives
about 9 bits at N = 2^12.

A full run at N = 2^16 needs more than 8.6 GB resident (about 3.8 GB of precomputed plaintexts
and 4.4 GB of keys); --log-n 15 --security none --levels-after L (L as chosen at N = 2^16) runs
the same chain at half the ring (OpenFHE's 128-bit table refuses it there), and --keys-only
counts the keys at N = 2^16 in less memory (the key set does not depend on the precomputation:
62 keys and the same bytes at N = 2^15 either way).

--serve (what `wgfhe bench --suite boot` uses): the same runs, one per line read from stdin after
{"ready": true} is printed, so that the caller alternates its own bootstraps with these.

Measurements: keygen (KeyGen, EvalMultKeyGen, EvalBootstrapSetup, EvalBootstrapKeyGen) is
untimed in the bootstrap figures but its seconds are reported. Then --runs bootstraps, each of a
fresh public-key encryption of x uniform in [-1, 1]^slots (real) encoded at level depth - 1 (one
level left, as in the examples); each is timed with perf_counter (wall) and process_time (CPU
time of this one-threaded process, which a loaded machine inflates less) and decrypted; the
times are the medians of the runs (all runs listed), the precision -log2 |decrypted - x| per
slot over all runs: worst slot (min) and median. Rotation keys: the automorphism indices held
for the secret key (conjugation included), and the bytes of SerializeEvalAutomorphismKey /
SerializeEvalMultKey (BINARY) written to a temporary directory that is deleted afterwards.
--keys-only skips the precomputed CoeffsToSlots/SlotsToCoeffs plaintexts and the bootstraps (key
count and bytes where a full run does not fit in memory). Resident set sizes are read from
/proc/self/statm (peak: VmHWM in /proc/self/status). Prints one JSON object.
"""

import argparse
import json
import os
import shutil
import sys
import tempfile
import time

parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
parser.add_argument("--threads", type=int, default=1, help="OMP_NUM_THREADS (default 1)")
parser.add_argument("--log-n", type=int, default=16)
parser.add_argument("--log-slots", type=int, default=None, help="default log-n - 1")
parser.add_argument("--secret", choices=["uniform", "sparse"], default="sparse")
parser.add_argument("--scaling-mod-size", type=int, default=59)
parser.add_argument("--first-mod-size", type=int, default=60)
parser.add_argument("--level-budget", type=int, nargs=2, default=[3, 3])
parser.add_argument("--levels-after", type=int, default=None, help="default: largest accepted")
parser.add_argument("--levels-after-max", type=int, default=4)
parser.add_argument(
    "--security",
    choices=["128", "none"],
    default="128",
    help="HEStd_128_classic (default) or HEStd_NotSet (only for small test rings)",
)
parser.add_argument("--runs", type=int, default=3)
parser.add_argument(
    "--keys-only",
    action="store_true",
    help="EvalBootstrapSetup without precomputation, keygen and key bytes only (no bootstrap)",
)
parser.add_argument("--seed", type=int, default=1)
parser.add_argument(
    "--serve",
    action="store_true",
    help="after the setup print {\"ready\": true} and run one bootstrap per line read from stdin "
    "(printing {\"run\": i, ...} after each), up to --runs; then the JSON on one line "
    "(wgfhe bench --suite boot alternates its hops with these runs)",
)
args = parser.parse_args()

os.environ["OMP_NUM_THREADS"] = str(args.threads)  # must precede the openfhe import

import numpy as np  # noqa: E402
import openfhe  # noqa: E402
from openfhe import (  # noqa: E402
    BINARY,
    CCParamsCKKSRNS,
    CryptoContext,
    GenCryptoContext,
    PKESchemeFeature,
    ScalingTechnique,
    SecretKeyDist,
    SecurityLevel,
)

T0 = time.perf_counter()
PAGE = os.sysconf("SC_PAGE_SIZE")


def rss_bytes():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * PAGE


def peak_rss_bytes():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    return None


dist = SecretKeyDist.UNIFORM_TERNARY if args.secret == "uniform" else SecretKeyDist.SPARSE_TERNARY
security = SecurityLevel.HEStd_128_classic if args.security == "128" else SecurityLevel.HEStd_NotSet
log_slots = args.log_slots if args.log_slots is not None else args.log_n - 1
slots = 1 << log_slots
boot_depth = CryptoContext.GetBootstrapDepth(list(args.level_budget), dist)


def make_context(levels_after):
    p = CCParamsCKKSRNS()
    p.SetSecretKeyDist(dist)
    p.SetSecurityLevel(security)
    p.SetRingDim(1 << args.log_n)
    p.SetBatchSize(slots)
    p.SetScalingModSize(args.scaling_mod_size)
    p.SetFirstModSize(args.first_mod_size)
    p.SetScalingTechnique(ScalingTechnique.FLEXIBLEAUTO)
    p.SetMultiplicativeDepth(levels_after + boot_depth)
    return GenCryptoContext(p)


out = {
    "library": "OpenFHE (PyPI openfhe %s)" % getattr(openfhe, "__version__", "?"),
    "openfhe_native_int_bits": openfhe.get_native_int(),
    "omp_num_threads": os.environ["OMP_NUM_THREADS"],
}

t = time.perf_counter()
refused = {}
if args.levels_after is not None:
    levels_after = args.levels_after
    cc = make_context(levels_after)
else:
    cc = None
    for levels_after in range(args.levels_after_max, 0, -1):
        try:
            cc = make_context(levels_after)
            break
        except Exception as e:  # OpenFHE raises when log2(QP) exceeds its table for N
            refused[levels_after] = str(e).strip().splitlines()[0][-160:]
    if cc is None:
        raise SystemExit(
            "no depth with 1 to %d levels after bootstrapping accepted (try a smaller "
            "--scaling-mod-size): %s" % (args.levels_after_max, json.dumps(refused))
        )
for f in (
    PKESchemeFeature.PKE,
    PKESchemeFeature.KEYSWITCH,
    PKESchemeFeature.LEVELEDSHE,
    PKESchemeFeature.ADVANCEDSHE,
    PKESchemeFeature.FHE,
):
    cc.Enable(f)
t_ctx = time.perf_counter() - t
depth = levels_after + boot_depth
N = cc.GetRingDimension()

ep = cc.GetElementParams()
q_mod = int(ep.GetModulus())
out["parameters"] = {
    "ring_dimension": N,
    "slots": slots,
    "security_level": "HEStd_128_classic" if args.security == "128" else "HEStd_NotSet",
    "secret": "UNIFORM_TERNARY" if args.secret == "uniform" else "SPARSE_TERNARY",
    "scaling_technique": "FLEXIBLEAUTO",
    "scaling_mod_size": args.scaling_mod_size,
    "first_mod_size": args.first_mod_size,
    "level_budget": list(args.level_budget),
    "bootstrap_depth": boot_depth,
    "levels_after_bootstrap_requested": levels_after,
    "levels_after_refused_by_security_check": sorted(refused),
    "multiplicative_depth": depth,
    "towers_q": depth + 1,
    "log2_Q": q_mod.bit_length(),
    "key_switching": "HYBRID (OpenFHE default digits)",
}

rss0 = rss_bytes()
t = time.perf_counter()
kp = cc.KeyGen()
cc.EvalMultKeyGen(kp.secretKey)
t_keygen = time.perf_counter() - t
t = time.perf_counter()
cc.EvalBootstrapSetup(list(args.level_budget), [0, 0], slots, 0, not args.keys_only)
t_setup = time.perf_counter() - t
rss_setup = rss_bytes()
t = time.perf_counter()
cc.EvalBootstrapKeyGen(kp.secretKey, slots)
t_bootkeys = time.perf_counter() - t
rss_keys = rss_bytes()
out["setup_seconds"] = {
    "context": round(t_ctx, 3),
    "keygen_and_relin_key": round(t_keygen, 3),
    "bootstrap_setup_precompute": round(t_setup, 3),
    "bootstrap_keygen": round(t_bootkeys, 3),
}

tag = kp.secretKey.GetKeyTag()
indices = list(cc.GetExistingEvalAutomorphismKeyIndices(tag))
tmp = tempfile.mkdtemp(prefix="ofhe-boot-")
try:
    rot_path = os.path.join(tmp, "rot.bin")
    mult_path = os.path.join(tmp, "mult.bin")
    ok_rot = cc.SerializeEvalAutomorphismKey(rot_path, BINARY, tag)
    ok_mult = cc.SerializeEvalMultKey(mult_path, BINARY, tag)
    rot_bytes = os.path.getsize(rot_path) if ok_rot else None
    mult_bytes = os.path.getsize(mult_path) if ok_mult else None
finally:
    shutil.rmtree(tmp, ignore_errors=True)
out["keys"] = {
    "automorphism_keys": len(indices),
    "automorphism_indices": indices,
    "automorphism_keys_serialized_bytes": rot_bytes,
    "relin_key_serialized_bytes": mult_bytes,
    "total_serialized_bytes": (rot_bytes or 0) + (mult_bytes or 0),
    "rss_before_keygen_bytes": rss0,
    "rss_after_bootstrap_setup_bytes": rss_setup,
    "rss_after_bootstrap_keygen_bytes": rss_keys,
    "rss_growth_bootstrap_keygen_bytes": rss_keys - rss_setup,
}

if args.keys_only:
    out["keys"]["rss_peak_bytes"] = peak_rss_bytes()
    out["total_seconds"] = round(time.perf_counter() - T0, 1)
    print(json.dumps(out, indent=1))
    raise SystemExit(0)

rng = np.random.default_rng(args.seed)
times = []
cpu_times = []
errs = []
level_out = None
scale_deg_out = None
if args.serve:
    print(json.dumps({"ready": True}), flush=True)
for run in range(args.runs):
    if args.serve and not sys.stdin.readline():
        break
    x = rng.uniform(-1.0, 1.0, slots)
    pt = cc.MakeCKKSPackedPlaintext(list(map(float, x)), 1, depth - 1)
    pt.SetLength(slots)
    ct = cc.Encrypt(kp.publicKey, pt)
    t, c = time.perf_counter(), time.process_time()
    ct_out = cc.EvalBootstrap(ct)
    times.append(time.perf_counter() - t)
    cpu_times.append(time.process_time() - c)
    level_out = ct_out.GetLevel()
    scale_deg_out = ct_out.GetNoiseScaleDeg()
    dec = cc.Decrypt(kp.secretKey, ct_out)
    dec.SetLength(slots)
    got = np.array(dec.GetRealPackedValue(), dtype=np.float64)
    errs.append(np.abs(got - x))
    del ct, ct_out, dec
    if args.serve:
        print(json.dumps({"run": run, "seconds": times[-1], "cpu_seconds": cpu_times[-1]}), flush=True)
if not errs:
    out["bootstrap"] = {"runs": 0, "interleaved": args.serve}
    out["total_seconds"] = round(time.perf_counter() - T0, 1)
    print(json.dumps(out), flush=True)
    raise SystemExit(0)
err = np.concatenate(errs)
bits = -np.log2(np.maximum(err, 2.0**-64))
out["bootstrap"] = {
    "runs": len(times),
    "interleaved": args.serve,
    "seconds_median": round(float(np.median(times)), 3),
    "seconds_runs": [round(s, 3) for s in times],
    "cpu_seconds_median": round(float(np.median(cpu_times)), 3),
    "cpu_seconds_runs": [round(s, 3) for s in cpu_times],
    "load_average_1min_after": round(os.getloadavg()[0], 2),
    "precision_bits_worst_slot": round(float(bits.min()), 3),
    "precision_bits_median": round(float(np.median(bits)), 3),
    "max_abs_err": float(err.max()),
    "input": "uniform real in [-1, 1], all slots, encrypted at level depth - 1",
    "ciphertext_level_after": level_out,
    "noise_scale_deg_after": scale_deg_out,
    "levels_left_after": depth - level_out - (scale_deg_out - 1),
    "rss_peak_bytes": peak_rss_bytes(),
}
out["total_seconds"] = round(time.perf_counter() - T0, 1)
print(json.dumps(out) if args.serve else json.dumps(out, indent=1), flush=True)
