// XTS-AES (IEEE 1619) over a run of data units made of whole blocks. First aes_xts_tweaks: per
// unit E_K2(tweak + unit), then that times α^64, α^128, … along the unit, one entry per 64 blocks.
// Each block then needs only its entry times α^r, r < 64: one shift and fold, where walking the
// unit's blocks in order would serialize it. Ciphertext stealing is left to the host: it touches
// only a buffer's last two blocks.
#include "aes.cuh"

using namespace bc;

// Blocks per tweak entry.
constexpr uint32_t TWEAK_STRIDE = 64;

struct XtsTweaks {
    aes::Key key;       // K2, forward
    uint32_t tweak[4];  // the first unit's tweak: a 128-bit little-endian integer, low word first
    uint32_t units;
    uint32_t entries;   // per unit: ceil(unit blocks / TWEAK_STRIDE)
};

struct Xts {
    aes::Key key;          // K1: encryption round keys, or the equivalent inverse cipher's
    uint32_t unit_blocks;  // blocks per data unit
    uint32_t entries;      // tweak entries per unit
    uint64_t blocks;       // whole blocks of this launch (below 2^32), from a unit boundary
};

// tweaks[j * entries + m] = E_K2(tweak + j) · α^(64m), four little-endian words.
extern "C" __global__ void __launch_bounds__(256) aes_xts_tweaks(XtsTweaks p, uint4* tweaks) {
    __shared__ uint32_t table[aes::TABLE_WORDS];
    aes::fill_table(table);
    __syncthreads();
    const aes::LaneTable t = aes::lane_table(table);
    const uint64_t lo0 = ((uint64_t)p.tweak[1] << 32) | p.tweak[0], hi0 = ((uint64_t)p.tweak[3] << 32) | p.tweak[2];
    BC_FOR_EACH_ITEM(j, p.units) {
        const uint64_t lo = lo0 + j, hi = hi0 + (lo < lo0);
        // The tweak's bytes in order are the cipher's input block.
        uint32_t s[4] = {bswap32((uint32_t)lo), bswap32((uint32_t)(lo >> 32)), bswap32((uint32_t)hi), bswap32((uint32_t)(hi >> 32))};
        if (p.key.rounds == 14) aes::encrypt<14>(p.key, t, s);
        else aes::encrypt<10>(p.key, t, s);
        xts::Tweak w = xts::from_words(make_uint4(bswap32(s[0]), bswap32(s[1]), bswap32(s[2]), bswap32(s[3])));
        uint4* out = tweaks + j * p.entries;
        for (uint32_t m = 0; m < p.entries; ++m) {
            out[m] = xts::to_words(w);
            w = xts::mul_alpha(w, TWEAK_STRIDE);
        }
    }
}

// One block per thread and turn: block b is block i of unit j, under tweak entry · α^(i mod 64).
template <int R, bool Decrypt>
BC_DEVICE void xts_blocks(const Xts& p, const uint8_t* in, uint8_t* out, const uint4* tweaks, aes::LaneTable t, aes::LaneTable inv) {
    BC_FOR_EACH_ITEM(b, p.blocks) {
        const uint32_t j = (uint32_t)b / p.unit_blocks, i = (uint32_t)b - j * p.unit_blocks;
        const uint4 w = xts::to_words(xts::mul_alpha(xts::from_words(tweaks[(uint64_t)j * p.entries + i / TWEAK_STRIDE]), i % TWEAK_STRIDE));
        const uint4 x = reinterpret_cast<const uint4*>(in)[b];
        uint32_t s[4] = {bswap32(x.x ^ w.x), bswap32(x.y ^ w.y), bswap32(x.z ^ w.z), bswap32(x.w ^ w.w)};
        if (Decrypt) aes::decrypt<R>(p.key, t, inv, s);
        else aes::encrypt<R>(p.key, t, s);
        reinterpret_cast<uint4*>(out)[b] =
            make_uint4(bswap32(s[0]) ^ w.x, bswap32(s[1]) ^ w.y, bswap32(s[2]) ^ w.z, bswap32(s[3]) ^ w.w);
    }
}

// XTS encryption of p.blocks blocks; in and out may be the same buffer.
extern "C" __global__ void __launch_bounds__(256) aes_xts_encrypt(Xts p, const uint8_t* in, uint8_t* out, const uint4* tweaks) {
    __shared__ uint32_t table[aes::TABLE_WORDS];
    aes::fill_table(table);
    __syncthreads();
    const aes::LaneTable t = aes::lane_table(table);
    if (p.key.rounds == 14) xts_blocks<14, false>(p, in, out, tweaks, t, t);
    else xts_blocks<10, false>(p, in, out, tweaks, t, t);
}

// XTS decryption: the inverse cipher's tables (40 KiB of shared memory).
extern "C" __global__ void __launch_bounds__(256) aes_xts_decrypt(Xts p, const uint8_t* in, uint8_t* out, const uint4* tweaks) {
    __shared__ uint32_t table[aes::TABLE_WORDS];
    __shared__ uint32_t inv[aes::INV_SBOX_WORDS];
    aes::fill_inverse_tables(table, inv);
    __syncthreads();
    const aes::LaneTable t = aes::lane_table(table), i = aes::lane_table(inv);
    if (p.key.rounds == 14) xts_blocks<14, true>(p, in, out, tweaks, t, i);
    else xts_blocks<10, true>(p, in, out, tweaks, t, i);
}
