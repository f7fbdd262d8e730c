// Kernel-only timing of field products and mixed additions (BN254 and BLS12-381 G1), for
// comparing variants of kernels/include/bc/field.cuh compiled side by side (see field.sh). Each
// thread runs a dependent chain over 256 table points; a checksum of the results in ordinary
// form lets variants be checked equal. First, every product and square of pairs of edge values
// (0, 1, p - 1, p - 2^32, powers of two, ...) and random ones is checked against the portable
// C++ product in the same binary.
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>
#include <cuda_runtime.h>
#include "bn254/bn254.cuh"
#include "bls12_381/bls12_381.cuh"
#include "bc/msm.cuh"

// Blocks per SM the MSM accumulation is compiled for (its launch bound), to weigh occupancy
// against spills.
#ifndef ACC_MIN_BLOCKS
#define ACC_MIN_BLOCKS 1
#endif

using namespace bc;

#define CHECK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { printf("%s: %s\n", #x, cudaGetErrorString(e_)); exit(1); } } while (0)

template <class C>
__device__ void madd_chain(const Affine<C>* pts, Jacobian<C>* out, int iters) {
    const uint32_t t = blockIdx.x * blockDim.x + threadIdx.x;
    Jacobian<C> acc = Jacobian<C>::from(pts[t & 255]);
    for (int k = 0; k < iters; ++k) acc = acc.add(pts[(t + 7 * k + 1) & 255]);
    out[t] = acc;
}

template <class F>
__device__ void mul_chain(const F* xs, F* out, int iters) {
    const uint32_t t = blockIdx.x * blockDim.x + threadIdx.x;
    F x = xs[t & 255], y = xs[(t + 1) & 255];
    for (int k = 0; k < iters; ++k) {
        x = x * y;
        y = y + x;
    }
    out[t] = x;
}

template <class F>
__device__ void sqr_chain(const F* xs, F* out, int iters) {
    const uint32_t t = blockIdx.x * blockDim.x + threadIdx.x;
    F x = xs[t & 255];
    for (int k = 0; k < iters; ++k) x = x.sqr() + xs[k & 255];
    out[t] = x;
}

// Adapters so that points and elements share run(): Base is the field, PER its elements per item.
template <class C>
struct AffineOf : Affine<C> {
    using Base = typename C::F;
    static constexpr int PER = 3;  // the results are Jacobian
};
template <class F_>
struct Elem : F_ {
    using Base = F_;
    static constexpr int PER = 1;
};

template <class F>
__global__ void __launch_bounds__(128) mul_k(const Elem<F>* xs, Elem<F>* out, int iters) {
    mul_chain<F>(xs, out, iters);
}
template <class F>
__global__ void __launch_bounds__(128) sqr_k(const Elem<F>* xs, Elem<F>* out, int iters) {
    sqr_chain<F>(xs, out, iters);
}

template <class C>
__global__ void __launch_bounds__(128) madd_k(const AffineOf<C>* pts, AffineOf<C>* out, int iters) {
    madd_chain<C>(pts, reinterpret_cast<Jacobian<C>*>(out), iters);
}

// The sum of every limb (weighted by position) of every element in ordinary form.
template <class F>
__global__ void checksum(const F* xs, uint64_t n, uint32_t* sum) {
    BC_FOR_EACH_ITEM(i, n) {
        uint32_t v[F::N];
        xs[i].to_plain(v);
        uint32_t x = 0;
        for (int j = 0; j < F::N; ++j) x += v[j] * (j + 1);
        atomicAdd(sum, x);
    }
}

// The field's own product and square of every pair of xs against the portable product and
// square followed by the field's reduction; counts the disagreements.
template <class F>
__global__ void against_portable(const F* xs, uint64_t n, uint32_t* bad) {
    BC_FOR_EACH_ITEM(k, n * n) {
        const F a = xs[k / n], b = xs[k % n];
        uint32_t t[2 * F::N];
        mul_wide<F::N>(t, a.v, b.v);
        if (a * b != F::reduce_wide(t)) atomicAdd(bad, 1u);
        if (k % n == 0) {
            sqr_wide<F::N>(t, a.v);
            if (a.sqr() != F::reduce_wide(t)) atomicAdd(bad, 1u);
        }
    }
}

