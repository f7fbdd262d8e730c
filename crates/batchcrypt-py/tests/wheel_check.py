"""Checks an installed wheel from a fresh virtual environment that has only it and numpy: the
package imports from there (not from the source tree), its extension needs no shared library
beyond the manylinux baseline that it does not carry, and it computes right.

    python wheel_check.py          # run with the fresh environment's python
"""

import csv
import hashlib
import os
import subprocess
import sys
from pathlib import Path

import numpy as np

import batchcrypt

# Libraries every manylinux system has (PEP 600's baseline, as auditwheel lists it).
BASELINE = {
    "libc.so.6", "libm.so.6", "libdl.so.2", "libpthread.so.0", "librt.so.1", "libgcc_s.so.1",
    "libstdc++.so.6", "ld-linux-x86-64.so.2", "libutil.so.1", "libresolv.so.2",
}

pkg = Path(batchcrypt.__file__).resolve().parent
assert str(pkg).startswith(os.path.realpath(sys.prefix)), f"imported {pkg}, not from {sys.prefix}"
ext = next(pkg.glob("_batchcrypt*.so"))
needed = [
    line.split("[")[1].rstrip("]")
    for line in subprocess.run(["readelf", "-d", ext], capture_output=True, text=True, check=True).stdout.splitlines()
    if "(NEEDED)" in line
]
bundled = {p.name for p in (pkg.parent / "batchcrypt.libs").glob("*.so*")}
missing = [n for n in needed if n not in BASELINE and n not in bundled]
assert not missing, f"the extension needs {missing}, neither baseline nor in the wheel ({sorted(bundled)})"
assert any(n.startswith("libcrypto") for n in bundled), f"OpenSSL not bundled: {sorted(bundled)}"

e = batchcrypt.Engine("cpu")
assert batchcrypt.sha256(b"abc").hex() == hashlib.sha256(b"abc").hexdigest()
vectors = Path(__file__).resolve().parents[2] / "batchcrypt/tests/data/bip340-test-vectors.csv"
with open(vectors) as f:
    rows = list(csv.DictReader(f))
ok = e.verify_schnorr_batch([bytes.fromhex(r["message"]) for r in rows],
                            [bytes.fromhex(r["signature"]) for r in rows],
                            [bytes.fromhex(r["public key"]) for r in rows])
assert list(ok) == [r["verification result"] == "TRUE" for r in rows]
# OpenSSL, from the bundled libcrypto: AES-CTR, SP 800-38A F.5.1.
ct = batchcrypt.Engine("openssl").aes_ctr(bytes.fromhex("2b7e151628aed2a6abf7158809cf4f3c"),
                                          bytes.fromhex("f0f1f2f3f4f5f6f7f8f9fafbfcfdfeff"),
                                          bytes.fromhex("6bc1bee22e409f96e93d7e117393172a"))
assert ct.hex() == "874d6191b620e3261bef6864990db6ce"
print(f"wheel ok: {pkg} ({', '.join(sorted(bundled))} bundled); {batchcrypt.hardware().splitlines()[0]}")
