// BLS12-381 kernels: the MSM steps of bc/msm.cuh on G1 and G2 (scalars as arkworks' Fr limbs, bases as
// arkworks' affine x, y limbs, buckets and sums Jacobian), the NTT steps of bc/ntt.cuh over Fr, and the checks of the 381-bit field
// and of G1's arithmetic that the tests run against arkworks (integers as little-endian 32-bit
// limbs in ordinary form: twelve per Fq element, eight per scalar).
#include "bls12_381.cuh"
#include "bc/msm.cuh"
#include "bc/ntt.cuh"

using namespace bc::bls12_381;

namespace {

constexpr int Q = Fq::N;  // limbs of a coordinate

BC_DEVICE void store(uint32_t* dst, const Fq& x) { x.to_plain(dst); }

BC_DEVICE void store_affine(uint32_t* dst, const G1Point& p) {
    G1Affine a = p.to_affine();
    store(dst, a.x);
    store(dst + Q, a.y);
}

BC_DEVICE G1Affine load_affine(const uint32_t* src) {
    return G1Affine{bc::load_plain<Fq>(src), bc::load_plain<Fq>(src + Q)};
}

}  // namespace

BC_MSM_SCALAR_STEPS(bls12_381, G1)
BC_MSM_POINT_STEPS(bls12_381_g1, G1, Xyzz, 1)
BC_MSM_POINT_STEPS(bls12_381_g2, G2, Jacobian, 1)
BC_NTT_STEPS(bls12_381, Fr)

// Field checks: for a, b < q, writes a+b, a-b, a*b, a^2, a^-1, -a, and the square root candidate
// of a (6 + 1 elements of 12 limbs).
extern "C" __global__ void bls12_381_fq_ops(const uint32_t* a, const uint32_t* b, uint32_t* out, uint64_t n) {
    BC_FOR_EACH_ITEM(i, n) {
        Fq x = bc::load_plain<Fq>(a + Q * i), y = bc::load_plain<Fq>(b + Q * i);
        uint32_t* o = out + 7 * Q * i;
        store(o, x + y); store(o + Q, x - y); store(o + 2 * Q, x * y); store(o + 3 * Q, x.sqr());
        store(o + 4 * Q, x.inv()); store(o + 5 * Q, x.neg()); store(o + 6 * Q, x.sqrt_candidate());
    }
}

// G1 checks for affine P, Q (24 limbs each): P+Q (Jacobian add), P+Q (mixed add), 2P, P+(-P),
// P+P through add, as affine points (infinity = 0, 0), then on_curve(P) and on_curve(Q): 122 limbs.
extern "C" __global__ void bls12_381_g1_ops(const uint32_t* p, const uint32_t* q, uint32_t* out, uint64_t n) {
    BC_FOR_EACH_ITEM(i, n) {
        G1Affine a = load_affine(p + 2 * Q * i), b = load_affine(q + 2 * Q * i);
        G1Point ja = G1Point::from(a), jb = G1Point::from(b);
        uint32_t* o = out + (10 * Q + 2) * i;
        store_affine(o, ja.add(jb));
        store_affine(o + 2 * Q, ja.add(b));
        store_affine(o + 4 * Q, ja.dbl());
        store_affine(o + 6 * Q, ja.add(ja.neg()));
        store_affine(o + 8 * Q, ja.add(ja));
        o[10 * Q] = bc::on_curve(a);
        o[10 * Q + 1] = bc::on_curve(b);
    }
}

// k_i P_i (signed 5-bit windows) and k_i G (the same over the generator), affine: 48 limbs per
// item; scalars are 8 limbs.
extern "C" __global__ void bls12_381_g1_mul(const uint32_t* p, const uint32_t* k, uint32_t* out, uint64_t n) {
    BC_FOR_EACH_ITEM(i, n) {
        uint32_t kk[8];
        for (int j = 0; j < 8; ++j) kk[j] = k[8 * i + j];
        store_affine(out + 4 * Q * i, bc::mul_window<G1, 5>(load_affine(p + 2 * Q * i), kk));
        store_affine(out + 4 * Q * i + 2 * Q, bc::mul_window<G1, 5>(G1::generator(), kk));
    }
}
