// Number-theoretic transforms over a prime field F with 2-adic roots of unity (BN254's Fr has
// them up to 2^28, BLS12-381's up to 2^32), on batches of polynomials of n = 2^log_n
// coefficients. The host (crate::ntt) chains the steps:
//
//   1. twiddles: a table of omega^i, i < 2^(max_log - 1), for the largest size used; every
//                smaller size reads every 2^k-th entry, and the inverse transform reads
//                omega^-i = -omega^(n/2 - i), so one table serves all sizes and both directions.
//   2. passes:   decimation in frequency (Gentleman-Sande), natural order in, bit-reversed out.
//                Each pass runs up to MAX_PASS_BITS consecutive stages on groups of 2^k elements
//                held in shared memory, so a transform of 2^26 reads and writes global memory
//                three times instead of 26.
//   3. bitrev:   the bit-reversal permutation into a second buffer, natural order out.
//
// A coset transform (evaluations at g * omega^i) scales coefficient i by g^i as pass 1 loads it;
// the inverse scales output i by n^-1 g^-i as the permutation writes it. A scale factor is
// lo[i mod 2^lo_bits] * hi[i >> lo_bits] (two tables of about sqrt(n) entries the host
// computes), or the constant lo[0] (mode SCALE_CONST).
//
// Every kernel walks its groups or items grid-stride and loops its threads over the group, so the
// host emulation (one thread for the whole grid) runs the same code.
#pragma once
#include "bc/field.cuh"

