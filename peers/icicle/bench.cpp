// batchcrypt peer benchmark driver for open-icicle v4 (BN254, CUDA backend).
//
// Our own code: it only calls icicle's public C++ API (runtime.h, msm.h, ntt.h and the
// CUDA backend config-extension keys). Built by peers/icicle/build.sh, run by run.sh.
//
// usage: icicle_bench [--reps R] [--distinct K] [--pc F] CASE...
//   CASE = g1:LOG | g2:LOG | g1pc:LOG | ntt:LOG      (e.g. g1:20 g1:24 g2:20 ntt:20 ntt:24)
//
// Every timed call is synchronous (is_async = false); a wall clock (steady_clock) is read
// around the single API call. One untimed warm-up call precedes the timed repetitions.
// Printed: median and min over the repetitions.
//
// MSM modes:
//   host   : scalars and points in ordinary (pageable) host memory, result to host.
//            Timed = the whole msm() call: device allocation, host->device copies of scalars
//            and points (the backend splits them into chunks overlapped with compute),
//            bucket method, device->host copy of the result, stream sync.
//   device : scalars and points copied to device memory beforehand (untimed), result to host.
//            Timed = msm() with both inputs resident: compute + the backend's temporary
//            stream-ordered allocations + one 96/192-byte result copy + stream sync.
//   g1pc   : like `device`, but bases were first expanded with msm_precompute_bases (factor F,
//            --pc, default 8) on the device; the precomputation is timed and printed
//            separately and is NOT included in the MSM figure.
//   Scalars are uniform in [0, r) (rejection sampling), standard (non-Montgomery) form.
//   Points: K (--distinct, default 1024) distinct random affine points k_j*G, tiled to n
//   (icicle's own helpers tile 100 points; the GPU work does not depend on point values).
//   The result is checked on the host: with tiled points, MSM = sum_j (sum_{i=j mod K} s_i) P_j.
//
// NTT: forward, natural order in and out (kNN), batch 1, CUDA algorithm "Auto", domain
//   initialised once for 2^maxlog with fast-twiddles mode (untimed, printed separately).
//   device: input and output buffers already in device memory (out of place).
//   host  : host input and output; timed = H2D copy + NTT + D2H copy + sync.
//   Checked by an untimed inverse NTT on the device and comparison with the input.

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "icicle/runtime.h"
#include "icicle/msm.h"
#include "icicle/ntt.h"
#include "icicle/backend/ntt_config.h"
#include "icicle/backend/msm_config.h"
#include "icicle/curves/params/bn254.h"

using namespace bn254;
using namespace icicle;

