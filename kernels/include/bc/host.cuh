// Host emulation of the CUDA dialect the kernels use, so that the same kernel sources also compile
// as plain C++ and run on the CPU in tests (one "thread" walking the whole grid-stride loop).
// Only what the kernels use is shimmed; PTX inline assembly stays behind __CUDA_ARCH__.
#pragma once
#ifndef __CUDACC__
#include <cstdint>

#define __device__
#define __host__
#define __global__
#define __constant__
#define __forceinline__ inline
#define __noinline__
#define __launch_bounds__(...)
// One host "thread" is the whole block: shared memory is a static array (one per test thread),
// barriers are no-ops, atomics plain updates.
#define __shared__ static thread_local
inline void __syncthreads() {}
inline unsigned atomicAdd(unsigned* p, unsigned v) {
    unsigned old = *p;
    *p = old + v;
    return old;
}

// A warp of one lane: a shuffle reads the lane's own value, as CUDA's do for a lane out of range.
inline unsigned __shfl_up_sync(unsigned, unsigned v, unsigned) { return v; }
inline unsigned __shfl_down_sync(unsigned, unsigned v, unsigned) { return v; }

struct bc_dim3 { unsigned x, y, z; };
static const bc_dim3 blockIdx{0, 0, 0}, threadIdx{0, 0, 0}, blockDim{1, 1, 1}, gridDim{1, 1, 1};

struct uint4 { unsigned x, y, z, w; };
inline uint4 make_uint4(unsigned a, unsigned b, unsigned c, unsigned d) { return uint4{a, b, c, d}; }

// PTX prmt in its default mode: selector nibbles pick bytes of the 8-byte value {y, x}.
inline uint32_t __byte_perm(uint32_t x, uint32_t y, uint32_t s) {
    uint64_t v = (uint64_t(y) << 32) | x;
    uint32_t r = 0;
    for (int i = 0; i < 4; ++i) r |= uint32_t((v >> (8 * ((s >> (4 * i)) & 7))) & 0xff) << (8 * i);
    return r;
}
#endif
