// secp256k1 kernels: ECDSA verification of prepared items, and the field/group checks the tests
// run against an independent CPU implementation. Integers cross the host boundary as eight
// little-endian 32-bit limbs, in ordinary (not Montgomery) form.
#include "secp256k1.cuh"

using namespace bc::secp256k1;
using bc::add_n;
using bc::geq_n;
using bc::on_curve;

namespace {

template <class F>
BC_DEVICE F load(const uint32_t* src) {
    uint32_t t[8];
#pragma unroll
    for (int i = 0; i < 8; ++i) t[i] = src[i];
    return F::from_plain(t);
}

template <class F>
BC_DEVICE void store(uint32_t* dst, const F& x) {
    x.to_plain(dst);
}

BC_DEVICE void store_affine(uint32_t* dst, const Point& p) {
    PointAffine a = p.to_affine();
    store(dst, a.x);
    store(dst + 8, a.y);
}

// Bits [pos, pos + w) of a little-endian integer of 8 limbs (zero past the top), w <= 16.
BC_DEVICE uint32_t bits_at(const uint32_t k[8], int pos, int w) {
    int word = pos >> 5, off = pos & 31;
    if (word >= 8) return 0;
    uint32_t v = k[word] >> off;
    if (off + w > 32 && word + 1 < 8) v |= k[word + 1] << (32 - off);
    return v & ((1u << w) - 1);
}

// Signed fixed-window digits, least significant first: k = sum d[i] 2^(w i) with d[i] in
// [-(2^(w-1) - 1), 2^(w-1)]. Every thread adds at the same windows, so warps do not diverge the
// way they would on wNAF's data-dependent positions.
template <int W, int D>
BC_DEVICE void signed_digits(const uint32_t k[8], int d[D]) {
    uint32_t carry = 0;
#pragma unroll
    for (int i = 0; i < D; ++i) {
        uint32_t v = bits_at(k, i * W, W) + carry;
        carry = v > (1u << (W - 1));
        d[i] = int(v) - int(carry << W);
    }
}

// floor(k * g / 2^384 + 1/2) for 256-bit k and g: libsecp256k1's split rounding.
BC_DEVICE void mul_shift_384(uint32_t out[8], const uint32_t k[8], const uint32_t* g) {
    uint32_t t[16], gl[8];
#pragma unroll
    for (int i = 0; i < 8; ++i) gl[i] = g[i];
    bc::mul_wide(t, k, gl);
    uint32_t round = t[11] >> 31;
    uint64_t c = round;
#pragma unroll
    for (int i = 0; i < 8; ++i) {
        c += i < 4 ? t[12 + i] : 0;
        out[i] = uint32_t(c);
        c >>= 32;
    }
}

// k = k1 + lambda k2 (mod n) with k1 = (-1)^neg1 m1, k2 = (-1)^neg2 m2, m1, m2 < 2^128.
BC_DEVICE void split_lambda(const uint32_t k[8], uint32_t m1[8], bool& neg1, uint32_t m2[8], bool& neg2) {
    uint32_t c1[8], c2[8];
    mul_shift_384(c1, k, G1);
    mul_shift_384(c2, k, G2);
    Fn r2 = Fn::from_plain(c1) * Fn::from_plain(MINUS_B1) + Fn::from_plain(c2) * Fn::from_plain(MINUS_B2);
    Fn r1 = r2 * Fn::from_plain(MINUS_LAMBDA) + Fn::from_plain(k);
    // A residue above n/2 stands for a negative number.
    uint32_t half[8];
#pragma unroll
    for (int i = 0; i < 8; ++i) half[i] = (N_MOD[i] >> 1) | (i + 1 < 8 ? N_MOD[i + 1] << 31 : 0);
    auto magnitude = [&](const Fn& r, uint32_t m[8], bool& neg) {
        r.to_plain(m);
        neg = !geq_n(half, m);
        if (neg) r.neg().to_plain(m);
    };
    magnitude(r1, m1, neg1);
    magnitude(r2, m2, neg2);
}

// Q side: GLV halves in signed 5-bit windows over multiples 1..16 of Q (Jacobian, per thread).
constexpr int QW = 5, QD = 26;  // 26 windows cover 128 bits and the recoding carry
// G side: signed 8-bit windows of u1 over the precomputed table d 2^(8 j) G.
constexpr int GW = 8, GD = 33, GENTRIES = 1 << (GW - 1);
constexpr int G_TABLE_LEN = GD * GENTRIES;

BC_DEVICE void add_q_digit(Point& acc, const Point* qt, int d, bool neg, bool endo) {
    if (d == 0) return;
    Point t = qt[(d < 0 ? -d : d) - 1];
    if (endo) t.x = t.x * Fp::from_plain(BETA);
    if ((d < 0) != neg) t.y = t.y.neg();
    acc = acc.add(t);
}

// u1 G + u2 Q: u2 split by the endomorphism (128 doublings shared by both halves), u1 through the
// fixed-base table (no doublings).
BC_DEVICE Point double_mul(const PointAffine* gtable, const uint32_t u1[8], const uint32_t u2[8], const PointAffine& q) {
    uint32_t m1[8], m2[8];
    bool neg1, neg2;
    split_lambda(u2, m1, neg1, m2, neg2);
    int d1[QD], d2[QD];
    signed_digits<QW, QD>(m1, d1);
    signed_digits<QW, QD>(m2, d2);
    Point qt[16];
    qt[0] = Point::from(q);
    qt[1] = qt[0].dbl();
#pragma unroll 1
    for (int i = 2; i < 16; ++i) qt[i] = qt[i - 1].add(qt[0]);
    Point acc = Point::infinity();
#pragma unroll 1
    for (int i = QD - 1; i >= 0; --i) {
#pragma unroll 1
        for (int j = 0; j < QW; ++j) acc = acc.dbl();
        add_q_digit(acc, qt, d1[i], neg1, false);
        add_q_digit(acc, qt, d2[i], neg2, true);
    }
    int g[GD];
    signed_digits<GW, GD>(u1, g);
#pragma unroll 1
    for (int j = 0; j < GD; ++j) {
        if (g[j] == 0) continue;
        PointAffine e = gtable[j * GENTRIES + (g[j] < 0 ? -g[j] : g[j]) - 1];
        if (g[j] < 0) e.y = e.y.neg();
        acc = acc.add(e);
    }
    return acc;
}

}  // namespace

