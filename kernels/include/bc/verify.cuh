// Signature verification items, generic over the curve. ECDSA, BIP340 and SM2 verification all
// reduce to one shape: compute R = u1 G + u2 Q for a public key Q, then test R against r. The host
// does the scalar algebra that needs no inversion (BIP340: u1 = s, u2 = n - e; SM2: u1 = s,
// u2 = r + s and r' = r - e); ECDSA's items arrive as e and s, and ecdsa_prepare below computes
// u1 = e/s and u2 = r/s on the device. The verification kernels see one item layout:
//
//   limbs 0..8 u1, 8..16 u2, 16..24 key x, 24..32 key y (unused when compressed), 32..40 r,
//   limb 40 flags
//
// each integer as eight little-endian 32-bit limbs of its ordinary value.
#pragma once
#include "bc/ecmult.cuh"

namespace bc::verify {

constexpr int ITEM_LIMBS = 41;

// Item flags (limb 40).
enum : uint32_t { KEY_ODD = 1, KEY_COMPRESSED = 2, ITEM_SKIP = 4 };
// Verdict codes.
enum : uint8_t { OUT_MISMATCH = 0, OUT_VALID = 1, OUT_KEY_OFF_CURVE = 2 };

BC_DEVICE void load8(uint32_t dst[LIMBS], const uint32_t* src) {
#pragma unroll
    for (int i = 0; i < LIMBS; ++i) dst[i] = src[i];
}

// The item's public key: decompressed here (one square root), or an uncompressed one checked
// against the curve equation. False when no point has these coordinates.
template <class C>
BC_DEVICE bool item_key(const uint32_t* it, Affine<C>& q) {
    uint32_t flags = it[40];
    uint32_t x[LIMBS];
    load8(x, it + 16);
    if (flags & KEY_COMPRESSED) return decompress<C>(x, flags & KEY_ODD, q);
    q.x = load_plain<typename C::F>(x);
    q.y = load_plain<typename C::F>(it + 24);
    return on_curve(q);
}

// Whether x(R) mod n == r for r < n: x(R) lies in [0, p), so it is r or, when r + n < p, r + n.
// No inversion: Jacobian x is compared as X == r Z^2. False for the point at infinity.
template <class C>
BC_DEVICE bool x_mod_n_equals(const Jacobian<C>& R, const uint32_t r[LIMBS], const uint32_t* n_mod) {
    using F = typename C::F;
    if (R.x_equals(F::from_plain(r))) return true;
    uint32_t rn[LIMBS];
    uint32_t carry = add_n(rn, r, n_mod);
    return !carry && !geq_n(rn, F::modulus()) && R.x_equals(F::from_plain(rn));
}

// The verdict of an item whose test is x(R) mod n == r (ECDSA, SM2). `double_mul(u1, u2, q)`
// computes u1 G + u2 Q the curve's best way.
template <class C, class DoubleMul>
BC_DEVICE uint8_t verdict_x_mod_n(const uint32_t* it, const uint32_t* n_mod, DoubleMul double_mul) {
    if (it[40] & ITEM_SKIP) return OUT_MISMATCH;
    Affine<C> q;
    if (!item_key<C>(it, q)) return OUT_KEY_OFF_CURVE;
    uint32_t u1[LIMBS], u2[LIMBS], r[LIMBS];
    load8(u1, it);
    load8(u2, it + 8);
    load8(r, it + 32);
    return x_mod_n_equals(double_mul(u1, u2, q), r, n_mod) ? OUT_VALID : OUT_MISMATCH;
}

// ECDSA items as the host encodes them (e, s, key, r with 1 <= s < n) turned in place into
// verification items (u1 = e/s, u2 = r/s): each thread takes PREPARE_ITEMS consecutive items and
// inverts their s together (Montgomery's trick), one inversion for the run. A separate kernel
// from the verification, which keeps its registers for u1 G + u2 Q. `Fn` is the field mod n.
constexpr int PREPARE_ITEMS = 16;

template <class Fn>
BC_DEVICE void ecdsa_prepare(uint32_t* items, uint64_t n) {
    BC_FOR_EACH_ITEM(t, (n + PREPARE_ITEMS - 1) / PREPARE_ITEMS) {
        const uint64_t first = t * PREPARE_ITEMS;
        const int count = int(n - first < PREPARE_ITEMS ? n - first : PREPARE_ITEMS);
        auto live = [&](int j) { return !(items[ITEM_LIMBS * (first + j) + 40] & ITEM_SKIP); };
        Fn before[PREPARE_ITEMS];  // the product of the s before each item's
        Fn acc = Fn::one();
#pragma unroll 1
        for (int j = 0; j < count; ++j) {
            before[j] = acc;
            if (live(j)) acc = acc * load_plain<Fn>(items + ITEM_LIMBS * (first + j) + 8);
        }
        acc = acc.inv();  // 1 / (the product of every s)
#pragma unroll 1
        for (int j = count - 1; j >= 0; --j) {
            if (!live(j)) continue;
            uint32_t* it = items + ITEM_LIMBS * (first + j);
            const Fn s = load_plain<Fn>(it + 8);
            const Fn w = acc * before[j];
            acc = acc * s;
            (load_plain<Fn>(it) * w).to_plain(it);
            (load_plain<Fn>(it + 32) * w).to_plain(it + 8);
        }
    }
}

// u1 G + u2 Q for a curve without an endomorphism: u2 Q in signed W-bit windows, then u1 G from
// the fixed-base table (no doublings) added onto it. The callable verdict_x_mod_n takes.
template <class C, class GTable, int W>
BC_DEVICE auto double_mul(const Affine<C>* gtable) {
    return [gtable](const uint32_t u1[LIMBS], const uint32_t u2[LIMBS], const Affine<C>& q) {
        return GTable::mul(gtable, u1, mul_window<C, W>(q, u2));
    };
}

}  // namespace bc::verify
