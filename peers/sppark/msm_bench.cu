// msm_bench.cu -- benchmark driver and C ABI around sppark's CUDA Pippenger MSM.
//
// This file is ours; it only #includes sppark's (and, through sppark, blst's) headers.
// It is compiled three times (see build.sh), selected by MSM_BENCH_PART:
//   1  sppark glue for BN254 (G1 over Fp, G2 over Fp2): instantiates sppark's msm_t /
//      mult_pippenger; device code lives here;
//   2  the same for BLS12-381.  The two curves need separate translation units: sppark's
//      `breakdown` kernel declares `extern __shared__ scalar_T<scalar_t> xchange[]`, which
//      cannot be declared with two different scalar types in one unit;
//   4  host code: point/scalar generation, naive reference, timing, main(), and the C ABI
//      below.  No device code.
// The objects are linked into the `msm_bench` binary and into `libsppark_msm.so`.
//
// ----------------------------------------------------------------------------------------
// C ABI (libsppark_msm.so; also present in msm_bench).  All functions return 0 on success
// and nonzero on failure, with a message on stderr.
//
//   int sppark_msm_init(void);
//       Creates the CUDA context and sppark's GPU table on the current device (device 0
//       unless cudaSetDevice was called).  Optional; the first MSM call does it otherwise.
//       The first MSM call of each group in a process is also slower (lazy module loading,
//       memory pool growth): warm up before timing.
//
//   int sppark_bn254_g1_msm    (const uint8_t* points, const uint8_t* scalars, size_t n,
//                               uint8_t* out, double* seconds);
//   int sppark_bn254_g2_msm    (same arguments)
//   int sppark_bls12_381_g1_msm(same arguments)
//   int sppark_bls12_381_g2_msm(same arguments)
//       Computes out = sum_i scalars[i] * points[i].
//
//       Field element  Fp: canonical (NOT Montgomery) little-endian integer < p,
//                          32 bytes for BN254, 48 bytes for BLS12-381.
//                      Fp2 = c0 || c1 (element c0 + c1*u), each an Fp as above:
//                          64 bytes for BN254 (u^2 = -1), 96 bytes for BLS12-381 (u^2 = -1).
//       points   n affine points, each x || y (G1: 2*Fp; G2: 2*Fp2), so
//                64 B (BN254 G1), 128 B (BN254 G2), 96 B (BLS12-381 G1), 192 B (BLS12-381 G2)
//                per point.  The point at infinity is all-zero bytes.  Points must be on the
//                curve (not checked); G2 is the usual sextic twist
//                (BN254: y^2 = x^3 + 3/(9+u); BLS12-381: y^2 = x^3 + 4(1+u)).
//       scalars  n scalars, 32 bytes each, canonical little-endian.  Values >= r are reduced
//                mod r on the host before the timed call.
//       n        number of points; at most 2^31 (sppark's limit).  n = 0 gives infinity.
//       out      one affine point in the same layout as an input point (infinity = zeros).
//       seconds  if not NULL, receives the wall time of the sppark MSM call only
//                (mult_pippenger: device allocation, host->device copy of points and
//                scalars, kernels, host-side final reduction).  Conversion of the inputs to
//                sppark's Montgomery layout and of the result back to affine canonical form
//                are outside the timed part.
//   The inputs are read from ordinary (pageable) host memory, as sppark's own Rust binding
//   does; the points are not kept on the device between calls.
//
//   int sppark_bn254_g1_msm_resident    (same arguments)
//   int sppark_bn254_g2_msm_resident    (same arguments)
//   int sppark_bls12_381_g1_msm_resident(same arguments)
//   int sppark_bls12_381_g2_msm_resident(same arguments)
//       Same result, but the points are first uploaded to the device (sppark's msm_t
//       constructor with points; not timed), then `seconds` covers only msm_t::invoke with
//       the scalars from host memory (points resident on the device).  The device copy is
//       freed before returning.
// ----------------------------------------------------------------------------------------

#include <cstdint>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#if !defined(MSM_BENCH_PART) || (MSM_BENCH_PART != 1 && MSM_BENCH_PART != 2 && MSM_BENCH_PART != 4)
# error "compile with -DMSM_BENCH_PART=1, 2 or 4 (see build.sh)"
#endif

// Table of entry points for one group, filled in by parts 1 and 2 and used by part 4.
// All pointers are to sppark's own host-side layouts (Montgomery form for field elements,
// canonical little-endian limbs for scalars, jacobian_t for the result).
struct msm_glue_t {
    const char* curve;
    const char* group;
    size_t affine_sz, point_sz, scalar_sz;
    // mult_pippenger(): points and scalars from host memory, fresh msm_t per call.
    int   (*msm)(void* out_jacobian, const void* affine_points, size_t n, const void* scalars);
    // msm_t constructed with points: points copied to the device once ("resident").
    void* (*resident_new)(const void* affine_points, size_t n);
    int   (*resident_msm)(void* handle, void* out_jacobian, size_t n, const void* scalars);
    void  (*resident_free)(void* handle);
};
extern const msm_glue_t glue_bn254_g1, glue_bn254_g2, glue_bls12_381_g1, glue_bls12_381_g2;
int  glue_device_info(char* buf, size_t len);
int  glue_host_register(void* p, size_t bytes);
int  glue_host_unregister(void* p);
int  glue_sync(void);
int  glue_init(void);

// =========================================================================================
// Parts 1 and 2: sppark glue (visible to both the host and the device compilation passes,
// so that the kernel templates get instantiated).
// =========================================================================================
#if MSM_BENCH_PART == 1 || MSM_BENCH_PART == 2

#include <cuda.h>
#if MSM_BENCH_PART == 1
# include <ff/alt_bn128-fp2.hpp>
#else
# include <ff/bls12-381-fp2.hpp>
#endif
#include <ec/jacobian_t.hpp>
#include <ec/xyzz_t.hpp>
#define SPPARK_DONT_INSTANTIATE_TEMPLATES
#include <msm/pippenger.cuh>