// The fixed-base table: entry j * 128 + d - 1 is d 2^(8 j) G (affine), for d in 1..128 and j in
// 0..32. Computed once, in parallel, from scratch per entry.
extern "C" __global__ void secp256k1_g_table(PointAffine* table) {
    BC_FOR_EACH_ITEM(i, (uint64_t)G_TABLE_LEN) {
        int j = int(i) / GENTRIES, d = int(i) % GENTRIES + 1;
        Point b = Point::from(Curve::generator());
#pragma unroll 1
        for (int k = 0; k < GW * j; ++k) b = b.dbl();
        Point acc = Point::infinity();
#pragma unroll 1
        for (int bit = GW; bit >= 0; --bit) {
            acc = acc.dbl();
            if ((d >> bit) & 1) acc = acc.add(b);
        }
        table[i] = acc.to_affine();
    }
}

// Item flags (limb 40).
enum : uint32_t { KEY_ODD = 1, KEY_COMPRESSED = 2, ITEM_SKIP = 4 };
// Verdict codes.
enum : uint8_t { OUT_MISMATCH = 0, OUT_VALID = 1, OUT_KEY_OFF_CURVE = 2 };

// The item's public key: a compressed key is decompressed here (one square root), an
// uncompressed one is checked against the curve equation. False when there is no such point.
BC_DEVICE bool item_key(const uint32_t* it, PointAffine& q) {
    uint32_t flags = it[40];
    q.x = load<Fp>(it + 16);
    Fp rhs = q.x.sqr() * q.x + Curve::b();
    if (flags & KEY_COMPRESSED) {
        Fp y = rhs.sqrt_candidate();
        if (y.sqr() != rhs) return false;
        uint32_t plain[8];
        y.to_plain(plain);
        q.y = (plain[0] & 1) == (flags & KEY_ODD) ? y : y.neg();
        return true;
    }
    q.y = load<Fp>(it + 24);
    return q.y.sqr() == rhs;
}

// A verification item (41 limbs): u1, u2 (scalars mod n), the key's x and y (y unused when
// compressed), r, flags. Computes R = u1 G + u2 Q; returns false if the key is not on the curve.
BC_DEVICE bool item_point(const uint32_t* it, const PointAffine* gtable, Point& R, uint32_t r[8]) {
    PointAffine q;
    if (!item_key(it, q)) return false;
    uint32_t u1[8], u2[8];
#pragma unroll
    for (int j = 0; j < 8; ++j) {
        u1[j] = it[j];
        u2[j] = it[8 + j];
        r[j] = it[32 + j];
    }
    R = double_mul(gtable, u1, u2, q);
    return true;
}

// ECDSA: u1 = e/s, u2 = r/s. Valid iff R is finite and x(R) mod n == r.
extern "C" __global__ void __launch_bounds__(128) secp256k1_ecdsa_verify(const uint32_t* __restrict__ items, const PointAffine* __restrict__ gtable, uint8_t* __restrict__ ok, uint64_t n) {
    BC_FOR_EACH_ITEM(i, n) {
        const uint32_t* it = items + 41 * i;
        if (it[40] & ITEM_SKIP) {
            ok[i] = OUT_MISMATCH;
            continue;
        }
        uint32_t r[8], rn[8];
        Point R;
        if (!item_point(it, gtable, R, r)) {
            ok[i] = OUT_KEY_OFF_CURVE;
            continue;
        }
        // x(R) is in [0, p); x mod n == r means x == r or x == r + n (possible only if r + n < p).
        bool good = R.x_equals(Fp::from_plain(r));
        uint32_t carry = add_n(rn, r, N_MOD);
        if (!good && !carry && !geq_n(rn, P_MOD)) good = R.x_equals(Fp::from_plain(rn));
        ok[i] = good ? OUT_VALID : OUT_MISMATCH;
    }
}

