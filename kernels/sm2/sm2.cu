// SM2 scalar multiplication kernels: k G from the fixed-base table, k P for many points under one
// scalar (the ECDH-PSI blinding step), the same on SEC1-compressed points (decompressed here), and
// hash-to-curve fused with the multiplication. Integers cross the host boundary as eight
// little-endian 32-bit limbs; points as affine x, y (16 limbs, infinity as zeros), or compressed
// as x and a flag limb (9 limbs).
#include "sm2.cuh"
#include "bc/verify.cuh"

using namespace bc::sm2;

namespace {

using GTable = bc::FixedBase<Curve, bc::WIDE_G_WINDOW>;
// k G items per thread of sm2_mul_base; the block's threads share one inversion for the affine
// output (a quarter of the kernel's products when each thread inverted for its own items).
constexpr int BASE_ITEMS = 4;
constexpr int VAR_W = 5;  // variable-base window: 16 Jacobian multiples per thread

// The kernels below bring their results to affine with one inversion per block (BlockInverse):
// every thread of a block reaches it, those past the end or with a bad input carrying the point
// at infinity, which (as affine (0, 0)) is also what a bad input's output holds.
BC_DEVICE void store_point(uint32_t* dst, const PointAffine& a) {
    a.x.to_plain(dst);
    a.y.to_plain(dst + 8);
}

// Compressed points: x, then a flag limb. In: bit 0 = y is odd, bit 1 = not a valid encoding (the
// host's verdict on the prefix byte). Out: bit 0 = y is odd, bit 1 = a valid point.
// Out bit 2: the point at infinity (x = 0 then).
enum : uint32_t { C_ODD = 1, C_BAD = 2, C_VALID = 2, C_INFINITY = 4 };

BC_DEVICE void store_compressed(uint32_t* dst, const PointAffine& a) {
    a.x.to_plain(dst);  // zeros for infinity
    dst[8] = a.is_infinity() ? C_VALID | C_INFINITY : uint32_t(bc::is_odd(a.y)) | C_VALID;
}

// A compressed input point; false for a bad encoding or an x with no point.
BC_DEVICE bool decompress(const uint32_t* src, PointAffine& p) {
    return !(src[8] & C_BAD) && bc::decompress<Curve>(src, src[8] & C_ODD, p);
}

BC_DEVICE void load_scalar(uint32_t k[8], const uint32_t* src) {
#pragma unroll
    for (int i = 0; i < 8; ++i) k[i] = src[i];
}

// Big-endian 32-byte integers, as the host holds scalars and coordinates (SEC1, GM/T), read and
// written with one byte swap per word: the host then copies batches without converting them.
BC_DEVICE void load_scalar_be(uint32_t k[8], const uint32_t* src) {
#pragma unroll
    for (int i = 0; i < 8; ++i) k[i] = bc::bswap32(src[7 - i]);
}

BC_DEVICE void store_be(uint32_t* dst, const Fp& x) {
    uint32_t l[8];
    x.to_plain(l);
#pragma unroll
    for (int i = 0; i < 8; ++i) dst[7 - i] = bc::bswap32(l[i]);
}

// k P in affine coordinates, the inversion shared with the block (every thread calls it); the
// point at infinity where `good` is false (a bad input, or a thread past the end).
template <class P>
BC_DEVICE PointAffine mul_affine(const uint32_t* k, const P& p, bool good) {
    Point r = Point::infinity();
    if (good) {
        uint32_t kk[8];
        load_scalar(kk, k);
        r = bc::mul_window<Curve, VAR_W>(p, kk);
    }
    return r.to_affine(bc::BlockInverse{});
}

}  // namespace

// The fixed-base table (GTable::LEN affine points, Montgomery form), computed once, in parallel.
extern "C" __global__ void sm2_g_table(PointAffine* table) {
    BC_FOR_EACH_ITEM(r, (uint64_t)GTable::RUNS) GTable::build_run(int(r), table);
}

