// Kernel-only timing of the signature verification kernels, for comparing variants of the kernel
// sources side by side on one GPU (run.sh builds this file against each variant). Items are
// random u1, u2 and r (ECDSA: e, s and r, which its preparation kernel turns into u1 and u2, timed
// with it) with the curve's generator as the (compressed) key: every item takes the full path
// (decompression, u1 G + u2 Q, the final test), and none is valid, which costs the same. Prints
// one line per kernel: the median of 7 launches over 2^LOGN items, each on a fresh copy. For SM2
// also k G (sm2_mul_base) over 2^LOGN random scalars, then k P under one k over those points
// (sm2_mul, sm2_mul_compressed) and hash-to-curve then k over random messages (sm2_hash_mul).
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

// Variants from before ECDSA's preparation kernel (run.sh tells: HAS_PREPARE) take u1, u2 as they are.
#if HAS_PREPARE
#define ECDSA_PREPARE(f) f
#define PREPARE_PER bc::verify::PREPARE_ITEMS
#else
#define ECDSA_PREPARE(f) nullptr
#define PREPARE_PER 1
#endif
#if defined(CURVE_SM2)
#include "sm2/sm2.cu"
namespace curve = bc::sm2;
#define TABLE sm2_g_table
#define KERNELS {"sm2 verify", sm2_verify, 1, nullptr}
#elif defined(CURVE_P256)
#include "p256/p256.cu"
namespace curve = bc::p256;
#define TABLE p256_g_table
#define KERNELS {"p256 ecdsa", p256_ecdsa_verify, 1, ECDSA_PREPARE(p256_ecdsa_prepare)}
#else
#include "secp256k1/secp256k1.cu"
namespace curve = bc::secp256k1;
#define TABLE secp256k1_g_table
#define KERNELS {"secp256k1 ecdsa", secp256k1_ecdsa_verify_batch, 1, ECDSA_PREPARE(secp256k1_ecdsa_prepare)}, {"secp256k1 bip340", secp256k1_schnorr_verify_batch, SCHNORR_PER, nullptr}
#endif
#ifndef SCHNORR_PER
#define SCHNORR_PER 1  // items per thread of the BIP340 kernel (run.sh reads it from the source)
#endif
#ifndef VARIANT
#define VARIANT "kernels"
#endif

using Verify = void (*)(const uint32_t*, const PointAffine*, uint8_t*, uint64_t);
using Prepare = void (*)(uint32_t*, uint64_t);
struct Case {
    const char* name;
    Verify kernel;
    int per_thread;
    Prepare prepare;  // the scheme's item preparation on the device, or none
};

// The median of 7 timed runs of `run` after one warm-up, each after an untimed `reset`.
template <class Reset, class Run>
static float median_of_7(Reset reset, Run run) {
    cudaEvent_t a, b;
    cudaEventCreate(&a);
    cudaEventCreate(&b);
    reset();
    run();  // warm-up
    std::vector<float> ms;
    for (int r = 0; r < 7; ++r) {
        reset();
        cudaEventRecord(a);
        run();
        cudaEventRecord(b);
        cudaEventSynchronize(b);
        float t;
        cudaEventElapsedTime(&t, a, b);
        ms.push_back(t);
    }
    std::sort(ms.begin(), ms.end());
    return ms[3];
}

// One result line, or the launch error; false on an error.
static bool report(const char* name, int logn, uint64_t n, float ms) {
    cudaError_t err = cudaGetLastError();
    if (err != cudaSuccess) {
        printf("%s %s: %s\n", VARIANT, name, cudaGetErrorString(err));
        return false;
    }
    printf("%-24s %-18s 2^%d  %8.2f ms  %6.2f M/s\n", VARIANT, name, logn, ms, n / ms / 1e3);
    return true;
}

