// SM2 scalar multiplication kernels: k G from the fixed-base table, and k P for many points under
// one scalar (the ECDH-PSI blinding step). Integers cross the host
// boundary as eight little-endian 32-bit limbs; points as affine x, y (16 limbs), infinity as zeros.
#include "sm2.cuh"

using namespace bc::sm2;

namespace {

using GTable = bc::FixedBase<Curve, 8>;
constexpr int VAR_W = 5;  // variable-base window: 16 Jacobian multiples per thread

BC_DEVICE void store_point(uint32_t* dst, const Point& p) {
    PointAffine a = p.to_affine();
    a.x.to_plain(dst);
    a.y.to_plain(dst + 8);
}

BC_DEVICE void load_scalar(uint32_t k[8], const uint32_t* src) {
#pragma unroll
    for (int i = 0; i < 8; ++i) k[i] = src[i];
}

}  // namespace

// The fixed-base table (GTable::LEN affine points, Montgomery form), computed once, in parallel.
extern "C" __global__ void sm2_g_table(PointAffine* table) {
    BC_FOR_EACH_ITEM(i, (uint64_t)GTable::LEN) table[i] = GTable::entry(int(i));
}

// out[i] = k[i] G.
extern "C" __global__ void __launch_bounds__(128) sm2_mul_base(const uint32_t* __restrict__ k, const PointAffine* __restrict__ table, uint32_t* __restrict__ out, uint64_t n) {
    BC_FOR_EACH_ITEM(i, n) {
        uint32_t kk[8];
        load_scalar(kk, k + 8 * i);
        store_point(out + 16 * i, GTable::mul(table, kk));
    }
}

// out[i] = k P_i (17 limbs: the point, then 1 if P_i is on the curve, else 0 and a zero point).
extern "C" __global__ void __launch_bounds__(128) sm2_mul(const uint32_t* __restrict__ k, const uint32_t* __restrict__ pts, uint32_t* __restrict__ out, uint64_t n) {
    BC_FOR_EACH_ITEM(i, n) {
        PointAffine p{bc::load_plain<Fp>(pts + 16 * i), bc::load_plain<Fp>(pts + 16 * i + 8)};
        uint32_t* o = out + 17 * i;
        bool good = bc::on_curve(p, Curve::b());
        o[16] = good;
        if (!good) {
            for (int j = 0; j < 16; ++j) o[j] = 0;
            continue;
        }
        uint32_t kk[8];
        load_scalar(kk, k);
        store_point(o, bc::mul_window<Curve, VAR_W>(p, kk));
    }
}
