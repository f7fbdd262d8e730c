// SHA-256 batch kernels: one message per thread. Digests are written as 32 bytes, big-endian
// words, exactly as the CPU backends produce them.
#include "sha256.cuh"
#include "bc/md.cuh"

using namespace bc;
using namespace bc::sha256;

namespace {

// Hashes one message of any length, then once more for SHA256d.
BC_DEVICE void hash_message(const uint8_t* msg, uint64_t len, bool dbl, uint32_t s[8]) {
    md_hash<Hash>(msg, len, s);
    if (dbl) hash_digest(s);
}

}  // namespace

// SHA256d of n 64-byte messages (merkle nodes): three compressions, the middle one with its
// schedule folded into constants.
extern "C" __global__ void __launch_bounds__(256) sha256d_64(const uint4* __restrict__ in, uint8_t* __restrict__ out, uint64_t n) {
    BC_FOR_EACH_ITEM(i, n) {
        uint32_t w[16];
#pragma unroll
        for (int q = 0; q < 4; ++q) {
            uint4 v = in[4 * i + q];
            w[4 * q + 0] = bswap32(v.x);
            w[4 * q + 1] = bswap32(v.y);
            w[4 * q + 2] = bswap32(v.z);
            w[4 * q + 3] = bswap32(v.w);
        }
        uint32_t s[8];
        init(s);
        compress(s, w);
        compress_pad64(s);
        hash_digest(s);
        store_digest(out, i, s);
    }
}

// SHA256d of n 80-byte messages (block headers).
extern "C" __global__ void __launch_bounds__(256) sha256d_80(const uint32_t* __restrict__ in, uint8_t* __restrict__ out, uint64_t n) {
    BC_FOR_EACH_ITEM(i, n) {
        const uint32_t* m = in + 20 * i;
        uint32_t w[16];
#pragma unroll
        for (int j = 0; j < 16; ++j) w[j] = bswap32(m[j]);
        uint32_t s[8];
        init(s);
        compress(s, w);
#pragma unroll
        for (int j = 0; j < 4; ++j) w[j] = bswap32(m[16 + j]);
        w[4] = 0x80000000u;
#pragma unroll
        for (int j = 5; j < 15; ++j) w[j] = 0;
        w[15] = 640;
        compress(s, w);
        hash_digest(s);
        store_digest(out, i, s);
    }
}

// n messages of len bytes each, back to back.
extern "C" __global__ void __launch_bounds__(256) sha256_fixed(const uint8_t* __restrict__ in, uint64_t len, uint8_t* __restrict__ out, uint64_t n, int dbl) {
    BC_FOR_EACH_ITEM(i, n) {
        uint32_t s[8];
        hash_message(in + i * len, len, dbl != 0, s);
        store_digest(out, i, s);
    }
}

// n messages of any length: message i is in[offsets[i] .. offsets[i + 1]).
extern "C" __global__ void __launch_bounds__(256) sha256_var(const uint8_t* __restrict__ in, const uint64_t* __restrict__ offsets, uint8_t* __restrict__ out, uint64_t n, int dbl) {
    BC_FOR_EACH_ITEM(i, n) {
        uint64_t start = offsets[i];
        uint32_t s[8];
        hash_message(in + start, offsets[i + 1] - start, dbl != 0, s);
        store_digest(out, i, s);
    }
}
