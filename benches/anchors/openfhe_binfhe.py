#!/usr/bin/env python3
"""OpenFHE BinFHE anchor for `wgfhe bench --suite gates` (a line-oriented server).

    benches/anchors/.venv/bin/python benches/anchors/openfhe_binfhe.py --set STD128 --method GINX

Startup (untimed): a BinFHEContext for the named parameter set and method, a secret key,
BTKeyGen (bootstrapping and key-switching keys) with the process's resident set size read from
/proc/self/statm before and after it (the key's resident bytes), two fresh encryptions of 1, and
three warm-up ANDs. Prints one JSON line {"set", "method", "key_resident_bytes", "n", "N"}.

Then each input line names a gate (and, or, nand, nor, xor, xnor), which is run once on the two
fresh ciphertexts, timed with perf_counter, checked by decryption, and answered with one JSON
line {"op", "ms", "ok"}. `quit` or end of input stops it. OMP_NUM_THREADS is set from
--threads (default 1) before openfhe is imported.
"""

import argparse
import json
import os
import sys
import time

parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
parser.add_argument("--threads", type=int, default=1)
parser.add_argument("--set", default="STD128")
parser.add_argument("--method", default="GINX")
args = parser.parse_args()

os.environ["OMP_NUM_THREADS"] = str(args.threads)
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import openfhe  # noqa: E402
from openfhe import BinFHEContext, BINFHE_PARAMSET, BINFHE_METHOD, BINGATE  # noqa: E402


def rss_bytes():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


cc = BinFHEContext()
cc.GenerateBinFHEContext(getattr(BINFHE_PARAMSET, args.set), getattr(BINFHE_METHOD, args.method))
sk = cc.KeyGen()
before = rss_bytes()
cc.BTKeyGen(sk)
after = rss_bytes()
one = cc.Encrypt(sk, 1)
other = cc.Encrypt(sk, 1)
gates = {
    "and": (BINGATE.AND, lambda a, b: a & b),
    "or": (BINGATE.OR, lambda a, b: a | b),
    "nand": (BINGATE.NAND, lambda a, b: 1 - (a & b)),
    "nor": (BINGATE.NOR, lambda a, b: 1 - (a | b)),
    "xor": (BINGATE.XOR, lambda a, b: a ^ b),
    "xnor": (BINGATE.XNOR, lambda a, b: 1 - (a ^ b)),
}
for _ in range(3):
    cc.EvalBinGate(BINGATE.AND, one, other)
print(json.dumps({"set": args.set, "method": args.method, "key_resident_bytes": after - before,
                  "n": cc.Getn(), "N": cc.GetN()}), flush=True)
for line in sys.stdin:
    op = line.strip()
    if op in ("", "quit"):
        break
    gate, plain = gates[op]
    t0 = time.perf_counter()
    ct = cc.EvalBinGate(gate, one, other)
    ms = (time.perf_counter() - t0) * 1e3
    ok = cc.Decrypt(sk, ct) == plain(1, 1)
    print(json.dumps({"op": op, "ms": ms, "ok": ok}), flush=True)
