// SHA-256 compression for one message per thread (FIPS 180-4 §6.2.2).
#pragma once
#include "bc/common.cuh"

namespace bc::sha256 {

__device__ __constant__ uint32_t K[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5, 0xd807aa98, 0x12835b01, 0x243185be,
    0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa,
    0x5cb0a9dc, 0x76f988da, 0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967, 0x27b70a85,
    0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3,
    0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070, 0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f,
    0x682e6ff3, 0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2};

// Compile-time copy of K for schedules folded into immediates.
struct Table64 { uint32_t v[64]; };
constexpr uint32_t KC[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5, 0xd807aa98, 0x12835b01, 0x243185be,
    0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa,
    0x5cb0a9dc, 0x76f988da, 0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967, 0x27b70a85,
    0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3,
    0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070, 0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f,
    0x682e6ff3, 0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2};

__device__ __constant__ uint32_t IV[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};

constexpr uint32_t crotr(uint32_t x, int n) { return (x >> n) | (x << (32 - n)); }

// W[t] + K[t] of a block whose 16 words are known at compile time: the padding block that follows
// a 64-byte message (0x80, zeros, length 512 bits) is the same for every message.
constexpr Table64 schedule_plus_k(const uint32_t (&m)[16]) {
    Table64 w{};
    uint32_t x[64] = {};
    for (int t = 0; t < 16; ++t) x[t] = m[t];
    for (int t = 16; t < 64; ++t) {
        uint32_t s0 = crotr(x[t - 15], 7) ^ crotr(x[t - 15], 18) ^ (x[t - 15] >> 3);
        uint32_t s1 = crotr(x[t - 2], 17) ^ crotr(x[t - 2], 19) ^ (x[t - 2] >> 10);
        x[t] = s1 + x[t - 7] + s0 + x[t - 16];
    }
    for (int t = 0; t < 64; ++t) w.v[t] = x[t] + KC[t];
    return w;
}
constexpr uint32_t PAD64_WORDS[16] = {0x80000000u, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 512};
// In constant memory: a constant-bank operand costs no instruction, like K.
__device__ __constant__ Table64 PAD64_KW = schedule_plus_k(PAD64_WORDS);

BC_DEVICE uint32_t bsig0(uint32_t x) { return rotr(x, 2) ^ rotr(x, 13) ^ rotr(x, 22); }
BC_DEVICE uint32_t bsig1(uint32_t x) { return rotr(x, 6) ^ rotr(x, 11) ^ rotr(x, 25); }
BC_DEVICE uint32_t ssig0(uint32_t x) { return rotr(x, 7) ^ rotr(x, 18) ^ (x >> 3); }
BC_DEVICE uint32_t ssig1(uint32_t x) { return rotr(x, 17) ^ rotr(x, 19) ^ (x >> 10); }

BC_DEVICE void round(uint32_t a, uint32_t b, uint32_t c, uint32_t& d, uint32_t e, uint32_t f, uint32_t g, uint32_t& h, uint32_t kw) {
    uint32_t t1 = h + bsig1(e) + ((e & f) ^ (~e & g)) + kw;
    uint32_t t2 = bsig0(a) + ((a & b) | (c & (a | b)));
    d += t1;
    h = t1 + t2;
}

// Eight rounds with the register roles rotated instead of moved.
#define BC_SHA_ROUND8(KW)                                     \
    round(a, b, c, d, e, f, g, h, KW(0));                     \
    round(h, a, b, c, d, e, f, g, KW(1));                     \
    round(g, h, a, b, c, d, e, f, KW(2));                     \
    round(f, g, h, a, b, c, d, e, KW(3));                     \
    round(e, f, g, h, a, b, c, d, KW(4));                     \
    round(d, e, f, g, h, a, b, c, KW(5));                     \
    round(c, d, e, f, g, h, a, b, KW(6));                     \
    round(b, c, d, e, f, g, h, a, KW(7));

// Compresses the block whose words are w[0..16) (consumed: used as the rolling schedule).
BC_DEVICE void compress(uint32_t s[8], uint32_t w[16]) {
    uint32_t a = s[0], b = s[1], c = s[2], d = s[3], e = s[4], f = s[5], g = s[6], h = s[7];
#pragma unroll
    for (int r = 0; r < 64; r += 8) {
        if (r >= 16) {
#pragma unroll
            for (int j = 0; j < 8; ++j) {
                int t = r + j;
                w[t & 15] += ssig1(w[(t - 2) & 15]) + w[(t - 7) & 15] + ssig0(w[(t - 15) & 15]);
            }
        }
#define KW(j) (w[(r + (j)) & 15] + K[r + (j)])
        BC_SHA_ROUND8(KW)
#undef KW
    }
    s[0] += a; s[1] += b; s[2] += c; s[3] += d; s[4] += e; s[5] += f; s[6] += g; s[7] += h;
}

// Compresses the constant padding block of a 64-byte message: no schedule at run time.
BC_DEVICE void compress_pad64(uint32_t s[8]) {
    uint32_t a = s[0], b = s[1], c = s[2], d = s[3], e = s[4], f = s[5], g = s[6], h = s[7];
#pragma unroll
    for (int r = 0; r < 64; r += 8) {
#define KW(j) PAD64_KW.v[r + (j)]
        BC_SHA_ROUND8(KW)
#undef KW
    }
    s[0] += a; s[1] += b; s[2] += c; s[3] += d; s[4] += e; s[5] += f; s[6] += g; s[7] += h;
}

BC_DEVICE void init(uint32_t s[8]) {
#pragma unroll
    for (int i = 0; i < 8; ++i) s[i] = IV[i];
}

// The hash policy of bc/md.cuh.
struct Hash {
    static BC_DEVICE void init(uint32_t s[8]) { sha256::init(s); }
    static BC_DEVICE void compress(uint32_t s[8], uint32_t w[16]) { sha256::compress(s, w); }
};

// The second hash of SHA256d: one block holding the 32-byte digest and its padding.
BC_DEVICE void hash_digest(uint32_t s[8]) {
    uint32_t w[16];
#pragma unroll
    for (int i = 0; i < 8; ++i) w[i] = s[i];
    w[8] = 0x80000000u;
#pragma unroll
    for (int i = 9; i < 15; ++i) w[i] = 0;
    w[15] = 256;
    init(s);
    compress(s, w);
}

}  // namespace bc::sha256
