// BN254 kernels: the MSM steps of bc/msm.cuh on G1 and G2, and the NTT steps of bc/ntt.cuh over Fr.
// Scalars are arkworks' Fr limbs (Montgomery form), bases arkworks' affine x, y limbs (infinity
// as zeros), buckets and sums Jacobian.
#include "bn254.cuh"
#include "bc/msm.cuh"
#include "bc/ntt.cuh"

using namespace bc::bn254;

// The scalar steps (digits, scan, scatter) depend on the scalars only and serve both groups; the
// steps that touch points are instantiated once per group.
BC_MSM_SCALAR_STEPS(bn254, G1)
BC_MSM_POINT_STEPS(bn254_g1, G1, Xyzz, 4)
BC_MSM_POINT_STEPS(bn254_g2, G2, Jacobian, 1)

BC_NTT_STEPS(bn254, Fr)