static float median_ms(const Case& c, const uint32_t* pristine, uint32_t* items, const PointAffine* table, uint8_t* ok, uint64_t n) {
    const unsigned threads = 128, blocks = unsigned(((n + c.per_thread - 1) / c.per_thread + threads - 1) / threads);
    const unsigned prep_blocks = unsigned(((n + PREPARE_PER - 1) / PREPARE_PER + threads - 1) / threads);
    const size_t bytes = n * bc::verify::ITEM_LIMBS * 4;
    return median_of_7([&] { cudaMemcpy(items, pristine, bytes, cudaMemcpyDeviceToDevice); },
                       [&] {
                           if (c.prepare) c.prepare<<<prep_blocks, threads>>>(items, n);
                           c.kernel<<<blocks, threads>>>(items, table, ok, n);
                       });
}

#if defined(CURVE_SM2)
// k P under one k over the n points k G wrote (big-endian x || y words), as affine limbs
// (sm2_mul) and compressed (sm2_mul_compressed).
static void time_mul(const uint32_t* d_points_be, uint64_t n, int logn) {
    std::vector<uint32_t> be(16 * n), plain(16 * n), comp(9 * n);
    cudaMemcpy(be.data(), d_points_be, be.size() * 4, cudaMemcpyDeviceToHost);
    auto bswap = [](uint32_t x) { return (x >> 24) | ((x >> 8) & 0xff00) | ((x << 8) & 0xff0000) | (x << 24); };
    for (uint64_t i = 0; i < n; ++i) {
        for (int j = 0; j < 8; ++j) {
            plain[16 * i + j] = comp[9 * i + j] = bswap(be[16 * i + 7 - j]);
            plain[16 * i + 8 + j] = bswap(be[16 * i + 15 - j]);
        }
        comp[9 * i + 8] = plain[16 * i + 8] & 1;
    }
    uint32_t k[8] = {0x12345678, 0x9abcdef0, 0x0fedcba9, 0x87654321, 0x11111111, 0x22222222, 0x33333333, 0x0abcdef1};
    uint32_t *d_k, *d_plain, *d_comp, *d_out;
    cudaMalloc(&d_k, sizeof k);
    cudaMalloc(&d_plain, plain.size() * 4);
    cudaMalloc(&d_comp, comp.size() * 4);
    cudaMalloc(&d_out, 17 * n * 4);
    cudaMemcpy(d_k, k, sizeof k, cudaMemcpyHostToDevice);
    cudaMemcpy(d_plain, plain.data(), plain.size() * 4, cudaMemcpyHostToDevice);
    cudaMemcpy(d_comp, comp.data(), comp.size() * 4, cudaMemcpyHostToDevice);
    const unsigned threads = 128, blocks = unsigned((n + threads - 1) / threads);
    report("sm2 k P", logn, n, median_of_7([] {}, [&] { sm2_mul<<<blocks, threads>>>(d_k, d_plain, d_out, n); }));
    uint32_t valid = 0;
    cudaMemcpy(&valid, d_out + 16, 4, cudaMemcpyDeviceToHost);
    if (!valid) printf("sm2 k P: the first point was not on the curve\n");
    report("sm2 k P compressed", logn, n, median_of_7([] {}, [&] { sm2_mul_compressed<<<blocks, threads>>>(d_k, d_comp, d_out, n); }));
    cudaMemcpy(&valid, d_out + 8, 4, cudaMemcpyDeviceToHost);
    if (!(valid & 2)) printf("sm2 k P compressed: the first point was not valid\n");
    // Hash-to-curve then k: n messages of 32 bytes, each in a slot after its 4-byte length.
    const uint64_t slot = 36;
    std::vector<uint8_t> msgs(slot * n);
    std::mt19937 rng(3);
    for (uint64_t i = 0; i < n; ++i) {
        msgs[slot * i] = 32;
        for (int j = 4; j < int(slot); ++j) msgs[slot * i + j] = uint8_t(rng());
    }
    const char tag[] = "batchcrypt-kernel-bench";
    uint8_t *d_msgs, *d_tag;
    cudaMalloc(&d_msgs, msgs.size());
    cudaMalloc(&d_tag, sizeof tag);
    cudaMemcpy(d_msgs, msgs.data(), msgs.size(), cudaMemcpyHostToDevice);
    cudaMemcpy(d_tag, tag, sizeof tag, cudaMemcpyHostToDevice);
    report("sm2 hash-to-curve k", logn, n, median_of_7([] {}, [&] { sm2_hash_mul<<<blocks, threads>>>(d_k, d_msgs, slot, d_tag, uint32_t(sizeof tag - 1), d_out, n); }));
    cudaFree(d_msgs);
    cudaFree(d_tag);
    cudaFree(d_k);
    cudaFree(d_plain);
    cudaFree(d_comp);
    cudaFree(d_out);
}

