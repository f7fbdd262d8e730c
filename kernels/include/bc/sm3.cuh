// SM3 compression (GB/T 32905-2016, GM/T 0004-2012) for one message per thread. SM3 pads like
// SHA-256 (Merkle-Damgard, big-endian words and bit length), so bc/md.cuh drives both.
#pragma once
#include "bc/common.cuh"

namespace bc::sm3 {

static __device__ __constant__ uint32_t IV[8] = {0x7380166f, 0x4914b2b9, 0x172442d7, 0xda8a0600, 0xa96f30bc, 0x163138aa, 0xe38dee4d, 0xb0fb0e4e};

BC_DEVICE uint32_t rotl(uint32_t x, int n) { return rotr(x, (32 - n) & 31); }
BC_DEVICE uint32_t p0(uint32_t x) { return x ^ rotl(x, 9) ^ rotl(x, 17); }
BC_DEVICE uint32_t p1(uint32_t x) { return x ^ rotl(x, 15) ^ rotl(x, 23); }

// T_j <<< (j mod 32), folded at compile time (the loop below is unrolled).
__host__ __device__ constexpr uint32_t t_rot(int j) {
    uint32_t t = j < 16 ? 0x79cc4519u : 0x7a879d8au;
    int s = j % 32;
    return s == 0 ? t : (t << s) | (t >> (32 - s));
}

struct Hash {
    static BC_DEVICE void init(uint32_t s[8]) {
#pragma unroll
        for (int i = 0; i < 8; ++i) s[i] = IV[i];
    }

    // Compresses the block whose words are w[0..16) (consumed: a rolling window of W_j holds
    // W_j .. W_j+15, so W'_j = W_j ^ W_j+4 needs no second array).
    static BC_DEVICE void compress(uint32_t s[8], uint32_t w[16]) {
        uint32_t a = s[0], b = s[1], c = s[2], d = s[3], e = s[4], f = s[5], g = s[6], h = s[7];
#pragma unroll
        for (int j = 0; j < 64; ++j) {
            // W_j+4 must exist before round j uses it: expand it (j + 4 >= 16) in place of W_j-12.
            if (j + 4 >= 16) {
                int t = j + 4;
                w[t & 15] = p1(w[(t - 16) & 15] ^ w[(t - 9) & 15] ^ rotl(w[(t - 3) & 15], 15)) ^ rotl(w[(t - 13) & 15], 7) ^ w[(t - 6) & 15];
            }
            uint32_t wj = w[j & 15], wj4 = w[(j + 4) & 15];
            uint32_t a12 = rotl(a, 12);
            uint32_t ss1 = rotl(a12 + e + t_rot(j), 7);
            uint32_t ss2 = ss1 ^ a12;
            uint32_t ff = j < 16 ? (a ^ b ^ c) : ((a & b) | (a & c) | (b & c));
            uint32_t gg = j < 16 ? (e ^ f ^ g) : ((e & f) | (~e & g));
            uint32_t tt1 = ff + d + ss2 + (wj ^ wj4);
            uint32_t tt2 = gg + h + ss1 + wj;
            d = c;
            c = rotl(b, 9);
            b = a;
            a = tt1;
            h = g;
            g = rotl(f, 19);
            f = e;
            e = p0(tt2);
        }
        s[0] ^= a; s[1] ^= b; s[2] ^= c; s[3] ^= d; s[4] ^= e; s[5] ^= f; s[6] ^= g; s[7] ^= h;
    }
};

}  // namespace bc::sm3
