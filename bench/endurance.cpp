//===- endurance.cpp - Resident-memory growth over long runs -------------===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//
//
//   hesper-bench-endurance MODEL.gguf [--replays N] [--compiles M]
//                          [--backend cpu|vulkan] [--context C]
//
// Two checks that the runtime and compiler hold no memory per use:
//  - replays: one session replays its recorded decode step N times (the
//    position wraps to 0 at the end of the context), as generation does;
//  - compiles: M times, a session is created (build, fuse, lower, compile,
//    upload) and destroyed.
// Each prints the resident set (VmRSS) after a warm-up -- a tenth of the
// iterations, at least 5 -- and at the end, and the growth between them per
// 1000 iterations. The counts are 10,000 replays and 1,000
// compiles; test/Tools/endurance.test runs fewer and bounds the growth.
//
//===----------------------------------------------------------------------===//

#include "Hesper/Models/Model.h"
#include "Hesper/Models/Session.h"
#include "hesper/runtime/Runtime.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <string>

using namespace hesper;

/// VmRSS of this process in KiB, from /proc/self/status.
static long residentKiB() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line))
    if (line.rfind("VmRSS:", 0) == 0)
      return std::strtol(line.c_str() + 6, nullptr, 10);
  return -1;
}

/// Runs `step(i)` for i in [0, count), and prints the resident set after
/// the warm-up and at the end, and the growth per 1000 steps. Returns false
/// (after printing the error) when a step fails.
template <typename Step>
static bool measure(const char *what, long count, Step step) {
  if (count <= 0)
    return true;
  long warm = std::min(count, std::max(5L, count / 10)), after = 0;
  auto start = std::chrono::steady_clock::now();
  for (long i = 0; i < count; ++i) {
    if (rt::Status s = step(i); !s) {
      std::fprintf(stderr, "error: %s %ld: %s\n", what, i,
                   s.message().c_str());
      return false;
    }
    if (i + 1 == warm)
      after = residentKiB();
  }
  std::chrono::duration<double> took =
      std::chrono::steady_clock::now() - start;
  long end = residentKiB();
  double per1000 = count > warm
                       ? double(end - after) * 1000.0 / double(count - warm)
                       : 0.0;
  std::printf("%ss: %ld in %.1f s; resident %.1f MiB after %ld, %.1f MiB at "
              "the end: growth %ld KiB (%.1f KiB per 1000)\n",
              what, count, took.count(), after / 1024.0, warm, end / 1024.0,
              end - after, per1000);
  return true;
}

int main(int argc, char **argv) {
  std::string path, backend = "cpu";
  long replays = 10000, compiles = 1000, context = 256;
  for (int i = 1; i < argc; ++i) {
    auto next = [&]() -> const char * {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "error: %s needs a value\n", argv[i]);
        std::exit(1);
      }
      return argv[++i];
    };
    if (!std::strcmp(argv[i], "--replays"))
      replays = std::atol(next());
    else if (!std::strcmp(argv[i], "--compiles"))
      compiles = std::atol(next());
    else if (!std::strcmp(argv[i], "--backend"))
      backend = next();
    else if (!std::strcmp(argv[i], "--context"))
      context = std::atol(next());
    else if (argv[i][0] == '-') {
      std::fprintf(stderr, "error: unknown flag %s\n", argv[i]);
      return 1;
    } else
      path = argv[i];
  }
  if (path.empty() || replays < 0 || compiles < 0 || context < 2) {
    std::fprintf(stderr, "usage: hesper-bench-endurance MODEL.gguf "
                         "[--replays N] [--compiles M] [--backend cpu|vulkan] "
                         "[--context C]\n");
    return 1;
  }
  rt::Backend kind;
  if (backend == "cpu")
    kind = rt::Backend::Cpu;
  else if (backend == "vulkan")
    kind = rt::Backend::Vulkan;
  else {
    std::fprintf(stderr, "error: --backend must be cpu or vulkan\n");
    return 1;
  }
  auto model = models::Model::load(path);
  if (!model) {
    std::fprintf(stderr, "error: %s\n", model.status().message().c_str());
    return 1;
  }
  auto device = rt::openDevice(kind);
  if (!device) {
    std::fprintf(stderr, "error: %s\n", device.status().message().c_str());
    return 1;
  }
  models::SessionOptions options;
  options.contextSize = context;
  options.batchSize = 1;

  std::unique_ptr<models::Session> replaying;
  if (replays > 0) {
    auto session = models::Session::create(**model, device->get(), options);
    if (!session) {
      std::fprintf(stderr, "error: %s\n", session.status().message().c_str());
      return 1;
    }
    replaying = std::move(*session);
  }
  bool ok = measure("replay", replays, [&](long i) {
    if (replaying->position() + 1 >= replaying->contextSize())
      replaying->reset();
    return replaying->feed(static_cast<int32_t>(i % 7 + 1), nullptr);
  });
  replaying.reset();
  ok = ok && measure("compile", compiles, [&](long) -> rt::Status {
         auto session =
             models::Session::create(**model, device->get(), options);
         if (!session)
           return session.status();
         return (*session)->feed(1, nullptr);
       });
  if (!ok)
    return 1;
  return 0;
}
