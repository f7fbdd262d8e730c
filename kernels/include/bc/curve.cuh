// Short Weierstrass curves y^2 = x^3 + a x + b over any field F, generic over a curve parameter
// struct C:
//   using F = Fp<...>;                        // the base field
//   static constexpr bool A_IS_ZERO;          // secp256k1, BN254: a = 0 (cheaper doubling)
//   static constexpr bool A_IS_MINUS_3;       // SM2, P-256: a = -3 (cheaper doubling too)
//   static BC_DEVICE F a();                   // used in doubling only when neither holds
// Points are Jacobian (X, Y, Z) with x = X/Z^2, y = Y/Z^3; Z = 0 is the point at infinity.
// Affine points use (0, 0) for infinity, which is on none of these curves (b != 0).
#pragma once
#include "bc/field.cuh"

namespace bc {

template <class C>
struct Affine {
    using F = typename C::F;
    F x, y;
    static BC_DEVICE Affine infinity() { return Affine{F::zero(), F::zero()}; }
    BC_DEVICE bool is_infinity() const { return x.is_zero() && y.is_zero(); }
    BC_DEVICE Affine neg() const { return is_infinity() ? *this : Affine{x, y.neg()}; }
};

template <class C>
struct Jacobian {
    using F = typename C::F;
    F x, y, z;

    static BC_DEVICE Jacobian infinity() { return Jacobian{F::one(), F::one(), F::zero()}; }
    static BC_DEVICE Jacobian from(const Affine<C>& p) {
        return p.is_infinity() ? infinity() : Jacobian{p.x, p.y, F::one()};
    }
    BC_DEVICE bool is_infinity() const { return z.is_zero(); }
    BC_DEVICE Jacobian neg() const { return Jacobian{x, y.neg(), z}; }

    // 2P ("dbl-2009-l" when a = 0, "dbl-2001-b" when a = -3, "dbl-2007-bl" otherwise). Infinity
    // doubles to infinity (Z stays 0).
    BC_DEVICE Jacobian dbl() const {
        if constexpr (C::A_IS_MINUS_3) {
            F delta = z.sqr(), gamma = y.sqr(), beta = x * gamma;
            F alpha = (x - delta) * (x + delta);
            alpha = alpha.dbl() + alpha;
            F beta4 = beta.dbl().dbl();
            Jacobian r;
            r.x = alpha.sqr() - beta4.dbl();
            r.z = (y + z).sqr() - gamma - delta;
            r.y = alpha * (beta4 - r.x) - gamma.sqr().dbl().dbl().dbl();
            return r;
        }
        F xx = x.sqr(), yy = y.sqr(), yyyy = yy.sqr();
        F s = ((x + yy).sqr() - xx - yyyy).dbl();
        F m = xx.dbl() + xx;
        if constexpr (!C::A_IS_ZERO) m = m + C::a() * z.sqr().sqr();
        F x3 = m.sqr() - s.dbl();
        F y8 = yyyy.dbl().dbl().dbl();
        Jacobian r;
        r.x = x3;
        r.y = m * (s - x3) - y8;
        r.z = (y * z).dbl();
        return r;
    }

    // P + Q for Jacobian Q ("add-2007-bl"), with the exceptional cases handled.
    BC_DEVICE Jacobian add(const Jacobian& q) const {
        if (is_infinity()) return q;
        if (q.is_infinity()) return *this;
        F z1z1 = z.sqr(), z2z2 = q.z.sqr();
        F u1 = x * z2z2, u2 = q.x * z1z1;
        F s1 = y * q.z * z2z2, s2 = q.y * z * z1z1;
        F h = u2 - u1, rr = (s2 - s1).dbl();
        if (h.is_zero()) return rr.is_zero() ? dbl() : infinity();
        F i = h.dbl().sqr(), j = h * i, v = u1 * i;
        Jacobian r;
        r.x = rr.sqr() - j - v.dbl();
        r.y = rr * (v - r.x) - (s1 * j).dbl();
        r.z = ((z + q.z).sqr() - z1z1 - z2z2) * h;
        return r;
    }

    // P + Q for affine Q ("madd-2007-bl"): cheaper when Q comes from a precomputed table.
    // `zr`, when given, receives Z3 / Z1 = 2H, which effective-affine tables need; it is only
    // meaningful when neither input is infinity and P != ±Q (never the case while building
    // a table of small multiples of a point of large order).
    BC_DEVICE Jacobian add(const Affine<C>& q, F* zr = nullptr) const {
        if (q.is_infinity()) return *this;
        if (is_infinity()) return from(q);
        F z1z1 = z.sqr();
        F u2 = q.x * z1z1, s2 = q.y * z * z1z1;
        F h = u2 - x, rr = (s2 - y).dbl();
        if (h.is_zero()) return rr.is_zero() ? dbl() : infinity();
        if (zr) *zr = h.dbl();
        F hh = h.sqr(), i = hh.dbl().dbl(), j = h * i, v = x * i;
        Jacobian r;
        r.x = rr.sqr() - j - v.dbl();
        r.y = rr * (v - r.x) - (y * j).dbl();
        r.z = (z + h).sqr() - z1z1 - hh;
        return r;
    }

