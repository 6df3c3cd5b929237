//===- BundleFuzzer.cpp - libFuzzer harness for bundle files -------------===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//
//
// Any bytes through parseBundle (which verifies the Program): a result must
// be a Program whose every index is in range, since runners index with
// them unchecked. The checksum is part of the format, so most mutations
// stop there; the harness also tries each input with its last 8 bytes
// replaced by the checksum of the rest, so that the structure and ABI
// checks behind it are fuzzed too.
//
//===----------------------------------------------------------------------===//

#include "hesper/runtime/Program.h"

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

using namespace hesper::rt;

static void check(const Program &p) {
  for (const ProgramLaunch &l : p.launches) {
    if (l.kernel >= p.kernels.size() ||
        l.buffers.size() != p.kernels[l.kernel].numBindings)
      std::abort();
    for (uint32_t b : l.buffers)
      if (b >= p.buffers.size())
        std::abort();
  }
  for (uint32_t r : p.results)
    if (r >= p.buffers.size())
      std::abort();
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (auto p = parseBundle(data, size, "fuzz.hb"))
    check(*p);
  if (size > 8) {
    std::vector<uint8_t> fixed(data, data + size);
    uint64_t h = hashBytes(fixed.data(), size - 8); // the writer's checksum
    std::memcpy(fixed.data() + size - 8, &h, 8);
    if (auto p = parseBundle(fixed.data(), size, "fuzz.hb"))
      check(*p);
  }
  return 0;
}
