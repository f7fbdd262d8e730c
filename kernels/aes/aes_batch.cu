// AES-CTR and AES-GCM over a batch of independent messages, each from its own counter block or
// nonce and under its own key (or one key for all). A thread item is up to SEG_BLOCKS consecutive
// blocks of one message (every message has at least one item, an empty one too), so a message of
// 64 bytes is one thread and a long one is spread over many; with per-message keys each thread
// expands its message's key itself (about a quarter of a block's work), which keeps the upload at
// the raw key.
#include "aes.cuh"

using namespace bc;

// Blocks per thread item.
constexpr uint32_t SEG_BLOCKS = 16;

struct Batch {
    aes::Key key;       // every message's key when the launch has no per-message keys
    uint32_t decrypt;   // GCM: GHASH the input (ciphertext) rather than the output
    uint64_t messages;  // in this launch
    uint64_t len;       // every message's length; 0: offsets and first items per message given
    uint64_t segments;  // thread items of the launch
};

// Key record of a message: the key's bytes in 32 (an AES-128 key in the first 16), then its
// length in bytes (16 or 32) as a little-endian word.
constexpr uint32_t KEY_WORDS = 9;

// A thread item: message i, its bytes [start, start + len) in the launch's buffers, and blocks
// [b0, b1) of it.
struct Item {
    uint64_t i, start, len, b0, b1;
};

// Thread item g. Fixed-length messages (len != 0) have ceil(len / (16 SEG_BLOCKS)) items each;
// otherwise offs and segs (n + 1 entries) give each message's bytes and first item.
BC_DEVICE Item item(uint64_t g, uint64_t messages, uint64_t len, const uint64_t* offs, const uint64_t* segs) {
    Item it;
    uint64_t seg0;
    if (len) {
        const uint64_t per = (len + 16 * SEG_BLOCKS - 1) / (16 * SEG_BLOCKS);
        it.i = g / per, seg0 = it.i * per, it.start = it.i * len, it.len = len;
    } else {
        // The last message whose first item is at or before g: segs[lo] <= g < segs[hi].
        uint64_t lo = 0, hi = messages;
        while (hi - lo > 1) {
            const uint64_t mid = (lo + hi) / 2;
            if (segs[mid] <= g) lo = mid;
            else hi = mid;
        }
        it.i = lo, seg0 = segs[lo], it.start = offs[lo] - offs[0], it.len = offs[lo + 1] - offs[lo];
    }
    const uint64_t blocks = (it.len + 15) / 16;
    it.b0 = (g - seg0) * SEG_BLOCKS;
    it.b1 = it.b0 + SEG_BLOCKS < blocks ? it.b0 + SEG_BLOCKS : blocks;
    return it;
}

template <int R>
struct Rounds {
    static constexpr int value = R;
};

// Calls f(key, Rounds<R>{}) with the item's key: its record expanded (rec: per-message keys) or
// the launch's one key. Each branch expands and uses its key itself, so the round keys stay in
// registers.
template <class F>
BC_DEVICE void with_key(aes::LaneTable t, const uint32_t* rec, const aes::Key& launch_key, F&& f) {
    if (rec) {
        uint32_t raw[8];
#pragma unroll
        for (int w = 0; w < 8; ++w) raw[w] = bswap32(rec[w]);
        aes::Key k;
        if (rec[8] == 32) {
            aes::expand<14>(t, raw, k);
            f(k, Rounds<14>{});
        } else {
            aes::expand<10>(t, raw, k);
            f(k, Rounds<10>{});
        }
    } else if (launch_key.rounds == 14) {
        f(launch_key, Rounds<14>{});
    } else {
        f(launch_key, Rounds<10>{});
    }
}

template <int R>
BC_DEVICE void ctr_span(const aes::Key& k, aes::LaneTable t, const uint32_t iv[4], const Item& it, const uint8_t* in, uint8_t* out) {
    for (uint64_t b = it.b0; b < it.b1; ++b) {
        uint32_t s[4];
        aes::add_counter(iv, b, false, s);
        aes::encrypt<R>(k, t, s);
        const uint32_t n = it.len - 16 * b < 16 ? (uint32_t)(it.len - 16 * b) : 16;
        aes::store_span(out + 16 * b, n, aes::apply(aes::load_span(in + 16 * b, n), s, 0, n));
    }
}