    // Affine coordinates (one inversion); infinity maps to (0, 0).
    // `invert` may share the inversion with the block (BlockInverse): it then runs for infinity
    // too (of one), as every thread of the block must reach it.
    template <class Invert = ThreadInverse>
    BC_DEVICE Affine<C> to_affine(Invert invert = {}) const {
        F zi = invert(is_infinity() ? F::one() : z), zi2 = zi.sqr();
        if (is_infinity()) return Affine<C>::infinity();
        return Affine<C>{x * zi2, y * zi2 * zi};
    }

    // Whether the affine x-coordinate equals the field element x0, without an inversion.
    BC_DEVICE bool x_equals(const F& x0) const { return !is_infinity() && x == x0 * z.sqr(); }
};

// XYZZ coordinates (X, Y, ZZ, ZZZ): x = X/ZZ, y = Y/ZZZ, ZZ^3 = ZZZ^2; ZZ = 0 is the point at
// infinity. An affine addition costs 8 products and 2 squares ("madd-2008-s") against the
// Jacobian's 7 and 4, and half the additions and doublings of field elements: the MSM's buckets,
// each summing many affine points, use it.
template <class C>
struct Xyzz {
    using F = typename C::F;
    F x, y, zz, zzz;

    static BC_DEVICE Xyzz infinity() { return Xyzz{F::one(), F::one(), F::zero(), F::zero()}; }
    static BC_DEVICE Xyzz from(const Affine<C>& p) {
        return p.is_infinity() ? infinity() : Xyzz{p.x, p.y, F::one(), F::one()};
    }
    BC_DEVICE bool is_infinity() const { return zz.is_zero(); }

    // 2Q for affine Q ("mdbl-2008-s-1").
    static BC_DEVICE Xyzz dbl(const Affine<C>& q) {
        F u = q.y.dbl(), v = u.sqr(), w = u * v, s = q.x * v, xx = q.x.sqr();
        F m = xx.dbl() + xx;
        if constexpr (C::A_IS_MINUS_3) m = m - (F::one().dbl() + F::one());
        else if constexpr (!C::A_IS_ZERO) m = m + C::a();
        Xyzz r;
        r.x = m.sqr() - s.dbl();
        r.y = m * (s - r.x) - w * q.y;
        r.zz = v;
        r.zzz = w;
        return r;
    }

    // P + Q for affine Q, with the exceptional cases handled.
    BC_DEVICE Xyzz add(const Affine<C>& q) const {
        if (q.is_infinity()) return *this;
        if (is_infinity()) return from(q);
        F p = q.x * zz - x, r = q.y * zzz - y;
        if (p.is_zero()) return r.is_zero() ? dbl(q) : infinity();
        F pp = p.sqr(), ppp = p * pp, qq = x * pp;
        Xyzz o;
        o.x = r.sqr() - ppp - qq.dbl();
        o.y = r * (qq - o.x) - y * ppp;
        o.zz = zz * pp;
        o.zzz = zzz * ppp;
        return o;
    }

    // The same point as Jacobian (X ZZ^2, Y ZZZ^2, ZZZ): with ZZ = l^2, ZZZ = l^3 both give x, y.
    BC_DEVICE Jacobian<C> to_jacobian() const {
        if (is_infinity()) return Jacobian<C>::infinity();
        return Jacobian<C>{x * zz.sqr(), y * zzz.sqr(), zzz};
    }
};

// K points to affine with one inversion (Montgomery's trick) instead of K: the inversion costs
// as much as a few hundred multiplications, the sharing 3 per point. `invert` may share it
// further, with the block (BlockInverse).
template <class C, int K, class Invert = ThreadInverse>
BC_DEVICE void to_affine_all(const Jacobian<C> (&p)[K], Affine<C> (&out)[K], Invert invert = {}) {
    using F = typename C::F;
    F z[K], scratch[K];
#pragma unroll
    for (int k = 0; k < K; ++k) z[k] = p[k].z;
    batch_inverse(z, scratch, K, invert);
#pragma unroll
    for (int k = 0; k < K; ++k) {
        if (p[k].is_infinity()) {
            out[k] = Affine<C>::infinity();
            continue;
        }
        F zi2 = z[k].sqr();
        out[k] = Affine<C>{p[k].x * zi2, p[k].y * zi2 * z[k]};
    }
}

// x^3 + a x + b: the y^2 a point with this x must have.
template <class C>
BC_DEVICE typename C::F curve_rhs(const typename C::F& x) {
    if constexpr (C::A_IS_ZERO) return x.sqr() * x + C::b();
    else return (x.sqr() + C::a()) * x + C::b();
}

// Whether an affine point satisfies the curve equation.
template <class C>
BC_DEVICE bool on_curve(const Affine<C>& p) {
    return p.y.sqr() == curve_rhs<C>(p.x);
}

// SEC1 decompression: the point with x (the field's little-endian limbs of an ordinary integer)
// and a y of the given parity. False when x >= p or x^3 + a x + b is not a square (needs
// p = 3 mod 4).
template <class C>
BC_DEVICE bool decompress(const uint32_t* x, bool odd, Affine<C>& p) {
    using F = typename C::F;
    if (geq_n<F::N>(x, F::modulus())) return false;
    p.x = F::from_plain(x);
    F rhs = curve_rhs<C>(p.x);
    p.y = rhs.sqrt_candidate();
    if (p.y.sqr() != rhs) return false;
    if (is_odd(p.y) != odd) p.y = p.y.neg();
    return true;
}

}  // namespace bc