template<class field_t, class fr_t>
struct sppark_glue {
    // Same type choices as sppark's poc/msm-cuda binding.
    typedef jacobian_t<field_t> point_t;
    typedef xyzz_t<field_t> bucket_t;
    typedef typename bucket_t::affine_t affine_t;
    typedef fr_t scalar_t;
    typedef msm_t<bucket_t, point_t, affine_t, scalar_t> msm_type;

    static int report(const RustError& e, const char* what)
    {
        if (e.code == 0)
            return 0;
        fprintf(stderr, "sppark: %s failed: code %d: %s\n", what, e.code,
                e.message ? e.message : "(no message)");
        free(e.message);
        return e.code;
    }
    static int msm(void* out, const void* points, size_t n, const void* scalars)
    {
        // mont=false: scalars are canonical (non-Montgomery), as in the poc binding.
        return report(mult_pippenger<bucket_t>(static_cast<point_t*>(out),
                                               static_cast<const affine_t*>(points), n,
                                               static_cast<const scalar_t*>(scalars), false),
                      "mult_pippenger");
    }
    static void* resident_new(const void* points, size_t n)
    {
        try {
            return new msm_type(static_cast<const affine_t*>(points), n);
        } catch (const cuda_error& e) {
            fprintf(stderr, "sppark: msm_t(points) failed: %s\n", e.what());
            return nullptr;
        }
    }
    static int resident_msm(void* h, void* out, size_t n, const void* scalars)
    {
        // points == nullptr: use the points that the constructor put on the device.
        return report(static_cast<msm_type*>(h)->invoke(*static_cast<point_t*>(out),
                                                        static_cast<const affine_t*>(nullptr), n,
                                                        static_cast<const scalar_t*>(scalars),
                                                        false),
                      "msm_t::invoke");
    }
    static void resident_free(void* h)
    {   delete static_cast<msm_type*>(h);   }

    static msm_glue_t table(const char* curve, const char* group)
    {
        return msm_glue_t{curve, group, sizeof(affine_t), sizeof(point_t), sizeof(scalar_t),
                          &msm, &resident_new, &resident_msm, &resident_free};
    }
};

#if MSM_BENCH_PART == 1
const msm_glue_t glue_bn254_g1 =
    sppark_glue<alt_bn128::fp_t,  alt_bn128::fr_t>::table("bn254", "g1");
const msm_glue_t glue_bn254_g2 =
    sppark_glue<alt_bn128::fp2_t, alt_bn128::fr_t>::table("bn254", "g2");
#else
const msm_glue_t glue_bls12_381_g1 =
    sppark_glue<bls12_381::fp_t,  bls12_381::fr_t>::table("bls12-381", "g1");
const msm_glue_t glue_bls12_381_g2 =
    sppark_glue<bls12_381::fp2_t, bls12_381::fr_t>::table("bls12-381", "g2");

// helpers for the host part (defined once, in the BLS12-381 unit)

int glue_device_info(char* buf, size_t len)
{
    int dev = 0, drv = 0, rt = 0;
    cudaDeviceProp prop;
    cudaError_t e = cudaGetDevice(&dev);
    if (e == cudaSuccess) e = cudaGetDeviceProperties(&prop, dev);
    if (e != cudaSuccess) {
        snprintf(buf, len, "no CUDA device: %s", cudaGetErrorString(e));
        return 1;
    }
    (void)cudaDriverGetVersion(&drv);
    (void)cudaRuntimeGetVersion(&rt);
    snprintf(buf, len, "%s sm_%d%d %d SMs %.1f GiB driver %d.%d runtime %d.%d",
             prop.name, prop.major, prop.minor, prop.multiProcessorCount,
             prop.totalGlobalMem / 1073741824.0, drv / 1000, (drv % 1000) / 10,
             rt / 1000, (rt % 1000) / 10);
    return 0;
}
int glue_host_register(void* p, size_t bytes)
{
    cudaError_t e = cudaHostRegister(p, bytes, cudaHostRegisterDefault);
    if (e != cudaSuccess) {
        fprintf(stderr, "cudaHostRegister failed: %s\n", cudaGetErrorString(e));
        return 1;
    }
    return 0;
}
int glue_host_unregister(void* p)
{   return cudaHostUnregister(p) != cudaSuccess;   }
int glue_sync(void)
{   return cudaDeviceSynchronize() != cudaSuccess;   }
int glue_init(void)
{
    try {
        (void)select_gpu(-1);       // sppark's device table, streams and context
        CUDA_OK(cudaFree(nullptr));
    } catch (const cuda_error& e) {
        fprintf(stderr, "sppark: GPU initialisation failed: %s\n", e.what());
        return 1;
    }
    return 0;
}
#endif

#endif // parts 1, 2

// =========================================================================================
// Part 4: host code (generation, reference, timing, C ABI, main).
// =========================================================================================
#if MSM_BENCH_PART == 4 && !defined(__CUDA_ARCH__)

#include <ff/alt_bn128-fp2.hpp>     // host-side (blst-based) field types
#include <ff/bls12-381-fp2.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

// blst (linked as libblst.a): the BLS12-381 generators, in blst's Montgomery form, which is
// the same representation as sppark's host-side bls12_381::fp_t / fp2_t.
extern "C" const void* blst_p1_affine_generator(void);
extern "C" const void* blst_p2_affine_generator(void);

