//===- CpuFeatures.cpp - The host CPU's features and ISA level ------------===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//
//
// What the host CPU supports, in the names of GCC's __builtin_cpu_supports:
// the compiler describes the code it generates for the CPU with them
// (KernelDesc::format "elf:avx2,fma"), and the CPU driver refuses kernels
// that need features the host lacks.
//
//===----------------------------------------------------------------------===//

#include "hal/Drivers.h"

namespace hesper::rt {
namespace {

struct CpuFeature {
  const char *name;
  bool present;
};

// __builtin_cpu_supports takes only string literals, hence one call per
// name. Clang (14, at least) rejects some names GCC 12 knows; built with
// it, the runtime reports those features as absent.
#define HESPER_CPU_FEATURE(name)                                               \
  {name, __builtin_cpu_supports(name) != 0},
#ifdef __clang__
#define HESPER_GCC_CPU_FEATURE(name) {name, false},
#else
#define HESPER_GCC_CPU_FEATURE(name) HESPER_CPU_FEATURE(name)
#endif

/// The features a CPU kernel's format may name, in a fixed order
/// (hesper/base/CpuFeatures.def, which the CPU target reads too).
const std::vector<CpuFeature> &cpuFeatures() {
  static const std::vector<CpuFeature> features = [] {
#if defined(__x86_64__)
    __builtin_cpu_init();
    return std::vector<CpuFeature>{
#include "hesper/base/CpuFeatures.def"
    };
#else
    return std::vector<CpuFeature>{};
#endif
  }();
  return features;
}

#undef HESPER_CPU_FEATURE
#undef HESPER_GCC_CPU_FEATURE

/// The entry of `name`, or null when no format may name it.
const CpuFeature *findCpuFeature(const std::string &name) {
  for (const CpuFeature &f : cpuFeatures())
    if (name == f.name)
      return &f;
  return nullptr;
}

#if defined(__x86_64__) && defined(__clang__)
bool hasFeature(const char *name) {
  const CpuFeature *f = findCpuFeature(name);
  return f && f->present;
}
#endif

} // namespace

detail::CpuFeatureState detail::hostCpuFeature(const std::string &name) {
  const CpuFeature *f = findCpuFeature(name);
  if (!f)
    return CpuFeatureState::Unknown;
  return f->present ? CpuFeatureState::Present : CpuFeatureState::Absent;
}

std::string hostCpuFeatures() {
  std::string list;
  for (const CpuFeature &f : cpuFeatures())
    if (f.present)
      list += (list.empty() ? "" : ",") + std::string(f.name);
  return list;
}

std::string hostCpuIsa() {
#if defined(__x86_64__) && !defined(__clang__)
  __builtin_cpu_init();
  if (__builtin_cpu_supports("x86-64-v4"))
    return "x86-64-v4";
  if (__builtin_cpu_supports("x86-64-v3"))
    return "x86-64-v3";
  if (__builtin_cpu_supports("x86-64-v2"))
    return "x86-64-v2";
  return "x86-64";
#elif defined(__x86_64__)
  // The levels from their main features (Clang lacks the level names).
  auto all = [](std::initializer_list<const char *> names) {
    for (const char *n : names)
      if (!hasFeature(n))
        return false;
    return true;
  };
  bool v2 = all({"sse3", "ssse3", "sse4.1", "sse4.2", "popcnt"});
  bool v3 = v2 && all({"avx", "avx2", "bmi", "bmi2", "fma"});
  bool v4 =
      v3 && all({"avx512f", "avx512bw", "avx512cd", "avx512dq", "avx512vl"});
  return v4 ? "x86-64-v4" : v3 ? "x86-64-v3" : v2 ? "x86-64-v2" : "x86-64";
#elif defined(__aarch64__)
  return "aarch64";
#else
  return "unknown";
#endif
}

} // namespace hesper::rt
