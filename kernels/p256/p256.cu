// P-256 ECDSA verification: the generic items and verdict of bc/verify.cuh on P-256's parameters.
#include "p256.cuh"
#include "bc/verify.cuh"

using namespace bc::p256;

namespace {
// u1 G from the wide fixed-base table, u2 Q in 5-bit windows.
using GTable = bc::FixedBase<Curve, bc::WIDE_G_WINDOW>;
constexpr int VAR_W = 5;
}  // namespace

extern "C" __global__ void p256_g_table(PointAffine* table) {
    BC_FOR_EACH_ITEM(r, (uint64_t)GTable::RUNS) GTable::build_run(int(r), table);
}

// Four blocks of 128 threads per SM (128 registers, some spilled): the warps added hide more
// latency than the spills cost.
extern "C" __global__ void __launch_bounds__(128, 4) p256_ecdsa_verify(const uint32_t* __restrict__ items, const PointAffine* __restrict__ gtable, uint8_t* __restrict__ ok, uint64_t n) {
    BC_FOR_EACH_ITEM(i, n) ok[i] = bc::verify::verdict_x_mod_n<Curve>(items + bc::verify::ITEM_LIMBS * i, N_MOD, bc::verify::double_mul<Curve, GTable, VAR_W>(gtable));
}

// ECDSA items (e, s) into (u1, u2) in place, before p256_ecdsa_verify.
extern "C" __global__ void p256_ecdsa_prepare(uint32_t* items, uint64_t n) { bc::verify::ecdsa_prepare<Fn>(items, n); }
