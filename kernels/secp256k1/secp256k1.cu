// secp256k1 kernels: ECDSA verification of prepared items, and the field/group checks the tests
// run against an independent CPU implementation. Integers cross the host boundary as eight
// little-endian 32-bit limbs, in ordinary (not Montgomery) form.
#include "secp256k1.cuh"
#include "bc/verify.cuh"

using namespace bc::secp256k1;
using bc::geq_n;
using bc::on_curve;

namespace {

template <class F>
BC_DEVICE void store(uint32_t* dst, const F& x) {
    x.to_plain(dst);
}

BC_DEVICE void store_affine(uint32_t* dst, const Point& p) {
    PointAffine a = p.to_affine();
    store(dst, a.x);
    store(dst + 8, a.y);
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

// Q side: GLV halves (128 bits) in signed 5-bit windows over multiples 1..16 of Q.
constexpr int QW = 5, QD = 26;  // 26 windows cover 128 bits and the recoding carry
// G side: u1 from the wide fixed-base table (13 mixed additions, no doublings).
using GTable = bc::FixedBase<Curve, bc::WIDE_G_WINDOW>;

// u1 G + u2 Q: u2 split by the endomorphism (125 doublings shared by both halves, lambda Q's
// multiples from Q's by beta x), u1 through the fixed-base table (no doublings).
BC_DEVICE Point double_mul(const PointAffine* gtable, const uint32_t u1[8], const uint32_t u2[8], const PointAffine& q) {
    uint32_t m1[8], m2[8];
    bool neg1, neg2;
    split_lambda(u2, m1, neg1, m2, neg2);
    int d1[QD], d2[QD];
    bc::signed_digits<QW, QD>(m1, d1);
    bc::signed_digits<QW, QD>(m2, d2);
    // Q's multiples as effective-affine points (a = 0): mixed additions in the loop below, and
    // acc's Z times zc afterwards puts it back on the curve. Q has prime order, so the table is
    // always complete.
    PointAffine qt[1 << (QW - 1)];
    Fp zc;
    bc::window_table_iso<Curve, QW>(qt, zc, q);
    Fp beta = Fp::from_plain(BETA);
    Point acc = Point::infinity();
#pragma unroll 1
    for (int i = QD - 1; i >= 0; --i) {
        if (i != QD - 1) {
#pragma unroll 1
            for (int j = 0; j < QW; ++j) acc = acc.dbl();
        }
        bc::add_digit(acc, qt, d1[i], neg1);
        if (d2[i] != 0) {
            PointAffine e = qt[(d2[i] < 0 ? -d2[i] : d2[i]) - 1];
            e.x = e.x * beta;
            if ((d2[i] < 0) != neg2) e.y = e.y.neg();
            acc = acc.add(e);
        }
    }
    acc.z = acc.z * zc;
    return GTable::mul(gtable, u1, acc);
}

}  // namespace

// The fixed-base table (GTable::LEN affine points), computed once, in parallel.
extern "C" __global__ void secp256k1_g_table(PointAffine* table) {
    BC_FOR_EACH_ITEM(r, (uint64_t)GTable::RUNS) GTable::build_run(int(r), table);
}

using namespace bc::verify;

// Both verification kernels run three blocks of 128 threads per SM (at most 170 registers
// each): unbounded, ptxas gives BIP340's 225 registers and two blocks, and the extra warps hide
// more than the few spilled registers cost (docs/performance.md).
#define VERIFY_BOUNDS __launch_bounds__(128, 3)

// ECDSA: u1 = e/s, u2 = r/s (secp256k1_ecdsa_prepare). Valid iff R is finite and x(R) mod n == r.
extern "C" __global__ void VERIFY_BOUNDS secp256k1_ecdsa_verify_batch(const uint32_t* __restrict__ items, const PointAffine* __restrict__ gtable, uint8_t* __restrict__ ok, uint64_t n) {
    auto dm = [gtable](const uint32_t u1[8], const uint32_t u2[8], const PointAffine& q) { return double_mul(gtable, u1, u2, q); };
    BC_FOR_EACH_ITEM(i, n) ok[i] = verdict_x_mod_n<Curve>(items + ITEM_LIMBS * i, N_MOD, dm);
}

// ECDSA items (e, s) into (u1, u2) in place, before secp256k1_ecdsa_verify_batch; launch
// ceil(n / PREPARE_ITEMS) threads.
extern "C" __global__ void secp256k1_ecdsa_prepare(uint32_t* items, uint64_t n) { ecdsa_prepare<Fn>(items, n); }

// BIP340: u1 = s, u2 = n - e, the key lifted to even y, r = x(R) expected (below p).
// Valid iff R is finite, has even y, and x(R) == r. Each thread takes SCHNORR_ITEMS consecutive
// items, whose parity checks share one inversion (Montgomery's trick): launch
// ceil(n / SCHNORR_ITEMS) threads.
constexpr int SCHNORR_ITEMS = 2;

extern "C" __global__ void VERIFY_BOUNDS secp256k1_schnorr_verify_batch(const uint32_t* __restrict__ items, const PointAffine* __restrict__ gtable, uint8_t* __restrict__ ok, uint64_t n) {
    BC_FOR_EACH_ITEM(t, (n + SCHNORR_ITEMS - 1) / SCHNORR_ITEMS) {
        Point R[SCHNORR_ITEMS];
        uint8_t code[SCHNORR_ITEMS];
#pragma unroll 1
        for (int j = 0; j < SCHNORR_ITEMS; ++j) {
            uint64_t i = t * SCHNORR_ITEMS + j;
            const uint32_t* it = items + ITEM_LIMBS * i;
            PointAffine q;
            R[j] = Point::infinity();
            if (i >= n || (it[40] & ITEM_SKIP)) {
                code[j] = OUT_MISMATCH;
            } else if (!item_key<Curve>(it, q)) {
                code[j] = OUT_KEY_OFF_CURVE;
            } else {
                uint32_t u1[8], u2[8];
                load8(u1, it);
                load8(u2, it + 8);
                R[j] = double_mul(gtable, u1, u2, q);
                code[j] = OUT_VALID;  // until the test below
            }
        }
        PointAffine a[SCHNORR_ITEMS];
        bc::to_affine_all<Curve, SCHNORR_ITEMS>(R, a);
#pragma unroll 1
        for (int j = 0; j < SCHNORR_ITEMS; ++j) {
            uint64_t i = t * SCHNORR_ITEMS + j;
            if (i >= n) break;
            if (code[j] == OUT_VALID) {
                uint32_t r[8];
                load8(r, items + ITEM_LIMBS * i + 32);
                bool good = !R[j].is_infinity() && !bc::is_odd(a[j].y) && a[j].x == Fp::from_plain(r);
                code[j] = good ? OUT_VALID : OUT_MISMATCH;
            }
            ok[i] = code[j];
        }
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
    for (int k = 0; k < 16; ++k) v[k] = bc::load_plain<F>(x + 8 * k);
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
            Fp x = bc::load_plain<Fp>(a + 8 * i), y = bc::load_plain<Fp>(b + 8 * i);
            store(o, x + y); store(o + 8, x - y); store(o + 16, x * y); store(o + 24, x.sqr()); store(o + 32, x.inv()); store(o + 40, x.neg());
        } else {
            Fn x = bc::load_plain<Fn>(a + 8 * i), y = bc::load_plain<Fn>(b + 8 * i);
            store(o, x + y); store(o + 8, x - y); store(o + 16, x * y); store(o + 24, x.sqr()); store(o + 32, x.inv()); store(o + 40, x.neg());
        }
    }
}

// Group checks for affine P, Q (16 limbs each): P+Q (Jacobian add), P+Q (mixed add), 2P, P+(-P),
// P+P through add, as affine points (infinity = 0, 0), then on_curve(P) and on_curve(Q): 82 limbs.
extern "C" __global__ void secp256k1_point_ops(const uint32_t* p, const uint32_t* q, uint32_t* out, uint64_t n) {
    BC_FOR_EACH_ITEM(i, n) {
        PointAffine a{bc::load_plain<Fp>(p + 16 * i), bc::load_plain<Fp>(p + 16 * i + 8)};
        PointAffine b{bc::load_plain<Fp>(q + 16 * i), bc::load_plain<Fp>(q + 16 * i + 8)};
        Point ja = Point::from(a), jb = Point::from(b);
        uint32_t* o = out + 82 * i;
        store_affine(o, ja.add(jb));
        store_affine(o + 16, ja.add(b));
        store_affine(o + 32, ja.dbl());
        store_affine(o + 48, ja.add(ja.neg()));
        store_affine(o + 64, ja.add(ja));
        o[80] = on_curve(a);
        o[81] = on_curve(b);
    }
}
