// A prime field generic over its modulus and its number of 32-bit limbs (little-endian): eight
// for the 256-bit curves (secp256k1, SM2, P-256, BN254), twelve for BLS12-381's 381-bit base
// field. Every curve instantiates this one template with a parameter struct; only the constants,
// the limb count and the reduction differ.
//
// A parameter struct P provides:
//   static constexpr int LIMBS;               // optional: the limb count N (default 8)
//   static BC_DEVICE const uint32_t* mod();   // the modulus, N limbs
//   static constexpr uint32_t PSEUDO_C0;      // non-zero: p = 2^256 - 2^32 - PSEUDO_C0, and elements
//                                             // are plain integers reduced by folding (secp256k1)
//   static BC_DEVICE const uint32_t* r2();    // otherwise: Montgomery form, R = 2^(32 N), with
//   static constexpr uint32_t INV;            // R^2 mod p and -p^-1 mod 2^32
//   static constexpr uint32_t SPARSE_ADD, SPARSE_SUB;  // optional, for INV = 1: bit k set when
//                                             // p + 1 has a term +2^(32 k) (ADD) or -2^(32 k) (SUB)
//   static constexpr bool POW_CHAINS;         // optional: P::inv(x) and P::sqrt(x) are addition
//                                             // chains for x^(p-2) and x^((p+1)/4)
//   static constexpr bool SPARE_BIT;          // optional: p < 2^(32 N - 1), which lets Montgomery
//                                             // products run as carry chains on the GPU (below)
// A product is the wide product (or a square, each cross product once) followed by the field's
// reduction: folding for pseudo-Mersenne primes, Montgomery's steps otherwise. A sparse prime
// (P-256's, SM2's) reduces with additions alone: m = t[i] and m p = m (p + 1) - m, so each step
// adds or subtracts m at a few limbs instead of multiplying by every limb of p. The portable code
// is plain C++ over 64-bit accumulators, which nvcc compiles to wide multiply-adds, and runs in the
// host emulation too; on the GPU, additions and subtractions, and the Montgomery products of primes
// with a spare top bit, run as PTX carry chains (below).
#pragma once
#include "bc/common.cuh"