namespace mb {

typedef std::chrono::steady_clock clk;
static double secs_since(clk::time_point t0)
{   return std::chrono::duration<double>(clk::now() - t0).count();   }

// ---------------------------------------------------------------- threads
static unsigned nthreads()
{
    unsigned n = std::thread::hardware_concurrency();
    return n ? n : 1;
}
// fn(chunk_index, begin, end) over [0, n) in chunks of `chunk`.
template<class Fn>
static void parallel_chunks(size_t n, size_t chunk, Fn fn)
{
    size_t nchunks = (n + chunk - 1) / chunk;
    unsigned nt = (unsigned)std::min<size_t>(nthreads(), nchunks);
    std::atomic<size_t> next(0);
    auto worker = [&]() {
        for (size_t c; (c = next++) < nchunks; )
            fn(c, c * chunk, std::min(n, (c + 1) * chunk));
    };
    if (nt <= 1) { worker(); return; }
    std::vector<std::thread> th;
    for (unsigned i = 0; i < nt; i++) th.emplace_back(worker);
    for (auto& t : th) t.join();
}

// ---------------------------------------------------------------- randomness
struct rng_t {
    uint64_t s;
    explicit rng_t(uint64_t seed) : s(seed) {}
    uint64_t next()     // splitmix64
    {
        uint64_t z = (s += 0x9e3779b97f4a7c15ULL);
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
        return z ^ (z >> 31);
    }
};

// scalars are 4 little-endian 64-bit limbs
static bool limbs_ge(const uint64_t a[4], const uint64_t b[4])
{
    for (int i = 3; i >= 0; i--)
        if (a[i] != b[i]) return a[i] > b[i];
    return true;
}
static unsigned bit_length(const uint64_t a[4])
{
    for (int i = 3; i >= 0; i--)
        if (a[i]) return 64 * i + 64 - __builtin_clzll(a[i]);
    return 0;
}
// uniform in [0, r) by rejection
static void rand_scalar(rng_t& g, const uint64_t r[4], uint64_t out[4])
{
    unsigned rb = bit_length(r);
    uint64_t mask = rb % 64 ? (~0ULL >> (64 - rb % 64)) : ~0ULL;
    do {
        for (int i = 0; i < 4; i++) out[i] = g.next();
        out[3] &= mask;
    } while (limbs_ge(out, r));
}

// ---------------------------------------------------------------- field helpers
// F is one of sppark's host field types (blst_256_t / blst_384_t based fp_t, or fp2_t);
// sizeof(F) equals its canonical byte size, limbs are little-endian 64-bit words.
template<class F> static F fe_zero()
{   F r; std::memset((void*)&r, 0, sizeof(r)); return r;   }
template<class F> static F fe_small(uint64_t c0, uint64_t c1 = 0)
{
    uint64_t w[sizeof(F) / 8] = {0};
    w[0] = c0;
    if (F::degree == 2) w[sizeof(F) / 16] = c1;
    F r; std::memcpy((void*)&r, w, sizeof(r)); r.to();
    return r;
}
template<class F> static F fe_from_limbs(const uint64_t* w)    // canonical -> Montgomery
{   F r; std::memcpy((void*)&r, w, sizeof(r)); r.to(); return r;   }
template<class F> static F fe_from_bytes(const uint8_t* p)
{   F r; std::memcpy((void*)&r, p, sizeof(r)); r.to(); return r;   }
template<class F> static void fe_to_bytes(F a, uint8_t* p)
{   a.from(); std::memcpy(p, (const void*)&a, sizeof(a));   }
template<class F> static bool fe_is_zero(const F& a)
{   return a.is_zero();   }

// ---------------------------------------------------------------- group arithmetic
// Short Weierstrass y^2 = x^3 + b (a = 0), jacobian coordinates, Z == 0 is infinity.
// aff<F> / jac<F> have the same layout as sppark's Affine_t<F> / jacobian_t<F> on the host.
template<class F> struct aff { F x, y; };
template<class F> struct jac { F X, Y, Z; };

template<class F> static bool is_inf(const aff<F>& p)
{   return fe_is_zero(p.x) && fe_is_zero(p.y);   }
template<class F> static jac<F> jinf()
{   return jac<F>{fe_zero<F>(), fe_zero<F>(), fe_zero<F>()};   }

template<class F> static jac<F> dbl(const jac<F>& P)
{
    if (fe_is_zero(P.Z)) return P;
    F A = P.X * P.X, B = P.Y * P.Y, C = B * B;
    F t = P.X + B;
    F D = t * t - A - C; D = D + D;
    F E = A + A + A;
    F E2 = E * E;
    jac<F> R;
    R.X = E2 - D - D;
    F C8 = C + C; C8 = C8 + C8; C8 = C8 + C8;
    R.Y = E * (D - R.X) - C8;
    R.Z = P.Y * P.Z; R.Z = R.Z + R.Z;
    return R;
}
template<class F> static jac<F> add(const jac<F>& P, const jac<F>& Q)
{
    if (fe_is_zero(P.Z)) return Q;
    if (fe_is_zero(Q.Z)) return P;
    F Z1Z1 = P.Z * P.Z, Z2Z2 = Q.Z * Q.Z;
    F U1 = P.X * Z2Z2, U2 = Q.X * Z1Z1;
    F S1 = P.Y * Q.Z * Z2Z2, S2 = Q.Y * P.Z * Z1Z1;
    F H = U2 - U1, r = S2 - S1;
    if (fe_is_zero(H))
        return fe_is_zero(r) ? dbl(P) : jinf<F>();
    F HH = H * H, HHH = H * HH, V = U1 * HH;
    jac<F> R;
    R.X = r * r - HHH - V - V;
    R.Y = r * (V - R.X) - S1 * HHH;
    R.Z = P.Z * Q.Z * H;
    return R;
}
template<class F> static jac<F> madd(const jac<F>& P, const aff<F>& Q)
{
    if (is_inf(Q)) return P;
    if (fe_is_zero(P.Z)) return jac<F>{Q.x, Q.y, fe_small<F>(1)};
    F Z1Z1 = P.Z * P.Z;
    F U2 = Q.x * Z1Z1, S2 = Q.y * P.Z * Z1Z1;
    F H = U2 - P.X, r = S2 - P.Y;
    if (fe_is_zero(H))
        return fe_is_zero(r) ? dbl(P) : jinf<F>();
    F HH = H * H, HHH = H * HH, V = P.X * HH;
    jac<F> R;
    R.X = r * r - HHH - V - V;
    R.Y = r * (V - R.X) - P.Y * HHH;
    R.Z = P.Z * H;
    return R;
}
template<class F> static jac<F> mul(const aff<F>& P, const uint64_t* k, unsigned nbits)
{
    jac<F> R = jinf<F>();
    for (int i = (int)nbits - 1; i >= 0; i--) {
        R = dbl(R);
        if ((k[i / 64] >> (i % 64)) & 1) R = madd(R, P);
    }
    return R;
}
template<class F> static aff<F> to_affine(const jac<F>& P)
{
    if (fe_is_zero(P.Z)) return aff<F>{fe_zero<F>(), fe_zero<F>()};
    F zi = 1u / P.Z;
    F zi2 = zi * zi;
    F zi3 = zi2 * zi;
    return aff<F>{P.X * zi2, P.Y * zi3};
}
// Montgomery's trick; entries with Z == 0 become the all-zero (infinity) affine point.
template<class F> static void to_affine_batch(const jac<F>* in, aff<F>* out, size_t m)
{
    if (m == 0) return;
    std::vector<F> acc(m);
    F one = fe_small<F>(1), run = one;
    for (size_t i = 0; i < m; i++) {
        if (!fe_is_zero(in[i].Z)) run = run * in[i].Z;
        acc[i] = run;
    }
    F inv = 1u / run;
    for (size_t i = m; i-- > 0; ) {
        if (fe_is_zero(in[i].Z)) { out[i] = aff<F>{fe_zero<F>(), fe_zero<F>()}; continue; }
        F zi = i ? inv * acc[i - 1] : inv;
        inv = inv * in[i].Z;
        F zi2 = zi * zi;
        out[i].x = in[i].X * zi2;
        out[i].y = in[i].Y * (zi2 * zi);
    }
}
template<class F> static bool on_curve(const aff<F>& p, const F& b)
{
    if (is_inf(p)) return true;
    F lhs = p.y * p.y;
    F rhs = p.x * p.x * p.x + b;
    return lhs == rhs;
}
template<class F> static std::vector<uint8_t> affine_bytes(const jac<F>& P)
{
    aff<F> a = to_affine(P);
    std::vector<uint8_t> v(2 * sizeof(F));
    fe_to_bytes(a.x, v.data());
    fe_to_bytes(a.y, v.data() + sizeof(F));
    return v;
}

// ---------------------------------------------------------------- groups
template<class F, class Fr>
struct group_t {
    const msm_glue_t* glue;
    const uint64_t* r;      // group order, 4 limbs
    F b;                    // curve coefficient
    aff<F> G;               // generator
    std::string name() const { return std::string(glue->curve) + " " + glue->group; }
};

static const uint64_t BN254_G2_X[8] = {
    0x46debd5cd992f6edULL, 0x674322d4f75edaddULL, 0x426a00665e5c4479ULL, 0x1800deef121f1e76ULL,
    0x97e485b7aef312c2ULL, 0xf1aa493335a9e712ULL, 0x7260bfb731fb5d25ULL, 0x198e9393920d483aULL};
static const uint64_t BN254_G2_Y[8] = {
    0x4ce6cc0166fa7daaULL, 0xe3d1e7690c43d37bULL, 0x4aab71808dcb408fULL, 0x12c85ea5db8c6debULL,
    0x55acdadcd122975bULL, 0xbc4b313370b38ef3ULL, 0xec9e99ad690c3395ULL, 0x090689d0585ff075ULL};

static_assert(sizeof(limb_t) == 8, "64-bit limbs expected");
static const uint64_t* limbs(const limb_t* p)
{   return reinterpret_cast<const uint64_t*>(p);   }

typedef group_t<alt_bn128::fp_t,  alt_bn128::fr_t> bn254_g1_t;
typedef group_t<alt_bn128::fp2_t, alt_bn128::fr_t> bn254_g2_t;
typedef group_t<bls12_381::fp_t,  bls12_381::fr_t> bls_g1_t;
typedef group_t<bls12_381::fp2_t, bls12_381::fr_t> bls_g2_t;

static const bn254_g1_t& bn254_g1()
{
    typedef alt_bn128::fp_t F;
    static const bn254_g1_t g{&glue_bn254_g1, limbs(alt_bn128::ALT_BN128_r), fe_small<F>(3),
                              aff<F>{fe_small<F>(1), fe_small<F>(2)}};
    return g;
}
static const bn254_g2_t& bn254_g2()
{
    typedef alt_bn128::fp2_t F;
    static const bn254_g2_t g{&glue_bn254_g2, limbs(alt_bn128::ALT_BN128_r),
                              F(fe_small<F>(3) * (1u / fe_small<F>(9, 1))),   // 3/(9+u)
                              aff<F>{fe_from_limbs<F>(BN254_G2_X), fe_from_limbs<F>(BN254_G2_Y)}};
    return g;
}
static const bls_g1_t& bls12_381_g1()
{
    typedef bls12_381::fp_t F;
    static const bls_g1_t g = [] {
        aff<F> G; std::memcpy((void*)&G, blst_p1_affine_generator(), sizeof(G));
        return bls_g1_t{&glue_bls12_381_g1, limbs(bls12_381::BLS12_381_r), fe_small<F>(4), G};
    }();
    return g;
}
static const bls_g2_t& bls12_381_g2()
{
    typedef bls12_381::fp2_t F;
    static const bls_g2_t g = [] {
        aff<F> G; std::memcpy((void*)&G, blst_p2_affine_generator(), sizeof(G));
        return bls_g2_t{&glue_bls12_381_g2, limbs(bls12_381::BLS12_381_r), fe_small<F>(4, 4), G};
    }();
    return g;
}

template<class F, class Fr>
static bool self_test(const group_t<F, Fr>& g)
{
    bool ok = true;
    if (g.glue->affine_sz != sizeof(aff<F>) || g.glue->point_sz != sizeof(jac<F>) ||
        g.glue->scalar_sz != 32 || sizeof(Fr) != 32) {
        fprintf(stderr, "%s: layout mismatch (affine %zu vs %zu, point %zu vs %zu)\n",
                g.name().c_str(), g.glue->affine_sz, sizeof(aff<F>),
                g.glue->point_sz, sizeof(jac<F>));
        ok = false;
    }
    if (!on_curve(g.G, g.b)) {
        fprintf(stderr, "%s: generator not on curve\n", g.name().c_str());
        ok = false;
    }
    if (!fe_is_zero(mul(g.G, g.r, 256).Z)) {
        fprintf(stderr, "%s: [r]G != 0\n", g.name().c_str());
        ok = false;
    }
    return ok;
}

// P_i = S + i*R with random S = [a]G, R = [b]G: distinct points in the prime-order
// subgroup, computed in parallel chunks (each chunk starts at S + [start]R).
template<class F> struct gen_info { aff<F> S, R; };
template<class F, class Fr>
static gen_info<F> gen_points(const group_t<F, Fr>& g, aff<F>* out, size_t n, uint64_t seed)
{
    rng_t rng(seed);
    uint64_t a[4], b[4];
    rand_scalar(rng, g.r, a);
    rand_scalar(rng, g.r, b);
    const aff<F> S = to_affine(mul(g.G, a, 256));
    const aff<F> R = to_affine(mul(g.G, b, 256));
    parallel_chunks(n, 4096, [&](size_t, size_t lo, size_t hi) {
        uint64_t k[4] = {(uint64_t)lo, 0, 0, 0};
        jac<F> J = madd(mul(R, k, 64), S);
        std::vector<jac<F>> tmp(hi - lo);
        for (size_t i = 0; i < hi - lo; i++) {
            tmp[i] = J;
            J = madd(J, R);
        }
        to_affine_batch(tmp.data(), out + lo, hi - lo);
    });
    return gen_info<F>{S, R};
}
// Closed form of sum_i k_i P_i for P_i = S + i*R:  [sum k_i] S + [sum i*k_i] R, with the
// two sums computed mod r (sppark's host fr_t).  Cheap enough for every benchmark size.
template<class F, class Fr>
static jac<F> closed_form_msm(const gen_info<F>& gi, const uint64_t* k, size_t n)
{
    const size_t chunk = 1 << 14;
    std::vector<Fr> sk((n + chunk - 1) / chunk), sik(sk.size());
    parallel_chunks(n, chunk, [&](size_t c, size_t lo, size_t hi) {
        Fr a = fe_zero<Fr>(), b = fe_zero<Fr>();
        Fr idx = fe_small<Fr>(lo), one = fe_small<Fr>(1);
        for (size_t i = lo; i < hi; i++) {
            Fr ki = fe_from_limbs<Fr>(k + 4 * i);
            a = a + ki;
            b = b + idx * ki;
            idx = idx + one;
        }
        sk[c] = a; sik[c] = b;
    });
    Fr a = fe_zero<Fr>(), b = fe_zero<Fr>();
    for (size_t c = 0; c < sk.size(); c++) { a = a + sk[c]; b = b + sik[c]; }
    a.from(); b.from();
    uint64_t wa[4], wb[4];
    std::memcpy(wa, (const void*)&a, 32);
    std::memcpy(wb, (const void*)&b, 32);
    return add(mul(gi.S, wa, 256), mul(gi.R, wb, 256));
}
template<class F, class Fr>
static void gen_scalars(const group_t<F, Fr>& g, uint64_t* out, size_t n, uint64_t seed)
{
    parallel_chunks(n, 1 << 16, [&](size_t c, size_t lo, size_t hi) {
        rng_t rng(seed ^ (0x5851f42d4c957f2dULL * (c + 1)));
        for (size_t i = lo; i < hi; i++) rand_scalar(rng, g.r, out + 4 * i);
    });
}
// sum_i k_i P_i by double-and-add per term (independent of sppark's EC code).
template<class F, class Fr>
static jac<F> naive_msm(const aff<F>* p, const uint64_t* k, size_t n)
{
    std::vector<jac<F>> part((n + 63) / 64, jinf<F>());
    parallel_chunks(n, 64, [&](size_t c, size_t lo, size_t hi) {
        jac<F> acc = jinf<F>();
        for (size_t i = lo; i < hi; i++) acc = add(acc, mul(p[i], k + 4 * i, 256));
        part[c] = acc;
    });
    jac<F> acc = jinf<F>();
    for (auto& q : part) acc = add(acc, q);
    return acc;
}

// ---------------------------------------------------------------- C ABI implementation
template<class F, class Fr>
static int abi_msm(const group_t<F, Fr>& g, const uint8_t* points, const uint8_t* scalars,
                   size_t n, uint8_t* out, double* seconds, bool resident = false)
{
    if (seconds) *seconds = 0;
    if (!out || (n && (!points || !scalars))) {
        fprintf(stderr, "sppark_%s_msm: NULL argument\n", g.name().c_str());
        return -1;
    }
    if (n > (size_t(1) << 31)) {
        fprintf(stderr, "sppark_%s_msm: n = %zu exceeds 2^31\n", g.name().c_str(), n);
        return -1;
    }
    if (n == 0) { std::memset(out, 0, 2 * sizeof(F)); return 0; }

    std::unique_ptr<aff<F>[]> pts(new aff<F>[n]);
    parallel_chunks(n, 1 << 14, [&](size_t, size_t lo, size_t hi) {
        for (size_t i = lo; i < hi; i++) {
            pts[i].x = fe_from_bytes<F>(points + 2 * sizeof(F) * i);
            pts[i].y = fe_from_bytes<F>(points + 2 * sizeof(F) * i + sizeof(F));
        }
    });
    // scalars >= r: reduce a copy (fr to()/from() reduces any 256-bit value mod r)
    std::atomic<bool> big(false);
    parallel_chunks(n, 1 << 16, [&](size_t, size_t lo, size_t hi) {
        uint64_t w[4];
        for (size_t i = lo; i < hi && !big; i++) {
            std::memcpy(w, scalars + 32 * i, 32);
            if (limbs_ge(w, g.r)) big = true;
        }
    });
    std::unique_ptr<Fr[]> reduced;
    const void* sc = scalars;
    if (big) {
        reduced.reset(new Fr[n]);
        parallel_chunks(n, 1 << 14, [&](size_t, size_t lo, size_t hi) {
            for (size_t i = lo; i < hi; i++) {
                std::memcpy((void*)&reduced[i], scalars + 32 * i, 32);
                reduced[i].to(); reduced[i].from();
            }
        });
        sc = reduced.get();
    }

    jac<F> res;
    int rc;
    double dt;
    if (!resident) {
        auto t0 = clk::now();
        rc = g.glue->msm(&res, pts.get(), n, sc);
        dt = secs_since(t0);
    } else {
        void* h = g.glue->resident_new(pts.get(), n);
        if (!h) return -1;
        glue_sync();
        auto t0 = clk::now();
        rc = g.glue->resident_msm(h, &res, n, sc);
        dt = secs_since(t0);
        g.glue->resident_free(h);
    }
    if (rc) return rc;
    if (seconds) *seconds = dt;
    auto v = affine_bytes(res);
    std::memcpy(out, v.data(), v.size());
    return 0;
}

// ---------------------------------------------------------------- benchmark
struct opts_t {
    std::vector<std::string> curves{"bn254", "bls12-381"};
    std::vector<std::string> groups{"g1", "g2"};
    std::vector<size_t> g1_sizes{size_t(1) << 20, size_t(1) << 24};
    std::vector<size_t> g2_sizes{size_t(1) << 20};
    int runs = 5;
    unsigned check_log = 10;    // 0: no correctness check
    bool pinned = true;
    bool host_only = false;     // --host-test: host-side self-tests only, no GPU needed
    uint64_t seed = 0x5eed5eedULL;
};

static std::string size_str(size_t n)
{
    if (n && (n & (n - 1)) == 0) return "2^" + std::to_string(__builtin_ctzll(n));
    return std::to_string(n);
}
static double median(std::vector<double> v)
{
    std::sort(v.begin(), v.end());
    size_t m = v.size();
    return m % 2 ? v[m / 2] : 0.5 * (v[m / 2 - 1] + v[m / 2]);
}
static double minimum(const std::vector<double>& v)
{   return *std::min_element(v.begin(), v.end());   }

template<class F, class Fr>
static bool check_group(const group_t<F, Fr>& g, unsigned logn, uint64_t seed,
                        bool host_only = false)
{
    const std::string nm = g.name();
    bool all = true;
    auto verdict = [&](const char* what, size_t n, bool ok, const char* note = "") {
        printf("sppark %s check %s n=%s: %s%s\n", nm.c_str(), what, size_str(n).c_str(),
               ok ? "PASS" : "FAIL", note);
        fflush(stdout);
        all &= ok;
    };
    if (!self_test(g)) { verdict("self-test", 0, false); return false; }

    // random points and scalars vs naive host double-and-add
    size_t n = size_t(1) << logn;
    std::vector<aff<F>> p(n);
    std::vector<uint64_t> k(4 * n);
    auto gi = gen_points(g, p.data(), n, seed);
    gen_scalars(g, k.data(), n, seed + 1);
    bool oc = true;
    for (auto& q : p) oc &= on_curve(q, g.b);
    if (!oc) verdict("generated-points-on-curve", n, false);
    auto t0 = clk::now();
    auto ref = affine_bytes(naive_msm<F, Fr>(p.data(), k.data(), n));
    double t_ref = secs_since(t0);
    verdict("naive-vs-closed-form", n, ref == affine_bytes(closed_form_msm<F, Fr>(gi, k.data(), n)));
    if (host_only) return all;

    jac<F> out;
    int rc = g.glue->msm(&out, p.data(), n, k.data());
    verdict("end_to_end-vs-naive", n, rc == 0 && affine_bytes(out) == ref);

    void* h = g.glue->resident_new(p.data(), n);
    rc = h ? g.glue->resident_msm(h, &out, n, k.data()) : -1;
    if (h) g.glue->resident_free(h);
    verdict("resident-vs-naive", n, rc == 0 && affine_bytes(out) == ref);

    // the C ABI with canonical bytes
    std::vector<uint8_t> pb(2 * sizeof(F) * n), kb(32 * n), ob(2 * sizeof(F));
    for (size_t i = 0; i < n; i++) {
        fe_to_bytes(p[i].x, &pb[2 * sizeof(F) * i]);
        fe_to_bytes(p[i].y, &pb[2 * sizeof(F) * i + sizeof(F)]);
    }
    std::memcpy(kb.data(), k.data(), kb.size());
    double sec = 0;
    rc = abi_msm(g, pb.data(), kb.data(), n, ob.data(), &sec);
    verdict("c-abi-vs-naive", n, rc == 0 && ob == ref);
    rc = abi_msm(g, pb.data(), kb.data(), n, ob.data(), &sec, true);
    verdict("c-abi-resident-vs-naive", n, rc == 0 && ob == ref);
    // same with every scalar replaced by scalar + r (>= r, must be reduced by the ABI)
    bool carry_ok = true;
    for (size_t i = 0; i < n; i++) {
        unsigned __int128 c = 0;
        uint64_t w[4];
        for (int j = 0; j < 4; j++) {
            c += (unsigned __int128)k[4 * i + j] + g.r[j];
            w[j] = (uint64_t)c; c >>= 64;
        }
        if (c) { carry_ok = false; break; }     // does not fit in 256 bits: keep original
        std::memcpy(&kb[32 * i], w, 32);
    }
    if (carry_ok) {
        rc = abi_msm(g, pb.data(), kb.data(), n, ob.data(), &sec);
        verdict("c-abi-scalars-plus-r", n, rc == 0 && ob == ref);
    }

    // edge cases: zero/one/r-1 scalars, point at infinity, repeated point with equal
    // scalars (bucket doubling), P and -P with equal scalars (cancellation)
    size_t m = 256;
    std::vector<aff<F>> q(p.begin(), p.begin() + m);
    std::vector<uint64_t> s(k.begin(), k.begin() + 4 * m);
    auto set_scalar = [&](size_t i, const uint64_t* v) { std::memcpy(&s[4 * i], v, 32); };
    uint64_t zero[4] = {0, 0, 0, 0}, one[4] = {1, 0, 0, 0}, rm1[4];
    std::memcpy(rm1, g.r, 32); rm1[0] -= 1;
    set_scalar(0, zero); set_scalar(1, one); set_scalar(2, rm1);
    q[3] = aff<F>{fe_zero<F>(), fe_zero<F>()};
    q[11] = q[10]; set_scalar(11, &s[4 * 10]);
    q[21] = q[20]; q[21].y = fe_zero<F>() - q[20].y; set_scalar(21, &s[4 * 20]);
    q[31] = q[30]; set_scalar(31, one); set_scalar(30, rm1);
    auto ref2 = affine_bytes(naive_msm<F, Fr>(q.data(), s.data(), m));
    rc = g.glue->msm(&out, q.data(), m, s.data());
    verdict("edge-cases-vs-naive", m, rc == 0 && affine_bytes(out) == ref2);

    printf("# %s naive reference for n=%s took %.2f s on the host\n", nm.c_str(),
           size_str(n).c_str(), t_ref);
    return all;
}

template<class F, class Fr>
static bool bench_group(const group_t<F, Fr>& g, size_t n, const opts_t& o, uint64_t seed)
{
    const std::string nm = g.name();
    const msm_glue_t& gl = *g.glue;
    std::unique_ptr<aff<F>[]> p(new aff<F>[n]);
    std::unique_ptr<uint64_t[]> k(new uint64_t[4 * n]);
    auto t0 = clk::now();
    auto gi = gen_points(g, p.get(), n, seed);
    gen_scalars(g, k.get(), n, seed + 1);
    printf("# %s n=%s: generated %zu distinct points (P_i = S + i*R) and uniform scalars in "
           "%.2f s (%u host threads)\n", nm.c_str(), size_str(n).c_str(), n, secs_since(t0),
           nthreads());
    fflush(stdout);

    bool ok = true, consistent = true;
    std::vector<uint8_t> first;
    auto record = [&](const jac<F>& r) {
        auto v = affine_bytes(r);
        if (first.empty()) first = v; else consistent &= (v == first);
    };
    auto time_it = [&](auto&& call, std::vector<double>& t) {
        jac<F> r;
        if (call(r)) { ok = false; return; }            // warm-up
        record(r);
        for (int i = 0; i < o.runs && ok; i++) {
            auto s = clk::now();
            if (call(r)) { ok = false; return; }
            t.push_back(secs_since(s) * 1e3);
            record(r);
        }
    };

    // 1. end to end: sppark's mult_pippenger with points + scalars in pageable host memory
    std::vector<double> t_e2e, t_pin, t_res;
    time_it([&](jac<F>& r) { return gl.msm(&r, p.get(), n, k.get()); }, t_e2e);

    // 2. same call, host buffers page-locked (cudaHostRegister) beforehand
    if (ok && o.pinned) {
        if (glue_host_register(p.get(), n * sizeof(aff<F>)) == 0) {
            if (glue_host_register(k.get(), n * 32) == 0) {
                time_it([&](jac<F>& r) { return gl.msm(&r, p.get(), n, k.get()); }, t_pin);
                glue_host_unregister(k.get());
            }
            glue_host_unregister(p.get());
        }
    }

    // 3. resident: msm_t constructed with the points (one upload), scalars from host memory
    double upload_ms = 0;
    if (ok) {
        auto s = clk::now();
        void* h = gl.resident_new(p.get(), n);
        glue_sync();
        upload_ms = secs_since(s) * 1e3;
        if (!h) ok = false;
        else {
            time_it([&](jac<F>& r) { return gl.resident_msm(h, &r, n, k.get()); }, t_res);
            gl.resident_free(h);
        }
    }
    if (!ok) {
        printf("sppark %s msm n=%s: ERROR (see stderr)\n", nm.c_str(), size_str(n).c_str());
        return false;
    }
    // every result (warm-up and timed runs of all modes) must equal the closed form
    bool correct = consistent && affine_bytes(closed_form_msm<F, Fr>(gi, k.get(), n)) == first;
    printf("sppark %s msm n=%s end_to_end_ms=%.3f resident_ms=%.3f", nm.c_str(),
           size_str(n).c_str(), median(t_e2e), median(t_res));
    if (!t_pin.empty()) printf(" end_to_end_pinned_ms=%.3f", median(t_pin));
    printf(" upload_ms=%.3f end_to_end_min_ms=%.3f resident_min_ms=%.3f runs=%d check=%s\n",
           upload_ms, minimum(t_e2e), minimum(t_res), o.runs,
           correct ? "PASS" : consistent ? "FAIL" : "FAIL(inconsistent-runs)");
    fflush(stdout);
    return correct;
}

template<class F, class Fr>
static bool do_group(const group_t<F, Fr>& g, const std::vector<size_t>& sizes,
                     const opts_t& o, uint64_t seed)
{
    bool ok = true;
    if (o.host_only) {
        ok = check_group(g, o.check_log ? o.check_log : 10, seed, true);
        for (size_t n : sizes) {    // host-side cost of the benchmark's data preparation
            std::unique_ptr<aff<F>[]> p(new aff<F>[n]);
            std::unique_ptr<uint64_t[]> k(new uint64_t[4 * n]);
            auto t0 = clk::now();
            auto gi = gen_points(g, p.get(), n, seed + n);
            double tg = secs_since(t0);
            gen_scalars(g, k.get(), n, seed + n + 1);
            double ts = secs_since(t0) - tg;
            t0 = clk::now();
            closed_form_msm<F, Fr>(gi, k.get(), n);
            printf("# %s n=%s host: points %.2f s, scalars %.2f s, closed form %.2f s "
                   "(%u threads)\n", g.name().c_str(), size_str(n).c_str(), tg, ts,
                   secs_since(t0), nthreads());
            fflush(stdout);
        }
        return ok;
    }
    if (o.check_log) ok &= check_group(g, o.check_log, seed);
    for (size_t n : sizes) ok &= bench_group(g, n, o, seed + n);
    return ok;
}

static std::vector<size_t> parse_sizes(const char* s)
{
    // comma-separated; a value <= 40 is a log2, anything larger an exact count
    std::vector<size_t> v;
    std::string str(s);
    size_t pos = 0;
    while (pos < str.size()) {
        size_t e = str.find(',', pos);
        if (e == std::string::npos) e = str.size();
        std::string t = str.substr(pos, e - pos);
        if (!t.empty()) {
            if (t.rfind("2^", 0) == 0) t = t.substr(2);
            unsigned long long x = std::strtoull(t.c_str(), nullptr, 0);
            v.push_back(x <= 40 ? size_t(1) << x : (size_t)x);
        }
        pos = e + 1;
    }
    return v;
}
static std::vector<std::string> parse_list(const char* s)
{
    std::vector<std::string> v;
    std::string str(s);
    size_t pos = 0;
    while (pos < str.size()) {
        size_t e = str.find(',', pos);
        if (e == std::string::npos) e = str.size();
        if (e > pos) v.push_back(str.substr(pos, e - pos));
        pos = e + 1;
    }
    return v;
}

} // namespace mb

