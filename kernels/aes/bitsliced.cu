// Bitsliced AES-CTR: the alternative to aes.cu's shared-memory T-tables, kept to measure the two
// side by side (the benchmarks' "bitsliced kernel" row). A thread encrypts 32 counter blocks at
// once: word p of its state holds bit p of all 32 (plane p = 8 * byte + bit), so SubBytes is the
// Boolean circuit of sbox_circuit.cuh on each byte's eight planes, ShiftRows is register renaming
// and MixColumns a few XORs per plane. No table, no shared memory: the cost is pure ALU work plus
// one 128x32 bit transpose on the way out (the counter blocks are built as planes directly).
//
// Blocks are spread so that memory stays coalesced: warp w covers blocks [1024 w, 1024 w + 1024),
// and lane t's bitsliced lane k is block 1024 w + 32 k + t, so for each k the warp's 32 threads
// write 512 consecutive bytes.
#include "aes.cuh"
#include "sbox_circuit.cuh"

using namespace bc;

constexpr int PLANES = 128;

// One launch: aes::Ctr's counter fields, with the round keys as bit masks (0 or all ones per
// plane and round) in the parameter bank, where an XOR can read them as an operand.
struct CtrBitsliced {
    uint32_t ctr[4];  // counter block of the launch's first block, big-endian words
    uint32_t inc32;   // 1: GCM's inc32; 0: the whole 128-bit block
    uint32_t rounds;  // 10 or 14
    uint64_t bytes;
    uint32_t mask[15][PLANES];
};

// Bit i (LSB first) of the 128-bit big-endian counter block c, as a mask.
BC_DEVICE uint32_t counter_bit(const uint32_t c[4], int i) { return 0u - ((c[3 - i / 32] >> (i % 32)) & 1); }

// Planes of the counter blocks d + 32 k, k = 0..31 (d: this thread's first block's counter).
// Bits 0..4 are d's own; above, k is added by a bitsliced ripple carry (stopping at bit 32 for
// inc32), k's bits being the patterns of a lane index.
BC_DEVICE void counter_planes(const uint32_t d[4], bool inc32, uint32_t s[PLANES]) {
    constexpr uint32_t K_BITS[5] = {0xaaaaaaaau, 0xccccccccu, 0xf0f0f0f0u, 0xff00ff00u, 0xffff0000u};
    uint32_t carry = 0;
#pragma unroll
    for (int i = 0; i < 128; ++i) {
        const uint32_t a = counter_bit(d, i);
        uint32_t v;
        if (i < 5) {
            v = a;
        } else if (i < 10) {
            const uint32_t b = K_BITS[i - 5];
            v = a ^ b ^ carry;
            carry = (a & b) | (carry & (a ^ b));
        } else {
            if (i == 32 && inc32) carry = 0;
            v = a ^ carry;
            carry &= a;
        }
        // Integer bit i sits in byte 15 - i / 8 of the block.
        s[8 * (15 - i / 8) + i % 8] = v;
    }
}

BC_DEVICE void add_round_key(uint32_t s[PLANES], const uint32_t m[PLANES]) {
#pragma unroll
    for (int p = 0; p < PLANES; ++p) s[p] ^= m[p];
}

BC_DEVICE void sub_bytes(uint32_t s[PLANES]) {
#pragma unroll
    for (int j = 0; j < 16; ++j) aes::sbox_circuit(s + 8 * j);
}

// ShiftRows then MixColumns (mix = false in the last round), into t. Byte (row r, column c) is
// byte 4c + r; after ShiftRows it holds byte (r, c + r mod 4).
BC_DEVICE void shift_mix(const uint32_t s[PLANES], uint32_t t[PLANES], bool mix) {
#pragma unroll
    for (int c = 0; c < 4; ++c) {
        const uint32_t* a[4];
#pragma unroll
        for (int r = 0; r < 4; ++r) a[r] = s + 8 * (4 * ((c + r) % 4) + r);
        if (!mix) {
#pragma unroll
            for (int r = 0; r < 4; ++r)
#pragma unroll
                for (int i = 0; i < 8; ++i) t[8 * (4 * c + r) + i] = a[r][i];
            continue;
        }
        // b_r = a_r ^ (a_0 ^ a_1 ^ a_2 ^ a_3) ^ xtime(a_r ^ a_{r+1}).
        uint32_t all[8];
#pragma unroll
        for (int i = 0; i < 8; ++i) all[i] = a[0][i] ^ a[1][i] ^ a[2][i] ^ a[3][i];
#pragma unroll
        for (int r = 0; r < 4; ++r) {
            uint32_t u[8];
#pragma unroll
            for (int i = 0; i < 8; ++i) u[i] = a[r][i] ^ a[(r + 1) % 4][i];
            // xtime: a left shift with the carry folded back by x^8 = x^4 + x^3 + x + 1.
            const uint32_t x[8] = {u[7], u[0] ^ u[7], u[1], u[2] ^ u[7], u[3] ^ u[7], u[4], u[5], u[6]};
#pragma unroll
            for (int i = 0; i < 8; ++i) t[8 * (4 * c + r) + i] = a[r][i] ^ all[i] ^ x[i];
        }
    }
}