namespace bc {

// Limbs of a 256-bit integer (scalars, the 256-bit fields).
constexpr int LIMBS = 8;

// Carry chains (PTX add.cc/addc, mad.lo.cc/madc.hi.cc) on the GPU: one instruction per limb
// where the portable C++ below needs a wide addition and a shift. The host emulation and builds
// with BC_FIELD_PORTABLE run the portable code.
#if defined(__CUDA_ARCH__) && !defined(BC_FIELD_PORTABLE)
#define BC_CARRY_CHAINS 1
#else
#define BC_CARRY_CHAINS 0
#endif

// r = a + b over N limbs, returns the carry out. r may be a or b.
template <int N = LIMBS>
BC_DEVICE uint32_t add_n(uint32_t* r, const uint32_t* a, const uint32_t* b) {
#if BC_CARRY_CHAINS
    asm volatile("add.cc.u32 %0, %1, %2;" : "=r"(r[0]) : "r"(a[0]), "r"(b[0]));
#pragma unroll
    for (int i = 1; i < N; ++i) asm volatile("addc.cc.u32 %0, %1, %2;" : "=r"(r[i]) : "r"(a[i]), "r"(b[i]));
    uint32_t carry;
    asm volatile("addc.u32 %0, 0, 0;" : "=r"(carry));
    return carry;
#else
    uint64_t c = 0;
#pragma unroll
    for (int i = 0; i < N; ++i) {
        c += uint64_t(a[i]) + b[i];
        r[i] = uint32_t(c);
        c >>= 32;
    }
    return uint32_t(c);
#endif
}

// r = a - b over N limbs, returns the borrow out (1 if a < b). r may be a or b.
template <int N = LIMBS>
BC_DEVICE uint32_t sub_n(uint32_t* r, const uint32_t* a, const uint32_t* b) {
#if BC_CARRY_CHAINS
    asm volatile("sub.cc.u32 %0, %1, %2;" : "=r"(r[0]) : "r"(a[0]), "r"(b[0]));
#pragma unroll
    for (int i = 1; i < N; ++i) asm volatile("subc.cc.u32 %0, %1, %2;" : "=r"(r[i]) : "r"(a[i]), "r"(b[i]));
    uint32_t borrow;
    asm volatile("subc.u32 %0, 0, 0;" : "=r"(borrow));  // 0 or 2^32 - 1
    return borrow & 1;
#else
    int64_t c = 0;
#pragma unroll
    for (int i = 0; i < N; ++i) {
        c += int64_t(a[i]) - b[i];
        r[i] = uint32_t(c);
        c >>= 32;  // arithmetic shift: 0 or -1
    }
    return uint32_t(-c);
#endif
}

// a >= b as integers of N limbs.
template <int N = LIMBS>
BC_DEVICE bool geq_n(const uint32_t* a, const uint32_t* b) {
#pragma unroll
    for (int i = N - 1; i >= 0; --i) {
        if (a[i] != b[i]) return a[i] > b[i];
    }
    return true;
}


// t = a * b (2 N limbs), row by row. nvcc forms wide multiply-adds (IMAD.WIDE) from the 64-bit
// accumulator, which PTX madc rows do not get.
template <int N = LIMBS>
BC_DEVICE void mul_wide(uint32_t t[2 * N], const uint32_t a[N], const uint32_t b[N]) {
#pragma unroll
    for (int i = 0; i < 2 * N; ++i) t[i] = 0;
#pragma unroll
    for (int i = 0; i < N; ++i) {
        uint64_t c = 0;
#pragma unroll
        for (int j = 0; j < N; ++j) {
            c += uint64_t(t[i + j]) + uint64_t(a[j]) * b[i];
            t[i + j] = uint32_t(c);
            c >>= 32;
        }
        t[i + N] = uint32_t(c);
    }
}

// t = a^2 (2 N limbs): each cross product once, doubled, plus the squares (N (N + 1) / 2 limb
// products instead of N^2).
template <int N = LIMBS>
BC_DEVICE void sqr_wide(uint32_t t[2 * N], const uint32_t a[N]) {
#pragma unroll
    for (int i = 0; i < 2 * N; ++i) t[i] = 0;
#pragma unroll
    for (int i = 0; i < N - 1; ++i) {
        uint64_t c = 0;
#pragma unroll
        for (int j = i + 1; j < N; ++j) {
            c += uint64_t(t[i + j]) + uint64_t(a[i]) * a[j];
            t[i + j] = uint32_t(c);
            c >>= 32;
        }
        t[i + N] = uint32_t(c);
    }
    // t = 2 t + a_i^2 at limb 2 i (2 t fits: the cross products sum to less than a^2 / 2).
    uint64_t c = 0;
    uint32_t shifted_out = 0;
#pragma unroll
    for (int i = 0; i < 2 * N; ++i) {
        uint32_t d = (t[i] << 1) | shifted_out;
        shifted_out = t[i] >> 31;
        uint64_t sq = uint64_t(a[i / 2]) * a[i / 2];
        c += uint64_t(d) + ((i & 1) ? uint32_t(sq >> 32) : uint32_t(sq));
        t[i] = uint32_t(c);
        c >>= 32;
    }
}

// t mod p for p = 2^256 - c, c = 2^32 + c0 (c0 < 2^10), t < 2^512: fold the high half twice
// (2^256 = c mod p), then one conditional subtraction.
BC_DEVICE void reduce_pseudo_mersenne(uint32_t r[LIMBS], const uint32_t t[2 * LIMBS], uint32_t c0) {
    const uint32_t* h = t + LIMBS;
    // u = low + high * c: ten limbs, the top ones small.
    uint32_t u[LIMBS];
    uint64_t acc = 0;
#pragma unroll
    for (int j = 0; j < LIMBS; ++j) {
        acc += uint64_t(t[j]) + uint64_t(h[j]) * c0 + (j ? h[j - 1] : 0);
        u[j] = uint32_t(acc);
        acc >>= 32;
    }
    acc += h[LIMBS - 1];  // u8 + 2^32 u9, below 2^34
    // Second fold: acc * c = acc * c0 + acc * 2^32, below 2^67.
    uint64_t lo = acc * c0;  // below 2^44
    uint64_t v = uint64_t(u[0]) + uint32_t(lo);
    r[0] = uint32_t(v);
    v = (v >> 32) + u[1] + (lo >> 32) + uint32_t(acc);
    r[1] = uint32_t(v);
    v = (v >> 32) + u[2] + (acc >> 32);
    r[2] = uint32_t(v);
    v >>= 32;
#pragma unroll
    for (int j = 3; j < LIMBS; ++j) {
        v += u[j];
        r[j] = uint32_t(v);
        v >>= 32;
    }
    // A carry out means 2^256 + r with r below 2^67: add c once more (no further carry).
    if (v) {
        v = uint64_t(r[0]) + c0;
        r[0] = uint32_t(v);
        v = (v >> 32) + r[1] + 1;
        r[1] = uint32_t(v);
        v >>= 32;
#pragma unroll
        for (int j = 2; j < LIMBS; ++j) {
            v += r[j];
            r[j] = uint32_t(v);
            v >>= 32;
        }
    }
    // r < 2^256; r >= p exactly when r + c carries out, and then r + c - 2^256 = r - p.
    uint32_t s[LIMBS];
    v = uint64_t(r[0]) + c0;
    s[0] = uint32_t(v);
    v = (v >> 32) + r[1] + 1;
    s[1] = uint32_t(v);
    v >>= 32;
#pragma unroll
    for (int j = 2; j < LIMBS; ++j) {
        v += r[j];
        s[j] = uint32_t(v);
        v >>= 32;
    }
    if (v) {
#pragma unroll
        for (int j = 0; j < LIMBS; ++j) r[j] = s[j];
    }
}

#if BC_CARRY_CHAINS
// Montgomery's product a b R^-1 over N limbs (N even) in carry chains: the products of a's even
// limbs with one limb of b do not overlap, nor do those of its odd limbs, so each half is one
// unbroken chain of multiply-adds (mad.lo.cc, madc.hi.cc) into its own accumulator, `e` at
// weight 2^0 and `o` at weight 2^32. Each of the N steps adds a b_i and m p (m clears the low
// limb), then divides by 2^32 by swapping the accumulators' roles: the old `e`, its limb 0
// cleared, continues at weight 2^32 two limbs down, its limb 1 folded into the new `e`'s limb 0.
// Needs p < 2^(32 N - 1), so that a step's sum (below 2p + 2^33 p) stays in the accumulators'
// limbs; for a, b < p the result is below 2p.
namespace cc {
// acc[j], acc[j + 1] += x[j] y for the even j < N: one chain, its carry out left in the flag.
template <int N>
BC_DEVICE void mad_row(uint32_t* acc, const uint32_t* x, uint32_t y) {
    asm volatile("mad.lo.cc.u32 %0, %1, %2, %0;" : "+r"(acc[0]) : "r"(x[0]), "r"(y));
    asm volatile("madc.hi.cc.u32 %0, %1, %2, %0;" : "+r"(acc[1]) : "r"(x[0]), "r"(y));
#pragma unroll
    for (int j = 2; j < N; j += 2) {
        asm volatile("madc.lo.cc.u32 %0, %1, %2, %0;" : "+r"(acc[j]) : "r"(x[j]), "r"(y));
        asm volatile("madc.hi.cc.u32 %0, %1, %2, %0;" : "+r"(acc[j + 1]) : "r"(x[j]), "r"(y));
    }
}

template <int N>
BC_DEVICE void step(uint32_t* e, uint32_t* o, const uint32_t* a, uint32_t bi, const uint32_t* p, uint32_t inv, bool first) {
    if (first) {
#pragma unroll
        for (int j = 0; j < N; j += 2) {
            asm volatile("mul.lo.u32 %0, %1, %2;" : "=r"(o[j]) : "r"(a[j + 1]), "r"(bi));
            asm volatile("mul.hi.u32 %0, %1, %2;" : "=r"(o[j + 1]) : "r"(a[j + 1]), "r"(bi));
            asm volatile("mul.lo.u32 %0, %1, %2;" : "=r"(e[j]) : "r"(a[j]), "r"(bi));
            asm volatile("mul.hi.u32 %0, %1, %2;" : "=r"(e[j + 1]) : "r"(a[j]), "r"(bi));
        }
    } else {
        // Limb 1 of the old low accumulator has weight 2^0 now; its carry (weight 2^32) enters
        // the high accumulator's chain, which moves the old limbs 2.. down by two.
        asm volatile("add.cc.u32 %0, %0, %1;" : "+r"(e[0]) : "r"(o[1]));
#pragma unroll
        for (int j = 0; j < N - 2; j += 2) {
            asm volatile("madc.lo.cc.u32 %0, %1, %2, %3;" : "=r"(o[j]) : "r"(a[j + 1]), "r"(bi), "r"(o[j + 2]));
            asm volatile("madc.hi.cc.u32 %0, %1, %2, %3;" : "=r"(o[j + 1]) : "r"(a[j + 1]), "r"(bi), "r"(o[j + 3]));
        }
        asm volatile("madc.lo.cc.u32 %0, %1, %2, 0;" : "=r"(o[N - 2]) : "r"(a[N - 1]), "r"(bi));
        asm volatile("madc.hi.u32 %0, %1, %2, 0;" : "=r"(o[N - 1]) : "r"(a[N - 1]), "r"(bi));
        mad_row<N>(e, a, bi);
        asm volatile("addc.u32 %0, %0, 0;" : "+r"(o[N - 1]));
    }
    const uint32_t m = e[0] * inv;
    mad_row<N>(o, p + 1, m);  // its carry out is zero: o stays below 2^(32 N)
    mad_row<N>(e, p, m);
    asm volatile("addc.u32 %0, %0, 0;" : "+r"(o[N - 1]));
}

template <int N>
BC_DEVICE void mont_mul(uint32_t r[N], const uint32_t a[N], const uint32_t b[N], const uint32_t* p, uint32_t inv) {
    static_assert(N % 2 == 0, "the chains pair limbs");
    uint32_t e[N], o[N];
#pragma unroll
    for (int i = 0; i < N; i += 2) {
        step<N>(e, o, a, b[i], p, inv, i == 0);
        step<N>(o, e, a, b[i + 1], p, inv, false);
    }
    // The last step left its low accumulator in o (limb 0 cleared): r = e + o / 2^32.
    asm volatile("add.cc.u32 %0, %1, %2;" : "=r"(r[0]) : "r"(e[0]), "r"(o[1]));
#pragma unroll
    for (int j = 1; j < N - 1; ++j) asm volatile("addc.cc.u32 %0, %1, %2;" : "=r"(r[j]) : "r"(e[j]), "r"(o[j + 1]));
    asm volatile("addc.u32 %0, %1, 0;" : "=r"(r[N - 1]) : "r"(e[N - 1]));
}

}  // namespace cc
#endif

template <class...>
using void_t = void;

// TRAIT<P>::value: P::NAME where the parameters give it, else DEFAULT.
#define BC_OPTIONAL_PARAM(TRAIT, NAME, TYPE, DEFAULT)            \
    template <class P, class = void>                            \
    struct TRAIT {                                              \
        static constexpr TYPE value = DEFAULT;                  \
    };                                                          \
    template <class P>                                          \
    struct TRAIT<P, void_t<decltype(P::NAME)>> {                \
        static constexpr TYPE value = P::NAME;                  \
    };

BC_OPTIONAL_PARAM(limbs_of, LIMBS, int, LIMBS)
BC_OPTIONAL_PARAM(chains_of, POW_CHAINS, bool, false)
BC_OPTIONAL_PARAM(spare_bit_of, SPARE_BIT, bool, false)

// P::SPARSE_ADD and SPARSE_SUB where the parameters give them, else none.
template <class P, class = void>
struct sparse_of {
    static constexpr uint32_t add = 0, sub = 0;
};
template <class P>
struct sparse_of<P, void_t<decltype(P::SPARSE_ADD)>> {
    static_assert(P::INV == 1, "the sparse reduction needs -p^-1 = 1 mod 2^32");
    static constexpr uint32_t add = P::SPARSE_ADD, sub = P::SPARSE_SUB;
};

// x^(2^k).
template <class F>
BC_DEVICE F sqr_n(F x, int k) {
#pragma unroll 1
    for (int i = 0; i < k; ++i) x = x.sqr();
    return x;
}

template <class P>
struct Fp {
    static constexpr int N = limbs_of<P>::value;
    static constexpr bool PSEUDO = P::PSEUDO_C0 != 0;
    static_assert(!PSEUDO || N == LIMBS, "the pseudo-Mersenne reduction is for 256-bit primes");
    static constexpr uint32_t SPARSE_ADD = sparse_of<P>::add, SPARSE_SUB = sparse_of<P>::sub;
    static constexpr bool SPARSE = SPARSE_ADD != 0;
    // Montgomery products in carry chains (GPU only): p needs its top bit spare.
    static constexpr bool CHAINS = BC_CARRY_CHAINS && !PSEUDO && !SPARSE && spare_bit_of<P>::value && N % 2 == 0;
    uint32_t v[N];

