// AES-CTR and AES-GCM over one buffer. Each thread takes whole 16-byte blocks; warps read and
// write 512 contiguous bytes at a time.
#include "aes.cuh"

using namespace bc;

template <int R>
BC_DEVICE void ctr_blocks(const aes::Ctr& p, const uint8_t* in, uint8_t* out, aes::LaneTable lane_t) {
    uint64_t blocks = (p.bytes + 15) / 16;
    BC_FOR_EACH_ITEM(b, blocks) {
        uint32_t s[4];
        aes::counter(p, b, s);
        aes::encrypt<R>(p.key, lane_t, s);
        aes::store_block(out, b, p.bytes, aes::apply(aes::load_block(in, b, p.bytes), s, b, p.bytes));
    }
}

// Counter mode over p.bytes bytes; in and out may be the same buffer.
extern "C" __global__ void __launch_bounds__(256) aes_ctr(aes::Ctr p, const uint8_t* in, uint8_t* out) {
    __shared__ uint32_t table[aes::TABLE_WORDS];
    aes::fill_table(table);
    __syncthreads();
    const aes::LaneTable lane_t = aes::lane_table(table);
    if (p.key.rounds == 14) ctr_blocks<14>(p, in, out, lane_t);
    else ctr_blocks<10>(p, in, out, lane_t);
}

struct Gcm {
    aes::Ctr c;
    uint64_t seg_blocks;  // blocks per GHASH segment (the last may be shorter)
    uint32_t decrypt;     // GHASH the input (ciphertext) rather than the output
    uint32_t pad;
};

// Segment layout: block i of a segment of len blocks carries H^(len - i) in the segment's sum.
// Thread t takes blocks t, t+T, t+2T, … (T threads per CTA) and runs Horner's rule with the
// fixed factor K = H^T from Shoup tables; its last block i then needs H^(len - i), 1 ≤ len - i ≤ T,
// one generic product. The CTA XORs its threads' sums into Y_s; the host weighs the Y_s by
// powers of H into the GHASH of the whole buffer.
template <int R>
BC_DEVICE void gcm_segments(const Gcm& p, const uint8_t* in, uint8_t* out, const uint4* powers, uint32_t* seg_out, aes::LaneTable lane_t,
                            const uint4* m, const uint32_t* r, uint4* red) {
    const uint64_t bytes = p.c.bytes, blocks = (bytes + 15) / 16, nseg = (blocks + p.seg_blocks - 1) / p.seg_blocks;
    for (uint64_t seg = blockIdx.x; seg < nseg; seg += gridDim.x) {
        const uint64_t start = seg * p.seg_blocks, len = blocks - start < p.seg_blocks ? blocks - start : p.seg_blocks;
        uint4 acc = make_uint4(0, 0, 0, 0);
        uint64_t last = len;
        for (uint64_t i = threadIdx.x; i < len; i += blockDim.x) {
            const uint64_t b = start + i;
            uint32_t s[4];
            aes::counter(p.c, b, s);
            aes::encrypt<R>(p.c.key, lane_t, s);
            uint4 x = aes::load_block(in, b, bytes), y = aes::apply(x, s, b, bytes);
            aes::store_block(out, b, bytes, y);
            uint4 c = p.decrypt ? x : y;
            c = make_uint4(bswap32(c.x), bswap32(c.y), bswap32(c.z), bswap32(c.w));
            acc = last == len ? c : gf128::xor4(gf128::mul_table(acc, m, r), c);
            last = i;
        }
        if (last != len) acc = gf128::mul(acc, powers[len - 1 - last]);
        red[threadIdx.x] = acc;
        __syncthreads();
        for (uint32_t half = blockDim.x / 2; half > 0; half /= 2) {
            if (threadIdx.x < half) red[threadIdx.x] = gf128::xor4(red[threadIdx.x], red[threadIdx.x + half]);
            __syncthreads();
        }
        if (threadIdx.x == 0) {
            uint4 y = red[0];
            seg_out[4 * seg] = y.x, seg_out[4 * seg + 1] = y.y, seg_out[4 * seg + 2] = y.z, seg_out[4 * seg + 3] = y.w;
        }
        __syncthreads();
    }
}

// GCM's counter mode and the GHASH partial sums of each segment of p.seg_blocks blocks.
// tables: the Shoup tables of K = H^T (256 elements, then 256 reduction words), then H^1..H^T,
// T = blockDim.x, a power of two. seg_out: four big-endian words per segment.
extern "C" __global__ void __launch_bounds__(256) aes_gcm(Gcm p, const uint8_t* in, uint8_t* out, const uint32_t* tables, uint32_t* seg_out) {
    __shared__ uint32_t table[aes::TABLE_WORDS];
    __shared__ uint4 m[256];
    __shared__ uint32_t r[256];
    __shared__ uint4 red[256];
    aes::fill_table(table);
    const uint4* tm = reinterpret_cast<const uint4*>(tables);
    for (uint32_t i = threadIdx.x; i < 256; i += blockDim.x) m[i] = tm[i], r[i] = tables[1024 + i];
    __syncthreads();
    const aes::LaneTable lane_t = aes::lane_table(table);
    const uint4* powers = reinterpret_cast<const uint4*>(tables + 1280);
    if (p.c.key.rounds == 14) gcm_segments<14>(p, in, out, powers, seg_out, lane_t, m, r, red);
    else gcm_segments<10>(p, in, out, powers, seg_out, lane_t, m, r, red);
}
