// Multi-scalar multiplication sum k_i P_i by Pippenger's bucket method, generic over the curve C
// (which names its scalar field C::Scalar and C::SCALAR_BITS). The host (crate::msm) chains the
// steps and sizes every buffer:
//
//   1. digits:     each scalar -> signed c-bit window digits; a histogram of (window, bucket).
//   2. scan:       exclusive prefix sums of the histogram -> where each bucket's list starts.
//   3. scatter:    (point index, sign) of every non-zero digit into its bucket's list; the lists
//                  of all windows form one array sorted by bucket key (window * B + |digit| - 1),
//                  the histogram's sums becoming each bucket's end.
//   4. accumulate: the sorted array is cut into equal slices, one per thread, so a bucket holding
//                  half the points (scalars that are mostly 0 and 1, as in a Groth16 witness)
//                  costs no more than uniform ones. Points are summed in XYZZ coordinates (G1)
//                  or Jacobian ones (G2, whose XYZZ sums ran slower over Fp2). A bucket wholly
//                  inside a slice is summed and written; the first and last bucket of each slice
//                  may continue in a neighbour, so their partial sums (with their keys) go to a
//                  list of two per slice, and the same step runs on it until one slice remains.
//   5. windows:    each window's sum_m m * bucket_m by running sums over segments of buckets.
//   6. groups:     the segments' results summed per window.
// The host adds the windows (a few hundred doublings). Scalars that cross to the GPU in chunks
// (a large MSM, so that a chunk's steps overlap the next one's copy) run steps 1-4 per chunk,
// each chunk's buckets added into the others' (add_buckets) before steps 5-6.
//
// Fixed bases (a proving key's, reused by every proof) may be precomputed: `copies` shifted
// copies of the bases, copy j = 2^(c sets j) P_i, one after another `stride` points apart. Digit
// window w then adds its point from copy w / sets into the buckets of window w % sets, so only
// `sets` windows of buckets are reduced (step 5) and combined (by the host), however many digit
// windows the scalars have. Without precomputation sets = windows and every digit uses copy 0.
//
// Every kernel walks its items grid-stride and needs no particular block size, so the host
// emulation (one thread for the whole grid) runs the same code.
#pragma once
#include "bc/ecmult.cuh"

