// A prime field of at most 256 bits, generic over its modulus: Montgomery form over eight 32-bit
// limbs (little-endian), R = 2^256. Every curve (secp256k1, SM2, BN254) instantiates this one
// template with a parameter struct; only the constants differ.
//
// A parameter struct P provides:
//   static BC_DEVICE const uint32_t* mod();   // the modulus, 8 limbs
//   static BC_DEVICE const uint32_t* r2();    // R^2 mod p (to enter Montgomery form)
//   static constexpr uint32_t INV;            // -p^-1 mod 2^32
// Limb arithmetic is written with 64-bit products, which nvcc turns into IMAD.WIDE chains; a
// PTX carry-chain variant can specialise it later without changing callers.
#pragma once
#include "bc/common.cuh"

namespace bc {

constexpr int LIMBS = 8;

// r = a + b, returns the carry out.
BC_DEVICE uint32_t add_n(uint32_t r[LIMBS], const uint32_t a[LIMBS], const uint32_t b[LIMBS]) {
    uint64_t c = 0;
#pragma unroll
    for (int i = 0; i < LIMBS; ++i) {
        c += uint64_t(a[i]) + b[i];
        r[i] = uint32_t(c);
        c >>= 32;
    }
    return uint32_t(c);
}

// r = a - b, returns the borrow out (1 if a < b).
BC_DEVICE uint32_t sub_n(uint32_t r[LIMBS], const uint32_t a[LIMBS], const uint32_t b[LIMBS]) {
    int64_t c = 0;
#pragma unroll
    for (int i = 0; i < LIMBS; ++i) {
        c += int64_t(a[i]) - b[i];
        r[i] = uint32_t(c);
        c >>= 32;  // arithmetic shift: 0 or -1
    }
    return uint32_t(-c);
}

// a >= b as integers.
BC_DEVICE bool geq_n(const uint32_t a[LIMBS], const uint32_t b[LIMBS]) {
#pragma unroll
    for (int i = LIMBS - 1; i >= 0; --i) {
        if (a[i] != b[i]) return a[i] > b[i];
    }
    return true;
}

template <class P>
struct Fp {
    uint32_t v[LIMBS];

    static BC_DEVICE Fp zero() {
        Fp r;
#pragma unroll
        for (int i = 0; i < LIMBS; ++i) r.v[i] = 0;
        return r;
    }

    // Montgomery product a * b * R^-1 mod p (CIOS). Works for any odd p < 2^256: the running
    // value stays below 2p, with its 257th bit kept in t8. Not inlined: every point operation
    // calls it a dozen times, and inlining them all multiplies code size and compile time.
    static BC_NOINLINE Fp mont_mul(const uint32_t a[LIMBS], const uint32_t b[LIMBS]) {
        const uint32_t* p = P::mod();
        uint32_t t[LIMBS];
#pragma unroll
        for (int i = 0; i < LIMBS; ++i) t[i] = 0;
        uint32_t t8 = 0;
#pragma unroll
        for (int i = 0; i < LIMBS; ++i) {
            uint64_t c = 0;
#pragma unroll
            for (int j = 0; j < LIMBS; ++j) {
                c += uint64_t(t[j]) + uint64_t(a[j]) * b[i];
                t[j] = uint32_t(c);
                c >>= 32;
            }
            uint64_t top = uint64_t(t8) + c;  // < 2^33
            uint32_t m = t[0] * P::INV;
            c = (uint64_t(t[0]) + uint64_t(m) * p[0]) >> 32;
#pragma unroll
            for (int j = 1; j < LIMBS; ++j) {
                c += uint64_t(t[j]) + uint64_t(m) * p[j];
                t[j - 1] = uint32_t(c);
                c >>= 32;
            }
            top += c;
            t[LIMBS - 1] = uint32_t(top);
            t8 = uint32_t(top >> 32);
        }
        Fp r;
        uint32_t borrow = sub_n(r.v, t, p);
        // Keep t - p unless t < p (a borrow not absorbed by the 257th bit).
        if (borrow > t8) {
#pragma unroll
            for (int i = 0; i < LIMBS; ++i) r.v[i] = t[i];
        }
        return r;
    }

    // From an ordinary integer x < p.
    static BC_DEVICE Fp from_plain(const uint32_t x[LIMBS]) { return mont_mul(x, P::r2()); }

    static BC_DEVICE Fp from_u32(uint32_t x) {
        uint32_t t[LIMBS] = {x, 0, 0, 0, 0, 0, 0, 0};
        return from_plain(t);
    }

    static BC_DEVICE Fp one() { return from_u32(1); }

    // Back to an ordinary integer in [0, p).
    BC_DEVICE void to_plain(uint32_t out[LIMBS]) const {
        uint32_t unit[LIMBS] = {1, 0, 0, 0, 0, 0, 0, 0};
        Fp r = mont_mul(v, unit);
#pragma unroll
        for (int i = 0; i < LIMBS; ++i) out[i] = r.v[i];
    }

    BC_DEVICE bool is_zero() const {
        uint32_t acc = 0;
#pragma unroll
        for (int i = 0; i < LIMBS; ++i) acc |= v[i];
        return acc == 0;
    }

    friend BC_DEVICE bool operator==(const Fp& a, const Fp& b) {
        uint32_t acc = 0;
#pragma unroll
        for (int i = 0; i < LIMBS; ++i) acc |= a.v[i] ^ b.v[i];
        return acc == 0;
    }
    friend BC_DEVICE bool operator!=(const Fp& a, const Fp& b) { return !(a == b); }

    friend BC_DEVICE Fp operator+(const Fp& a, const Fp& b) {
        Fp s, r;
        uint32_t carry = add_n(s.v, a.v, b.v);
        uint32_t borrow = sub_n(r.v, s.v, P::mod());
        return (carry || !borrow) ? r : s;
    }

    friend BC_DEVICE Fp operator-(const Fp& a, const Fp& b) {
        Fp r;
        if (sub_n(r.v, a.v, b.v)) add_n(r.v, r.v, P::mod());
        return r;
    }

    friend BC_DEVICE Fp operator*(const Fp& a, const Fp& b) { return mont_mul(a.v, b.v); }

    BC_DEVICE Fp neg() const { return zero() - *this; }
    BC_DEVICE Fp sqr() const { return mont_mul(v, v); }
    BC_DEVICE Fp dbl() const { return *this + *this; }

    // x^e for an exponent given as 8 limbs (left to right, square and multiply).
    BC_DEVICE Fp pow(const uint32_t e[LIMBS]) const {
        Fp r = one();
        for (int i = LIMBS - 1; i >= 0; --i) {
            for (int b = 31; b >= 0; --b) {
                r = r.sqr();
                if ((e[i] >> b) & 1) r = r * *this;
            }
        }
        return r;
    }

    // Inverse by Fermat (x^(p-2)); the inverse of 0 is 0.
    BC_DEVICE Fp inv() const {
        uint32_t e[LIMBS];
        uint32_t two[LIMBS] = {2, 0, 0, 0, 0, 0, 0, 0};
        sub_n(e, P::mod(), two);
        return pow(e);
    }
};

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