// A random element below p (its top limb reduced below p's).
template <class F>
F random_element(const uint32_t* p) {
    F e;
    for (int j = 0; j < F::N; ++j) e.v[j] = (uint32_t(rand()) << 16) ^ uint32_t(rand());
    e.v[F::N - 1] %= p[F::N - 1];
    return e;
}

// Edge values below p (little-endian limbs): 0, 1, 2, p - 1, p - 2, p - 2^32, p - 2^64, p - 1
// without its top limb's low bit, floor(p / 2) and one more, every 2^k below p, limbs all ones
// under p's top limb; then random values up to `count`.
template <class F>
std::vector<F> edge_and_random(const uint32_t* p, int count) {
    constexpr int N = F::N;
    std::vector<F> v;
    auto minus = [&](uint32_t word, int at) {
        F e;
        uint64_t borrow = 0;
        for (int j = 0; j < N; ++j) {
            int64_t d = int64_t(p[j]) - (j == at ? word : 0) - int64_t(borrow);
            e.v[j] = uint32_t(d);
            borrow = d < 0;
        }
        return e;
    };
    auto small = [&](uint32_t x) {
        F e = {};
        e.v[0] = x;
        return e;
    };
    v.push_back(small(0));
    v.push_back(small(1));
    v.push_back(small(2));
    v.push_back(minus(1, 0));
    v.push_back(minus(2, 0));
    v.push_back(minus(1, 1));
    v.push_back(minus(1, 2));
    F half = {};
    for (int j = 0; j < N; ++j) half.v[j] = (p[j] >> 1) | (j + 1 < N ? p[j + 1] << 31 : 0);
    v.push_back(half);
    half.v[0] += 1;
    v.push_back(half);
    for (int k = 0; k < 32 * N - 1; k += 7) {
        F e = {};
        e.v[k / 32] = 1u << (k % 32);
        if (k / 32 < N - 1 || e.v[N - 1] < p[N - 1]) v.push_back(e);
    }
    F ones;
    for (int j = 0; j < N - 1; ++j) ones.v[j] = 0xffffffffu;
    ones.v[N - 1] = p[N - 1] - 1;
    v.push_back(ones);
    while (int(v.size()) < count) v.push_back(random_element<F>(p));
    return v;
}

template <class F>
void check(const char* name, const uint32_t* p) {
    auto xs = edge_and_random<F>(p, 2048);
    F* dev;
    uint32_t* bad;
    CHECK(cudaMalloc(&dev, xs.size() * sizeof(F)));
    CHECK(cudaMalloc(&bad, 4));
    CHECK(cudaMemcpy(dev, xs.data(), xs.size() * sizeof(F), cudaMemcpyHostToDevice));
    CHECK(cudaMemset(bad, 0, 4));
    against_portable<F><<<1024, 128>>>(dev, xs.size(), bad);
    uint32_t b;
    CHECK(cudaMemcpy(&b, bad, 4, cudaMemcpyDeviceToHost));
    printf("%-28s %s: %zu x %zu products and %zu squares against the portable ones: %u differ\n", VARIANT, name, xs.size(), xs.size(), xs.size(), b);
    if (b) exit(1);
    cudaFree(dev);
    cudaFree(bad);
}

template <class F>
std::vector<F> random_elements(int n, const uint32_t* mod_host) {
    std::vector<F> v(n);
    for (auto& e : v) e = random_element<F>(mod_host);
    return v;
}