namespace {

int g_reps = 5;
int g_distinct = 1024;
int g_pc = 8;
int g_failures = 0;

#define CHECK_ICICLE(call)                                                                                             \
  do {                                                                                                                 \
    eIcicleError e_ = (call);                                                                                          \
    if (e_ != eIcicleError::SUCCESS) {                                                                                 \
      std::fprintf(stderr, "icicle error %d at %s:%d: %s\n", (int)e_, __FILE__, __LINE__, #call);                   \
      std::exit(2);                                                                                                    \
    }                                                                                                                  \
  } while (0)

double now_ms()
{
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

unsigned nthreads()
{
  unsigned t = std::thread::hardware_concurrency();
  return t == 0 ? 4 : std::min(t, 32u);
}

// run f(begin, end) over [0, n) split among threads
void parallel_for(size_t n, const std::function<void(size_t, size_t)>& f)
{
  unsigned t = nthreads();
  std::vector<std::thread> th;
  size_t chunk = (n + t - 1) / t;
  for (unsigned i = 0; i < t; i++) {
    size_t b = i * chunk, e = std::min(n, b + chunk);
    if (b >= e) break;
    th.emplace_back(f, b, e);
  }
  for (auto& x : th)
    x.join();
}

uint64_t splitmix64(uint64_t& s)
{
  uint64_t z = (s += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

// uniform element of [0, r) in standard form: rejection sampling on NBITS-bit integers
scalar_t random_scalar(uint64_t& s)
{
  constexpr unsigned TLC = scalar_t::TLC;
  const auto mod = scalar_t::get_modulus();
  const unsigned top_bits = scalar_t::NBITS - 32 * (TLC - 1);
  for (;;) {
    scalar_t v = scalar_t::zero();
    for (unsigned i = 0; i < TLC; i += 2) {
      uint64_t w = splitmix64(s);
      v.limbs_storage.limbs[i] = (uint32_t)w;
      if (i + 1 < TLC) v.limbs_storage.limbs[i + 1] = (uint32_t)(w >> 32);
    }
    if (top_bits < 32) v.limbs_storage.limbs[TLC - 1] &= (1u << top_bits) - 1;
    bool less = false; // v < mod ?
    for (int i = TLC - 1; i >= 0; i--) {
      if (v.limbs_storage.limbs[i] != mod.limbs[i]) {
        less = v.limbs_storage.limbs[i] < mod.limbs[i];
        break;
      }
    }
    if (less) return v;
  }
}

// canonical representative in [0, r) of a value that may be only partially reduced (< 2^256)
scalar_t canonical(scalar_t v)
{
  constexpr unsigned TLC = scalar_t::TLC;
  const auto mod = scalar_t::get_modulus();
  for (;;) {
    bool ge = true; // v >= mod ?
    for (int i = TLC - 1; i >= 0; i--) {
      if (v.limbs_storage.limbs[i] != mod.limbs[i]) {
        ge = v.limbs_storage.limbs[i] > mod.limbs[i];
        break;
      }
    }
    if (!ge) return v;
    uint64_t borrow = 0;
    for (unsigned i = 0; i < TLC; i++) {
      uint64_t d = (uint64_t)v.limbs_storage.limbs[i] - mod.limbs[i] - borrow;
      v.limbs_storage.limbs[i] = (uint32_t)d;
      borrow = (d >> 63) & 1;
    }
  }
}

bool same_elements(const scalar_t* a, const scalar_t* b, size_t n)
{
  std::atomic<bool> bad{false};
  parallel_for(n, [&](size_t lo, size_t hi) {
    for (size_t i = lo; i < hi; i++) {
      if (std::memcmp(&a[i], &b[i], sizeof(scalar_t)) == 0) continue;
      scalar_t x = canonical(a[i]), y = canonical(b[i]);
      if (std::memcmp(&x, &y, sizeof(scalar_t)) != 0) {
        bad = true;
        return;
      }
    }
  });
  return !bad;
}

void random_scalars(scalar_t* out, size_t n, uint64_t seed)
{
  parallel_for(n, [&](size_t b, size_t e) {
    uint64_t s = seed ^ (0x1234567ULL * (b + 1));
    for (size_t i = b; i < e; i++)
      out[i] = random_scalar(s);
  });
}

struct Stats {
  double median, min;
};

Stats time_it(const std::function<void()>& f)
{
  f(); // warm-up (untimed)
  std::vector<double> t;
  for (int r = 0; r < g_reps; r++) {
    double t0 = now_ms();
    f();
    t.push_back(now_ms() - t0);
  }
  std::sort(t.begin(), t.end());
  return {t[t.size() / 2], t[0]};
}

void report(const std::string& what, int logn, const char* mode, Stats s, bool ok, const char* timed)
{
  std::printf(
    "RESULT icicle bn254 %s n=2^%d mode=%s ms_median=%.3f ms_min=%.3f reps=%d check=%s | timed: %s\n", what.c_str(),
    logn, mode, s.median, s.min, g_reps, ok ? "ok" : "FAIL", timed);
  std::fflush(stdout);
  if (!ok) g_failures++;
}

// Shared host data: scalars for the largest size (prefixes are used for smaller sizes).
std::vector<scalar_t> g_scalars;

void ensure_scalars(size_t n)
{
  if (g_scalars.size() >= n) return;
  double t0 = now_ms();
  g_scalars.resize(n);
  random_scalars(g_scalars.data(), n, 0xbc2025);
  std::printf("# generated %zu random scalars on host in %.0f ms\n", n, now_ms() - t0);
}

// expected MSM with tiled points: sum_j T_j * P_j, T_j = sum_{i = j mod K} s_i
template <typename P, typename A>
P expected_msm(const scalar_t* s, size_t n, const std::vector<A>& distinct)
{
  const size_t K = distinct.size();
  std::vector<P> partial(K);
  parallel_for(K, [&](size_t b, size_t e) {
    for (size_t j = b; j < e; j++) {
      scalar_t t = scalar_t::zero();
      for (size_t i = j; i < n; i += K)
        t = t + s[i];
      partial[j] = P::from_affine(distinct[j]) * t;
    }
  });
  P acc = P::zero();
  for (size_t j = 0; j < K; j++)
    acc = acc + partial[j];
  return acc;
}

template <typename P, typename A>
std::vector<A> distinct_points(size_t K, uint64_t seed)
{
  std::vector<A> pts(K);
  std::vector<scalar_t> ks(K);
  random_scalars(ks.data(), K, seed);
  parallel_for(K, [&](size_t b, size_t e) {
    for (size_t j = b; j < e; j++)
      pts[j] = (P::generator() * ks[j]).to_affine();
  });
  return pts;
}

template <typename P, typename A>
void bench_msm(const char* group, int logn, bool with_precompute)
{
  const size_t n = size_t(1) << logn;
  ensure_scalars(n);
  const scalar_t* scalars = g_scalars.data();

  double t0 = now_ms();
  const size_t K = std::min<size_t>(g_distinct, n);
  std::vector<A> distinct = distinct_points<P, A>(K, 0x5eed0000ULL + logn);
  std::unique_ptr<A[]> points(new A[n]);
  parallel_for(n, [&](size_t b, size_t e) {
    for (size_t i = b; i < e; i++)
      points[i] = distinct[i % K];
  });
  P expected = expected_msm<P, A>(scalars, n, distinct);
  std::printf(
    "# %s msm n=2^%d: %zu distinct points tiled, host reference computed in %.0f ms\n", group, logn, K,
    now_ms() - t0);

  std::string what = std::string(group) + " msm";

  if (!with_precompute) {
    // host-resident inputs
    MSMConfig cfg = default_msm_config();
    P res_host;
    Stats sh = time_it([&] { CHECK_ICICLE(msm(scalars, points.get(), (int)n, cfg, &res_host)); });
    report(
      what, logn, "host", sh, res_host == expected,
      "msm() from pageable host memory: H2D of scalars+points (chunked, overlapped) + compute + D2H result + sync");
  }

  // device-resident inputs
  scalar_t* d_scalars = nullptr;
  A* d_points = nullptr;
  CHECK_ICICLE(icicle_malloc((void**)&d_scalars, sizeof(scalar_t) * n));
  CHECK_ICICLE(icicle_malloc((void**)&d_points, sizeof(A) * n));
  CHECK_ICICLE(icicle_copy(d_scalars, scalars, sizeof(scalar_t) * n));
  CHECK_ICICLE(icicle_copy(d_points, points.get(), sizeof(A) * n));

  MSMConfig cfg = default_msm_config();
  cfg.are_scalars_on_device = true;
  cfg.are_points_on_device = true;
  cfg.are_results_on_device = false;

  A* d_bases = d_points;
  A* d_pre = nullptr;
  if (with_precompute) {
    cfg.precompute_factor = g_pc;
    CHECK_ICICLE(icicle_malloc((void**)&d_pre, sizeof(A) * n * g_pc));
    double p0 = now_ms();
    CHECK_ICICLE(msm_precompute_bases(d_points, (int)n, cfg, d_pre));
    CHECK_ICICLE(icicle_device_synchronize());
    std::printf(
      "# %s msm n=2^%d: msm_precompute_bases factor %d on device took %.1f ms (not in the MSM figure)\n", group, logn,
      g_pc, now_ms() - p0);
    d_bases = d_pre;
  }

  P res_dev;
  Stats sd = time_it([&] { CHECK_ICICLE(msm(d_scalars, d_bases, (int)n, cfg, &res_dev)); });
  if (with_precompute) {
    char mode[32];
    std::snprintf(mode, sizeof mode, "device-pc%d", g_pc);
    report(
      what, logn, mode, sd, res_dev == expected,
      "msm() with scalars and precomputed bases resident on device (precompute excluded): compute + D2H result + sync");
  } else {
    report(
      what, logn, "device", sd, res_dev == expected,
      "msm() with scalars and points resident on device: compute + D2H result + sync");
  }

  if (d_pre) CHECK_ICICLE(icicle_free(d_pre));
  CHECK_ICICLE(icicle_free(d_scalars));
  CHECK_ICICLE(icicle_free(d_points));
}

int g_domain_log = 0;

void bench_ntt(int logn)
{
  const size_t n = size_t(1) << logn;
  ensure_scalars(n);
  const scalar_t* in = g_scalars.data();

  if (logn > g_domain_log) {
    std::fprintf(stderr, "ntt:%d exceeds the initialised domain 2^%d\n", logn, g_domain_log);
    std::exit(2);
  }

  ConfigExtension ext; // Auto algorithm (backend default)
  NTTConfig<scalar_t> cfg = default_ntt_config<scalar_t>();
  cfg.ext = &ext;

  // device-resident
  scalar_t *d_in = nullptr, *d_out = nullptr, *d_back = nullptr;
  CHECK_ICICLE(icicle_malloc((void**)&d_in, sizeof(scalar_t) * n));
  CHECK_ICICLE(icicle_malloc((void**)&d_out, sizeof(scalar_t) * n));
  CHECK_ICICLE(icicle_malloc((void**)&d_back, sizeof(scalar_t) * n));
  CHECK_ICICLE(icicle_copy(d_in, in, sizeof(scalar_t) * n));
  NTTConfig<scalar_t> dcfg = cfg;
  dcfg.are_inputs_on_device = true;
  dcfg.are_outputs_on_device = true;
  Stats sd = time_it([&] { CHECK_ICICLE(ntt(d_in, (int)n, NTTDir::kForward, dcfg, d_out)); });
  // check: inverse NTT brings the input back
  CHECK_ICICLE(ntt(d_out, (int)n, NTTDir::kInverse, dcfg, d_back));
  std::vector<scalar_t> back(n);
  CHECK_ICICLE(icicle_copy(back.data(), d_back, sizeof(scalar_t) * n));
  bool ok_dev = same_elements(back.data(), in, n);
  // spot check: output differs from input (not a no-op)
  std::vector<scalar_t> out_dev(n);
  CHECK_ICICLE(icicle_copy(out_dev.data(), d_out, sizeof(scalar_t) * n));
  ok_dev = ok_dev && !same_elements(out_dev.data(), in, std::min<size_t>(n, 1024));
  report(
    "ntt", logn, "device", sd, ok_dev,
    "forward NTT kNN batch 1, input and output resident on device (out of place): compute + sync");

  // host-resident
  std::vector<scalar_t> out_host(n);
  Stats sh = time_it([&] { CHECK_ICICLE(ntt(in, (int)n, NTTDir::kForward, cfg, out_host.data())); });
  bool ok_host = same_elements(out_host.data(), out_dev.data(), n);
  report(
    "ntt", logn, "host", sh, ok_host,
    "forward NTT kNN batch 1 from pageable host memory: H2D input + compute + D2H output + sync");

  CHECK_ICICLE(icicle_free(d_in));
  CHECK_ICICLE(icicle_free(d_out));
  CHECK_ICICLE(icicle_free(d_back));
}

} // namespace

int main(int argc, char** argv)
{
  std::vector<std::pair<std::string, int>> cases;
  for (int i = 1; i < argc; i++) {
    std::string a = argv[i];
    if (a == "--reps" && i + 1 < argc) {
      g_reps = std::max(1, std::atoi(argv[++i]));
    } else if (a == "--distinct" && i + 1 < argc) {
      g_distinct = std::max(1, std::atoi(argv[++i]));
    } else if (a == "--pc" && i + 1 < argc) {
      g_pc = std::max(1, std::atoi(argv[++i]));
    } else {
      auto c = a.find(':');
      if (c == std::string::npos) {
        std::fprintf(stderr, "bad case '%s' (want g1:LOG, g2:LOG, g1pc:LOG or ntt:LOG)\n", a.c_str());
        return 2;
      }
      cases.push_back({a.substr(0, c), std::atoi(a.c_str() + c + 1)});
    }
  }
  if (cases.empty()) cases = {{"g1", 20}, {"g1", 24}, {"g2", 20}, {"ntt", 20}, {"ntt", 24}};

  // Backend: loaded from $ICICLE_BACKEND_INSTALL_DIR (or /opt/icicle/lib/backend), then select CUDA:0.
  CHECK_ICICLE(icicle_load_backend_from_env_or_default());
  Device dev("CUDA", 0);
  if (icicle_is_device_available(dev) != eIcicleError::SUCCESS) {
    std::fprintf(
      stderr, "CUDA device not available: check ICICLE_BACKEND_INSTALL_DIR (=%s) and LD_LIBRARY_PATH\n",
      std::getenv("ICICLE_BACKEND_INSTALL_DIR") ? std::getenv("ICICLE_BACKEND_INSTALL_DIR") : "unset");
    return 3;
  }
  CHECK_ICICLE(icicle_set_device(dev));
  std::printf("# device CUDA:0 selected; reps=%d distinct_points=%d threads=%u\n", g_reps, g_distinct, nthreads());

  // NTT domain: once, for the largest requested NTT size
  for (auto& c : cases)
    if (c.first == "ntt") g_domain_log = std::max(g_domain_log, c.second);
  if (g_domain_log > 0) {
    ConfigExtension ext;
    ext.set(CudaBackendConfig::CUDA_NTT_FAST_TWIDDLES_MODE, true);
    NTTInitDomainConfig icfg = default_ntt_init_domain_config();
    icfg.ext = &ext;
    double t0 = now_ms();
    CHECK_ICICLE(ntt_init_domain(scalar_t::omega(g_domain_log), icfg));
    std::printf("# ntt_init_domain 2^%d (fast twiddles) took %.1f ms (untimed setup)\n", g_domain_log, now_ms() - t0);
  }

  for (auto& c : cases) {
    if (c.first == "g1")
      bench_msm<projective_t, affine_t>("g1", c.second, false);
    else if (c.first == "g1pc")
      bench_msm<projective_t, affine_t>("g1", c.second, true);
    else if (c.first == "g2")
      bench_msm<g2_projective_t, g2_affine_t>("g2", c.second, false);
    else if (c.first == "ntt")
      bench_ntt(c.second);
    else {
      std::fprintf(stderr, "unknown case %s\n", c.first.c_str());
      return 2;
    }
  }
  if (g_domain_log > 0) CHECK_ICICLE(ntt_release_domain<scalar_t>());
  std::printf("# done, %d check failure(s)\n", g_failures);
  return g_failures ? 1 : 0;
}
