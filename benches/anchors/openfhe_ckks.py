#!/usr/bin/env python3
"""OpenFHE CKKS anchor for wgfhe's "ckks-n16" parameter set.

Set up with ./setup.sh, then run with the venv interpreter:

    benches/anchors/.venv/bin/python benches/anchors/openfhe_ckks.py

Single-threaded: OMP_NUM_THREADS=1 is put into the environment below *before* openfhe is
imported (OpenFHE's OpenMP runtime reads it at load time), so an outer setting is overridden.
Pass --threads K to use K threads instead.

Parameters, chosen to mirror ckks-n16 (N = 2^16, 43 ciphertext primes of ~30 bits, dnum 3):
  ring dimension 2^16 forced with SecurityLevel HEStd_NotSet (OpenFHE's 128-bit table caps
  log2(QP) at 1747 for N = 2^16 and OpenFHE's P is larger than ours, so with HEStd_128_classic
  it refuses N = 2^16); scaling mod size 30, first mod size 30; multiplicative depth 42
  (FIXEDMANUAL gives depth + 1 towers = 43); key switching HYBRID, numLargeDigits 3;
  FIXEDMANUAL scaling (explicit Rescale, like our manual rescale); ternary secret,
  sigma 3.19 (OpenFHE defaults); public-key encryption.

Measurements (keys generated outside the timed regions; one untimed warm-up, then 7 runs):
  (a) EvalMult of two fresh (top-level, 43-tower) ciphertexts, relinearisation included;
  (b) EvalRotate by 1 of a fresh ciphertext;
  (c) precision of one EvalMult + Rescale, inputs uniform in [-0.7, 0.7] in all N/2 slots;
  (d) precision of a depth-10 chain: square + rescale 10 times on the same kind of input.
Precision = -log2 |decrypted - expected| per slot (real part), min / mean / median.
Prints one JSON object.
"""

import argparse
import os
import re
import sys
import time

parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
parser.add_argument("--threads", type=int, default=1, help="OMP_NUM_THREADS (default 1)")
parser.add_argument("--log-n", type=int, default=16)
parser.add_argument("--depth", type=int, default=42, help="multiplicative depth (towers = depth+1)")
parser.add_argument("--scaling-mod-size", type=int, default=30)
parser.add_argument("--first-mod-size", type=int, default=30)
parser.add_argument("--dnum", type=int, default=3)
parser.add_argument("--runs", type=int, default=7)
parser.add_argument("--chain", type=int, default=10, help="squarings in the chain test (d)")
parser.add_argument("--bound", type=float, default=0.7, help="inputs uniform in [-bound, bound]")
parser.add_argument("--seed", type=int, default=1)
args = parser.parse_args()

os.environ["OMP_NUM_THREADS"] = str(args.threads)  # must precede the openfhe import

import numpy as np  # noqa: E402
import openfhe  # noqa: E402
from openfhe import (  # noqa: E402
    CCParamsCKKSRNS,
    GenCryptoContext,
    JSON,
    KeySwitchTechnique,
    PKESchemeFeature,
    ScalingTechnique,
    SecurityLevel,
    Serialize,
)

T0 = time.perf_counter()


def make_params(security):
    p = CCParamsCKKSRNS()
    p.SetMultiplicativeDepth(args.depth)
    p.SetScalingModSize(args.scaling_mod_size)
    p.SetFirstModSize(args.first_mod_size)
    p.SetKeySwitchTechnique(KeySwitchTechnique.HYBRID)
    p.SetNumLargeDigits(args.dnum)
    p.SetScalingTechnique(ScalingTechnique.FIXEDMANUAL)
    p.SetSecurityLevel(security)
    p.SetRingDim(1 << args.log_n)
    p.SetBatchSize(1 << (args.log_n - 1))
    return p


def moduli_in(serialized):
    """All tower moduli ("cm": {"v": q}) named in a JSON serialization."""
    return [int(x) for x in re.findall(r'"cm":\s*\{[^{}]*?"v":\s*(\d+)', serialized)]