// out[i] = k[i] G, BASE_ITEMS items per thread (thread t: items t * BASE_ITEMS ...): launch
// ceil(n / BASE_ITEMS) threads. Scalars in and x || y out are big-endian bytes. Each item's
// Jacobian x and y wait in its output slot (as Montgomery limbs) while the z are inverted
// together, so that a thread holds one point in registers at a time, not BASE_ITEMS. Four
// blocks per SM (128 registers, a few spilled) beat three without spills and two with the
// points held: the table's loads and the block's inversion wait, other warps fill in.
extern "C" __global__ void __launch_bounds__(128, 4) sm2_mul_base(const uint32_t* __restrict__ k, const PointAffine* __restrict__ table, uint32_t* __restrict__ out, uint64_t n) {
    // Threads past the end take zero scalars (the point at infinity, nothing to invert): they
    // still meet the block's barriers.
    BC_FOR_EACH_ITEM_BLOCKWIDE(t, (n + BASE_ITEMS - 1) / BASE_ITEMS) {
        Fp z[BASE_ITEMS], scratch[BASE_ITEMS];
#pragma unroll
        for (int j = 0; j < BASE_ITEMS; ++j) {
            const uint64_t i = t * BASE_ITEMS + j;
            uint32_t kk[8] = {0, 0, 0, 0, 0, 0, 0, 0};
            if (i < n) load_scalar_be(kk, k + 8 * i);
            const Point p = GTable::mul(table, kk);
            z[j] = p.z;
            if (i < n) {
                *reinterpret_cast<Fp*>(out + 16 * i) = p.x;
                *reinterpret_cast<Fp*>(out + 16 * i + 8) = p.y;
            }
        }
        bc::batch_inverse(z, scratch, BASE_ITEMS, bc::BlockInverse{});
#pragma unroll
        for (int j = 0; j < BASE_ITEMS; ++j) {
            const uint64_t i = t * BASE_ITEMS + j;
            if (i >= n) break;
            Fp x = Fp::zero(), y = Fp::zero();  // infinity: z = 0, the output (0, 0)
            if (!z[j].is_zero()) {
                const Fp zi2 = z[j].sqr();
                x = *reinterpret_cast<const Fp*>(out + 16 * i) * zi2;
                y = *reinterpret_cast<const Fp*>(out + 16 * i + 8) * zi2 * z[j];
            }
            store_be(out + 16 * i, x);
            store_be(out + 16 * i + 8, y);
        }
    }
}

// out[i] = k P_i (17 limbs: the point, then 1 if P_i is on the curve, else 0 and a zero point).
extern "C" __global__ void __launch_bounds__(128) sm2_mul(const uint32_t* __restrict__ k, const uint32_t* __restrict__ pts, uint32_t* __restrict__ out, uint64_t n) {
    BC_FOR_EACH_ITEM_BLOCKWIDE(i, n) {
        PointAffine p = PointAffine::infinity();
        if (i < n) p = PointAffine{bc::load_plain<Fp>(pts + 16 * i), bc::load_plain<Fp>(pts + 16 * i + 8)};
        const bool good = i < n && bc::on_curve(p);
        const PointAffine a = mul_affine(k, p, good);
        if (i >= n) continue;
        store_point(out + 17 * i, a);
        out[17 * i + 16] = good;
    }
}

// out[i] = k P_i for compressed points (9 limbs in, 9 out; a zero limb 8 out for an invalid P_i).
// Four blocks per SM (a few registers spilled) where the decompression's square root would
// leave two: 9% faster (k P on points given affine gains nothing from it, and keeps three).
extern "C" __global__ void __launch_bounds__(128, 4) sm2_mul_compressed(const uint32_t* __restrict__ k, const uint32_t* __restrict__ pts, uint32_t* __restrict__ out, uint64_t n) {
    BC_FOR_EACH_ITEM_BLOCKWIDE(i, n) {
        PointAffine p;
        const bool good = i < n && decompress(pts + 9 * i, p);
        const PointAffine a = mul_affine(k, p, good);
        if (i >= n) continue;
        uint32_t* o = out + 9 * i;
        if (good) {
            store_compressed(o, a);
        } else {
            for (int j = 0; j < 9; ++j) o[j] = 0;
        }
    }
}

// out[i] = k H(m_i), compressed (9 limbs), with H the RFC 9380 hash_to_curve for SM2 with SM3
// (expand_message_xmd, simplified SWU) under the domain separation tag dst. Message i sits in
// the slot msgs[i * slot .. (i + 1) * slot): its length (4 bytes, little-endian), then its bytes.
extern "C" __global__ void __launch_bounds__(128) sm2_hash_mul(const uint32_t* __restrict__ k, const uint8_t* __restrict__ msgs, uint64_t slot, const uint8_t* __restrict__ dst, uint32_t dst_len, uint32_t* __restrict__ out, uint64_t n) {
    BC_FOR_EACH_ITEM_BLOCKWIDE(i, n) {
        Point h = Point::infinity();
        if (i < n) {
            const uint8_t* m = msgs + i * slot;
            uint32_t len = *reinterpret_cast<const uint32_t*>(m);
            h = bc::hash_to_curve<Curve, bc::sm3::Hash>(m + 4, len, dst, dst_len);
        }
        const PointAffine a = mul_affine(k, h, i < n);
        if (i < n) store_compressed(out + 9 * i, a);
    }
}

// SM2 signature verification (GM/T 0003.2 §7.1). The host parses each item and hands the device
// s (limbs 0..8), the key, r (limbs 32..40) and in limbs 8..16 either the digest e or, with the
// MESSAGE flag, where the signed message lies (limbs 8, 9: its byte offset among the batch's
// messages; limb 10: its length). sm2_verify_prepare hashes e = SM3(Z_A || M) where asked,
// decompresses keys, and turns each item into bc/verify.cuh's u1 = s, u2 = t = r + s mod n and
// r' = r - e mod n: valid iff R = s G + t P_A is finite and x(R) mod n == r' (the standard's
// R = e + x1 mod n == r), which sm2_verify tests.
//
// When an item has MESSAGE, the chunk's trailer follows its n items: the batch offset of the
// chunk's first message byte (two limbs), the ID's length in bytes (a limb), a zero limb, the ID
// padded to 8 bytes, then the chunk's messages back to back.
enum : uint32_t { MESSAGE = 8 };