    static BC_DEVICE const uint32_t* modulus() { return P::mod(); }

    static BC_DEVICE Fp zero() {
        Fp r;
#pragma unroll
        for (int i = 0; i < N; ++i) r.v[i] = 0;
        return r;
    }

    // t R^-1 mod p for t < p R (2 N limbs), Montgomery's steps over the wide product (separated
    // operand scanning: the product, or a square, first): step i adds m p 2^(32 i) with
    // m = t[i] (-p^-1) mod 2^32, which clears limb i; its carry joins the next step at limb
    // i + N + 1. The result, below 2p, is t[N .. 2N) plus the last carry.
    static BC_DEVICE Fp reduce_montgomery(uint32_t t[2 * N]) {
        const uint32_t* p = P::mod();
        uint32_t carry = 0;
#pragma unroll
        for (int i = 0; i < N; ++i) {
            uint32_t m = t[i] * P::INV;
            uint64_t c = 0;
#pragma unroll
            for (int j = 0; j < N; ++j) {
                c += uint64_t(t[i + j]) + uint64_t(m) * p[j];
                t[i + j] = uint32_t(c);
                c >>= 32;
            }
            c += uint64_t(t[i + N]) + carry;
            t[i + N] = uint32_t(c);
            carry = uint32_t(c >> 32);
        }
        return subtract_once(t + N, carry);
    }

