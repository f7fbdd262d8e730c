// Hashing to a curve, RFC 9380: expand_message_xmd over any bc/md.cuh hash, hash_to_field with
// L = 48 bytes per element, and the simplified SWU map for curves with a != 0 and b != 0 over
// fields with p = 3 mod 4 (SM2, P-256). hash_to_curve is the random-oracle variant
// (two field elements, two maps, one addition); every curve here has cofactor 1.
//
// A curve parameter struct adds to bc/curve.cuh's:
//   static BC_DEVICE F sswu_z();    // Z of RFC 9380 §6.6.2 (found by its Appendix H.2 procedure)
//   static BC_DEVICE F sswu_c2();   // a square root of -Z^3
#pragma once
#include "bc/curve.cuh"
#include "bc/md.cuh"

namespace bc {

// Bytes of one field element's hash output (L = ceil((ceil(log2 p) + 128) / 8) for 256-bit p).
constexpr int H2C_L = 48;
// Domain separation tags longer than 255 bytes must be hashed first (RFC 9380 §5.3.3); the host
// does that, so the device sees at most this many bytes.
constexpr int H2C_DST_MAX = 255;

// expand_message_xmd(msg, dst, 96): the 96 uniform bytes as 24 big-endian words.
template <class H>
BC_DEVICE void expand_message_xmd_96(const uint8_t* msg, uint32_t len, const uint8_t* dst, uint32_t dst_len, uint32_t out[24]) {
    uint32_t b0[8];
    {
        MdStream<H> m;
        for (int i = 0; i < 64; ++i) m.byte(0);  // Z_pad: one block of zeros
        m.bytes(msg, len);
        m.byte(0);  // I2OSP(96, 2)
        m.byte(96);
        m.byte(0);  // I2OSP(0, 1)
        m.bytes(dst, dst_len);
        m.byte(dst_len);
        m.finish(b0);
    }
    uint32_t prev[8];
#pragma unroll 1
    for (int i = 1; i <= 3; ++i) {
        uint32_t x[8];
        for (int j = 0; j < 8; ++j) x[j] = i == 1 ? b0[j] : b0[j] ^ prev[j];
        MdStream<H> m;
        m.words(x);
        m.byte(i);
        m.bytes(dst, dst_len);
        m.byte(dst_len);
        m.finish(prev);
        for (int j = 0; j < 8; ++j) out[8 * (i - 1) + j] = prev[j];
    }
}

// x mod p for an integer below 2^256 (at most a few subtractions: p > 2^253 for every curve here).
template <class F>
BC_DEVICE F from_any_256(uint32_t x[LIMBS]) {
    while (geq_n(x, F::modulus())) sub_n(x, x, F::modulus());
    return F::from_plain(x);
}

// OS2IP of 48 big-endian bytes (12 words) mod p: hi 2^256 + lo.
template <class F>
BC_DEVICE F field_from_48(const uint32_t be[12]) {
    uint32_t lo[LIMBS], hi[LIMBS], r256[LIMBS], zero[LIMBS];
#pragma unroll
    for (int i = 0; i < LIMBS; ++i) {
        lo[i] = be[11 - i];
        hi[i] = i < 4 ? be[3 - i] : 0;
        zero[i] = 0;
    }
    sub_n(r256, zero, F::modulus());  // 2^256 - p
    return from_any_256<F>(lo) + from_any_256<F>(hi) * from_any_256<F>(r256);
}

// The simplified SWU map (RFC 9380 §6.6.2), for p = 3 mod 4: one inversion and one square root.
// When g(x1) is not a square, sqrt(g(x2)) = sqrt(-g(x1)) u^3 sqrt(-Z^3), since g(x2) = Z^3 u^6 g(x1).
template <class C>
BC_DEVICE Affine<C> map_to_curve_sswu(const typename C::F& u) {
    using F = typename C::F;
    const F a = C::a(), b = C::b(), z = C::sswu_z();
    F u2 = u.sqr(), zu2 = z * u2;
    F tv1 = zu2.sqr() + zu2;
    // x1 = (-b / a)(1 + 1 / tv1), or b / (Z a) when tv1 = 0; as one fraction.
    F num = (b * (tv1 + F::one())).neg(), den = a * tv1;
    if (tv1.is_zero()) {
        num = b;
        den = z * a;
    }
    F x1 = num * den.inv();
    F gx1 = (x1.sqr() + a) * x1 + b;
    F y1 = gx1.sqrt_candidate();
    Affine<C> p;
    if (y1.sqr() == gx1) {
        p = Affine<C>{x1, y1};
    } else {
        p = Affine<C>{zu2 * x1, y1 * u2 * u * C::sswu_c2()};
    }
    if (is_odd(p.y) != is_odd(u)) p.y = p.y.neg();
    return p;
}

// hash_to_curve(msg) with the DST given (RFC 9380 §3, random-oracle encoding), in Jacobian form.
template <class C, class H>
BC_DEVICE Jacobian<C> hash_to_curve(const uint8_t* msg, uint32_t len, const uint8_t* dst, uint32_t dst_len) {
    using F = typename C::F;
    uint32_t uniform[24];
    expand_message_xmd_96<H>(msg, len, dst, dst_len, uniform);
    F u0 = field_from_48<F>(uniform), u1 = field_from_48<F>(uniform + 12);
    return Jacobian<C>::from(map_to_curve_sswu<C>(u0)).add(map_to_curve_sswu<C>(u1));
}

}  // namespace bc