// ---------------------------------------------------------------- exported C ABI
#define MSM_EXPORT extern "C" __attribute__((visibility("default")))

MSM_EXPORT int sppark_msm_init(void)
{   return glue_init();   }
#define MSM_ABI(name, group)                                                              \
MSM_EXPORT int sppark_##name##_msm(const uint8_t* p, const uint8_t* s, size_t n,           \
                                   uint8_t* out, double* sec)                              \
{   return mb::abi_msm(mb::group(), p, s, n, out, sec, false);   }                         \
MSM_EXPORT int sppark_##name##_msm_resident(const uint8_t* p, const uint8_t* s, size_t n,  \
                                            uint8_t* out, double* sec)                     \
{   return mb::abi_msm(mb::group(), p, s, n, out, sec, true);   }
MSM_ABI(bn254_g1, bn254_g1)
MSM_ABI(bn254_g2, bn254_g2)
MSM_ABI(bls12_381_g1, bls12_381_g1)
MSM_ABI(bls12_381_g2, bls12_381_g2)

// ---------------------------------------------------------------- main
static void usage(const char* argv0)
{
    printf("usage: %s [--curves=bn254,bls12-381] [--groups=g1,g2] [--g1=20,24] [--g2=20]\n"
           "          [--runs=5] [--check=10 (log2 size, 0 = off)] [--no-pinned] [--seed=N]\n"
           "          [--host-test (host-side self-tests only, no GPU)]\n"
           "sizes: comma-separated; a value <= 40 is log2(n), larger values are n itself;\n"
           "an empty list skips that group.\n", argv0);
}