// ivs: one counter block per message, as bytes. keys: a key record per message, or null.
// offs, segs: see item(); null for fixed-length messages.
extern "C" __global__ void __launch_bounds__(256)
    aes_ctr_batch(Batch p, const uint4* ivs, const uint32_t* keys, const uint64_t* offs, const uint64_t* segs, const uint8_t* in,
                  uint8_t* out) {
    __shared__ uint32_t table[aes::TABLE_WORDS];
    aes::fill_table(table);
    __syncthreads();
    const aes::LaneTable t = aes::lane_table(table);
    BC_FOR_EACH_ITEM(g, p.segments) {
        const Item it = item(g, p.messages, p.len, offs, segs);
        const uint4 v = ivs[it.i];
        const uint32_t iv[4] = {bswap32(v.x), bswap32(v.y), bswap32(v.z), bswap32(v.w)};
        const uint8_t* src = in + it.start;
        uint8_t* dst = out + it.start;
        with_key(t, keys ? keys + KEY_WORDS * it.i : nullptr, p.key,
                 [&](const aes::Key& k, auto r) { ctr_span<decltype(r)::value>(k, t, iv, it, src, dst); });
    }
}

// AES-GCM over a batch (12-byte nonces: J0 = nonce || 1). aes_gcm_batch runs counter mode over
// the thread items as aes_ctr_batch does and leaves each item's GHASH partial sum
// S = Σ C_j·H^(b1 - j) over its blocks; the thread of a message's first item also leaves H and
// E_K(J0). aes_gcm_batch_tags then folds, per message, its AAD and its items' sums by Horner's
// rule (Y ← Y·H^(blocks of the item) ⊕ S), the length block, and forms the tag.
// Per message, written by its first item: H, then E_K(J0) (GCM's big-endian words).
struct GcmMessage {
    uint4 h, ek_j0;
};

BC_DEVICE uint4 be_words(uint4 v) { return make_uint4(bswap32(v.x), bswap32(v.y), bswap32(v.z), bswap32(v.w)); }

template <int R>
BC_DEVICE void gcm_span(const aes::Key& k, aes::LaneTable t, const uint32_t j0[4], const Item& it, bool decrypt, const uint8_t* in,
                        uint8_t* out, uint4* sum, GcmMessage* msg) {
    uint32_t s[4] = {0, 0, 0, 0};
    aes::encrypt<R>(k, t, s);
    const uint4 h = make_uint4(s[0], s[1], s[2], s[3]);
    if (it.b0 == 0) {
        uint32_t e[4] = {j0[0], j0[1], j0[2], j0[3]};
        aes::encrypt<R>(k, t, e);
        *msg = GcmMessage{h, make_uint4(e[0], e[1], e[2], e[3])};
    }
    uint4 acc = make_uint4(0, 0, 0, 0);
    for (uint64_t b = it.b0; b < it.b1; ++b) {
        aes::add_counter(j0, 1 + b, true, s);
        aes::encrypt<R>(k, t, s);
        const uint32_t n = it.len - 16 * b < 16 ? (uint32_t)(it.len - 16 * b) : 16;
        const uint4 x = aes::load_span(in + 16 * b, n), y = aes::apply(x, s, 0, n);
        aes::store_span(out + 16 * b, n, y);
        acc = gf128::mul(gf128::xor4(acc, be_words(decrypt ? x : y)), h);
    }
    *sum = acc;
}

extern "C" __global__ void __launch_bounds__(256)
    aes_gcm_batch(Batch p, const uint32_t* nonces, const uint32_t* keys, const uint64_t* offs, const uint64_t* segs, const uint8_t* in,
                  uint8_t* out, uint4* sums, GcmMessage* msgs) {
    __shared__ uint32_t table[aes::TABLE_WORDS];
    aes::fill_table(table);
    __syncthreads();
    const aes::LaneTable t = aes::lane_table(table);
    BC_FOR_EACH_ITEM(g, p.segments) {
        const Item it = item(g, p.messages, p.len, offs, segs);
        const uint32_t* nw = nonces + 3 * it.i;
        const uint32_t j0[4] = {bswap32(nw[0]), bswap32(nw[1]), bswap32(nw[2]), 1};
        const uint8_t* src = in + it.start;
        uint8_t* dst = out + it.start;
        const bool dec = p.decrypt != 0;
        with_key(t, keys ? keys + KEY_WORDS * it.i : nullptr, p.key, [&](const aes::Key& k, auto r) {
            gcm_span<decltype(r)::value>(k, t, j0, it, dec, src, dst, sums + g, msgs + it.i);
        });
    }
}

// x^e for e ≥ 1 by squaring and multiplying.
BC_DEVICE uint4 gf_pow(uint4 x, uint64_t e) {
    uint4 r = x;
    int top = 63;
    while (!((e >> top) & 1)) --top;
    for (int i = top - 1; i >= 0; --i) {
        r = gf128::mul(r, r);
        if ((e >> i) & 1) r = gf128::mul(r, x);
    }
    return r;
}

