//===- CpuPeak.cpp - The CPU's measured FMA peak --------------------------===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//
//
// The denominator of hesper-eval's "of peak" column on the CPU target: each
// thread runs twelve independent chains of vector FMAs (more than an FMA's
// latency times the FMA units of any current core), the widest the ISA
// has, and the flops of all threads are divided by the wall time. A core's
// clock under that load is what the GEMMs run at, so the figure is the
// measured peak, not the data sheet's.
//
//===----------------------------------------------------------------------===//

#include "Hesper/Tuning/Eval.h"

#include <algorithm>
#include <chrono>
#include <thread>
#include <vector>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define HESPER_FMA_PEAK_X86 1
#endif

namespace {

constexpr long kIterations = 20'000'000;
constexpr int kChains = 12; // HESPER_CHAINS below

#ifdef HESPER_FMA_PEAK_X86
// Twelve named accumulators (an array could live in memory); the empty asm
// keeps each chain live and in its register across iterations.
#define HESPER_CHAINS(X)                                                       \
  X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7) X(8) X(9) X(10) X(11)
#define HESPER_DECLARE(i) VEC acc##i = SET1(float(i));
#define HESPER_STEP(i)                                                         \
  acc##i = FMADD(acc##i, a, c);                                                \
  __asm__ volatile("" : "+v"(acc##i));
#define HESPER_SUM(i) sum = ADD(sum, acc##i);
// The chains of one vector width (VEC, SET1, FMADD and ADD name its type
// and intrinsics); the result is their lanes, summed, in `out`.
#define HESPER_RUN_CHAINS(iterations, out)                                     \
  VEC a = SET1(0.999999f), c = SET1(1e-7f), sum = SET1(0);                     \
  HESPER_CHAINS(HESPER_DECLARE)                                                \
  for (long it = 0; it < (iterations); ++it) {                                 \
    HESPER_CHAINS(HESPER_STEP)                                                 \
  }                                                                            \
  HESPER_CHAINS(HESPER_SUM)                                                    \
  alignas(64) float lanes[sizeof(VEC) / 4];                                    \
  STORE(lanes, sum);                                                           \
  for (float lane : lanes)                                                     \
    (out) += lane;

__attribute__((target("avx512f"))) float chainsAvx512(long iterations) {
#define VEC __m512
#define SET1 _mm512_set1_ps
#define FMADD _mm512_fmadd_ps
#define ADD _mm512_add_ps
#define STORE _mm512_store_ps
  float total = 0;
  HESPER_RUN_CHAINS(iterations, total)
  return total;
#undef VEC
#undef SET1
#undef FMADD
#undef ADD
#undef STORE
}

__attribute__((target("avx2,fma"))) float chainsAvx2(long iterations) {
#define VEC __m256
#define SET1 _mm256_set1_ps
#define FMADD _mm256_fmadd_ps
#define ADD _mm256_add_ps
#define STORE _mm256_store_ps
  float total = 0;
  HESPER_RUN_CHAINS(iterations, total)
  return total;
#undef VEC
#undef SET1
#undef FMADD
#undef ADD
#undef STORE
}
#endif

} // namespace

double hesper::tune::measureCpuFmaPeakGflops(unsigned threads) {
#ifdef HESPER_FMA_PEAK_X86
  int lanes = 0;
  float (*chains)(long) = nullptr;
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f")) {
    lanes = 16;
    chains = chainsAvx512;
  } else if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
    lanes = 8;
    chains = chainsAvx2;
  } else {
    return 0;
  }
  threads = std::max(threads, 1u);
  std::vector<float> sinks(threads);
  // A short run first brings the cores to their loaded clock.
  chains(kIterations / 10);
  auto start = std::chrono::steady_clock::now();
  std::vector<std::thread> workers;
  for (unsigned t = 0; t < threads; ++t)
    workers.emplace_back([&, t] { sinks[t] = chains(kIterations); });
  for (std::thread &w : workers)
    w.join();
  double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  double flops = 2.0 * lanes * kChains * double(kIterations) * threads;
  return flops / seconds / 1e9;
#else
  (void)threads;
  return 0;
#endif
}
