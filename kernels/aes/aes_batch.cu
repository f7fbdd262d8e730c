// AES-CTR over a batch of independent messages, each from its own counter block and under its own
// key (or one key for all). A thread takes up to SEG_BLOCKS consecutive blocks of one message, so
// a message of 64 bytes is one thread and a long one is spread over many; with per-message keys
// each thread expands its message's key itself (about a quarter of a block's work), which keeps
// the upload at the raw key.
#include "aes.cuh"

using namespace bc;

// Blocks per thread item.
constexpr uint32_t SEG_BLOCKS = 16;

struct CtrBatch {
    aes::Key key;       // every message's key when the launch has no per-message keys
    uint32_t pad;
    uint64_t messages;  // in this launch
    uint64_t len;       // every message's length; 0: offsets and first segments per message given
    uint64_t segments;  // thread items of the launch
};

// Key record of a message: the key's bytes in 32 (an AES-128 key in the first 16), then its
// length in bytes (16 or 32) as a little-endian word.
constexpr uint32_t KEY_WORDS = 9;

template <int R>
BC_DEVICE void ctr_span(const aes::Key& k, aes::LaneTable t, const uint32_t iv[4], uint64_t b0, uint64_t b1, uint64_t len,
                        const uint8_t* in, uint8_t* out) {
    for (uint64_t b = b0; b < b1; ++b) {
        uint32_t s[4];
        aes::add_counter(iv, b, false, s);
        aes::encrypt<R>(k, t, s);
        const uint32_t n = len - 16 * b < 16 ? (uint32_t)(len - 16 * b) : 16;
        aes::store_span(out + 16 * b, n, aes::apply(aes::load_span(in + 16 * b, n), s, 0, n));
    }
}

// ivs: one counter block per message, as bytes. keys: a key record per message, or null.
// offs, segs (when p.len is 0): n + 1 entries each, the messages' byte offsets (relative to
// offs[0], where in and out start) and their first thread items (an empty message owns none).
extern "C" __global__ void __launch_bounds__(256)
    aes_ctr_batch(CtrBatch p, const uint4* ivs, const uint32_t* keys, const uint64_t* offs, const uint64_t* segs, const uint8_t* in,
                  uint8_t* out) {
    __shared__ uint32_t table[aes::TABLE_WORDS];
    aes::fill_table(table);
    __syncthreads();
    const aes::LaneTable t = aes::lane_table(table);
    BC_FOR_EACH_ITEM(g, p.segments) {
        uint64_t i, seg0, start, len;
        if (p.len) {
            const uint64_t per = (p.len + 16 * SEG_BLOCKS - 1) / (16 * SEG_BLOCKS);
            i = g / per, seg0 = i * per, start = i * p.len, len = p.len;
        } else {
            // The last message whose first item is at or before g: segs[lo] <= g < segs[hi].
            uint64_t lo = 0, hi = p.messages;
            while (hi - lo > 1) {
                const uint64_t mid = (lo + hi) / 2;
                if (segs[mid] <= g) lo = mid;
                else hi = mid;
            }
            i = lo, seg0 = segs[i], start = offs[i] - offs[0], len = offs[i + 1] - offs[i];
        }
        const uint64_t b0 = (g - seg0) * SEG_BLOCKS, blocks = (len + 15) / 16;
        const uint64_t b1 = b0 + SEG_BLOCKS < blocks ? b0 + SEG_BLOCKS : blocks;
        const uint4 v = ivs[i];
        const uint32_t iv[4] = {bswap32(v.x), bswap32(v.y), bswap32(v.z), bswap32(v.w)};
        const uint8_t* src = in + start;
        uint8_t* dst = out + start;
        if (keys) {
            const uint32_t* rec = keys + KEY_WORDS * i;
            uint32_t raw[8];
#pragma unroll
            for (int w = 0; w < 8; ++w) raw[w] = bswap32(rec[w]);
            aes::Key k;
            if (rec[8] == 32) {
                aes::expand<14>(t, raw, k);
                ctr_span<14>(k, t, iv, b0, b1, len, src, dst);
            } else {
                aes::expand<10>(t, raw, k);
                ctr_span<10>(k, t, iv, b0, b1, len, src, dst);
            }
        } else if (p.key.rounds == 14) {
            ctr_span<14>(p.key, t, iv, b0, b1, len, src, dst);
        } else {
            ctr_span<10>(p.key, t, iv, b0, b1, len, src, dst);
        }
    }
}