def _log2_big(x):
    shift = max(0, x.bit_length() - 60)
    return shift + float(np.log2(float(x >> shift)))


def median_ms(fn, runs):
    fn()  # warm-up, untimed
    ts = []
    for _ in range(runs):
        t = time.perf_counter()
        fn()
        ts.append((time.perf_counter() - t) * 1e3)
    return float(np.median(ts)), [round(x, 3) for x in ts]


def precision(got, want):
    err = np.abs(np.asarray(got, dtype=np.float64) - np.asarray(want, dtype=np.float64))
    zeros = int(np.count_nonzero(err == 0.0))
    bits = -np.log2(np.maximum(err, 2.0 ** -64))  # an exact 0 counts as 64 bits
    return {
        "min_bits": round(float(bits.min()), 3),
        "mean_bits": round(float(bits.mean()), 3),
        "median_bits": round(float(np.median(bits)), 3),
        "max_abs_err": float(err.max()),
        "exact_zero_errors": zeros,
    }


out = {
    "library": "OpenFHE (PyPI openfhe %s)" % getattr(openfhe, "__version__", "1.6.1.0.22.4"),
    "openfhe_native_int_bits": openfhe.get_native_int(),
    "omp_num_threads": os.environ["OMP_NUM_THREADS"],
    "notes": [],
}

# What OpenFHE says about N = 2^16 under its 128-bit table.
try:
    GenCryptoContext(make_params(SecurityLevel.HEStd_128_classic))
    out["hestd_128_classic_with_n16"] = "accepted"
except Exception as e:  # OpenFHE raises on a ring dimension below its table's minimum
    out["hestd_128_classic_with_n16"] = "refused: " + str(e).strip().splitlines()[0][:300]

t = time.perf_counter()
params = make_params(SecurityLevel.HEStd_NotSet)
cc = GenCryptoContext(params)
for f in (PKESchemeFeature.PKE, PKESchemeFeature.KEYSWITCH, PKESchemeFeature.LEVELEDSHE):
    cc.Enable(f)
t_ctx = time.perf_counter() - t

N = cc.GetRingDimension()
slots = N // 2
q = moduli_in(Serialize(cc, JSON))
q = list(dict.fromkeys(q))  # chain order, deduplicated (the first entry repeats nothing)

t = time.perf_counter()
kp = cc.KeyGen()
t_keygen = time.perf_counter() - t
t = time.perf_counter()
cc.EvalMultKeyGen(kp.secretKey)
t_relin_keygen = time.perf_counter() - t
t = time.perf_counter()
cc.EvalRotateKeyGen(kp.secretKey, [1])
t_rot_keygen = time.perf_counter() - t

rng = np.random.default_rng(args.seed)


def fresh(values):
    return cc.Encrypt(kp.publicKey, cc.MakeCKKSPackedPlaintext(list(map(float, values))))


def decrypt(ct):
    pt = cc.Decrypt(kp.secretKey, ct)
    pt.SetLength(slots)
    return np.array(pt.GetRealPackedValue(), dtype=np.float64)


x = rng.uniform(-args.bound, args.bound, slots)
y = rng.uniform(-args.bound, args.bound, slots)
cx, cy = fresh(x), fresh(y)

# P: extend a 1-tower ciphertext to the key-switching basis Q_0 * P and read its moduli
# (OpenFHE does not serialize P with the context; the binding exposes no P accessor).
low = cc.LevelReduce(cx, None, len(q) - 1)
ext_moduli = list(dict.fromkeys(moduli_in(Serialize(cc.KeySwitchExt(low, True), JSON))))
p_moduli = [m for m in ext_moduli if m not in set(q)]
del low

prod_q = 1
for m in q:
    prod_q *= m
prod_p = 1
for m in p_moduli:
    prod_p *= m
ep = cc.GetElementParams()
ep_mod = int(ep.GetModulus())