    // t R^-1 mod p for t = a b < p^2 (2 N limbs) and a sparse prime. Montgomery's steps with
    // m = t[i] (-p^-1 = 1): t + m p 2^(32 i) = t - m 2^(32 i) + m (p + 1) 2^(32 i), where the first
    // term clears limb i exactly and the second adds or subtracts m at the few limbs of p + 1's
    // terms. Step i writes limbs i + 1 .. i + N; its carry (signed: the running sum stays
    // non-negative) joins the next step at limb i + N + 1. The result, below 2p, is t[N .. 2N)
    // plus the last carry.
    static BC_DEVICE Fp reduce_sparse(uint32_t t[2 * N]) {
        int64_t carry = 0;
#pragma unroll
        for (int i = 0; i < N; ++i) {
            uint32_t m = t[i];
            int64_t s = 0;
#pragma unroll
            for (int k = 1; k <= N; ++k) {
                s += int64_t(t[i + k]);
                if ((SPARSE_ADD >> k) & 1) s += m;
                if ((SPARSE_SUB >> k) & 1) s -= m;
                if (k == N) s += carry;
                t[i + k] = uint32_t(s);
                s >>= 32;
            }
            carry = s;
        }
        return subtract_once(t + N, uint32_t(carry));
    }

    // x + top 2^(32 N), known to be below 2p, reduced below p.
    static BC_DEVICE Fp subtract_once(const uint32_t x[N], uint32_t top) {
        Fp r;
        uint32_t borrow = sub_n<N>(r.v, x, P::mod());
        // Keep x - p unless x < p (a borrow the top limb does not absorb).
        if (borrow > top) {
#pragma unroll
            for (int i = 0; i < N; ++i) r.v[i] = x[i];
        }
        return r;
    }

