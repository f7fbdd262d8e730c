// Scalar multiplication, generic over the curve: signed fixed-window recoding, a fixed-base table
// (d 2^(W j) G for every window j: k G with no doublings at all), and a windowed variable-base
// multiplication. Scalars are eight little-endian 32-bit limbs, below 2^256.
//
// Signed fixed windows rather than wNAF: every thread of a warp adds at the same step, so warps do
// not diverge on data-dependent digit positions.
#pragma once
#include "bc/curve.cuh"

namespace bc {

// Bits [pos, pos + w) of a little-endian integer of 8 limbs (zero past the top), w <= 31.
BC_DEVICE uint32_t bits_at(const uint32_t k[8], int pos, int w) {
    int word = pos >> 5, off = pos & 31;
    if (word >= 8) return 0;
    uint32_t v = k[word] >> off;
    if (off + w > 32 && word + 1 < 8) v |= k[word + 1] << (32 - off);
    return v & ((1u << w) - 1);
}

// k = sum d[i] 2^(W i), least significant first, with d[i] in [-(2^(W-1) - 1), 2^(W-1)].
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

// The fixed-base table of a curve's generator for W-bit signed windows over 256-bit scalars.
template <class C, int W>
struct FixedBase {
    static constexpr int WINDOWS = (256 + W) / W;  // the recoding carry may add a digit
    static constexpr int ENTRIES = 1 << (W - 1);   // |d| in 1..2^(W-1)
    static constexpr int LEN = WINDOWS * ENTRIES;

    // Entry i = (j, d - 1): d 2^(W j) G, affine. Each entry from scratch, so a grid computes the
    // table in parallel.
    static BC_DEVICE Affine<C> entry(int i) {
        int j = i / ENTRIES, d = i % ENTRIES + 1;
        Jacobian<C> b = Jacobian<C>::from(C::generator());
#pragma unroll 1
        for (int k = 0; k < W * j; ++k) b = b.dbl();
        Jacobian<C> acc = Jacobian<C>::infinity();
#pragma unroll 1
        for (int bit = W; bit >= 0; --bit) {
            acc = acc.dbl();
            if ((d >> bit) & 1) acc = acc.add(b);
        }
        return acc.to_affine();
    }

    // acc + k G: one mixed addition per non-zero window.
    static BC_DEVICE Jacobian<C> mul(const Affine<C>* table, const uint32_t k[8], Jacobian<C> acc = Jacobian<C>::infinity()) {
        int d[WINDOWS];
        signed_digits<W, WINDOWS>(k, d);
#pragma unroll 1
        for (int j = 0; j < WINDOWS; ++j) {
            if (d[j] == 0) continue;
            Affine<C> e = table[j * ENTRIES + (d[j] < 0 ? -d[j] : d[j]) - 1];
            if (d[j] < 0) e.y = e.y.neg();
            acc = acc.add(e);
        }
        return acc;
    }
};

// The multiples 1..2^(W-1) of p (Jacobian), for signed W-bit windows.
template <class C, int W>
BC_DEVICE void window_table(Jacobian<C>* t, const Jacobian<C>& p) {
    t[0] = p;
    t[1] = p.dbl();
#pragma unroll 1
    for (int i = 2; i < (1 << (W - 1)); ++i) t[i] = t[i - 1].add(p);
}

// acc + d t[|d| - 1] with the sign of d flipped when `neg`.
template <class C>
BC_DEVICE void add_digit(Jacobian<C>& acc, const Jacobian<C>* t, int d, bool neg) {
    if (d == 0) return;
    Jacobian<C> e = t[(d < 0 ? -d : d) - 1];
    if ((d < 0) != neg) e.y = e.y.neg();
    acc = acc.add(e);
}

// k P for a variable point: signed W-bit windows over a per-thread table.
template <class C, int W>
BC_DEVICE Jacobian<C> mul_window(const Jacobian<C>& p, const uint32_t k[8]) {
    constexpr int D = (256 + W) / W;
    int d[D];
    signed_digits<W, D>(k, d);
    Jacobian<C> t[1 << (W - 1)];
    window_table<C, W>(t, p);
    Jacobian<C> acc = Jacobian<C>::infinity();
#pragma unroll 1
    for (int i = D - 1; i >= 0; --i) {
        if (i != D - 1) {
#pragma unroll 1
            for (int j = 0; j < W; ++j) acc = acc.dbl();
        }
        add_digit(acc, t, d[i], false);
    }
    return acc;
}

template <class C, int W>
BC_DEVICE Jacobian<C> mul_window(const Affine<C>& p, const uint32_t k[8]) {
    return mul_window<C, W>(Jacobian<C>::from(p), k);
}

}  // namespace bc