// The block at p of n ≤ 16 bytes as GCM's big-endian words, zero-padded.
BC_DEVICE uint4 ghash_block(const uint8_t* p, uint32_t n) { return be_words(aes::load_span(p, n)); }

// One thread per message. aad_offs (n + 1 entries, relative to aad) and aad, or null for none;
// tags: 16 bytes per message.
extern "C" __global__ void __launch_bounds__(256)
    aes_gcm_batch_tags(Batch p, const uint64_t* offs, const uint64_t* segs, const uint64_t* aad_offs, const uint8_t* aad,
                       const uint4* sums, const GcmMessage* msgs, uint4* tags) {
    BC_FOR_EACH_ITEM(i, p.messages) {
        const uint64_t len = p.len ? p.len : offs[i + 1] - offs[i];
        const uint64_t blocks = (len + 15) / 16, per = (blocks + SEG_BLOCKS - 1) / SEG_BLOCKS;
        const uint64_t seg0 = p.len ? i * per : segs[i];
        const uint4 h = msgs[i].h, ek = msgs[i].ek_j0;
        uint4 y = make_uint4(0, 0, 0, 0);
        uint64_t alen = 0;
        // Generic products cost about a block's AES each: none is spent on a Y still zero (a
        // message without AAD starts from its first item's sum).
        bool zero = true;
        if (aad) {
            const uint8_t* a = aad + aad_offs[i];
            alen = aad_offs[i + 1] - aad_offs[i];
            for (uint64_t j = 0; j < alen; j += 16) {
                const uint32_t n = alen - j < 16 ? (uint32_t)(alen - j) : 16;
                y = gf128::mul(gf128::xor4(y, ghash_block(a + j, n)), h);
            }
            zero = alen == 0;
        }
        if (blocks) {
            // H^SEG_BLOCKS, unless no product by it follows.
            const bool need_seg = per > 1 || (!zero && blocks == SEG_BLOCKS);
            const uint4 h_seg = need_seg ? gf_pow(h, SEG_BLOCKS) : h;
            for (uint64_t k = 0; k < per; ++k) {
                const uint64_t nb = k + 1 < per ? SEG_BLOCKS : blocks - SEG_BLOCKS * k;
                if (!zero) y = gf128::mul(y, nb == SEG_BLOCKS ? h_seg : gf_pow(h, nb));
                y = gf128::xor4(y, sums[seg0 + k]);
                zero = false;
            }
        }
        const uint64_t abits = 8 * alen, cbits = 8 * len;
        const uint4 lens = make_uint4((uint32_t)(abits >> 32), (uint32_t)abits, (uint32_t)(cbits >> 32), (uint32_t)cbits);
        y = gf128::xor4(gf128::mul(gf128::xor4(y, lens), h), ek);
        tags[i] = be_words(y);
    }
}

// XTS over a batch (IEEE 1619): each message is one data unit of at least one block. The host
// prepares what costs a key schedule: per message its first block's tweak E_K2(tweak) (tweaks,
// 16 bytes as little-endian words), and the data key's round keys (keys: XTS_KEY_WORDS words per
// message, rounds in word 60; the equivalent inverse cipher's when decrypting; null: p.key for
// all). A message ending in a partial block has its last whole block and the partial one as a
// ciphertext-stealing pair, taken by the item that holds the partial block.
constexpr uint32_t XTS_KEY_WORDS = 64;

// t·α^n for any n.
BC_DEVICE xts::Tweak tweak_at(xts::Tweak t, uint64_t n) {
    while (n) {
        const uint32_t s = n < 64 ? (uint32_t)n : 64;
        t = xts::mul_alpha(t, s);
        n -= s;
    }
    return t;
}

template <int R, bool Decrypt>
BC_DEVICE uint4 xts_block(const aes::Key& k, aes::LaneTable t, aes::LaneTable inv, xts::Tweak tw, uint4 x) {
    const uint4 w = xts::to_words(tw);
    uint32_t s[4] = {bswap32(x.x ^ w.x), bswap32(x.y ^ w.y), bswap32(x.z ^ w.z), bswap32(x.w ^ w.w)};
    if (Decrypt) aes::decrypt<R>(k, t, inv, s);
    else aes::encrypt<R>(k, t, s);
    return make_uint4(bswap32(s[0]) ^ w.x, bswap32(s[1]) ^ w.y, bswap32(s[2]) ^ w.z, bswap32(s[3]) ^ w.w);
}

// Bytes [0, r) of a, the rest of b (little-endian words).
BC_DEVICE uint4 splice(uint4 a, uint4 b, uint32_t r) {
    const uint32_t wa[4] = {a.x, a.y, a.z, a.w}, wb[4] = {b.x, b.y, b.z, b.w};
    uint32_t o[4];
#pragma unroll
    for (uint32_t i = 0; i < 4; ++i) {
        const uint32_t m = r >= 4 * i + 4 ? ~0u : r <= 4 * i ? 0u : (1u << (8 * (r - 4 * i))) - 1;
        o[i] = (wa[i] & m) | (wb[i] & ~m);
    }
    return make_uint4(o[0], o[1], o[2], o[3]);
}

