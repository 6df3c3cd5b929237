//===- memread.cpp - The memory-read baseline of the CPU benchmarks -------===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//
//
// How fast this machine reads memory: T threads each sum a contiguous slice
// of a buffer far larger than the caches (eight independent accumulators,
// so the loop is bound by the loads, not by the adds). Prints one line per
// thread count, the best of --runs passes:
//
//   memread: threads 2: 17.9 GB/s (256 MiB, best of 5)
//
//   hesper-bench-memread [--mib 256] [--runs 5] [--threads 1,2]
//
// No Hesper code is involved: it is the yardstick bench/cpu_target.py
// divides the CPU target's kernel bandwidth by.
//
//===----------------------------------------------------------------------===//

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

static float sumSlice(const float *p, size_t n) {
  float acc[8] = {};
  size_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (int j = 0; j < 8; ++j)
      acc[j] += p[i + j];
  for (; i < n; ++i)
    acc[0] += p[i];
  float total = 0;
  for (float a : acc)
    total += a;
  return total;
}

int main(int argc, char **argv) {
  size_t mib = 256;
  int runs = 5;
  std::vector<unsigned> threadCounts;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string flag = argv[i];
    if (flag == "--mib")
      mib = std::strtoull(argv[i + 1], nullptr, 10);
    else if (flag == "--runs")
      runs = std::atoi(argv[i + 1]);
    else if (flag == "--threads") {
      for (char *s = argv[i + 1]; *s;) {
        threadCounts.push_back(std::strtoul(s, &s, 10));
        if (*s == ',')
          ++s;
      }
    } else {
      std::fprintf(stderr, "error: unknown flag %s\n", flag.c_str());
      return 1;
    }
  }
  if (threadCounts.empty())
    threadCounts.push_back(std::max(1u, std::thread::hardware_concurrency()));
  if (mib == 0 || runs <= 0) {
    std::fprintf(stderr, "error: --mib and --runs must be positive\n");
    return 1;
  }
  size_t n = mib * (1u << 20) / sizeof(float);
  std::vector<float> data(n);
  for (size_t i = 0; i < n; ++i)
    data[i] = static_cast<float>(i & 1023) * 1e-3f;
  volatile float sink = 0;
  for (unsigned threads : threadCounts) {
    if (threads == 0) {
      std::fprintf(stderr, "error: --threads takes positive counts\n");
      return 1;
    }
    double best = 0;
    for (int r = 0; r < runs; ++r) {
      std::vector<float> partial(threads);
      auto start = std::chrono::steady_clock::now();
      std::vector<std::thread> pool;
      for (unsigned t = 0; t < threads; ++t)
        pool.emplace_back([&, t] {
          size_t begin = n * t / threads, end = n * (t + 1) / threads;
          partial[t] = sumSlice(data.data() + begin, end - begin);
        });
      for (std::thread &th : pool)
        th.join();
      double s = std::chrono::duration<double>(
                     std::chrono::steady_clock::now() - start)
                     .count();
      for (float p : partial)
        sink = sink + p;
      best = std::max(best, n * sizeof(float) / s / 1e9);
    }
    std::printf("memread: threads %u: %.1f GB/s (%zu MiB, best of %d)\n",
                threads, best, mib, runs);
  }
  return 0;
}
