#!/usr/bin/env python3
"""Derives a Boolean circuit for the AES S-box and writes it as kernels/aes/sbox_circuit.cuh.

The circuit is the tower-field construction: map the byte into GF(((2^2)^2)^2) by a change of
basis, invert there (GF(2^8) inversion reduces to one GF(16) inversion and three GF(16) products,
GF(16) inversion to one GF(4) inversion, which is a squaring, i.e. linear), and map back through
the AES affine transform folded into the inverse change of basis. Linear layers are shortened by
Paar's greedy pairing. Every signal is evaluated on all 256 inputs at once (a 256-bit truth table)
so the script checks the emitted circuit against the S-box before writing it.

Usage: scripts/gen-aes-sbox-circuit.py [output path]
"""

import sys
from pathlib import Path

FULL = (1 << 256) - 1


# --- The AES S-box, from its definition (inverse in GF(2^8) mod x^8+x^4+x^3+x+1, then affine).
def aes_mul(a, b):
    r = 0
    while b:
        if b & 1:
            r ^= a
        a = (a << 1) ^ (0x11B if a & 0x80 else 0)
        b >>= 1
    return r


def aes_sbox(x):
    inv = next((y for y in range(256) if aes_mul(x, y) == 1), 0)
    r = 0x63
    for i in range(5):
        r ^= ((inv << i) | (inv >> (8 - i))) & 0xFF
    return r


# --- The tower field, numerically: GF(4) = GF(2)[w]/(w^2+w+1), GF(16) = GF(4)[z]/(z^2+z+LAM),
# GF(256) = GF(16)[y]/(y^2+y+NU); an element is (high << half) | low.
def g4_mul(a, b):
    a1, a0, b1, b0 = a >> 1, a & 1, b >> 1, b & 1
    hh = a1 & b1
    return ((hh ^ (a1 & b0) ^ (a0 & b1)) << 1) | (hh ^ (a0 & b0))


def ext_mul(mul, half, const):
    mask = (1 << half) - 1

    def f(a, b):
        a1, a0, b1, b0 = a >> half, a & mask, b >> half, b & mask
        hh = mul(a1, b1)
        # y^2 = y + const
        hi = hh ^ mul(a1, b0) ^ mul(a0, b1)
        lo = mul(hh, const) ^ mul(a0, b0)
        return (hi << half) | lo

    return f


def irreducible(mul, size, const):
    # y^2 + y + const has no root in the subfield.
    return all(mul(t, t) ^ t ^ const for t in range(size))


def setup(lam, nu, beta):
    """Fixes the tower (LAM, NU) and the basis change (BETA, a root of AES's polynomial)."""
    global LAM, NU, BETA, g16_mul, g256_mul, TO_TOWER, FROM_TOWER
    LAM, NU, BETA = lam, nu, beta
    g16_mul = ext_mul(g4_mul, 2, LAM)
    g256_mul = ext_mul(g16_mul, 4, NU)
    TO_TOWER = [0] * 256
    for x in range(256):
        for i in range(8):
            if x >> i & 1:
                TO_TOWER[x] ^= g256_pow(BETA, i)
    FROM_TOWER = [0] * 256
    for x, t in enumerate(TO_TOWER):
        FROM_TOWER[t] = x


def g256_pow(a, e):
    r = 1
    for _ in range(e):
        r = g256_mul(r, a)
    return r


def towers():
    """Every (LAM, NU, BETA) giving a tower field and a basis change into it."""
    for lam in range(1, 4):
        if not irreducible(g4_mul, 4, lam):
            continue
        m16 = ext_mul(g4_mul, 2, lam)
        for nu in range(1, 16):
            if not irreducible(m16, 16, nu):
                continue
            setup(lam, nu, 1)
            for b in range(2, 256):
                if g256_pow(b, 8) ^ g256_pow(b, 4) ^ g256_pow(b, 3) ^ b ^ 1 == 0:
                    yield lam, nu, b


# --- Symbolic circuit: signals are truth tables over the 256 inputs; gates are recorded.
class Circuit:
    def __init__(self):
        self.gates = []  # (name, op, a, b)
        self.table = {}
        self.count = 0

    def input(self, i):
        name = f"x{i}"
        self.table[name] = sum(1 << v for v in range(256) if v >> i & 1)
        return name

    def gate(self, op, a, b):
        name = f"t{self.count}"
        self.count += 1
        ta, tb = self.table[a], self.table[b]
        self.table[name] = ta ^ tb if op == "^" else ta & tb
        self.gates.append((name, op, a, b))
        return name

    def xor(self, a, b):
        return self.gate("^", a, b)

    def and_(self, a, b):
        return self.gate("&", a, b)

    def linear(self, rows):
        """Outputs as XORs of input signals (rows: lists of names), shared pairs first (Paar)."""
        rows = [list(r) for r in rows]
        while True:
            counts = {}
            for r in rows:
                for i in range(len(r)):
                    for j in range(i + 1, len(r)):
                        key = tuple(sorted((r[i], r[j])))
                        counts[key] = counts.get(key, 0) + 1
            if not counts:
                break
            (a, b), n = max(counts.items(), key=lambda kv: (kv[1], kv[0]))
            if n < 2:
                break
            s = self.xor(a, b)
            for r in rows:
                if a in r and b in r:
                    r.remove(a)
                    r.remove(b)
                    r.append(s)
        out = []
        for r in rows:
            assert r, "a linear output that is zero"
            acc = r[0]
            for s in r[1:]:
                acc = self.xor(acc, s)
            out.append(acc)
        return out


def linear_map(c, bits, f):
    """The GF(2)-linear f applied to the byte whose bits are the signals `bits` (LSB first)."""
    rows = [[bits[i] for i in range(len(bits)) if f(1 << i) >> o & 1] for o in range(len(bits))]
    return c.linear(rows)