template <int R, bool Decrypt>
BC_DEVICE void xts_span(const aes::Key& k, aes::LaneTable t, aes::LaneTable inv, xts::Tweak t0, const Item& it, const uint8_t* in,
                        uint8_t* out) {
    const uint64_t full = it.len / 16;
    const uint32_t r = (uint32_t)(it.len % 16);
    const uint64_t plain_end = r ? full - 1 : full;  // the blocks before a stolen pair
    xts::Tweak w = tweak_at(t0, it.b0);
    for (uint64_t b = it.b0; b < it.b1 && b < plain_end; ++b) {
        aes::store_span(out + 16 * b, 16, xts_block<R, Decrypt>(k, t, inv, w, aes::load_span(in + 16 * b, 16)));
        w = xts::mul_alpha(w, 1);
    }
    if (r && it.b1 == full + 1) {
        // Encryption: CC = E(P[m-1]) under T[m-1]; C[m] = CC's first r bytes; C[m-1] = E(P[m] || the
        // rest of CC) under T[m]. Decryption takes the two tweaks the other way round.
        const xts::Tweak wa = tweak_at(t0, full - 1), wb = xts::mul_alpha(wa, 1);
        const uint4 y = xts_block<R, Decrypt>(k, t, inv, Decrypt ? wb : wa, aes::load_span(in + 16 * (full - 1), 16));
        const uint4 z = splice(aes::load_span(in + 16 * full, r), y, r);
        aes::store_span(out + 16 * full, r, y);
        aes::store_span(out + 16 * (full - 1), 16, xts_block<R, Decrypt>(k, t, inv, Decrypt ? wa : wb, z));
    }
}

template <bool Decrypt>
BC_DEVICE void xts_batch(const Batch& p, const uint4* tweaks, const uint32_t* keys, const uint64_t* offs, const uint64_t* segs,
                         const uint8_t* in, uint8_t* out, aes::LaneTable t, aes::LaneTable inv) {
    BC_FOR_EACH_ITEM(g, p.segments) {
        const Item it = item(g, p.messages, p.len, offs, segs);
        const xts::Tweak t0 = xts::from_words(tweaks[it.i]);
        const uint8_t* src = in + it.start;
        uint8_t* dst = out + it.start;
        if (keys) {
            const uint4* rec = reinterpret_cast<const uint4*>(keys + XTS_KEY_WORDS * it.i);
            aes::Key k;
#pragma unroll
            for (int j = 0; j < 15; ++j) {
                const uint4 v = rec[j];
                k.rk[4 * j] = v.x, k.rk[4 * j + 1] = v.y, k.rk[4 * j + 2] = v.z, k.rk[4 * j + 3] = v.w;
            }
            if (rec[15].x == 14) xts_span<14, Decrypt>(k, t, inv, t0, it, src, dst);
            else xts_span<10, Decrypt>(k, t, inv, t0, it, src, dst);
        } else if (p.key.rounds == 14) {
            xts_span<14, Decrypt>(p.key, t, inv, t0, it, src, dst);
        } else {
            xts_span<10, Decrypt>(p.key, t, inv, t0, it, src, dst);
        }
    }
}

extern "C" __global__ void __launch_bounds__(256)
    aes_xts_batch_encrypt(Batch p, const uint4* tweaks, const uint32_t* keys, const uint64_t* offs, const uint64_t* segs,
                          const uint8_t* in, uint8_t* out) {
    __shared__ uint32_t table[aes::TABLE_WORDS];
    aes::fill_table(table);
    __syncthreads();
    const aes::LaneTable t = aes::lane_table(table);
    xts_batch<false>(p, tweaks, keys, offs, segs, in, out, t, t);
}

// Decryption: the inverse cipher's tables (40 KiB of shared memory).
extern "C" __global__ void __launch_bounds__(256)
    aes_xts_batch_decrypt(Batch p, const uint4* tweaks, const uint32_t* keys, const uint64_t* offs, const uint64_t* segs,
                          const uint8_t* in, uint8_t* out) {
    __shared__ uint32_t table[aes::TABLE_WORDS];
    __shared__ uint32_t inv[aes::INV_SBOX_WORDS];
    aes::fill_inverse_tables(table, inv);
    __syncthreads();
    const aes::LaneTable t = aes::lane_table(table), i = aes::lane_table(inv);
    xts_batch<true>(p, tweaks, keys, offs, segs, in, out, t, i);
}