// k G over n random scalars below 2^255 (big-endian words, as the kernel reads them).
static void time_mul_base(const PointAffine* table, uint64_t n, int logn) {
    std::vector<uint32_t> k(8 * n);
    std::mt19937 rng(2);
    for (auto& w : k) w = rng();
    for (uint64_t i = 0; i < n; ++i) k[8 * i] &= 0xffffff7f;  // the most significant byte below 0x80
    uint32_t *d_k, *d_out;
    cudaMalloc(&d_k, k.size() * 4);
    cudaMalloc(&d_out, 16 * n * 4);
    cudaMemcpy(d_k, k.data(), k.size() * 4, cudaMemcpyHostToDevice);
    const unsigned threads = 128, blocks = unsigned(((n + BASE_ITEMS - 1) / BASE_ITEMS + threads - 1) / threads);
    float ms = median_of_7([] {}, [&] { sm2_mul_base<<<blocks, threads>>>(d_k, table, d_out, n); });
    report("sm2 k G", logn, n, ms);
    time_mul(d_out, n, logn);
    cudaFree(d_k);
    cudaFree(d_out);
}
#endif

int main(int argc, char** argv) {
    const int logn = argc > 1 ? atoi(argv[1]) : 20;
    const uint64_t n = 1ull << logn;
    uint32_t gx[8], gy[8];
    cudaMemcpyFromSymbol(gx, curve::G_X, sizeof gx);
    cudaMemcpyFromSymbol(gy, curve::G_Y, sizeof gy);
    std::vector<uint32_t> items(n * bc::verify::ITEM_LIMBS);
    std::mt19937 rng(1);
    for (uint64_t i = 0; i < n; ++i) {
        uint32_t* it = &items[bc::verify::ITEM_LIMBS * i];
        for (int j = 0; j < 40; ++j) it[j] = rng();
        it[7] &= 0x7fffffff, it[15] &= 0x7fffffff, it[39] &= 0x7fffffff;  // below every n and p
        for (int j = 0; j < 8; ++j) it[16 + j] = gx[j];
        it[40] = bc::verify::KEY_COMPRESSED | (gy[0] & 1 ? bc::verify::KEY_ODD : 0);
    }
    PointAffine* table;
    uint32_t *d_items, *pristine;
    uint8_t* ok;
    cudaMalloc(&table, GTable::LEN * sizeof(PointAffine));
    cudaMalloc(&d_items, items.size() * 4);
    cudaMalloc(&pristine, items.size() * 4);
    cudaMalloc(&ok, n);
    TABLE<<<(GTable::LEN + 127) / 128, 128>>>(table);
    cudaMemcpy(pristine, items.data(), items.size() * 4, cudaMemcpyHostToDevice);
    const Case cases[] = {KERNELS};
    for (const Case& c : cases) {
        if (!report(c.name, logn, n, median_ms(c, pristine, d_items, table, ok, n))) return 1;
    }
#if defined(CURVE_SM2)
    time_mul_base(table, n, logn);
#endif
    return 0;
}
