// Merkle-Damgard hashing over any compression function with SHA-256's framing (64-byte blocks,
// big-endian words, 0x80 then the 64-bit bit length): SHA-256 and SM3 share it. A hash policy H
// provides `init(uint32_t s[8])` and `compress(uint32_t s[8], uint32_t w[16])` (w consumed).
#pragma once
#include "bc/common.cuh"

namespace bc {

// Big-endian word of a message that may start at any byte address.
BC_DEVICE uint32_t load_be(const uint8_t* p, bool aligned) {
    if (aligned) return bswap32(*reinterpret_cast<const uint32_t*>(p));
    return (uint32_t(p[0]) << 24) | (uint32_t(p[1]) << 16) | (uint32_t(p[2]) << 8) | uint32_t(p[3]);
}

// Stores digest i of a batch as 32 bytes (big-endian words), as the CPU backends produce them.
BC_DEVICE void store_digest(uint8_t* out, uint64_t i, const uint32_t s[8]) {
    uint4* o = reinterpret_cast<uint4*>(out + 32 * i);
    o[0] = make_uint4(bswap32(s[0]), bswap32(s[1]), bswap32(s[2]), bswap32(s[3]));
    o[1] = make_uint4(bswap32(s[4]), bswap32(s[5]), bswap32(s[6]), bswap32(s[7]));
}

// Hashes one message of any length: whole blocks straight from memory, then the padded tail.
template <class H>
BC_DEVICE void md_hash(const uint8_t* msg, uint64_t len, uint32_t s[8]) {
    const bool aligned = (reinterpret_cast<uintptr_t>(msg) & 3) == 0;
    H::init(s);
    uint32_t w[16];
    uint64_t full = len / 64;
    for (uint64_t blk = 0; blk < full; ++blk) {
#pragma unroll
        for (int j = 0; j < 16; ++j) w[j] = load_be(msg + 64 * blk + 4 * j, aligned);
        H::compress(s, w);
    }
    // Tail: the remaining bytes, 0x80, zeros, and the 64-bit bit length; one or two blocks.
    const uint8_t* tail = msg + 64 * full;
    uint32_t rest = uint32_t(len - 64 * full);
    uint32_t blocks = rest + 9 <= 64 ? 1 : 2;
    uint64_t bits = len * 8;
    for (uint32_t blk = 0; blk < blocks; ++blk) {
#pragma unroll
        for (int j = 0; j < 16; ++j) {
            uint32_t word = 0;
#pragma unroll
            for (int k = 0; k < 4; ++k) {
                uint32_t pos = 64 * blk + 4 * j + k;
                uint32_t byte = pos < rest ? tail[pos] : (pos == rest ? 0x80u : 0u);
                word = (word << 8) | byte;
            }
            w[j] = word;
        }
        if (blk == blocks - 1) {
            w[14] |= uint32_t(bits >> 32);
            w[15] |= uint32_t(bits);
        }
        H::compress(s, w);
    }
}

// A hash fed piece by piece (for messages assembled from parts, as in RFC 9380's
// expand_message_xmd). Bytes go into a big-endian block buffer; a full block is compressed.
template <class H>
struct MdStream {
    uint32_t s[8];
    uint32_t w[16];
    uint32_t fill;  // bytes in w
    uint64_t total;

    BC_DEVICE MdStream() : fill(0), total(0) {
        H::init(s);
#pragma unroll
        for (int i = 0; i < 16; ++i) w[i] = 0;
    }

    BC_DEVICE void byte(uint32_t b) {
        w[fill >> 2] |= (b & 0xff) << (24 - 8 * (fill & 3));
        ++total;
        if (++fill == 64) {
            H::compress(s, w);
#pragma unroll
            for (int i = 0; i < 16; ++i) w[i] = 0;
            fill = 0;
        }
    }
    BC_DEVICE void bytes(const uint8_t* p, uint32_t n) {
        for (uint32_t i = 0; i < n; ++i) byte(p[i]);
    }
    // Eight big-endian words (a digest), as 32 bytes.
    BC_DEVICE void words(const uint32_t d[8]) {
        for (int i = 0; i < 8; ++i)
            for (int k = 24; k >= 0; k -= 8) byte(d[i] >> k);
    }
    BC_DEVICE void finish(uint32_t out[8]) {
        uint64_t bits = total * 8;
        byte(0x80);
        while (fill != 56) byte(0);
        for (int k = 56; k >= 0; k -= 8) byte(uint32_t(bits >> k));
#pragma unroll
        for (int i = 0; i < 8; ++i) out[i] = s[i];
    }
};

}  // namespace bc