    // a * b in the field's representation. Not inlined: every point operation calls it a dozen
    // times, and inlining them all multiplies code size and compile time. Operands by value, so
    // they travel in registers, not through the stack.
    static BC_NOINLINE Fp mul(Fp a, Fp b) {
#if BC_CARRY_CHAINS
        if constexpr (CHAINS) {
            uint32_t r[N];
            cc::mont_mul<N>(r, a.v, b.v, P::mod(), P::INV);
            return subtract_once(r, 0);
        }
#endif
        uint32_t t[2 * N];
        mul_wide<N>(t, a.v, b.v);
        return reduce_wide(t);
    }

    // a^2: the cross products once (N (N + 1) / 2 limb products instead of N^2).
    static BC_NOINLINE Fp square(Fp a) {
#if BC_CARRY_CHAINS
        // As a product: the chains beat the square's halved limb products at eight limbs, not at
        // twelve, where the product's accumulators crowd the registers.
        if constexpr (CHAINS && N <= 8) {
            uint32_t r[N];
            cc::mont_mul<N>(r, a.v, a.v, P::mod(), P::INV);
            return subtract_once(r, 0);
        }
#endif
        uint32_t t[2 * N];
        sqr_wide<N>(t, a.v);
        return reduce_wide(t);
    }

    // A wide value below p R (a product of two elements, or one element) reduced the field's way.
    static BC_DEVICE Fp reduce_wide(uint32_t t[2 * N]) {
        if constexpr (PSEUDO) {
            Fp r;
            reduce_pseudo_mersenne(r.v, t, P::PSEUDO_C0);
            return r;
        } else if constexpr (SPARSE) {
            return reduce_sparse(t);
        } else {
            return reduce_montgomery(t);
        }
    }

