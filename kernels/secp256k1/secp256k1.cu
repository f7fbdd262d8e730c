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

// 4-bit window i (0 = least significant) of a 256-bit little-endian integer.
BC_DEVICE uint32_t nibble(const uint32_t k[8], int i) { return (k[i >> 3] >> ((i & 7) * 4)) & 15; }

// u1 G + u2 Q by a joint 4-bit window (Straus): 256 doublings, at most 128 additions.
BC_DEVICE Point double_mul(const PointAffine* gtable, const uint32_t u1[8], const uint32_t u2[8], const PointAffine& q) {
    Point qt[16];
    qt[0] = Point::infinity();
    qt[1] = Point::from(q);
#pragma unroll 1
    for (int i = 2; i < 16; ++i) qt[i] = qt[i - 1].add(q);
    Point r = Point::infinity();
#pragma unroll 1
    for (int i = 63; i >= 0; --i) {
        r = r.dbl().dbl().dbl().dbl();
        uint32_t d1 = nibble(u1, i), d2 = nibble(u2, i);
        if (d1) r = r.add(gtable[d1]);
        if (d2) r = r.add(qt[d2]);
    }
    return r;
}

}  // namespace

// [0..15] G as affine points in Montgomery form: the fixed-base table (one thread).
extern "C" __global__ void secp256k1_g_table(PointAffine* table) {
    if (blockIdx.x != 0 || threadIdx.x != 0) return;
    PointAffine g = Curve::generator();
    Point acc = Point::infinity();
    table[0] = PointAffine::infinity();
    for (int i = 1; i < 16; ++i) {
        acc = acc.add(g);
        table[i] = acc.to_affine();
    }
}

// A verification item: u1, u2 (scalars mod n), Q = (x, y) (a valid public key), r; 40 limbs.
// Returns R = u1 G + u2 Q and r.
BC_DEVICE Point item_point(const uint32_t* it, const PointAffine* gtable, uint32_t r[8]) {
    uint32_t u1[8], u2[8];
#pragma unroll
    for (int j = 0; j < 8; ++j) {
        u1[j] = it[j];
        u2[j] = it[8 + j];
        r[j] = it[32 + j];
    }
    PointAffine q{load<Fp>(it + 16), load<Fp>(it + 24)};
    return double_mul(gtable, u1, u2, q);
}

// ECDSA: u1 = e/s, u2 = r/s. ok[i] = 1 iff R is finite and x(R) mod n == r.
extern "C" __global__ void __launch_bounds__(128) secp256k1_ecdsa_verify(const uint32_t* __restrict__ items, const PointAffine* __restrict__ gtable, uint8_t* __restrict__ ok, uint64_t n) {
    BC_FOR_EACH_ITEM(i, n) {
        uint32_t r[8], rn[8];
        Point R = item_point(items + 40 * i, gtable, r);
        // x(R) is in [0, p); x mod n == r means x == r or x == r + n (possible only if r + n < p).
        bool good = R.x_equals(Fp::from_plain(r));
        uint32_t carry = add_n(rn, r, N_MOD);
        if (!good && !carry && !geq_n(rn, P_MOD)) good = R.x_equals(Fp::from_plain(rn));
        ok[i] = good;
    }
}

// BIP340: u1 = s, u2 = n - e, Q = the key lifted to even y, r = x(R) expected (below p).
// ok[i] = 1 iff R is finite, has even y, and x(R) == r.
extern "C" __global__ void __launch_bounds__(128) secp256k1_schnorr_verify(const uint32_t* __restrict__ items, const PointAffine* __restrict__ gtable, uint8_t* __restrict__ ok, uint64_t n) {
    BC_FOR_EACH_ITEM(i, n) {
        uint32_t r[8], y[8];
        Point R = item_point(items + 40 * i, gtable, r);
        bool good = false;
        if (!R.is_infinity()) {
            PointAffine a = R.to_affine();
            a.y.to_plain(y);
            good = (y[0] & 1) == 0 && a.x == Fp::from_plain(r);
        }
        ok[i] = good;
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
