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
// The segment is seen as shifted right by shift = -len mod T blocks (T threads per CTA, a power
// of two), so that it ends on a whole row of T: thread t takes the blocks at shifted positions
// t, t+T, t+2T, … and runs Horner's rule with the fixed factor K = H^T from Shoup tables. Its
// last block then sits at shifted position len + shift - T + t and needs H^(T - t), whatever the
// segment's length; leading shifted positions hold no block, which Horner's rule treats as zero.
// The CTA sums the threads' values as a tree whose every level multiplies by one fixed power:
// Σ_t a_t·H^(T-t) = H^(T/2-t)-weighted sums of a_t·H^(T/2) ⊕ a_(t+T/2), down to a_0·H at the
// root. Every product is a table look-up (the generic bit-serial product cost about three
// blocks' work per thread, most of a segment when segments are short). The host weighs the
// segments' Y_s by powers of H into the GHASH of the whole buffer.
template <int R>
BC_DEVICE void gcm_segments(const Gcm& p, const uint8_t* in, uint8_t* out, const uint4* levels, uint32_t* seg_out, aes::LaneTable lane_t,
                            const uint4* m, uint4* red) {
    const uint64_t bytes = p.c.bytes, blocks = (bytes + 15) / 16, nseg = (blocks + p.seg_blocks - 1) / p.seg_blocks;
    const uint32_t T = blockDim.x;
    for (uint64_t seg = blockIdx.x; seg < nseg; seg += gridDim.x) {
        const uint64_t start = seg * p.seg_blocks, len = blocks - start < p.seg_blocks ? blocks - start : p.seg_blocks;
        const uint64_t shift = (T - len % T) % T;
        uint4 acc = make_uint4(0, 0, 0, 0);
        bool first = true;
        for (uint64_t v = threadIdx.x < shift ? threadIdx.x + T : threadIdx.x; v < len + shift; v += T) {
            const uint64_t b = start + v - shift;
            uint32_t s[4];
            aes::counter(p.c, b, s);
            aes::encrypt<R>(p.c.key, lane_t, s);
            uint4 x = aes::load_block(in, b, bytes), y = aes::apply(x, s, b, bytes);
            aes::store_block(out, b, bytes, y);
            uint4 c = p.decrypt ? x : y;
            c = make_uint4(bswap32(c.x), bswap32(c.y), bswap32(c.z), bswap32(c.w));
            acc = first ? c : gf128::xor4(gf128::mul_table(acc, m), c);
            first = false;
        }
        red[threadIdx.x] = acc;
        __syncthreads();
        // levels: the Shoup tables of H^(2^j), j = 0 .. log2(T) - 1, 256 elements each.
        uint32_t lg = 0;
        while ((1u << lg) < T) ++lg;
        for (uint32_t half = T / 2, j = lg - 1; half > 0; half /= 2, --j) {
            if (threadIdx.x < half) red[threadIdx.x] = gf128::xor4(gf128::mul_table(red[threadIdx.x], levels + 256 * j), red[threadIdx.x + half]);
            __syncthreads();
        }
        if (threadIdx.x == 0) {
            uint4 y = gf128::mul_table(red[0], levels);
            seg_out[4 * seg] = y.x, seg_out[4 * seg + 1] = y.y, seg_out[4 * seg + 2] = y.z, seg_out[4 * seg + 3] = y.w;
        }
        __syncthreads();
    }
}

// GCM's counter mode and the GHASH partial sums of each segment of p.seg_blocks blocks.
// tables: the Shoup table of K = H^T, then those of H^1, H^2, H^4, … H^(T/2) (256 elements
// each), T = blockDim.x, a power of two. seg_out: four big-endian words per segment.
extern "C" __global__ void __launch_bounds__(256) aes_gcm(Gcm p, const uint8_t* in, uint8_t* out, const uint32_t* tables, uint32_t* seg_out) {
    __shared__ uint32_t table[aes::TABLE_WORDS];
    __shared__ uint4 m[256];
    __shared__ uint4 red[256];
    aes::fill_table(table);
    const uint4* tm = reinterpret_cast<const uint4*>(tables);
    for (uint32_t i = threadIdx.x; i < 256; i += blockDim.x) m[i] = tm[i];
    __syncthreads();
    const aes::LaneTable lane_t = aes::lane_table(table);
    const uint4* levels = tm + 256;
    if (p.c.key.rounds == 14) gcm_segments<14>(p, in, out, levels, seg_out, lane_t, m, red);
    else gcm_segments<10>(p, in, out, levels, seg_out, lane_t, m, red);
}
