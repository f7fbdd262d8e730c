// Shared device helpers for every batchcrypt kernel.
#pragma once
#include <stdint.h>
#include "bc/host.cuh"

#define BC_DEVICE __device__ __forceinline__
#define BC_NOINLINE __device__ __noinline__

namespace bc {

// Grid-stride index range: kernels work for any grid size the host picks.
#define BC_FOR_EACH_ITEM(i, n) \
    for (uint64_t i = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x; i < (n); i += (uint64_t)gridDim.x * blockDim.x)

// The same loop run the same number of times by every thread of a block, for kernels with
// block-wide barriers in it: a block iterates while its first index is below n, so i may be
// past the end (the body checks i < n).
#define BC_FOR_EACH_ITEM_BLOCKWIDE(i, n) \
    for (uint64_t i = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x; i - threadIdx.x < (n); i += (uint64_t)gridDim.x * blockDim.x)

// One SHF instruction (inline PTX: the intrinsic needs a libdevice symbol some toolkits lack).
BC_DEVICE uint32_t rotr(uint32_t x, uint32_t n) {
#ifdef __CUDA_ARCH__
    uint32_t r;
    asm("shf.r.wrap.b32 %0, %1, %1, %2;" : "=r"(r) : "r"(x), "r"(n));
    return r;
#else
    return (x >> (n & 31)) | (x << ((32 - n) & 31));
#endif
}

// Big-endian load/store of a 32-bit word (one PRMT instruction).
BC_DEVICE uint32_t bswap32(uint32_t x) { return __byte_perm(x, 0, 0x0123); }

}  // namespace bc