# Symbolic GF(4)/GF(16) arithmetic on lists of signal names (LSB first).
def s_g4_mul(c, a, b):
    # Karatsuba: hh = a1 b1, ll = a0 b0, m = (a1 + a0)(b1 + b0); c1 = m + ll, c0 = hh + ll.
    hh, ll = c.and_(a[1], b[1]), c.and_(a[0], b[0])
    m = c.and_(c.xor(a[1], a[0]), c.xor(b[1], b[0]))
    return [c.xor(hh, ll), c.xor(m, ll)]


def s_const_mul(c, a, const, mul, width):
    return linear_map(c, a, lambda v: mul(v, const) if v < (1 << width) else 0)


def s_g16_mul(c, a, b):
    a0, a1, b0, b1 = a[:2], a[2:], b[:2], b[2:]
    hh, ll = s_g4_mul(c, a1, b1), s_g4_mul(c, a0, b0)
    m = s_g4_mul(c, [c.xor(x, y) for x, y in zip(a1, a0)], [c.xor(x, y) for x, y in zip(b1, b0)])
    # hi = a1 b1 + a1 b0 + a0 b1 = m + ll; lo = hh·LAM + ll
    hi = [c.xor(x, y) for x, y in zip(m, ll)]
    lo = [c.xor(x, y) for x, y in zip(s_const_mul(c, hh, LAM, g4_mul, 2), ll)]
    return lo + hi


def s_g16_inv(c, a):
    a0, a1 = a[:2], a[2:]
    # delta = a1^2 LAM + a1 a0 + a0^2 (squaring is linear); inv = (a1 d^-1) z + (a0 + a1) d^-1.
    sq_lam = linear_map(c, a1, lambda v: g4_mul(g4_mul(v, v), LAM))
    sq0 = linear_map(c, a0, lambda v: g4_mul(v, v))
    p = s_g4_mul(c, a1, a0)
    d = [c.xor(c.xor(x, y), z) for x, y, z in zip(sq_lam, p, sq0)]
    dinv = linear_map(c, d, lambda v: g4_mul(v, v))  # x^-1 = x^2 in GF(4)
    hi = s_g4_mul(c, a1, dinv)
    lo = s_g4_mul(c, [c.xor(x, y) for x, y in zip(a0, a1)], dinv)
    return lo + hi


def build():
    c = Circuit()
    x = [c.input(i) for i in range(8)]
    t = linear_map(c, x, lambda v: TO_TOWER[v])
    a0, a1 = t[:4], t[4:]
    sq_nu = linear_map(c, a1, lambda v: g16_mul(g16_mul(v, v), NU))
    sq0 = linear_map(c, a0, lambda v: g16_mul(v, v))
    p = s_g16_mul(c, a1, a0)
    d = [c.xor(c.xor(u, v), w) for u, v, w in zip(sq_nu, p, sq0)]
    dinv = s_g16_inv(c, d)
    hi = s_g16_mul(c, a1, dinv)
    lo = s_g16_mul(c, [c.xor(u, v) for u, v in zip(a0, a1)], dinv)
    inv = lo + hi

    # Back to AES's basis and through the affine map, constant 0x63 left for the output NOTs.
    def affine_linear(v):
        y = FROM_TOWER[v]
        r = 0
        for i in range(5):
            r ^= ((y << i) | (y >> (8 - i))) & 0xFF
        return r

    out = linear_map(c, inv, affine_linear)
    return c, out


def prune(c, outs):
    live, keep = set(outs), []
    for g in reversed(c.gates):
        if g[0] in live:
            keep.append(g)
            live.update(g[2:])
    return list(reversed(keep))


def main():
    # The smallest circuit over every tower and basis change (the choice changes the linear layers).
    best = None
    for params in towers():
        setup(*params)
        c, out = build()
        gates = prune(c, out)
        if best is None or len(gates) < best[0]:
            best = (len(gates), params)
    setup(*best[1])
    c, out = build()
    gates = prune(c, out)
    want = [aes_sbox(v) for v in range(256)]
    for i, o in enumerate(out):
        table = c.table[o]
        if 0x63 >> i & 1:
            table ^= FULL
        assert table == sum(1 << v for v in range(256) if want[v] >> i & 1), f"output bit {i} wrong"
    ands = sum(1 for g in gates if g[1] == "&")
    lines = [
        "// Generated by scripts/gen-aes-sbox-circuit.py: do not edit. The AES S-box as a Boolean",
        f"// circuit ({len(gates)} gates: {ands} AND, {len(gates) - ands} XOR, then NOTs for 0x63), derived",
        "// through the tower field GF(((2^2)^2)^2) and checked on all 256 inputs by the script.",
        "// Applied to bitsliced words: x[i] holds bit i (LSB first) of one byte in every lane.",
        "#pragma once",
        '#include "bc/common.cuh"',
        "",
        "namespace bc::aes {",
        "",
        "template <class W>",
        "BC_DEVICE void sbox_circuit(W x[8]) {",
    ]
    for i in range(8):
        lines.append(f"    const W x{i} = x[{i}];")
    for name, op, a, b in gates:
        lines.append(f"    const W {name} = {a} {op} {b};")
    for i, o in enumerate(out):
        lines.append(f"    x[{i}] = {'~' if 0x63 >> i & 1 else ''}{o};")
    lines += ["}", "", "}  // namespace bc::aes", ""]
    path = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).resolve().parent.parent / "kernels/aes/sbox_circuit.cuh"
    path.write_text("\n".join(lines))
    print(f"{path}: {len(gates)} gates ({ands} AND); tower constants lambda={LAM} nu={NU} beta={BETA:#04x}")


if __name__ == "__main__":
    main()