    // From an ordinary integer x < p.
    static BC_DEVICE Fp from_plain(const uint32_t x[N]) {
        if constexpr (PSEUDO) {
            Fp r;
#pragma unroll
            for (int i = 0; i < N; ++i) r.v[i] = x[i];
            return r;
        } else {
            uint32_t t[2 * N];
            mul_wide<N>(t, x, P::r2());
            return reduce_wide(t);
        }
    }

    static BC_DEVICE Fp from_u32(uint32_t x) {
        uint32_t t[N] = {x};
        return from_plain(t);
    }

    static BC_DEVICE Fp one() { return from_u32(1); }

    // Back to an ordinary integer in [0, p).
    BC_DEVICE void to_plain(uint32_t out[N]) const {
        Fp r = *this;
        if constexpr (!PSEUDO) {
            // x R^-1: the reduction of x itself as a wide value.
            uint32_t t[2 * N];
#pragma unroll
            for (int i = 0; i < N; ++i) {
                t[i] = v[i];
                t[N + i] = 0;
            }
            r = reduce_wide(t);
        }
#pragma unroll
        for (int i = 0; i < N; ++i) out[i] = r.v[i];
    }

    BC_DEVICE bool is_zero() const {
        uint32_t acc = 0;
#pragma unroll
        for (int i = 0; i < N; ++i) acc |= v[i];
        return acc == 0;
    }

    friend BC_DEVICE bool operator==(const Fp& a, const Fp& b) {
        uint32_t acc = 0;
#pragma unroll
        for (int i = 0; i < N; ++i) acc |= a.v[i] ^ b.v[i];
        return acc == 0;
    }
    friend BC_DEVICE bool operator!=(const Fp& a, const Fp& b) { return !(a == b); }

    friend BC_DEVICE Fp operator+(const Fp& a, const Fp& b) {
        Fp s, r;
        uint32_t carry = add_n<N>(s.v, a.v, b.v);
        uint32_t borrow = sub_n<N>(r.v, s.v, P::mod());
        return (carry || !borrow) ? r : s;
    }

    friend BC_DEVICE Fp operator-(const Fp& a, const Fp& b) {
        Fp r;
        if (sub_n<N>(r.v, a.v, b.v)) add_n<N>(r.v, r.v, P::mod());
        return r;
    }

    friend BC_DEVICE Fp operator*(const Fp& a, const Fp& b) { return mul(a, b); }

    BC_DEVICE Fp neg() const { return zero() - *this; }
    BC_DEVICE Fp sqr() const { return square(*this); }
    BC_DEVICE Fp dbl() const { return *this + *this; }

    // x^e for an exponent of N limbs: fixed 4-bit windows (32 N - 4 squarings, 8 N products).
    BC_DEVICE Fp pow(const uint32_t e[N]) const {
        Fp table[16];
        table[0] = one();
        table[1] = *this;
#pragma unroll 1
        for (int i = 2; i < 16; ++i) table[i] = table[i - 1] * *this;
        Fp r = table[e[N - 1] >> 28];
#pragma unroll 1
        for (int w = 8 * N - 2; w >= 0; --w) {
            r = r.sqr().sqr().sqr().sqr();
            r = r * table[(e[w >> 3] >> ((w & 7) * 4)) & 15];
        }
        return r;
    }

