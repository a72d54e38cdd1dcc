#!/usr/bin/env python3
"""OpenFHE BGV anchor for `wgfhe bench --suite anchors` (a line-oriented server).

Set up with ./setup.sh; `wgfhe bench --suite anchors` starts this script with the venv
interpreter, once per parameter point, and interleaves its operations with its own:

    benches/anchors/.venv/bin/python benches/anchors/openfhe_bgv.py --log-n 14 --log-q 300 --dnum 3

Startup (untimed): a BGV context (ring dimension forced, HEStd_NotSet, since OpenFHE's 128-bit
table is keyed on its own log QP; the caller matches N and log Q to a 128-bit wgfhe set),
FIXEDMANUAL modulus switching, HYBRID key switching with `--dnum` digits, plaintext modulus
`--t`, the multiplicative depth chosen so that log2(Q) is the closest to `--log-q` with
OpenFHE's own tower sizes (or `--depth`), keys (relinearisation, rotation by 1), two fresh
public-key encryptions and an encoded plaintext. Prints one JSON line describing them.

Then each input line names an operation, which is run once, timed with perf_counter, and
answered with one JSON line {"op", "ms"}: `hmult` (EvalMult with relinearisation of the two
fresh top-level ciphertexts), `rotate` (EvalRotate by 1), `pmult` (EvalMult by the plaintext),
`padd` (EvalAdd of the plaintext), `hadd` (EvalAdd). `quit` or end of input stops it.
OMP_NUM_THREADS is set from --threads (default 1) before openfhe is imported.

The plaintext is encoded once at startup and never inside the timed region: MakePackedPlaintext
leaves a BGV plaintext in the evaluation (NTT) domain, so EvalMult by it is a copy of the
ciphertext and an element-wise product per polynomial (about 0.6 ms at N = 2^14 against 6 ms
for MakePackedPlaintext itself), the counterpart of wgfhe's prepared plaintexts.
"""

import argparse
import json
import os
import re
import sys
import time

parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
parser.add_argument("--threads", type=int, default=1)
parser.add_argument("--log-n", type=int, default=14)
parser.add_argument("--log-q", type=float, default=300.0, help="target log2(Q) of the ciphertext modulus")
parser.add_argument("--depth", type=int, default=0, help="multiplicative depth (0: from --log-q)")
parser.add_argument("--dnum", type=int, default=3)
parser.add_argument("--t", type=int, default=65537)
args = parser.parse_args()

os.environ["OMP_NUM_THREADS"] = str(args.threads)  # must precede the openfhe import
# Idle OpenMP workers sleep instead of spinning: the server idles between timed calls while
# wgfhe's side runs on the same cores, and spinning workers would take them from it.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import openfhe  # noqa: E402
from openfhe import (  # noqa: E402
    CCParamsBGVRNS,
    GenCryptoContext,
    JSON,
    KeySwitchTechnique,
    PKESchemeFeature,
    ScalingTechnique,
    SecurityLevel,
    Serialize,
)


def context(depth):
    p = CCParamsBGVRNS()
    p.SetMultiplicativeDepth(depth)
    p.SetPlaintextModulus(args.t)
    p.SetKeySwitchTechnique(KeySwitchTechnique.HYBRID)
    p.SetNumLargeDigits(args.dnum)
    p.SetScalingTechnique(ScalingTechnique.FIXEDMANUAL)
    p.SetSecurityLevel(SecurityLevel.HEStd_NotSet)
    p.SetRingDim(1 << args.log_n)
    cc = GenCryptoContext(p)
    for f in (PKESchemeFeature.PKE, PKESchemeFeature.KEYSWITCH, PKESchemeFeature.LEVELEDSHE):
        cc.Enable(f)
    return cc


def moduli(cc):
    found = [int(x) for x in re.findall(r'"cm":\s*\{[^{}]*?"v":\s*(\d+)', Serialize(cc, JSON))]
    return list(dict.fromkeys(found))


def log2(x):
    shift = max(0, x.bit_length() - 60)
    import math

    return shift + math.log2(x >> shift)


def log_q(cc):
    prod = 1
    for m in moduli(cc):
        prod *= m
    return log2(prod)


if args.depth > 0:
    cc = context(args.depth)
else:
    # Smallest depth whose log Q reaches the target, or the one below if that is closer.
    best = None
    for depth in range(1, 200):
        try:
            c = context(depth)
        except RuntimeError:  # too few towers for --dnum digits
            continue
        lq = log_q(c)
        if best is None or abs(lq - args.log_q) < abs(best[1] - args.log_q):
            best = (c, lq)
        if lq >= args.log_q:
            break
    cc = best[0]

q = moduli(cc)
kp = cc.KeyGen()
cc.EvalMultKeyGen(kp.secretKey)
cc.EvalRotateKeyGen(kp.secretKey, [1])
slots = cc.GetRingDimension()
x = [(i * 7 + 3) % args.t for i in range(slots)]
y = [(i * i + 1) % args.t for i in range(slots)]
cx = cc.Encrypt(kp.publicKey, cc.MakePackedPlaintext(x))
cy = cc.Encrypt(kp.publicKey, cc.MakePackedPlaintext(y))
pw = cc.MakePackedPlaintext([i % 5 + 1 for i in range(slots)])
ops = {
    "hmult": lambda: cc.EvalMult(cx, cy),
    "rotate": lambda: cc.EvalRotate(cx, 1),
    "pmult": lambda: cc.EvalMult(cx, pw),
    "padd": lambda: cc.EvalAdd(cx, pw),
    "hadd": lambda: cc.EvalAdd(cx, cy),
}
for f in ops.values():  # warm-up
    f()
print(
    json.dumps(
        {
            "ready": True,
            "library": "OpenFHE (PyPI openfhe %s)" % getattr(openfhe, "__version__", "?"),
            "native_int_bits": openfhe.get_native_int(),
            "threads": args.threads,
            "ring_dimension": cc.GetRingDimension(),
            "depth": cc.GetMultiplicativeDepth() if hasattr(cc, "GetMultiplicativeDepth") else None,
            "towers": len(q),
            "tower_bits": [m.bit_length() for m in q],
            "log_q": round(log_q(cc), 2),
            "dnum": args.dnum,
            "t": args.t,
            "security": "HEStd_NotSet (ring dimension forced; N and log Q matched to a 128-bit wgfhe set)",
        }
    ),
    flush=True,
)
for line in sys.stdin:
    op = line.strip()
    if op in ("", "quit"):
        break
    f = ops.get(op)
    if f is None:
        print(json.dumps({"op": op, "error": "unknown operation"}), flush=True)
        continue
    t0 = time.perf_counter()
    r = f()
    ms = (time.perf_counter() - t0) * 1e3
    del r
    print(json.dumps({"op": op, "ms": ms}), flush=True)