// BIP340: u1 = s, u2 = n - e, the key lifted to even y, r = x(R) expected (below p).
// Valid iff R is finite, has even y, and x(R) == r.
extern "C" __global__ void __launch_bounds__(128) secp256k1_schnorr_verify(const uint32_t* __restrict__ items, const PointAffine* __restrict__ gtable, uint8_t* __restrict__ ok, uint64_t n) {
    BC_FOR_EACH_ITEM(i, n) {
        const uint32_t* it = items + 41 * i;
        if (it[40] & ITEM_SKIP) {
            ok[i] = OUT_MISMATCH;
            continue;
        }
        uint32_t r[8], y[8];
        Point R;
        if (!item_point(it, gtable, R, r)) {
            ok[i] = OUT_KEY_OFF_CURVE;
            continue;
        }
        bool good = false;
        if (!R.is_infinity()) {
            PointAffine a = R.to_affine();
            a.y.to_plain(y);
            good = (y[0] & 1) == 0 && a.x == Fp::from_plain(r);
        }
        ok[i] = good ? OUT_VALID : OUT_MISMATCH;
    }
}

// GLV split checks: per 8-limb scalar k < n, writes m1, m2 (8 limbs each) and the two signs.
extern "C" __global__ void secp256k1_split_lambda(const uint32_t* k, uint32_t* out, uint64_t n) {
    BC_FOR_EACH_ITEM(i, n) {
        uint32_t kk[8], m1[8], m2[8];
        bool n1, n2;
#pragma unroll
        for (int j = 0; j < 8; ++j) kk[j] = k[8 * i + j];
        split_lambda(kk, m1, n1, m2, n2);
        uint32_t* o = out + 18 * i;
        for (int j = 0; j < 8; ++j) {
            o[j] = m1[j];
            o[8 + j] = m2[j];
        }
        o[16] = n1;
        o[17] = n2;
    }
}

// Batch inversion checks: each group of 16 elements (mod p, or n when which = 1) is inverted
// together by Montgomery's trick; zeros stay zero.
template <class F>
BC_DEVICE void invert_group(const uint32_t* x, uint32_t* out) {
    F v[16], scratch[16];
    for (int k = 0; k < 16; ++k) v[k] = load<F>(x + 8 * k);
    bc::batch_inverse(v, scratch, 16);
    for (int k = 0; k < 16; ++k) store(out + 8 * k, v[k]);
}

extern "C" __global__ void secp256k1_batch_inverse(const uint32_t* x, uint32_t* out, uint64_t groups, int which) {
    BC_FOR_EACH_ITEM(g, groups) {
        if (which == 0) invert_group<Fp>(x + 128 * g, out + 128 * g);
        else invert_group<Fn>(x + 128 * g, out + 128 * g);
    }
}

// Field checks: for a, b < modulus (which = 0: p, 1: n), writes a+b, a-b, a*b, a^2, a^-1, -a.
extern "C" __global__ void secp256k1_field_ops(const uint32_t* a, const uint32_t* b, uint32_t* out, uint64_t n, int which) {
    BC_FOR_EACH_ITEM(i, n) {
        uint32_t* o = out + 48 * i;
        if (which == 0) {
            Fp x = load<Fp>(a + 8 * i), y = load<Fp>(b + 8 * i);
            store(o, x + y); store(o + 8, x - y); store(o + 16, x * y); store(o + 24, x.sqr()); store(o + 32, x.inv()); store(o + 40, x.neg());
        } else {
            Fn x = load<Fn>(a + 8 * i), y = load<Fn>(b + 8 * i);
            store(o, x + y); store(o + 8, x - y); store(o + 16, x * y); store(o + 24, x.sqr()); store(o + 32, x.inv()); store(o + 40, x.neg());
        }
    }
}

// Group checks for affine P, Q (16 limbs each): P+Q (Jacobian add), P+Q (mixed add), 2P, P+(-P),
// P+P through add, as affine points (infinity = 0, 0), then on_curve(P) and on_curve(Q): 82 limbs.
extern "C" __global__ void secp256k1_point_ops(const uint32_t* p, const uint32_t* q, uint32_t* out, uint64_t n) {
    BC_FOR_EACH_ITEM(i, n) {
        PointAffine a{load<Fp>(p + 16 * i), load<Fp>(p + 16 * i + 8)};
        PointAffine b{load<Fp>(q + 16 * i), load<Fp>(q + 16 * i + 8)};
        Point ja = Point::from(a), jb = Point::from(b);
        uint32_t* o = out + 82 * i;
        store_affine(o, ja.add(jb));
        store_affine(o + 16, ja.add(b));
        store_affine(o + 32, ja.dbl());
        store_affine(o + 48, ja.add(ja.neg()));
        store_affine(o + 64, ja.add(ja));
        o[80] = on_curve(a, Curve::b());
        o[81] = on_curve(b, Curve::b());
    }
}