namespace {

using Sm3Stream = bc::MdStream<bc::sm3::Hash>;

// A 256-bit integer (little-endian limbs) as 32 big-endian bytes.
BC_DEVICE void feed_be(Sm3Stream& h, const uint32_t l[8]) {
    for (int i = 7; i >= 0; --i)
        for (int k = 24; k >= 0; k -= 8) h.byte(l[i] >> k);
}

// e = SM3(Z_A || M) with Z_A = SM3(ENTL || ID || a || b || x_G || y_G || x_A || y_A), as limbs.
BC_DEVICE void message_digest(const uint8_t* id, uint32_t id_len, const uint32_t x[8], const uint32_t y[8], const uint8_t* msg, uint32_t len, uint32_t e[8]) {
    Sm3Stream h;
    const uint32_t entl = id_len * 8;
    h.byte(entl >> 8);
    h.byte(entl);
    h.bytes(id, id_len);
    uint32_t a[8];
    for (int i = 0; i < 8; ++i) a[i] = P_MOD[i];
    a[0] -= 3;  // a = p - 3
    feed_be(h, a);
    feed_be(h, B);
    feed_be(h, G_X);
    feed_be(h, G_Y);
    feed_be(h, x);
    feed_be(h, y);
    uint32_t z[8], d[8];
    h.finish(z);
    Sm3Stream m;
    m.words(z);
    m.bytes(msg, len);
    m.finish(d);
    for (int i = 0; i < 8; ++i) e[i] = d[7 - i];
}

}  // namespace

extern "C" __global__ void __launch_bounds__(128) sm2_verify_prepare(uint32_t* __restrict__ items, uint64_t n) {
    using namespace bc::verify;
    BC_FOR_EACH_ITEM(i, n) {
        uint32_t* it = items + ITEM_LIMBS * i;
        uint32_t flags = it[40];
        if (flags & ITEM_SKIP) continue;
        // A compressed key's y: Z_A needs it, and the verification then skips the square root.
        bool key_ok = true;
        if (flags & KEY_COMPRESSED) {
            PointAffine q;
            key_ok = bc::decompress<Curve>(it + 16, flags & KEY_ODD, q);
            if (key_ok) {
                q.y.to_plain(it + 24);
                flags &= ~(KEY_COMPRESSED | KEY_ODD);
            }
        }
        uint32_t e[8];
        if (flags & MESSAGE) {
            // No y, no Z_A: the verification reports the key (as the CPU backend does, first).
            if (!key_ok) continue;
            const uint32_t* head = items + ITEM_LIMBS * n;
            const uint64_t base = head[0] | uint64_t(head[1]) << 32;
            const uint8_t* id = reinterpret_cast<const uint8_t*>(head + 4);
            const uint8_t* msgs = id + ((head[2] + 7) & ~7u);
            const uint64_t at = (it[8] | uint64_t(it[9]) << 32) - base;
            message_digest(id, head[2], it + 16, it + 24, msgs + at, it[10], e);
            flags &= ~MESSAGE;
        } else {
            load8(e, it + 8);
        }
        uint32_t r[8], s[8], t[8];
        load8(r, it + 32);
        load8(s, it);
        // t = r + s mod n (r, s < n), which must not be zero: the item is then a mismatch.
        if (bc::add_n(t, r, s) || bc::geq_n(t, N_MOD)) bc::sub_n(t, t, N_MOD);
        uint32_t any = 0;
        for (int j = 0; j < 8; ++j) any |= t[j];
        if (!any) flags |= ITEM_SKIP;
        // r' = r - (e mod n) mod n; e < 2^256 < 2n.
        if (bc::geq_n(e, N_MOD)) bc::sub_n(e, e, N_MOD);
        if (bc::sub_n(r, r, e)) bc::add_n(r, r, N_MOD);
        for (int j = 0; j < 8; ++j) {
            it[8 + j] = t[j];
            it[32 + j] = r[j];
        }
        it[40] = flags;
    }
}

// Four blocks of 128 threads per SM (128 registers, some spilled): the warps added hide more
// latency than the spills cost.
extern "C" __global__ void __launch_bounds__(128, 4) sm2_verify(const uint32_t* __restrict__ items, const PointAffine* __restrict__ gtable, uint8_t* __restrict__ ok, uint64_t n) {
    BC_FOR_EACH_ITEM(i, n) ok[i] = bc::verify::verdict_x_mod_n<Curve>(items + bc::verify::ITEM_LIMBS * i, N_MOD, bc::verify::double_mul<Curve, GTable, VAR_W>(gtable));
}
