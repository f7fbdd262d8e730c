// AES with 256-entry T-tables in shared memory (the forward cipher for CTR, GCM and XTS, the
// inverse cipher for XTS decryption), GF(2^128) arithmetic for GHASH, and XTS's tweak steps.
#pragma once
#include "bc/common.cuh"

namespace bc {
namespace aes {

// An expanded key: round key words big-endian (FIPS 197 order), 10 or 14 rounds.
struct Key {
    uint32_t rk[60];
    uint32_t rounds;
};

// What one counter-mode launch needs (passed by value: round keys sit in the constant bank, where
// every thread reading the same word is a broadcast).
struct Ctr {
    Key key;
    uint32_t ctr[4];  // counter block of the launch's first block, big-endian words
    uint32_t inc32;   // 1: GCM's inc32 (last word mod 2^32); 0: the whole block (SP 800-38A)
    uint32_t pad;
    uint64_t bytes;   // bytes in this launch
};

static __device__ __constant__ uint8_t SBOX[256] = {
    0x63, 0x7c, 0x77, 0x7b, 0xf2, 0x6b, 0x6f, 0xc5, 0x30, 0x01, 0x67, 0x2b, 0xfe, 0xd7, 0xab, 0x76,
    0xca, 0x82, 0xc9, 0x7d, 0xfa, 0x59, 0x47, 0xf0, 0xad, 0xd4, 0xa2, 0xaf, 0x9c, 0xa4, 0x72, 0xc0,
    0xb7, 0xfd, 0x93, 0x26, 0x36, 0x3f, 0xf7, 0xcc, 0x34, 0xa5, 0xe5, 0xf1, 0x71, 0xd8, 0x31, 0x15,
    0x04, 0xc7, 0x23, 0xc3, 0x18, 0x96, 0x05, 0x9a, 0x07, 0x12, 0x80, 0xe2, 0xeb, 0x27, 0xb2, 0x75,
    0x09, 0x83, 0x2c, 0x1a, 0x1b, 0x6e, 0x5a, 0xa0, 0x52, 0x3b, 0xd6, 0xb3, 0x29, 0xe3, 0x2f, 0x84,
    0x53, 0xd1, 0x00, 0xed, 0x20, 0xfc, 0xb1, 0x5b, 0x6a, 0xcb, 0xbe, 0x39, 0x4a, 0x4c, 0x58, 0xcf,
    0xd0, 0xef, 0xaa, 0xfb, 0x43, 0x4d, 0x33, 0x85, 0x45, 0xf9, 0x02, 0x7f, 0x50, 0x3c, 0x9f, 0xa8,
    0x51, 0xa3, 0x40, 0x8f, 0x92, 0x9d, 0x38, 0xf5, 0xbc, 0xb6, 0xda, 0x21, 0x10, 0xff, 0xf3, 0xd2,
    0xcd, 0x0c, 0x13, 0xec, 0x5f, 0x97, 0x44, 0x17, 0xc4, 0xa7, 0x7e, 0x3d, 0x64, 0x5d, 0x19, 0x73,
    0x60, 0x81, 0x4f, 0xdc, 0x22, 0x2a, 0x90, 0x88, 0x46, 0xee, 0xb8, 0x14, 0xde, 0x5e, 0x0b, 0xdb,
    0xe0, 0x32, 0x3a, 0x0a, 0x49, 0x06, 0x24, 0x5c, 0xc2, 0xd3, 0xac, 0x62, 0x91, 0x95, 0xe4, 0x79,
    0xe7, 0xc8, 0x37, 0x6d, 0x8d, 0xd5, 0x4e, 0xa9, 0x6c, 0x56, 0xf4, 0xea, 0x65, 0x7a, 0xae, 0x08,
    0xba, 0x78, 0x25, 0x2e, 0x1c, 0xa6, 0xb4, 0xc6, 0xe8, 0xdd, 0x74, 0x1f, 0x4b, 0xbd, 0x8b, 0x8a,
    0x70, 0x3e, 0xb5, 0x66, 0x48, 0x03, 0xf6, 0x0e, 0x61, 0x35, 0x57, 0xb9, 0x86, 0xc1, 0x1d, 0x9e,
    0xe1, 0xf8, 0x98, 0x11, 0x69, 0xd9, 0x8e, 0x94, 0x9b, 0x1e, 0x87, 0xe9, 0xce, 0x55, 0x28, 0xdf,
    0x8c, 0xa1, 0x89, 0x0d, 0xbf, 0xe6, 0x42, 0x68, 0x41, 0x99, 0x2d, 0x0f, 0xb0, 0x54, 0xbb, 0x16,
};

// T0 of the T-table formulation, replicated once per shared-memory bank: lane l reads entry
// x at t[x * 32 + l], so a warp's 32 data-dependent lookups never collide. T1..T3 are rotations
// of T0, and the last round's S-box bytes are inside T0 too, so 32 KiB serves every lookup.
constexpr int TABLE_WORDS = 256 * 32;

BC_DEVICE uint32_t xtime(uint32_t s) { return ((s << 1) ^ ((s & 0x80) ? 0x1b : 0)) & 0xff; }

BC_DEVICE void fill_table(uint32_t* t) {
    for (uint32_t i = threadIdx.x; i < TABLE_WORDS; i += blockDim.x) {
        uint32_t s = SBOX[i >> 5], s2 = xtime(s);
        t[i] = (s2 << 24) | (s << 16) | (s << 8) | (s2 ^ s);
    }
}

// This lane's column of the table. On the GPU it is a shared-memory byte address kept opaque to
// the compiler, so that each lookup is PRMT (pick the byte) + LEA (scale by the 128-byte entry
// stride and add) + LDS; left visible, the compiler re-derives the index in words and spends a
// third instruction, and the kernel is bound by instruction issue.
struct LaneTable {
#ifdef __CUDA_ARCH__
    uint32_t addr;
#else
    const uint32_t* p;
#endif
};

BC_DEVICE LaneTable lane_table(const uint32_t* table) {
    const uint32_t* p = table + (threadIdx.x & 31);
#ifdef __CUDA_ARCH__
    uint32_t a = (uint32_t)__cvta_generic_to_shared(p);
    asm volatile("" : "+r"(a));
    return LaneTable{a};
#else
    return LaneTable{p};
#endif
}

// T0[byte k of w] (k = 0 is the least significant byte).
BC_DEVICE uint32_t entry(LaneTable t, uint32_t w, uint32_t k) {
    uint32_t x = __byte_perm(w, 0, 0x4440 + k);
#ifdef __CUDA_ARCH__
    uint32_t v;
    asm("ld.shared.u32 %0, [%1];" : "=r"(v) : "r"(t.addr + (x << 7)));
    return v;
#else
    return t.p[x << 5];
#endif
}

// One output column of a table round: rows 0..3 from the top byte of a, the next of b, …
// (T1..T3 are T0 rotated).
BC_DEVICE uint32_t column(LaneTable t, uint32_t a, uint32_t b, uint32_t c, uint32_t d) {
    return entry(t, a, 3) ^ rotr(entry(t, b, 2), 8) ^ rotr(entry(t, c, 1), 16) ^ rotr(entry(t, d, 0), 24);
}

// SubWord: the S-box on each byte of w, from T0's second byte (T0[x] = (2s, s, s, 3s)).
BC_DEVICE uint32_t sub_word(LaneTable t, uint32_t w) {
    return ((entry(t, w, 3) << 8) & 0xff000000u) | (entry(t, w, 2) & 0x00ff0000u) | (entry(t, w, 1) & 0x0000ff00u) |
           ((entry(t, w, 0) >> 8) & 0xffu);
}

// The FIPS 197 key expansion of a 16-byte (R = 10) or 32-byte (R = 14) key given as big-endian
// words, on the device: for batches whose messages each have their own key, where uploading
// the raw key costs 16 or 32 bytes and the expanded one 176 or 240. Unrolled, so that the
// round keys stay in registers.
template <int R>
BC_DEVICE void expand(LaneTable t, const uint32_t* raw, Key& k) {
    constexpr int NK = R - 6;
#pragma unroll
    for (int i = 0; i < NK; ++i) k.rk[i] = raw[i];
    uint32_t rcon = 1;
#pragma unroll
    for (int i = NK; i < 4 * (R + 1); ++i) {
        uint32_t x = k.rk[i - 1];
        if (i % NK == 0) {
            x = sub_word(t, rotr(x, 24)) ^ (rcon << 24);
            rcon = xtime(rcon);
        } else if (NK > 6 && i % NK == 4) {
            x = sub_word(t, x);
        }
        k.rk[i] = k.rk[i - NK] ^ x;
    }
    k.rounds = R;
}

// Encrypts the block s (big-endian words) in place.
template <int R>
BC_DEVICE void encrypt(const Key& k, LaneTable t, uint32_t s[4]) {
    uint32_t s0 = s[0] ^ k.rk[0], s1 = s[1] ^ k.rk[1], s2 = s[2] ^ k.rk[2], s3 = s[3] ^ k.rk[3];
#define BC_ROUND(a, b, c, d, w) (column(t, a, b, c, d) ^ k.rk[w])
#pragma unroll
    for (int r = 1; r < R; ++r) {
        uint32_t t0 = BC_ROUND(s0, s1, s2, s3, 4 * r), t1 = BC_ROUND(s1, s2, s3, s0, 4 * r + 1);
        uint32_t t2 = BC_ROUND(s2, s3, s0, s1, 4 * r + 2), t3 = BC_ROUND(s3, s0, s1, s2, 4 * r + 3);
        s0 = t0, s1 = t1, s2 = t2, s3 = t3;
    }
#undef BC_ROUND
    // Last round: T0[x] = (2s, s, s, 3s), so S(x) is its second and third byte.
#define BC_LAST(a, b, c, d, w) \
    (((entry(t, a, 3) << 8) & 0xff000000u) ^ (entry(t, b, 2) & 0x00ff0000u) ^ (entry(t, c, 1) & 0x0000ff00u) ^ \
     ((entry(t, d, 0) >> 8) & 0xffu) ^ k.rk[4 * R + (w)])
    s[0] = BC_LAST(s0, s1, s2, s3, 0);
    s[1] = BC_LAST(s1, s2, s3, s0, 1);
    s[2] = BC_LAST(s2, s3, s0, s1, 2);
    s[3] = BC_LAST(s3, s0, s1, s2, 3);
#undef BC_LAST
}

// The inverse cipher's tables. Td0[x] = (0e·y, 09·y, 0d·y, 0b·y) with y = InvSbox[x], replicated
// per bank as T0 is (Td1..Td3 are its rotations). The last round needs InvSbox itself, which Td0
// does not contain: it is stored four entries to a word, each word once per bank (byte x of lane l
// at byte (x/4)·128 + 4l + x%4), conflict-free in 8 KiB.
constexpr int INV_SBOX_WORDS = 64 * 32;

// a·b in GF(2^8) for a constant b < 16.
BC_DEVICE uint32_t gmul(uint32_t a, uint32_t b) {
    uint32_t r = 0;
    for (int i = 0; i < 4; ++i, a = xtime(a))
        if ((b >> i) & 1) r ^= a;
    return r;
}

BC_DEVICE uint32_t inv_sbox_offset(uint32_t x) { return ((x >> 2) << 7) + (x & 3); }

BC_DEVICE void fill_inverse_tables(uint32_t* td, uint32_t* inv_words) {
    uint8_t* inv = reinterpret_cast<uint8_t*>(inv_words);
    for (uint32_t i = threadIdx.x; i < 256 * 32; i += blockDim.x) {
        uint32_t x = i >> 5, y = SBOX[x];
        inv[inv_sbox_offset(y) + 4 * (i & 31)] = (uint8_t)x;
    }
    __syncthreads();
    for (uint32_t i = threadIdx.x; i < TABLE_WORDS; i += blockDim.x) {
        uint32_t y = inv[inv_sbox_offset(i >> 5)];
        td[i] = (gmul(y, 14) << 24) | (gmul(y, 9) << 16) | (gmul(y, 13) << 8) | gmul(y, 11);
    }
}

// InvSbox[byte k of w] from this lane's copy (t from lane_table over the packed table).
BC_DEVICE uint32_t inv_sbox(LaneTable t, uint32_t w, uint32_t k) {
    uint32_t off = inv_sbox_offset(__byte_perm(w, 0, 0x4440 + k));
#ifdef __CUDA_ARCH__
    uint32_t v;
    asm("ld.shared.u8 %0, [%1];" : "=r"(v) : "r"(t.addr + off));
    return v;
#else
    return reinterpret_cast<const uint8_t*>(t.p)[off];
#endif
}

// Decrypts the block s (big-endian words) in place with the equivalent inverse cipher (FIPS 197
// §5.3.5): k holds the decryption round keys, InvMixColumns already applied to the middle ones.
template <int R>
BC_DEVICE void decrypt(const Key& k, LaneTable td, LaneTable inv, uint32_t s[4]) {
    uint32_t s0 = s[0] ^ k.rk[0], s1 = s[1] ^ k.rk[1], s2 = s[2] ^ k.rk[2], s3 = s[3] ^ k.rk[3];
#pragma unroll
    for (int r = 1; r < R; ++r) {
        // InvShiftRows: row i of column c comes from column c - i.
        uint32_t t0 = column(td, s0, s3, s2, s1) ^ k.rk[4 * r], t1 = column(td, s1, s0, s3, s2) ^ k.rk[4 * r + 1];
        uint32_t t2 = column(td, s2, s1, s0, s3) ^ k.rk[4 * r + 2], t3 = column(td, s3, s2, s1, s0) ^ k.rk[4 * r + 3];
        s0 = t0, s1 = t1, s2 = t2, s3 = t3;
    }
#define BC_LAST(a, b, c, d, w) \
    ((inv_sbox(inv, a, 3) << 24) | (inv_sbox(inv, b, 2) << 16) | (inv_sbox(inv, c, 1) << 8) | inv_sbox(inv, d, 0)) ^ k.rk[4 * R + (w)]
    s[0] = BC_LAST(s0, s3, s2, s1, 0);
    s[1] = BC_LAST(s1, s0, s3, s2, 1);
    s[2] = BC_LAST(s2, s1, s0, s3, 2);
    s[3] = BC_LAST(s3, s2, s1, s0, 3);
#undef BC_LAST
}

// Counter block c plus b: in the last word mod 2^32 (GCM's inc32), or in the whole block mod
// 2^128 (SP 800-38A).
BC_DEVICE void add_counter(const uint32_t c[4], uint64_t b, bool inc32, uint32_t s[4]) {
    if (inc32) {
        s[0] = c[0], s[1] = c[1], s[2] = c[2], s[3] = c[3] + (uint32_t)b;
    } else {
        uint64_t lo = ((uint64_t)c[2] << 32) | c[3], hi = ((uint64_t)c[0] << 32) | c[1];
        uint64_t l2 = lo + b;
        hi += l2 < lo;
        s[0] = (uint32_t)(hi >> 32), s[1] = (uint32_t)hi, s[2] = (uint32_t)(l2 >> 32), s[3] = (uint32_t)l2;
    }
}

// The counter block of the launch's block b.
BC_DEVICE void counter(const Ctr& p, uint64_t b, uint32_t s[4]) { add_counter(p.ctr, b, p.inc32, s); }

// n ≤ 16 bytes at p as little-endian words, zero-padded (a whole aligned block in one load).
BC_DEVICE uint4 load_span(const uint8_t* p, uint32_t n) {
    if (n == 16 && ((uintptr_t)p & 15) == 0) return *reinterpret_cast<const uint4*>(p);
    uint32_t w[4] = {0, 0, 0, 0};
    for (uint32_t j = 0; j < n; ++j) w[j >> 2] |= (uint32_t)p[j] << (8 * (j & 3));
    return make_uint4(w[0], w[1], w[2], w[3]);
}

BC_DEVICE void store_span(uint8_t* p, uint32_t n, uint4 v) {
    if (n == 16 && ((uintptr_t)p & 15) == 0) {
        *reinterpret_cast<uint4*>(p) = v;
        return;
    }
    uint32_t w[4] = {v.x, v.y, v.z, v.w};
    for (uint32_t j = 0; j < n; ++j) p[j] = (uint8_t)(w[j >> 2] >> (8 * (j & 3)));
}

// Block b of a buffer (16-byte aligned) of `bytes` bytes as little-endian words, zero-padded
// past the end.
BC_DEVICE uint4 load_block(const uint8_t* in, uint64_t b, uint64_t bytes) {
    if (16 * (b + 1) <= bytes) return reinterpret_cast<const uint4*>(in)[b];
    return load_span(in + 16 * b, (uint32_t)(bytes - 16 * b));
}

BC_DEVICE void store_block(uint8_t* out, uint64_t b, uint64_t bytes, uint4 v) {
    if (16 * (b + 1) <= bytes) {
        reinterpret_cast<uint4*>(out)[b] = v;
        return;
    }
    store_span(out + 16 * b, (uint32_t)(bytes - 16 * b), v);
}

// Keystream (big-endian words) applied to little-endian data words; bytes past the end stay zero.
BC_DEVICE uint4 apply(uint4 x, const uint32_t ks[4], uint64_t b, uint64_t bytes) {
    uint4 y = make_uint4(x.x ^ bswap32(ks[0]), x.y ^ bswap32(ks[1]), x.z ^ bswap32(ks[2]), x.w ^ bswap32(ks[3]));
    if (16 * (b + 1) > bytes) {
        uint32_t w[4] = {y.x, y.y, y.z, y.w};
        for (uint32_t j = (uint32_t)(bytes - 16 * b); j < 16; ++j) w[j >> 2] &= ~(0xffu << (8 * (j & 3)));
        y = make_uint4(w[0], w[1], w[2], w[3]);
    }
    return y;
}

}  // namespace aes

// XTS tweaks (IEEE 1619): GF(2^128) elements as 128-bit little-endian integers, α = x.
namespace xts {

struct Tweak {
    uint64_t lo, hi;
};

BC_DEVICE Tweak from_words(uint4 v) { return Tweak{((uint64_t)v.y << 32) | v.x, ((uint64_t)v.w << 32) | v.z}; }
BC_DEVICE uint4 to_words(Tweak t) {
    return make_uint4((uint32_t)t.lo, (uint32_t)(t.lo >> 32), (uint32_t)t.hi, (uint32_t)(t.hi >> 32));
}

// t·α^n for n ≤ 120 in one step: the n bits shifted past x^127 fold back times
// x^128 = x^7 + x^2 + x + 1, which for n ≤ 120 cannot overflow again.
BC_DEVICE Tweak mul_alpha(Tweak t, uint32_t n) {
    if (n == 0) return t;
    uint64_t lo, hi, o_lo, o_hi;  // t << n, and t >> (128 - n)
    if (n < 64) {
        lo = t.lo << n, hi = (t.hi << n) | (t.lo >> (64 - n));
        o_lo = t.hi >> (64 - n), o_hi = 0;
    } else {
        uint32_t m = n - 64;  // 0..56
        lo = 0, hi = t.lo << m;
        o_lo = m ? (t.lo >> (64 - m)) | (t.hi << m) : t.hi;
        o_hi = m ? t.hi >> (64 - m) : 0;
    }
    // o · (x^7 + x^2 + x + 1), o below 2^120.
    uint64_t r_lo = o_lo ^ (o_lo << 1) ^ (o_lo << 2) ^ (o_lo << 7);
    uint64_t r_hi = o_hi ^ (o_hi << 1) ^ (o_hi << 2) ^ (o_hi << 7) ^ (o_lo >> 63) ^ (o_lo >> 62) ^ (o_lo >> 57);
    return Tweak{lo ^ r_lo, hi ^ r_hi};
}

}  // namespace xts



// GF(2^128) in GCM's bit order (SP 800-38D §6.3) as four big-endian words: the first bit of the
// block is x^0, and multiplying by x shifts right.
namespace gf128 {

BC_DEVICE uint4 xor4(uint4 a, uint4 b) { return make_uint4(a.x ^ b.x, a.y ^ b.y, a.z ^ b.z, a.w ^ b.w); }

BC_DEVICE uint32_t byte_at(uint4 v, int i) {
    uint32_t w = i < 4 ? v.x : i < 8 ? v.y : i < 12 ? v.z : v.w;
    return (w >> (24 - 8 * (i & 3))) & 0xff;
}

// What the byte v shifted out past x^127 adds when an element is multiplied by x^8, in the first
// word's top half: bit j of v is x^(127+8-j) = x^(7-j)·x^128, reduced by x^128 = 1 + x + x^2 + x^7
// (0xE1 in this bit order), i.e. v·0xE1 carry-less, shifted left by one. Computed rather than
// looked up: random indices into a shared table conflict on its banks.
BC_DEVICE uint32_t reduce8(uint32_t v) { return ((v ^ (v << 5) ^ (v << 6) ^ (v << 7)) << 1) << 16; }

// x·k with Shoup's 8-bit table for the fixed k: m[b] = b·k for the byte b in a block's first byte.
BC_DEVICE uint4 mul_table(uint4 x, const uint4* m) {
    uint4 z = m[byte_at(x, 15)];
#pragma unroll
    for (int i = 14; i >= 0; --i) {
        uint32_t out = z.w & 0xff;
        z = make_uint4((z.x >> 8) ^ reduce8(out), (z.y >> 8) | (z.x << 24), (z.z >> 8) | (z.y << 24), (z.w >> 8) | (z.z << 24));
        z = xor4(z, m[byte_at(x, i)]);
    }
    return z;
}

// x·y bit by bit (SP 800-38D Algorithm 1): for the few products whose factor varies per thread.
BC_DEVICE uint4 mul(uint4 x, uint4 y) {
    uint4 z = make_uint4(0, 0, 0, 0), v = y;
    for (int i = 0; i < 128; ++i) {
        uint32_t w = i < 32 ? x.x : i < 64 ? x.y : i < 96 ? x.z : x.w;
        uint32_t mask = 0u - ((w >> (31 - (i & 31))) & 1);
        z = make_uint4(z.x ^ (v.x & mask), z.y ^ (v.y & mask), z.z ^ (v.z & mask), z.w ^ (v.w & mask));
        uint32_t red = 0u - (v.w & 1);
        v = make_uint4((v.x >> 1) ^ (0xe1000000u & red), (v.y >> 1) | (v.x << 31), (v.z >> 1) | (v.y << 31), (v.w >> 1) | (v.z << 31));
    }
    return z;
}

}  // namespace gf128
}  // namespace bc