namespace bc::ntt {

constexpr uint32_t MAX_PASS_BITS = 10;  // 2^10 elements: 32 KiB of shared memory per block
constexpr uint32_t TWIDDLE_RUN = 64;    // powers per thread after one exponentiation

enum Scale : uint32_t { SCALE_NONE = 0, SCALE_CONST = 1, SCALE_TABLES = 2 };

// x^e for a small exponent (square and multiply from the top bit).
template <class F>
BC_DEVICE F pow_u64(const F& x, uint64_t e) {
    F r = F::one();
    for (int b = 63; b >= 0; --b) {
        r = r.sqr();
        if ((e >> b) & 1) r = r * x;
    }
    return r;
}

// The low `bits` bits of i in reverse order.
BC_DEVICE uint64_t reverse_bits(uint64_t i, uint32_t bits) {
#ifdef __CUDA_ARCH__
    return __brevll(i) >> (64 - bits);
#else
    uint64_t r = 0;
    for (uint32_t b = 0; b < bits; ++b) r |= ((i >> b) & 1) << (bits - 1 - b);
    return r;
#endif
}

// Elements move as 16-byte words (buffers are 256-byte aligned, elements a multiple of 16 bytes).
template <class F>
BC_DEVICE F load(const F* p) {
    static_assert(F::N % 4 == 0, "elements of whole 16-byte words");
#ifdef __CUDA_ARCH__
    const uint4* q = reinterpret_cast<const uint4*>(p);
    F r;
#pragma unroll
    for (int j = 0; j < F::N / 4; ++j) {
        const uint4 a = q[j];
        r.v[4 * j] = a.x, r.v[4 * j + 1] = a.y, r.v[4 * j + 2] = a.z, r.v[4 * j + 3] = a.w;
    }
    return r;
#else
    return *p;
#endif
}

template <class F>
BC_DEVICE void store(F* p, const F& x) {
#ifdef __CUDA_ARCH__
    uint4* q = reinterpret_cast<uint4*>(p);
#pragma unroll
    for (int j = 0; j < F::N / 4; ++j) q[j] = make_uint4(x.v[4 * j], x.v[4 * j + 1], x.v[4 * j + 2], x.v[4 * j + 3]);
#else
    *p = x;
#endif
}

template <class F>
BC_DEVICE F scale_factor(uint32_t mode, const F* lo, const F* hi, uint32_t lo_bits, uint64_t i) {
    if (mode == SCALE_CONST) return load(lo);
    return load(lo + (i & ((1ull << lo_bits) - 1))) * load(hi + (i >> lo_bits));
}

// Step 1: out[i] = omega^i for i < count.
template <class F>
BC_DEVICE void twiddles(const F* omega, uint64_t count, F* out) {
    const F w = load(omega);
    BC_FOR_EACH_ITEM(t, (count + TWIDDLE_RUN - 1) / TWIDDLE_RUN) {
        const uint64_t begin = t * TWIDDLE_RUN, end = begin + TWIDDLE_RUN < count ? begin + TWIDDLE_RUN : count;
        F x = pow_u64(w, begin);
        for (uint64_t i = begin; i < end; ++i) {
            store(out + i, x);
            x = x * w;
        }
    }
}

// omega_n^e (or omega_n^-e) for 0 <= e < n/2, from the table of the size 2^(log_n + shift).
template <class F>
BC_DEVICE F twiddle(const F* tw, uint64_t e, uint32_t shift, uint64_t half_n, bool inverse) {
    if (!inverse || e == 0) return load(tw + (e << shift));
    return load(tw + ((half_n - e) << shift)).neg();
}

// Step 2: stages stage0 .. stage0 + k - 1 of the transform of each of `batch` polynomials of
// 2^log_n elements, in place. Stage s pairs elements 2^(log_n - s - 1) apart; the k stages of a
// pass touch only the index bits [low, low + k), low = log_n - stage0 - k, so each group of 2^k
// elements sharing the other bits is transformed in shared memory by one block.
template <class F>
BC_DEVICE void pass(F* data, uint32_t log_n, uint64_t batch, uint32_t stage0, uint32_t k, const F* tw, uint32_t tw_shift,
                    uint32_t inverse, uint32_t mode, const F* lo, const F* hi, uint32_t lo_bits) {
    __shared__ F s[1u << MAX_PASS_BITS];
    const uint64_t n = 1ull << log_n;
    const uint32_t size = 1u << k, half = size >> 1;
    const uint32_t low = log_n - stage0 - k;
    const uint64_t groups = n >> k;
    for (uint64_t g = blockIdx.x; g < batch * groups; g += gridDim.x) {
        F* poly = data + (g / groups) * n;
        const uint64_t r = g % groups;
        const uint64_t base = ((r >> low) << (low + k)) | (r & ((1ull << low) - 1));
        for (uint32_t v = threadIdx.x; v < size; v += blockDim.x) {
            const uint64_t i = base + (uint64_t(v) << low);
            F x = load(poly + i);
            if (mode != SCALE_NONE) x = x * scale_factor(mode, lo, hi, lo_bits, i);
            s[v] = x;
        }
        __syncthreads();
        for (uint32_t j = 0; j < k; ++j) {
            const uint32_t stage = stage0 + j, hl = half >> j;  // distance within the group
            const uint64_t h = n >> (stage + 1);                  // distance in the polynomial
            for (uint32_t b = threadIdx.x; b < half; b += blockDim.x) {
                const uint32_t i0 = ((b & ~(hl - 1)) << 1) | (b & (hl - 1));
                const uint64_t gi = base + (uint64_t(i0) << low);
                const F w = twiddle(tw, (gi & (h - 1)) << stage, tw_shift, n >> 1, inverse);
                const F x = s[i0], y = s[i0 + hl];
                s[i0] = x + y;
                s[i0 + hl] = (x - y) * w;
            }
            __syncthreads();
        }
        for (uint32_t v = threadIdx.x; v < size; v += blockDim.x) store(poly + base + (uint64_t(v) << low), s[v]);
        __syncthreads();  // the next group reuses s
    }
}

// Step 3: out[i] = in[reverse(i)] (times the scale factor of i), per polynomial.
template <class F>
BC_DEVICE void bitrev(const F* in, F* out, uint32_t log_n, uint64_t batch, uint32_t mode, const F* lo, const F* hi, uint32_t lo_bits) {
    const uint64_t mask = (1ull << log_n) - 1;
    BC_FOR_EACH_ITEM(t, batch << log_n) {
        const uint64_t i = t & mask;
        F x = load(in + ((t & ~mask) | reverse_bits(i, log_n)));
        if (mode != SCALE_NONE) x = x * scale_factor(mode, lo, hi, lo_bits, i);
        store(out + t, x);
    }
}

// A prover's pointwise step on three polynomials of n elements held one after another (a, b, c):
// out[i] = a[i] b[i] - c[i] (Groth16's quotient on the coset), so they need not leave the GPU.
template <class F>
BC_DEVICE void mul_sub(const F* abc, uint64_t n, F* out) {
    BC_FOR_EACH_ITEM(i, n) store(out + i, load(abc + i) * load(abc + n + i) - load(abc + 2 * n + i));
}

// A prover's first step, so the witness's evaluations need not cross from the host: rows i < n of
// two sparse matrices held by rows one after another (A's rows 0..n, B's n..2n; row r's terms are
// starts[r]..starts[r + 1] of cols and coefs), each times the witness w, written as three
// polynomials: out = [A·w | B·w | (A·w)∘(B·w)] (for a satisfying witness the last is C·w).
template <class F>
BC_DEVICE F sparse_row(const uint64_t* starts, const uint32_t* cols, const F* coefs, const F* w, uint64_t r) {
    F acc = F::zero();
    for (uint64_t e = starts[r]; e < starts[r + 1]; ++e) acc = acc + load(coefs + e) * load(w + cols[e]);
    return acc;
}

template <class F>
BC_DEVICE void products(const uint64_t* starts, const uint32_t* cols, const F* coefs, const F* w, uint64_t n, F* out) {
    BC_FOR_EACH_ITEM(i, n) {
        const F a = sparse_row(starts, cols, coefs, w, i);
        const F b = sparse_row(starts, cols, coefs, w, n + i);
        store(out + i, a);
        store(out + n + i, b);
        store(out + 2 * n + i, a * b);
    }
}

}  // namespace bc::ntt