    // Inverse by Fermat (x^(p-2)); the inverse of 0 is 0.
    BC_DEVICE Fp inv() const {
        if constexpr (chains_of<P>::value) return P::inv(*this);
        uint32_t e[N];
        uint32_t two[N] = {2};
        sub_n<N>(e, P::mod(), two);
        return pow(e);
    }

    // A square root for p = 3 mod 4 (x^((p+1)/4)); it is one only if its square is x.
    BC_DEVICE Fp sqrt_candidate() const {
        if constexpr (chains_of<P>::value) return P::sqrt(*this);
        uint32_t e[N];
        uint32_t one_[N] = {1};
        add_n<N>(e, P::mod(), one_);  // p < 2^(32 N) - 1 for every curve here: no carry out
#pragma unroll
        for (int i = 0; i < N; ++i) e[i] = (e[i] >> 2) | (i + 1 < N ? e[i + 1] << 30 : 0);
        return pow(e);
    }
};

// An element from its field's number of little-endian limbs holding an ordinary integer below
// the modulus.
template <class F>
BC_DEVICE F load_plain(const uint32_t* src) {
    uint32_t t[F::N];
#pragma unroll
    for (int i = 0; i < F::N; ++i) t[i] = src[i];
    return F::from_plain(t);
}

// The parity of an element's ordinary value (SEC1's and RFC 9380's sign of y).
template <class F>
BC_DEVICE bool is_odd(const F& x) {
    uint32_t plain[F::N];
    x.to_plain(plain);
    return plain[0] & 1;
}

// Inverts an element on its own thread.
struct ThreadInverse {
    template <class F>
    BC_DEVICE F operator()(const F& x) const { return x.inv(); }
};

// Montgomery's trick: inverts n elements with one inversion and 3(n-1) multiplications.
// `scratch` holds n elements. Zeros stay zero and do not spoil the others. `invert` inverts
// their (non-zero) product: on the thread, or shared with the block (BlockInverse).
template <class F, class Invert = ThreadInverse>
BC_DEVICE void batch_inverse(F* x, F* scratch, int n, Invert invert = {}) {
    F acc = F::one();
    for (int i = 0; i < n; ++i) {
        scratch[i] = acc;
        if (!x[i].is_zero()) acc = acc * x[i];
    }
    acc = invert(acc);
    for (int i = n - 1; i >= 0; --i) {
        if (x[i].is_zero()) continue;
        F inv = acc * scratch[i];
        acc = acc * x[i];
        x[i] = inv;
    }
}

// A value moved between the lanes of a warp word by word: `shuffle` (a __shfl_*_sync) on each
// 32-bit word.
template <class T, class Shuffle>
BC_DEVICE T shfl_words(const T& x, Shuffle shuffle) {
    static_assert(sizeof(T) % 4 == 0, "whole words");
    T r;
    const uint32_t* s = reinterpret_cast<const uint32_t*>(&x);
    uint32_t* o = reinterpret_cast<uint32_t*>(&r);
#pragma unroll
    for (int i = 0; i < int(sizeof(T) / 4); ++i) o[i] = shuffle(s[i]);
    return r;
}

template <class T>
BC_DEVICE T shfl_up(const T& x, unsigned d) {
    return shfl_words(x, [d](uint32_t w) { return __shfl_up_sync(0xffffffffu, w, d); });
}

template <class T>
BC_DEVICE T shfl_down(const T& x, unsigned d) {
    return shfl_words(x, [d](uint32_t w) { return __shfl_down_sync(0xffffffffu, w, d); });
}

// x^-1 on every thread of a block, with one inversion for the whole block: an inversion costs
// a few hundred products, which each thread otherwise pays (all lanes of a warp run it at once,
// so sharing within a warp alone saves nothing). The lanes' products are scanned by shuffles
// (prefix and suffix, 12 products a thread), the warps' totals inverted together by the first
// thread while the others wait at the barrier (their SM runs other blocks' warps meanwhile).
// x must be non-zero. Every thread of the block calls it (barriers). On the GPU the block is
// whole warps (the shuffles name all 32 lanes); the host emulation's one-thread block is a warp
// of one.
template <class F>
BC_DEVICE F block_inverse(const F& x) {
    __shared__ F total[32], scratch[32];
    const unsigned width = blockDim.x < 32 ? blockDim.x : 32;
    const unsigned lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = (blockDim.x + 31) / 32;
    F pre = x, suf = x;  // x_0 ... x_lane and x_lane ... x_(width-1)
#pragma unroll 1
    for (unsigned d = 1; d < width; d *= 2) {
        F up = shfl_up(pre, d), down = shfl_down(suf, d);
        if (lane >= d) pre = pre * up;
        if (lane + d < width) suf = suf * down;
    }
    if (lane == width - 1) total[warp] = pre;
    __syncthreads();
    if (threadIdx.x == 0) batch_inverse(total, scratch, int(warps));
    __syncthreads();
    // x^-1 = (x_0 ... x_(width-1))^-1 (x_0 ... x_(lane-1)) (x_(lane+1) ... x_(width-1))
    F before = shfl_up(pre, 1), after = shfl_down(suf, 1), r = total[warp];
    if (lane > 0) r = r * before;
    if (lane + 1 < width) r = r * after;
    __syncthreads();  // total[] is read before a next call writes it
    return r;
}

// Inverts an element with one inversion for its whole block (block_inverse).
struct BlockInverse {
    template <class F>
    BC_DEVICE F operator()(const F& x) const { return block_inverse(x); }
};

}  // namespace bc