template <int R>
BC_DEVICE void encrypt_planes(const CtrBitsliced& p, uint32_t s[PLANES]) {
    add_round_key(s, p.mask[0]);
#pragma unroll 1
    for (int r = 1; r < R; ++r) {
        uint32_t t[PLANES];
        sub_bytes(s);
        shift_mix(s, t, true);
#pragma unroll
        for (int i = 0; i < PLANES; ++i) s[i] = t[i] ^ p.mask[r][i];
    }
    uint32_t t[PLANES];
    sub_bytes(s);
    shift_mix(s, t, false);
#pragma unroll
    for (int i = 0; i < PLANES; ++i) s[i] = t[i] ^ p.mask[R][i];
}

// In-place transpose of the 32x32 bit matrix w (row i = word i, column j = bit j): afterwards
// bit j of word i is the former bit i of word j. The two coarse stages are byte permutes.
BC_DEVICE void transpose32(uint32_t w[32]) {
#pragma unroll
    for (int i = 0; i < 16; ++i) {
        const uint32_t a = w[i], b = w[i + 16];
        w[i] = __byte_perm(a, b, 0x5410), w[i + 16] = __byte_perm(a, b, 0x7632);
    }
#pragma unroll
    for (int i = 0; i < 32; ++i) {
        if (i & 8) continue;
        const uint32_t a = w[i], b = w[i + 8];
        w[i] = __byte_perm(a, b, 0x6240), w[i + 8] = __byte_perm(a, b, 0x7351);
    }
    constexpr uint32_t MASKS[3] = {0x0f0f0f0fu, 0x33333333u, 0x55555555u};
#pragma unroll
    for (int k = 0; k < 3; ++k) {
        const int sh = 4 >> k;
#pragma unroll
        for (int i = 0; i < 32; ++i) {
            if (i & sh) continue;
            const uint32_t t = ((w[i] >> sh) ^ w[i + sh]) & MASKS[k];
            w[i + sh] ^= t, w[i] ^= t << sh;
        }
    }
}

template <int R>
BC_DEVICE void ctr_groups(const CtrBitsliced& p, const uint8_t* in, uint8_t* out) {
    const uint64_t blocks = (p.bytes + 15) / 16, groups = (blocks + 1023) / 1024;
    // Item i is lane i mod 32 of group i / 32: with whole warps, warp w takes group w.
    BC_FOR_EACH_ITEM(i, 32 * groups) {
        const uint64_t b0 = 1024 * (i / 32) + i % 32;
        uint32_t d[4], s[PLANES];
        aes::add_counter(p.ctr, b0, p.inc32 != 0, d);
        counter_planes(d, p.inc32 != 0, s);
        encrypt_planes<R>(p, s);
        // Planes 32 g .. 32 g + 31 transposed: word k is bytes 4g .. 4g + 3 of lane k's block,
        // as a little-endian word.
#pragma unroll
        for (int g = 0; g < 4; ++g) transpose32(s + 32 * g);
#pragma unroll
        for (int k = 0; k < 32; ++k) {
            const uint64_t b = b0 + 32 * k;
            if (b >= blocks) break;
            const uint32_t ks[4] = {bswap32(s[k]), bswap32(s[32 + k]), bswap32(s[64 + k]), bswap32(s[96 + k])};
            aes::store_block(out, b, p.bytes, aes::apply(aes::load_block(in, b, p.bytes), ks, b, p.bytes));
        }
    }
}

// Counter mode over p.bytes bytes, as aes_ctr; in and out may be the same buffer.
extern "C" __global__ void __launch_bounds__(256) aes_ctr_bitsliced(CtrBitsliced p, const uint8_t* in, uint8_t* out) {
    if (p.rounds == 14) ctr_groups<14>(p, in, out);
    else ctr_groups<10>(p, in, out);
}