template <class F, class K>
void run(const char* name, K kernel, const std::vector<F>& host, int threads, int iters, double ops_per_iter) {
    F *in, *out;
    uint32_t* sum;
    CHECK(cudaMalloc(&in, host.size() * sizeof(F)));
    CHECK(cudaMalloc(&out, threads * sizeof(F) * 3));
    CHECK(cudaMalloc(&sum, 4));
    CHECK(cudaMemcpy(in, host.data(), host.size() * sizeof(F), cudaMemcpyHostToDevice));
    cudaEvent_t a, b;
    cudaEventCreate(&a);
    cudaEventCreate(&b);
    kernel<<<threads / 128, 128>>>(in, out, 4);
    CHECK(cudaDeviceSynchronize());
    float best = 1e30f;
    for (int r = 0; r < 3; ++r) {
        cudaEventRecord(a);
        kernel<<<threads / 128, 128>>>(in, out, iters);
        cudaEventRecord(b);
        CHECK(cudaEventSynchronize(b));
        float ms;
        cudaEventElapsedTime(&ms, a, b);
        if (ms < best) best = ms;
    }
    CHECK(cudaMemset(sum, 0, 4));
    checksum<typename F::Base><<<256, 128>>>(reinterpret_cast<const typename F::Base*>(out), uint64_t(threads) * F::PER, sum);
    uint32_t s;
    CHECK(cudaMemcpy(&s, sum, 4, cudaMemcpyDeviceToHost));
    printf("%-28s %s: %8.3f ns per op (%.3f G/s), checksum %08x\n", VARIANT, name, best * 1e6 / (double(threads) * iters * ops_per_iter),
           double(threads) * iters * ops_per_iter / (best * 1e6), s);
    cudaFree(in);
    cudaFree(out);
    cudaFree(sum);
}

// The MSM's bucket accumulation (step 4, first level) as the library launches it: entries sorted
// by key, 32 per thread, over random bases.
template <class C, class Acc>
__global__ void __launch_bounds__(128, ACC_MIN_BLOCKS) accumulate_k(const Affine<C>* bases, const uint32_t* entries, const uint32_t* ends, uint32_t buckets_len, uint64_t total, uint32_t slice, Jacobian<C>* buckets, uint32_t* next_keys, Jacobian<C>* next_pts) {
    bc::msm::accumulate_points<C, Acc>(bases, entries, ends, buckets_len, total, slice, buckets, next_keys, next_pts);
}

