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
// Eight-limb Montgomery products use PTX carry chains on the GPU; other sizes, sparse primes and host
// emulation plain C++. A sparse prime (P-256's, SM2's) reduces with additions alone: m = t[0] and
// m p = m (p + 1) - m, so each reduction step adds or subtracts m at a few limbs instead of
// multiplying by every limb of p.
#pragma once
#include "bc/common.cuh"

namespace bc {

// Limbs of a 256-bit integer (scalars, the 256-bit fields).
constexpr int LIMBS = 8;

// r = a + b over N limbs, returns the carry out.
template <int N = LIMBS>
BC_DEVICE uint32_t add_n(uint32_t* r, const uint32_t* a, const uint32_t* b) {
    uint64_t c = 0;
#pragma unroll
    for (int i = 0; i < N; ++i) {
        c += uint64_t(a[i]) + b[i];
        r[i] = uint32_t(c);
        c >>= 32;
    }
    return uint32_t(c);
}

// r = a - b over N limbs, returns the borrow out (1 if a < b).
template <int N = LIMBS>
BC_DEVICE uint32_t sub_n(uint32_t* r, const uint32_t* a, const uint32_t* b) {
    int64_t c = 0;
#pragma unroll
    for (int i = 0; i < N; ++i) {
        c += int64_t(a[i]) - b[i];
        r[i] = uint32_t(c);
        c >>= 32;  // arithmetic shift: 0 or -1
    }
    return uint32_t(-c);
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

#ifdef __CUDA_ARCH__
// One row of a multiplication on ten limbs: t += x * y, or with `reduce` (a Montgomery
// reduction step) t += (t[0] * y) * x. Low halves go into t[0..7], high halves into t[1..8],
// carries into t[8..9], each chain one madc sequence (the carry flag lives only inside one asm
// block). The asm works on its own copies of t and writes them back last: an input may share a
// register with an output when the compiler knows their values equal (m = t[0] when
// -p^-1 = 1 mod 2^32, as for SM2), and must not be overwritten while still to be read.
BC_DEVICE void mad_row(uint32_t t[LIMBS + 2], const uint32_t x[LIMBS], uint32_t y, bool reduce) {
#define BC_ROW_BODY                                                                                   \
    "mad.lo.cc.u32  t0, %10, m, t0;\n\t"                                                        \
    "madc.lo.cc.u32 t1, %11, m, t1;\n\t"                                                        \
    "madc.lo.cc.u32 t2, %12, m, t2;\n\t"                                                        \
    "madc.lo.cc.u32 t3, %13, m, t3;\n\t"                                                        \
    "madc.lo.cc.u32 t4, %14, m, t4;\n\t"                                                        \
    "madc.lo.cc.u32 t5, %15, m, t5;\n\t"                                                        \
    "madc.lo.cc.u32 t6, %16, m, t6;\n\t"                                                        \
    "madc.lo.cc.u32 t7, %17, m, t7;\n\t"                                                        \
    "addc.cc.u32    t8, t8, 0;\n\t"                                                             \
    "addc.u32       t9, t9, 0;\n\t"                                                             \
    "mad.hi.cc.u32  t1, %10, m, t1;\n\t"                                                        \
    "madc.hi.cc.u32 t2, %11, m, t2;\n\t"                                                        \
    "madc.hi.cc.u32 t3, %12, m, t3;\n\t"                                                        \
    "madc.hi.cc.u32 t4, %13, m, t4;\n\t"                                                        \
    "madc.hi.cc.u32 t5, %14, m, t5;\n\t"                                                        \
    "madc.hi.cc.u32 t6, %15, m, t6;\n\t"                                                        \
    "madc.hi.cc.u32 t7, %16, m, t7;\n\t"                                                        \
    "madc.hi.cc.u32 t8, %17, m, t8;\n\t"                                                        \
    "addc.u32       t9, t9, 0;\n\t"
#define BC_ROW_IN "mov.b32 t0, %0; mov.b32 t1, %1; mov.b32 t2, %2; mov.b32 t3, %3; mov.b32 t4, %4;\n\t" \
              "mov.b32 t5, %5; mov.b32 t6, %6; mov.b32 t7, %7; mov.b32 t8, %8; mov.b32 t9, %9;\n\t"
#define BC_ROW_OUT "mov.b32 %0, t0; mov.b32 %1, t1; mov.b32 %2, t2; mov.b32 %3, t3; mov.b32 %4, t4;\n\t" \
               "mov.b32 %5, t5; mov.b32 %6, t6; mov.b32 %7, t7; mov.b32 %8, t8; mov.b32 %9, t9;"
#define BC_ROW_OPERANDS                                                                                              \
    : "+r"(t[0]), "+r"(t[1]), "+r"(t[2]), "+r"(t[3]), "+r"(t[4]), "+r"(t[5]), "+r"(t[6]), "+r"(t[7]), "+r"(t[8]), \
      "+r"(t[9])                                                                                                 \
    : "r"(x[0]), "r"(x[1]), "r"(x[2]), "r"(x[3]), "r"(x[4]), "r"(x[5]), "r"(x[6]), "r"(x[7]), "r"(y)
    if (reduce) {
        asm("{\n\t.reg .u32 t0, t1, t2, t3, t4, t5, t6, t7, t8, t9, m;\n\t" BC_ROW_IN
            "mul.lo.u32 m, t0, %18;\n\t" BC_ROW_BODY BC_ROW_OUT "\n\t}" BC_ROW_OPERANDS);
    } else {
        asm("{\n\t.reg .u32 t0, t1, t2, t3, t4, t5, t6, t7, t8, t9, m;\n\t" BC_ROW_IN
            "mov.b32 m, %18;\n\t" BC_ROW_BODY BC_ROW_OUT "\n\t}" BC_ROW_OPERANDS);
    }
#undef BC_ROW_BODY
#undef BC_ROW_IN
#undef BC_ROW_OUT
#undef BC_ROW_OPERANDS
}
#endif

// t = a * b (2 N limbs), row by row. Plain C++: the compiler forms wide multiply-adds from it,
// faster on the GPU than PTX madc rows once the reduction is cheap (sparse or pseudo-Mersenne
// primes).
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

template <class...>
using void_t = void;
// P::LIMBS where the parameters give it, else 8.
template <class P, class = void>
struct limbs_of {
    static constexpr int value = LIMBS;
};
template <class P>
struct limbs_of<P, void_t<decltype(P::LIMBS)>> {
    static constexpr int value = P::LIMBS;
};

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

template <class P>
struct Fp {
    static constexpr int N = limbs_of<P>::value;
    static constexpr bool PSEUDO = P::PSEUDO_C0 != 0;
    static_assert(!PSEUDO || N == LIMBS, "the pseudo-Mersenne reduction is for 256-bit primes");
    static constexpr uint32_t SPARSE_ADD = sparse_of<P>::add, SPARSE_SUB = sparse_of<P>::sub;
    static constexpr bool SPARSE = SPARSE_ADD != 0;
    uint32_t v[N];

    static BC_DEVICE const uint32_t* modulus() { return P::mod(); }

    static BC_DEVICE Fp zero() {
        Fp r;
#pragma unroll
        for (int i = 0; i < N; ++i) r.v[i] = 0;
        return r;
    }

    // Montgomery product a * b * R^-1 mod p (CIOS). Works for any odd p < 2^(32 N): the running
    // value stays below 2p, with its top bit kept in t[N]. On the GPU each row of an eight-limb
    // field is two carry chains for a * b_i and two for m * p (PTX madc); otherwise plain 64-bit
    // arithmetic.
    static BC_DEVICE Fp mont_mul(const uint32_t a[N], const uint32_t b[N]) {
        const uint32_t* p = P::mod();
        uint32_t t[N + 2];
#pragma unroll
        for (int i = 0; i < N + 2; ++i) t[i] = 0;
#pragma unroll
        for (int i = 0; i < N; ++i) {
#ifdef __CUDA_ARCH__
            if constexpr (N == LIMBS) {
                // t += a * b_i, then t += m * p with m chosen so that t[0] becomes zero.
                mad_row(t, a, b[i], false);
                mad_row(t, p, P::INV, true);
            } else
#endif
            {
                uint64_t c = 0;
                for (int j = 0; j < N; ++j) {
                    c += uint64_t(t[j]) + uint64_t(a[j]) * b[i];
                    t[j] = uint32_t(c);
                    c >>= 32;
                }
                c += t[N];
                t[N] = uint32_t(c);
                t[N + 1] = uint32_t(c >> 32);
                uint32_t m = t[0] * P::INV;
                c = 0;
                for (int j = 0; j < N; ++j) {
                    c += uint64_t(t[j]) + uint64_t(m) * p[j];
                    t[j] = uint32_t(c);
                    c >>= 32;
                }
                c += t[N];
                t[N] = uint32_t(c);
                t[N + 1] += uint32_t(c >> 32);
            }
            // t[0] is zero: shift down one limb.
#pragma unroll
            for (int j = 0; j < N + 1; ++j) t[j] = t[j + 1];
            t[N + 1] = 0;
        }
        Fp r;
        uint32_t borrow = sub_n<N>(r.v, t, p);
        // Keep t - p unless t < p (a borrow not absorbed by the top bit t[N]).
        if (borrow > t[N]) {
#pragma unroll
            for (int i = 0; i < N; ++i) r.v[i] = t[i];
        }
        return r;
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
        Fp r;
        uint32_t borrow = sub_n<N>(r.v, t + N, P::mod());
        if (borrow > uint32_t(carry)) {
#pragma unroll
            for (int i = 0; i < N; ++i) r.v[i] = t[N + i];
        }
        return r;
    }

    // a * b in the field's representation. Not inlined: every point operation calls it a dozen
    // times, and inlining them all multiplies code size and compile time. Operands by value, so
    // they travel in registers, not through the stack.
    static BC_NOINLINE Fp mul(Fp a, Fp b) {
        if constexpr (PSEUDO || SPARSE) {
            uint32_t t[2 * N];
            mul_wide<N>(t, a.v, b.v);
            return reduce_wide(t);
        } else {
            return mont_mul(a.v, b.v);
        }
    }

    // a^2 where the reduction is cheap enough for a dedicated squaring to matter.
    static BC_NOINLINE Fp square(Fp a) {
        static_assert(PSEUDO || SPARSE, "other fields square with mul");
        uint32_t t[2 * N];
        sqr_wide<N>(t, a.v);
        return reduce_wide(t);
    }

    static BC_DEVICE Fp reduce_wide(uint32_t t[2 * N]) {
        if constexpr (PSEUDO) {
            Fp r;
            reduce_pseudo_mersenne(r.v, t, P::PSEUDO_C0);
            return r;
        } else {
            return reduce_sparse(t);
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
            return mont_mul(x, P::r2());
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
            uint32_t unit[N] = {1};
            r = mont_mul(v, unit);
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
    BC_DEVICE Fp sqr() const {
        if constexpr (PSEUDO || SPARSE) return square(*this);
        else return mul(*this, *this);
    }
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
        uint32_t e[N];
        uint32_t two[N] = {2};
        sub_n<N>(e, P::mod(), two);
        return pow(e);
    }

    // A square root for p = 3 mod 4 (x^((p+1)/4)); it is one only if its square is x.
    BC_DEVICE Fp sqrt_candidate() const {
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

// Montgomery's trick: inverts n elements with one inversion and 3(n-1) multiplications.
// `scratch` holds n elements. Zeros stay zero and do not spoil the others.
template <class F>
BC_DEVICE void batch_inverse(F* x, F* scratch, int n) {
    F acc = F::one();
    for (int i = 0; i < n; ++i) {
        scratch[i] = acc;
        if (!x[i].is_zero()) acc = acc * x[i];
    }
    acc = acc.inv();
    for (int i = n - 1; i >= 0; --i) {
        if (x[i].is_zero()) continue;
        F inv = acc * scratch[i];
        acc = acc * x[i];
        x[i] = inv;
    }
}

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