out["parameters"] = {
    "ring_dimension": N,
    "slots": slots,
    "scheme": "CKKS RNS",
    "scaling_technique": "FIXEDMANUAL",
    "key_switching": "HYBRID",
    "num_large_digits_requested": args.dnum,
    "num_large_digits_effective": None,
    "multiplicative_depth": cc.GetMultiplicativeDepth(),
    "security_level": "HEStd_NotSet (ring dimension forced with SetRingDim)",
    "scaling_mod_size": args.scaling_mod_size,
    "first_mod_size_requested": args.first_mod_size,
    "first_mod_size_bits": q[0].bit_length(),
    "q0": q[0],
    "log2_q0": round(_log2_big(q[0]), 6),
    "towers_q": len(q),
    "q_bit_lengths": [m.bit_length() for m in q],  # ~2^30 +- small: 30 or 31 bits
    "log2_q_each_min_max": [round(min(map(_log2_big, q)), 4), round(max(map(_log2_big, q)), 4)],
    "log2_Q": round(_log2_big(prod_q), 3),
    "log2_Q_from_GetElementParams": round(_log2_big(ep_mod), 3),
    "towers_p": len(p_moduli),
    "p_bit_lengths": [m.bit_length() for m in p_moduli],
    "log2_P": round(_log2_big(prod_p), 3),
    "log2_QP": round(_log2_big(prod_q * prod_p), 3),
    "scaling_factor_log2_level0": round(float(np.log2(cc.GetScalingFactorReal(0))), 6),
    "secret": "uniform ternary (OpenFHE default)",
    "sigma": 3.19,
    "encryption": "public key",
}
# dnum as OpenFHE ended up using it: partition of the 43 towers into ceil(L/alpha) digits.
try:
    m = re.search(r'"dnum":\s*(\d+)', Serialize(cc, JSON))
    out["parameters"]["num_large_digits_effective"] = int(m.group(1)) if m else None
except Exception:
    pass

out["setup_seconds"] = {
    "context": round(t_ctx, 3),
    "keygen": round(t_keygen, 3),
    "relin_keygen": round(t_relin_keygen, 3),
    "rotation_keygen_index_1": round(t_rot_keygen, 3),
}

# (a) EvalMult with relinearisation, two fresh ciphertexts at the top level (43 towers).
mult_ms, mult_all = median_ms(lambda: cc.EvalMult(cx, cy), args.runs)
# (b) EvalRotate by 1 of a fresh ciphertext.
rot_ms, rot_all = median_ms(lambda: cc.EvalRotate(cx, 1), args.runs)
# Extra context, same protocol: rescale alone after a product.
prod_ct = cc.EvalMult(cx, cy)
resc_ms, resc_all = median_ms(lambda: cc.Rescale(prod_ct), args.runs)
out["timing_ms"] = {
    "eval_mult_relin_median": round(mult_ms, 3),
    "eval_mult_relin_runs": mult_all,
    "eval_rotate_1_median": round(rot_ms, 3),
    "eval_rotate_1_runs": rot_all,
    "rescale_after_mult_median": round(resc_ms, 3),
    "rescale_after_mult_runs": resc_all,
    "towers_at_measurement": len(q),
    "runs": args.runs,
    "warmup_runs": 1,
}

# (c) one EvalMult + Rescale.
got = decrypt(cc.Rescale(cc.EvalMult(cx, cy)))
out["precision_mult_rescale"] = dict(precision(got, x * y), input_range=[-args.bound, args.bound])

# (d) depth-args.chain chain: square + rescale.
z = rng.uniform(-args.bound, args.bound, slots)
cz = fresh(z)
want = z.copy()
for _ in range(args.chain):
    cz = cc.Rescale(cc.EvalMult(cz, cz))
    want = want * want
got = decrypt(cz)
out["precision_square_chain"] = dict(
    precision(got, want),
    squarings=args.chain,
    input_range=[-args.bound, args.bound],
    expected_abs_max=float(np.abs(want).max()),
    expected_abs_median=float(np.median(np.abs(want))),
)
# Also the fresh-encryption precision, as a floor.
out["precision_fresh"] = precision(decrypt(fresh(x)), x)

out["total_seconds"] = round(time.perf_counter() - T0, 1)
print(__import__("json").dumps(out, indent=1))