// The kernels of the three steps over field F, named PREFIX_ntt_twiddles, _pass and _bitrev, and
// the prover's PREFIX_ntt_products and pointwise PREFIX_ntt_mul_sub.
#define BC_NTT_STEPS(PREFIX, F)                                                                                \
    extern "C" __global__ void PREFIX##_ntt_twiddles(const F* omega, uint64_t count, F* out) {                 \
        bc::ntt::twiddles(omega, count, out);                                                                  \
    }                                                                                                          \
    extern "C" __global__ void __launch_bounds__(512) PREFIX##_ntt_pass(F* data, uint32_t log_n, uint64_t batch, uint32_t stage0, uint32_t k, const F* tw, uint32_t tw_shift, uint32_t inverse, uint32_t mode, const F* lo, const F* hi, uint32_t lo_bits) { \
        bc::ntt::pass(data, log_n, batch, stage0, k, tw, tw_shift, inverse, mode, lo, hi, lo_bits);           \
    }                                                                                                          \
    extern "C" __global__ void PREFIX##_ntt_bitrev(const F* in, F* out, uint32_t log_n, uint64_t batch, uint32_t mode, const F* lo, const F* hi, uint32_t lo_bits) { \
        bc::ntt::bitrev(in, out, log_n, batch, mode, lo, hi, lo_bits);                                        \
    }                                                                                                          \
    extern "C" __global__ void PREFIX##_ntt_products(const uint64_t* starts, const uint32_t* cols, const F* coefs, const F* w, uint64_t n, F* out) { \
        bc::ntt::products(starts, cols, coefs, w, n, out);                                                     \
    }                                                                                                          \
    extern "C" __global__ void PREFIX##_ntt_mul_sub(const F* abc, uint64_t n, F* out) {                        \
        bc::ntt::mul_sub(abc, n, out);                                                                         \
    }