namespace bc::msm {

// A digit as stored between steps 1 and 3: 0 for none, else |d| with the sign in the top bit.
constexpr uint32_t NEGATIVE = 0x80000000u;

// atomicAdd(&counters[key], 1) for each calling thread, returning its slot: on the GPU one atomic
// per distinct key among a warp's active threads, the lanes that share it taking consecutive
// slots. Few buckets can draw most entries (a top digit window of a few bits, a witness of zeros
// and ones), and the atomics on one address run one after another.
BC_DEVICE uint32_t claim(uint32_t* counters, uint32_t key) {
#ifdef __CUDA_ARCH__
    // Inline PTX: the intrinsics need libdevice symbols some toolkits lack.
    uint32_t active, peers, lane, below, base = 0, slot;
    asm volatile("activemask.b32 %0;" : "=r"(active));
    asm volatile("match.any.sync.b32 %0, %1, %2;" : "=r"(peers) : "r"(key), "r"(active));
    asm("mov.u32 %0, %%laneid;" : "=r"(lane));
    asm("mov.u32 %0, %%lanemask_lt;" : "=r"(below));
    const uint32_t leader = uint32_t(__ffs(peers) - 1);
    if (lane == leader) base = atomicAdd(&counters[key], uint32_t(__popc(peers)));
    asm volatile("shfl.sync.idx.b32 %0, %1, %2, 0x1f, %3;" : "=r"(slot) : "r"(base), "r"(leader), "r"(peers));
    return slot + uint32_t(__popc(peers & below));
#else
    return atomicAdd(&counters[key], 1u);
#endif
}

// Step 1. Scalars arrive in the scalar field's representation (Montgomery for arkworks' Fr) and
// are converted here, or as canonical integers (`montgomery` 0: a caller's numpy limbs, read as
// they are, checked below the order on the host as they crossed); digits are stored
// window-major (digits[w * n + i]) so that step 3 reads them coalesced.
//
// An MSM split over several GPUs gives each a part of its cells (digit window w of scalar i is
// cell w * points + i, the n scalars here being those of `first..`): [from, to), whole windows
// lo..hi but for the first and last, which it may share with its neighbours. Every GPU recodes
// each scalar from its lowest window (the carries) and keeps the digits of its windows, zero
// outside its cells; its bucket windows count from `off` (0, or lo where precomputed copies
// hold the shifts: bucket window (w - lo + off) % sets).
template <class C>
BC_DEVICE void digits(const uint32_t* scalars, uint32_t montgomery, uint64_t n, uint32_t first, uint64_t points, uint64_t from, uint64_t to, uint32_t c, uint32_t windows, uint32_t off, uint32_t sets, uint32_t* out, uint32_t* counts) {
    const uint32_t half = 1u << (c - 1);
    const uint64_t per = points ? points : 1;  // no scalars: no cells, nothing walked
    const uint32_t lo = uint32_t(from / per), hi = uint32_t((to + per - 1) / per);
    BC_FOR_EACH_ITEM(i, n) {
        typename C::Scalar s;
#pragma unroll
        for (int j = 0; j < LIMBS; ++j) s.v[j] = scalars[i * LIMBS + j];
        uint32_t k[LIMBS];
        if (montgomery) {
            s.to_plain(k);
        } else {
#pragma unroll
            for (int j = 0; j < LIMBS; ++j) k[j] = s.v[j];
        }
        uint32_t carry = 0;
        for (uint32_t w = 0; w < hi; ++w) {
            uint32_t v = bits_at(k, int(w * c), int(c)) + carry;
            carry = v > half;
            if (w < lo) continue;
            uint32_t code = 0;
            if (carry) {
                uint32_t m = (1u << c) - v;  // |v - 2^c|, zero when v = 2^c
                if (m) code = m | NEGATIVE;
            } else {
                code = v;
            }
            const uint64_t cell = uint64_t(w) * points + first + i;
            if (cell < from || cell >= to) code = 0;
            // The top window's few bits of digits are the usual hot buckets here; a warp's
            // match over the other windows' spread digits costs more than it saves.
            uint32_t key = ((w - lo + off) % sets) * half + (code & ~NEGATIVE) - 1;
            if (code && w + 1 == windows) claim(counts, key);
            else if (code) atomicAdd(&counts[key], 1u);
            out[uint64_t(w - lo) * n + i] = code;
        }
    }
}

// Step 2, in three launches: exclusive sums within tiles of `tile` entries (a multiple of the
// block size) with each tile's total in totals[t]; the same over the totals (one tile), whose
// grand total lands in totals[tiles]; then each tile's offset added back.
BC_DEVICE void scan_tiles(uint32_t* data, uint64_t m, uint32_t tile, uint32_t* totals) {
    __shared__ uint32_t part[1024];  // one per thread: blocks of at most 1024 threads
    const uint64_t tiles = (m + tile - 1) / tile;
    const uint32_t per = tile / blockDim.x;
    for (uint64_t t = blockIdx.x; t < tiles; t += gridDim.x) {
        const uint64_t base = t * tile + uint64_t(threadIdx.x) * per;
        uint32_t sum = 0;
        for (uint32_t j = 0; j < per; ++j)
            if (base + j < m) sum += data[base + j];
        part[threadIdx.x] = sum;
        __syncthreads();
        if (threadIdx.x == 0) {
            uint32_t run = 0;
            for (uint32_t j = 0; j < blockDim.x; ++j) {
                uint32_t x = part[j];
                part[j] = run;
                run += x;
            }
            totals[t] = run;
        }
        __syncthreads();
        uint32_t run = part[threadIdx.x];
        for (uint32_t j = 0; j < per; ++j) {
            if (base + j < m) {
                uint32_t x = data[base + j];
                data[base + j] = run;
                run += x;
            }
        }
        __syncthreads();
    }
}

BC_DEVICE void scan_add(uint32_t* data, uint64_t m, uint32_t tile, const uint32_t* offsets) {
    BC_FOR_EACH_ITEM(j, m) data[j] += offsets[j / tile];
}

// Step 3. `cursor` starts as a copy of the bucket offsets and ends as each bucket's end (the next
// bucket's offset), which is all step 4 needs to tell the buckets apart: no key is stored per
// entry. The order within a bucket depends on the GPU's scheduling, the sum does not. An entry
// names its base in the (precomputed) copy its digit window reads, counted from the first copy
// the part reads; the n scalars are those of bases first.. (a chunk of a larger MSM), over the
// part's `windows` digit windows (step 1's `off` and `sets`).
BC_DEVICE void scatter(const uint32_t* digits, uint64_t n, uint32_t first, uint32_t c, uint32_t windows, uint32_t off, uint32_t sets, uint32_t stride, uint32_t* cursor, uint32_t* entries) {
    const uint32_t half = 1u << (c - 1);
    BC_FOR_EACH_ITEM(j, n * windows) {
        uint32_t code = digits[j];
        if (!code) continue;
        uint32_t w = uint32_t(j / n) + off, i = uint32_t(j % n);
        uint32_t key = (w % sets) * half + (code & ~NEGATIVE) - 1;
        uint32_t pos = claim(cursor, key);
        entries[pos] = ((w / sets - off / sets) * stride + first + i) | (code & NEGATIVE);
    }
}

// The bucket keys of sorted entries, read in increasing order: an array of one key per entry
// (the partial sums of a level), or the buckets' ends (the scattered entries), walked from the
// bucket of the slice's first entry, found by bisection.
struct KeyArray {
    const uint32_t* keys;
    BC_DEVICE uint32_t start(uint64_t j) { return keys[j]; }
    BC_DEVICE uint32_t at(uint64_t j) { return keys[j]; }
};

struct BucketEnds {
    const uint32_t* ends;
    uint32_t count;
    uint32_t key = 0;
    uint64_t end = 0;
    BC_DEVICE uint32_t start(uint64_t j) {
        uint32_t lo = 0, hi = count - 1;  // the first bucket ending after j; the last one does
        while (lo < hi) {
            const uint32_t mid = (lo + hi) / 2;
            if (ends[mid] > j) hi = mid;
            else lo = mid + 1;
        }
        key = lo;
        end = ends[lo];
        return key;
    }
    BC_DEVICE uint32_t at(uint64_t j) {
        while (j >= end) end = ends[++key];
        return key;
    }
};

template <class C>
BC_DEVICE const Jacobian<C>& as_jacobian(const Jacobian<C>& p) { return p; }
template <class C>
BC_DEVICE Jacobian<C> as_jacobian(const Xyzz<C>& p) { return p.to_jacobian(); }

// Step 4 over `total` entries sorted by key, `slice` per thread, summed into accumulators of type
// Acc. `load(j)` reads entry j's point, one entry ahead of `add(acc, point)`, so that the gather's
// latency overlaps an addition. Buckets summed whole go to buckets[key]; the partial sums of each
// slice's first and last bucket go to next_keys/next_pts[2t], [2t + 1] (a slice of one bucket
// pads with infinity), unless this is the last level (one slice), which writes every bucket.
template <class C, class Acc, class Keys, class Load, class Add>
BC_DEVICE void accumulate(Keys keys_of, uint64_t total, uint32_t slice, Load load, Add add, Jacobian<C>* buckets, uint32_t* next_keys, Jacobian<C>* next_pts) {
    const uint64_t slices = (total + slice - 1) / slice;
    const bool last_level = slices == 1;
    BC_FOR_EACH_ITEM(t, slices) {
        const uint64_t start = t * slice, end = start + slice < total ? start + slice : total;
        Keys keys = keys_of;
        uint32_t cur = keys.start(start);
        bool first = true;  // whether `cur` is the slice's first bucket
        Acc acc = Acc::infinity();
        auto ahead = load(start);
        for (uint64_t j = start; j < end; ++j) {
            const auto p = ahead;
            if (j + 1 < end) ahead = load(j + 1);
            const uint32_t key = keys.at(j);
            if (key != cur) {
                // A bucket that ends inside the slice: whole unless it began before it.
                if (last_level || !first) {
                    buckets[cur] = as_jacobian<C>(acc);
                } else {
                    next_keys[2 * t] = cur;
                    next_pts[2 * t] = as_jacobian<C>(acc);
                }
                first = false;
                acc = Acc::infinity();
                cur = key;
            }
            add(acc, p);
        }
        // The slice's last bucket, which may go on in the next slice.
        if (last_level) {
            buckets[cur] = as_jacobian<C>(acc);
        } else if (first) {
            next_keys[2 * t] = cur;
            next_pts[2 * t] = as_jacobian<C>(acc);
            next_keys[2 * t + 1] = cur;
            next_pts[2 * t + 1] = Jacobian<C>::infinity();
        } else {
            next_keys[2 * t + 1] = cur;
            next_pts[2 * t + 1] = as_jacobian<C>(acc);
        }
    }
}

// Step 4, first level: entries are base indices with a sign bit, in buckets that end at
// ends[0..buckets), summed in Acc coordinates (Jacobian or XYZZ).
template <class C, class Acc>
BC_DEVICE void accumulate_points(const Affine<C>* bases, const uint32_t* entries, const uint32_t* ends, uint32_t buckets_len, uint64_t total, uint32_t slice, Jacobian<C>* buckets, uint32_t* next_keys, Jacobian<C>* next_pts) {
    // The sign travels with the point, applied when it is added (negating at the load would wait
    // for the gather there).
    struct Signed {
        Affine<C> p;
        bool neg;
    };
    auto load = [&](uint64_t j) {
        const uint32_t e = entries[j];
        return Signed{bases[e & ~NEGATIVE], (e & NEGATIVE) != 0};
    };
    auto add = [&](Acc& acc, const Signed& s) { acc = acc.add(s.neg ? s.p.neg() : s.p); };
    accumulate<C, Acc>(BucketEnds{ends, buckets_len}, total, slice, load, add, buckets, next_keys, next_pts);
}

// Step 4, later levels: entries are partial sums with their keys.
template <class C>
BC_DEVICE void accumulate_partials(const Jacobian<C>* pts, const uint32_t* keys, uint64_t total, uint32_t slice, Jacobian<C>* buckets, uint32_t* next_keys, Jacobian<C>* next_pts) {
    auto load = [&](uint64_t j) { return pts[j]; };
    auto add = [&](Jacobian<C>& acc, const Jacobian<C>& p) { acc = acc.add(p); };
    accumulate<C, Jacobian<C>>(KeyArray{keys}, total, slice, load, add, buckets, next_keys, next_pts);
}

// Between steps 4 and 5 of an MSM whose scalars arrive in chunks: acc[i] += more[i], a chunk's
// buckets added into the buckets of those before it.
template <class C>
BC_DEVICE void add_buckets(Jacobian<C>* acc, const Jacobian<C>* more, uint64_t count) {
    BC_FOR_EACH_ITEM(i, count) acc[i] = acc[i].add(more[i]);
}

// k P for a small k (double-and-add from k's top bit).
template <class C>
BC_DEVICE Jacobian<C> mul_small(const Jacobian<C>& p, uint32_t k) {
    int top = 31;
    while (top > 0 && !((k >> top) & 1)) --top;
    Jacobian<C> r = Jacobian<C>::infinity();
    for (int bit = top; bit >= 0; --bit) {
        r = r.dbl();
        if ((k >> bit) & 1) r = r.add(p);
    }
    return r;
}

// Step 5: item j = (window w, segment s) of `per` buckets; out[j] = sum (index + 1) * bucket over
// the segment, so that the segments of a window add up to the window's sum.
template <class C>
BC_DEVICE void window_segments(const Jacobian<C>* buckets, uint32_t buckets_per_window, uint32_t windows, uint32_t per, Jacobian<C>* out) {
    const uint32_t segs = buckets_per_window / per;
    BC_FOR_EACH_ITEM(j, uint64_t(windows) * segs) {
        const uint32_t lo = uint32_t(j % segs) * per;
        const Jacobian<C>* b = buckets + (j / segs) * buckets_per_window + lo;
        // Running sums from the top: acc = sum (i + 1) * b[i] over the segment, run = sum b[i].
        Jacobian<C> run = Jacobian<C>::infinity(), acc = Jacobian<C>::infinity();
        for (int i = int(per) - 1; i >= 0; --i) {
            run = run.add(b[i]);
            acc = acc.add(run);
        }
        out[j] = lo ? acc.add(mul_small(run, lo)) : acc;
    }
}

// Step 6: out[g] = sum of in[g * m .. g * m + m).
template <class C>
BC_DEVICE void sum_groups(const Jacobian<C>* in, uint64_t groups, uint32_t m, Jacobian<C>* out) {
    BC_FOR_EACH_ITEM(g, groups) {
        Jacobian<C> acc = in[g * m];
        for (uint32_t i = 1; i < m; ++i) acc = acc.add(in[g * m + i]);
        out[g] = acc;
    }
}

// Precomputation: out[i] = 2^doublings in[i], affine. K points per thread share one inversion.
template <class C, int K>
BC_DEVICE void shift_bases(const Affine<C>* in, uint64_t n, uint32_t doublings, Affine<C>* out) {
    BC_FOR_EACH_ITEM(g, (n + K - 1) / K) {
        Jacobian<C> p[K];
        Affine<C> a[K];
#pragma unroll
        for (int k = 0; k < K; ++k) {
            const uint64_t i = g * K + k;
            p[k] = i < n ? Jacobian<C>::from(in[i]) : Jacobian<C>::infinity();
            for (uint32_t d = 0; d < doublings; ++d) p[k] = p[k].dbl();
        }
        to_affine_all<C, K>(p, a);
#pragma unroll
        for (int k = 0; k < K; ++k)
            if (g * K + k < n) out[g * K + k] = a[k];
    }
}

}  // namespace bc::msm

