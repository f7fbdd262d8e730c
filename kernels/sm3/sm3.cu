// SM3 batch kernels: one message per thread, digests as 32 bytes (big-endian words).
#include "bc/md.cuh"
#include "bc/sm3.cuh"

using namespace bc;

// n messages of len bytes each, back to back.
extern "C" __global__ void __launch_bounds__(256) sm3_fixed(const uint8_t* __restrict__ in, uint64_t len, uint8_t* __restrict__ out, uint64_t n) {
    BC_FOR_EACH_ITEM(i, n) {
        uint32_t s[8];
        md_hash<sm3::Hash>(in + i * len, len, s);
        store_digest(out, i, s);
    }
}

// n messages of any length: message i is in[offsets[i] .. offsets[i + 1]).
extern "C" __global__ void __launch_bounds__(256) sm3_var(const uint8_t* __restrict__ in, const uint64_t* __restrict__ offsets, uint8_t* __restrict__ out, uint64_t n) {
    BC_FOR_EACH_ITEM(i, n) {
        uint32_t s[8];
        md_hash<sm3::Hash>(in + offsets[i], offsets[i + 1] - offsets[i], s);
        store_digest(out, i, s);
    }
}