int main(int argc, char** argv)
{
    mb::opts_t o;
    for (int i = 1; i < argc; i++) {
        const char* a = argv[i];
        auto val = [&](const char* key) -> const char* {
            size_t l = std::strlen(key);
            return std::strncmp(a, key, l) == 0 && a[l] == '=' ? a + l + 1 : nullptr;
        };
        const char* v;
        if ((v = val("--curves"))) o.curves = mb::parse_list(v);
        else if ((v = val("--groups"))) o.groups = mb::parse_list(v);
        else if ((v = val("--g1"))) o.g1_sizes = mb::parse_sizes(v);
        else if ((v = val("--g2"))) o.g2_sizes = mb::parse_sizes(v);
        else if ((v = val("--runs"))) o.runs = std::max(1, std::atoi(v));
        else if ((v = val("--check"))) o.check_log = (unsigned)std::atoi(v);
        else if ((v = val("--seed"))) o.seed = std::strtoull(v, nullptr, 0);
        else if (!std::strcmp(a, "--no-pinned")) o.pinned = false;
        else if (!std::strcmp(a, "--host-test")) o.host_only = true;
        else { usage(argv[0]); return !std::strcmp(a, "--help") || !std::strcmp(a, "-h") ? 0 : 2; }
    }
    char dev[256];
    if (o.host_only) {
        printf("# host-only self-test (generators, generated points, naive vs closed form)\n");
    } else if (glue_device_info(dev, sizeof(dev))) {
        fprintf(stderr, "%s\n", dev);
        return 1;
    } else {
        printf("# device: %s\n", dev);
    }
    printf("# timings: median of %d runs after one warm-up; wall time of the whole sppark call\n",
           o.runs);
    fflush(stdout);

    auto want = [](const std::vector<std::string>& v, const char* x) {
        return std::find(v.begin(), v.end(), std::string(x)) != v.end();
    };
    bool ok = true;
    uint64_t seed = o.seed;
    if (want(o.curves, "bn254")) {
        if (want(o.groups, "g1")) ok &= mb::do_group(mb::bn254_g1(), o.g1_sizes, o, seed + 100);
        if (want(o.groups, "g2")) ok &= mb::do_group(mb::bn254_g2(), o.g2_sizes, o, seed + 200);
    }
    if (want(o.curves, "bls12-381")) {
        if (want(o.groups, "g1")) ok &= mb::do_group(mb::bls12_381_g1(), o.g1_sizes, o, seed + 300);
        if (want(o.groups, "g2")) ok &= mb::do_group(mb::bls12_381_g2(), o.g2_sizes, o, seed + 400);
    }
    printf("# overall: %s\n", ok ? "PASS" : "FAIL");
    return ok ? 0 : 1;
}

#endif // part 4