// The scalar steps of an MSM as kernels PREFIX_msm_digits, _scan_tiles, _scan_add and _scatter,
// for the scalars of curve C: they serve every group with those scalars.
#define BC_MSM_SCALAR_STEPS(PREFIX, C)                                                                         \
    extern "C" __global__ void PREFIX##_msm_digits(const uint32_t* scalars, uint32_t montgomery, uint64_t n, uint32_t first, uint64_t points, uint64_t from, uint64_t to, uint32_t c, uint32_t windows, uint32_t off, uint32_t sets, uint32_t* digits, uint32_t* counts) { \
        bc::msm::digits<C>(scalars, montgomery, n, first, points, from, to, c, windows, off, sets, digits, counts); \
    }                                                                                                          \
    extern "C" __global__ void PREFIX##_msm_scan_tiles(uint32_t* data, uint64_t m, uint32_t tile, uint32_t* totals) { \
        bc::msm::scan_tiles(data, m, tile, totals);                                                            \
    }                                                                                                          \
    extern "C" __global__ void PREFIX##_msm_scan_add(uint32_t* data, uint64_t m, uint32_t tile, const uint32_t* offsets) { \
        bc::msm::scan_add(data, m, tile, offsets);                                                             \
    }                                                                                                          \
    extern "C" __global__ void PREFIX##_msm_scatter(const uint32_t* digits, uint64_t n, uint32_t first, uint32_t c, uint32_t windows, uint32_t off, uint32_t sets, uint32_t stride, uint32_t* cursor, uint32_t* entries) { \
        bc::msm::scatter(digits, n, first, c, windows, off, sets, stride, cursor, entries);                    \
    }