namespace bc {

// The quadratic extension F[u]/(u^2 + 1) of a prime field with p = 3 mod 4 (BN254's Fq2, over
// which G2 lives), as (c0, c1) = c0 + c1 u, arkworks' layout. It has the interface the curve
// template uses (zero, one, +, -, *, sqr, dbl, neg, is_zero, inv), so a curve over it needs no
// code of its own.
template <class F>
struct Fp2 {
    F c0, c1;

    static BC_DEVICE Fp2 zero() { return Fp2{F::zero(), F::zero()}; }
    static BC_DEVICE Fp2 one() { return Fp2{F::one(), F::zero()}; }

    BC_DEVICE bool is_zero() const { return c0.is_zero() && c1.is_zero(); }
    friend BC_DEVICE bool operator==(const Fp2& a, const Fp2& b) { return a.c0 == b.c0 && a.c1 == b.c1; }
    friend BC_DEVICE bool operator!=(const Fp2& a, const Fp2& b) { return !(a == b); }
    friend BC_DEVICE Fp2 operator+(const Fp2& a, const Fp2& b) { return Fp2{a.c0 + b.c0, a.c1 + b.c1}; }
    friend BC_DEVICE Fp2 operator-(const Fp2& a, const Fp2& b) { return Fp2{a.c0 - b.c0, a.c1 - b.c1}; }

    // Karatsuba: three base-field products instead of four.
    friend BC_DEVICE Fp2 operator*(const Fp2& a, const Fp2& b) {
        F t0 = a.c0 * b.c0, t1 = a.c1 * b.c1;
        F t2 = (a.c0 + a.c1) * (b.c0 + b.c1);
        return Fp2{t0 - t1, t2 - t0 - t1};
    }

    // (c0 + c1 u)^2 = (c0 + c1)(c0 - c1) + 2 c0 c1 u: two products.
    BC_DEVICE Fp2 sqr() const {
        F t = c0 * c1;
        return Fp2{(c0 + c1) * (c0 - c1), t.dbl()};
    }

    BC_DEVICE Fp2 dbl() const { return Fp2{c0.dbl(), c1.dbl()}; }
    BC_DEVICE Fp2 neg() const { return Fp2{c0.neg(), c1.neg()}; }

    // 1 / (c0 + c1 u) = (c0 - c1 u) / (c0^2 + c1^2); the inverse of 0 is 0.
    BC_DEVICE Fp2 inv() const {
        F t = (c0.sqr() + c1.sqr()).inv();
        return Fp2{c0 * t, (c1 * t).neg()};
    }
};

}  // namespace bc