// The MSM's first accumulation level over 2^log_entries entries (random bases of 2^log_bases)
// in 2^log_buckets equal buckets, `slice` entries a thread, buckets summed in Acc coordinates.
template <class C, class Acc>
void time_accumulate(const char* name, const char* acc, const uint32_t* p, int log_bases, int log_entries, int log_buckets, uint32_t slice) {
    using F = typename C::F;
    const uint64_t n = 1ull << log_bases, m = 1ull << log_entries, b = 1ull << log_buckets;
    std::vector<Affine<C>> bases(n);
    for (auto& q : bases) q = Affine<C>{random_element<F>(p), random_element<F>(p)};
    std::vector<uint32_t> entries(m), ends(b);
    for (uint64_t i = 0; i < m; ++i) entries[i] = uint32_t(rand() % n) | (rand() & 1 ? msm::NEGATIVE : 0);
    for (uint64_t k = 0; k < b; ++k) ends[k] = uint32_t((k + 1) * m / b);
    Affine<C>* d_bases;
    uint32_t *d_entries, *d_ends, *d_next_keys;
    Jacobian<C>*d_buckets, *d_next;
    const uint64_t slices = m / slice;
    CHECK(cudaMalloc(&d_bases, n * sizeof(Affine<C>)));
    CHECK(cudaMalloc(&d_entries, m * 4));
    CHECK(cudaMalloc(&d_ends, b * 4));
    CHECK(cudaMalloc(&d_buckets, b * sizeof(Jacobian<C>)));
    CHECK(cudaMalloc(&d_next_keys, 2 * slices * 4));
    CHECK(cudaMalloc(&d_next, 2 * slices * sizeof(Jacobian<C>)));
    CHECK(cudaMemcpy(d_bases, bases.data(), n * sizeof(Affine<C>), cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(d_entries, entries.data(), m * 4, cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(d_ends, ends.data(), b * 4, cudaMemcpyHostToDevice));
    cudaEvent_t e0, e1;
    cudaEventCreate(&e0);
    cudaEventCreate(&e1);
    float best = 1e30f;
    for (int r = 0; r < 4; ++r) {
        cudaEventRecord(e0);
        accumulate_k<C, Acc><<<uint32_t((slices + 127) / 128), 128>>>(d_bases, d_entries, d_ends, uint32_t(b), m, slice, d_buckets, d_next_keys, d_next);
        cudaEventRecord(e1);
        CHECK(cudaEventSynchronize(e1));
        CHECK(cudaGetLastError());
        float ms;
        cudaEventElapsedTime(&ms, e0, e1);
        if (r && ms < best) best = ms;
    }
    printf("%-28s %s %-8s: 2^%d entries into 2^%d buckets, slices of %3u: %8.3f ms (%.3f G additions/s)\n", VARIANT, name, acc, log_entries, log_buckets, slice, best, m / (best * 1e6));
    cudaFree(d_bases);
    cudaFree(d_entries);
    cudaFree(d_ends);
    cudaFree(d_buckets);
    cudaFree(d_next_keys);
    cudaFree(d_next);
}

template <class C>
void time_accumulations(const char* name, const uint32_t* p) {
    for (int log_buckets : {16, 19})
        for (uint32_t slice : {32u, 256u}) {
            time_accumulate<C, Jacobian<C>>(name, "jacobian", p, 20, 24, log_buckets, slice);
            time_accumulate<C, Xyzz<C>>(name, "xyzz", p, 20, 24, log_buckets, slice);
        }
}

// Products, squares and mixed additions over the base field of C.
template <class C>
void time_curve(const char* curve, const uint32_t* q, int threads, int iters) {
    using Fq = typename C::F;
    using F = Elem<Fq>;
    auto v = random_elements<F>(256, q);
    const std::string name(curve);
    run<F>((name + " Fq product+sum").c_str(), mul_k<Fq>, v, threads, iters, 1);
    run<F>((name + " Fq square+sum").c_str(), sqr_k<Fq>, v, threads, iters, 1);
    auto pts = random_elements<F>(512, q);
    std::vector<AffineOf<C>> a(256);
    for (int i = 0; i < 256; ++i) a[i].x = pts[2 * i], a[i].y = pts[2 * i + 1];
    run<AffineOf<C>>((name + " G1 mixed addition").c_str(), madd_k<C>, a, threads, iters, 1);
}

int main(int argc, char** argv) {
    const int threads = argc > 1 ? atoi(argv[1]) : (1 << 18);
    const int iters = argc > 2 ? atoi(argv[2]) : 256;
    uint32_t bn_q[8], bls_q[12];
    CHECK(cudaMemcpyFromSymbol(bn_q, bc::bn254::Q_MOD, sizeof bn_q));
    CHECK(cudaMemcpyFromSymbol(bls_q, bc::bls12_381::Q_MOD, sizeof bls_q));
    srand(1);
    uint32_t bn_r[8], bls_r[8];
    CHECK(cudaMemcpyFromSymbol(bn_r, bc::bn254::R_MOD, sizeof bn_r));
    CHECK(cudaMemcpyFromSymbol(bls_r, bc::bls12_381::R_MOD, sizeof bls_r));
    check<bn254::Fq>("BN254 Fq", bn_q);
    check<bn254::Fr>("BN254 Fr", bn_r);
    check<bls12_381::Fq>("BLS12-381 Fq", bls_q);
    check<bls12_381::Fr>("BLS12-381 Fr", bls_r);
    if (getenv("ACCUMULATE")) {
        time_accumulations<bn254::G1>("BN254 G1", bn_q);
        time_accumulations<bls12_381::G1>("BLS12-381 G1", bls_q);
        return 0;
    }
    time_curve<bn254::G1>("BN254", bn_q, threads, iters);
    time_curve<bls12_381::G1>("BLS12-381", bls_q, threads, iters);
    return 0;
}