// The steps that touch points, as kernels PREFIX_msm_accumulate_points, _accumulate_partials,
// _add_buckets, _window_segments, _sum_groups and _shift_bases, for group C. The accumulation,
// which bounds a large MSM, sums its buckets in bc::ACC<C> coordinates (Xyzz or Jacobian) and is
// compiled for ACC_BLOCKS blocks per SM: per group, what its kernels measured fastest (the
// accumulation alone by scripts/kernel-bench/field.sh with ACCUMULATE=1, the MSM by the
// benchmarks' msm-windows, bn254 and bls12-381 groups).
#define BC_MSM_POINT_STEPS(PREFIX, C, ACC, ACC_BLOCKS)                                                         \
    extern "C" __global__ void __launch_bounds__(128, ACC_BLOCKS) PREFIX##_msm_accumulate_points(              \
        const bc::Affine<C>* bases, const uint32_t* entries, const uint32_t* ends, uint32_t buckets_len,       \
        uint64_t total, uint32_t slice, bc::Jacobian<C>* buckets, uint32_t* next_keys,                        \
        bc::Jacobian<C>* next_pts) {                                                                          \
        bc::msm::accumulate_points<C, bc::ACC<C>>(bases, entries, ends, buckets_len, total, slice, buckets,   \
                                                   next_keys, next_pts);                                      \
    }                                                                                                          \
    extern "C" __global__ void __launch_bounds__(128) PREFIX##_msm_accumulate_partials(                        \
        const bc::Jacobian<C>* pts, const uint32_t* keys, uint64_t total, uint32_t slice,                     \
        bc::Jacobian<C>* buckets, uint32_t* next_keys, bc::Jacobian<C>* next_pts) {                           \
        bc::msm::accumulate_partials<C>(pts, keys, total, slice, buckets, next_keys, next_pts);               \
    }                                                                                                          \
    extern "C" __global__ void __launch_bounds__(128) PREFIX##_msm_add_buckets(                                \
        bc::Jacobian<C>* acc, const bc::Jacobian<C>* more, uint64_t count) {                                  \
        bc::msm::add_buckets<C>(acc, more, count);                                                            \
    }                                                                                                          \
    extern "C" __global__ void __launch_bounds__(128) PREFIX##_msm_window_segments(                            \
        const bc::Jacobian<C>* buckets, uint32_t buckets_per_window, uint32_t windows, uint32_t per,          \
        bc::Jacobian<C>* out) {                                                                               \
        bc::msm::window_segments<C>(buckets, buckets_per_window, windows, per, out);                          \
    }                                                                                                          \
    extern "C" __global__ void __launch_bounds__(128) PREFIX##_msm_sum_groups(                                 \
        const bc::Jacobian<C>* in, uint64_t groups, uint32_t m, bc::Jacobian<C>* out) {                       \
        bc::msm::sum_groups<C>(in, groups, m, out);                                                           \
    }                                                                                                          \
    extern "C" __global__ void __launch_bounds__(128) PREFIX##_msm_shift_bases(                                \
        const bc::Affine<C>* in, uint64_t n, uint32_t doublings, bc::Affine<C>* out) {                        \
        bc::msm::shift_bases<C, 4>(in, n, doublings, out);                                                    \
    }
