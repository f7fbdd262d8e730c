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

// The window of the fixed-base tables of SM2 and P-256 (no endomorphism: u1 G is a full 256-bit
// multiplication): 20-bit signed windows, 13 mixed additions per k G from a 436 MB table in GPU
// memory, built once per device. The host emulation builds 12-bit tables (22 additions, 2.9 MB)
// instead: one host thread cannot build the larger one in a test's time; the code is the same.
#ifdef __CUDACC__
constexpr int WIDE_G_WINDOW = 20;
#else
constexpr int WIDE_G_WINDOW = 12;
#endif

// The fixed-base table of a curve's generator for W-bit signed windows over 256-bit scalars.
template <class C, int W>
struct FixedBase {
    static constexpr int WINDOWS = (256 + W) / W;  // the recoding carry may add a digit
    static constexpr int ENTRIES = 1 << (W - 1);   // |d| in 1..2^(W-1)
    static constexpr int LEN = WINDOWS * ENTRIES;

    // Entry i = (j, d - 1): d 2^(W j) G, affine. The table is built in runs of RUN consecutive
    // entries of one window, each run from scratch so that a grid builds them in parallel:
    // B = 2^(W j) G by doublings, d B for the run's first d, then each next entry by adding B,
    // the run brought to affine with one inversion.
    static constexpr int RUN = ENTRIES < 16 ? ENTRIES : 16;
    static constexpr int RUNS = LEN / RUN;

    static BC_DEVICE void build_run(int r, Affine<C>* table) {
        constexpr int PER_WINDOW = ENTRIES / RUN;
        const int j = r / PER_WINDOW, d0 = (r % PER_WINDOW) * RUN + 1;
        Jacobian<C> b = Jacobian<C>::from(C::generator());
#pragma unroll 1
        for (int k = 0; k < W * j; ++k) b = b.dbl();
        Jacobian<C> p[RUN];
        Jacobian<C> acc = Jacobian<C>::infinity();
#pragma unroll 1
        for (int bit = W; bit >= 0; --bit) {
            acc = acc.dbl();
            if ((d0 >> bit) & 1) acc = acc.add(b);
        }
        p[0] = acc;
#pragma unroll
        for (int k = 1; k < RUN; ++k) p[k] = p[k - 1].add(b);
        Affine<C> a[RUN];
        to_affine_all<C, RUN>(p, a);
#pragma unroll
        for (int k = 0; k < RUN; ++k) table[r * RUN + k] = a[k];
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

// The multiples 1..2^(W-1) of an affine p as "effective affine" points (libsecp256k1's
// technique), for curves with a = 0: built by mixed additions, then every entry brought to the
// last entry's Z, `zc`, with the Z ratios the additions give. The (X, Y) of each entry is then
// an affine point of the isomorphic curve y^2 = x^3 + b zc^6, and since neither doubling nor
// addition reads b when a = 0, a multiplication can add the entries there by mixed additions
// (7M + 4S against a Jacobian addition's 11M + 5S) and return to the curve by multiplying its Z
// by zc. False when p's order is at most 2^W (an addition met an exceptional case, so a ratio
// is missing): never for a point of a prime-order group but infinity; a cofactor curve's
// small-order points take the Jacobian table instead.
template <class C, int W>
BC_DEVICE bool window_table_iso(Affine<C>* t, typename C::F& zc, const Affine<C>& p) {
    static_assert(C::A_IS_ZERO, "the isomorphic curve changes a unless a = 0");
    using F = typename C::F;
    constexpr int K = 1 << (W - 1);
    F zr[K];  // zr[i] = Z_i / Z_(i-1)
    Jacobian<C> cur = Jacobian<C>::from(p).dbl();
    zr[1] = p.y.dbl();  // doubling from Z = 1: Z = 2 Y
    t[0] = p;
    t[1] = Affine<C>{cur.x, cur.y};
    bool ok = !zr[1].is_zero();
#pragma unroll 1
    for (int i = 2; i < K; ++i) {
        zr[i] = F::zero();
        cur = cur.add(p, &zr[i]);
        ok = ok && !zr[i].is_zero();
        t[i] = Affine<C>{cur.x, cur.y};
    }
    zc = cur.z;
    F f = zr[K - 1];
#pragma unroll 1
    for (int i = K - 2; i >= 0; --i) {
        F f2 = f.sqr();
        t[i] = Affine<C>{t[i].x * f2, t[i].y * f2 * f};
        if (i > 0) f = f * zr[i];
    }
    return ok;
}

// acc + d t[|d| - 1] with the sign of d flipped when `neg`; the entries Jacobian or affine.
template <class C, class Entry>
BC_DEVICE void add_digit(Jacobian<C>& acc, const Entry* t, int d, bool neg) {
    if (d == 0) return;
    Entry e = t[(d < 0 ? -d : d) - 1];
    if ((d < 0) != neg) e.y = e.y.neg();
    acc = acc.add(e);
}

// sum d[i] 2^(W i) t[...] over the signed W-bit digits of k, most significant first.
template <class C, int W, class Entry>
BC_DEVICE Jacobian<C> mul_digits(const Entry* t, const uint32_t k[8]) {
    constexpr int D = (256 + W) / W;
    int d[D];
    signed_digits<W, D>(k, d);
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

// k P for a variable point: signed W-bit windows over a per-thread table.
template <class C, int W>
BC_DEVICE Jacobian<C> mul_window(const Jacobian<C>& p, const uint32_t k[8]) {
    Jacobian<C> t[1 << (W - 1)];
    window_table<C, W>(t, p);
    return mul_digits<C, W>(t, k);
}

// The same from an affine point: over effective-affine entries when a = 0.
template <class C, int W>
BC_DEVICE Jacobian<C> mul_window(const Affine<C>& p, const uint32_t k[8]) {
    if constexpr (C::A_IS_ZERO) {
        Affine<C> t[1 << (W - 1)];
        typename C::F zc;
        if (!p.is_infinity() && window_table_iso<C, W>(t, zc, p)) {
            Jacobian<C> acc = mul_digits<C, W>(t, k);
            acc.z = acc.z * zc;
            return acc;
        }
    }
    return mul_window<C, W>(Jacobian<C>::from(p), k);
}

}  // namespace bc
