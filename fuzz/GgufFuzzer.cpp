//===- GgufFuzzer.cpp - libFuzzer harness for the GGUF reader ------------===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//
//
// Any bytes through GgufFile::parse: a parsed file's tensors must lie
// inside the input (every byte of each is read, so AddressSanitizer sees
// any that does not), and every metadata lookup must be safe.
//
//===----------------------------------------------------------------------===//

#include "hesper/runtime/Gguf.h"

#include <cstdint>
#include <cstdlib>
#include <vector>

using namespace hesper::rt;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  auto file = GgufFile::parse(data, size, "fuzz.gguf");
  if (!file)
    return 0;
  const GgufFile &f = **file;
  for (const auto &[key, value] : f.metadata()) {
    (void)f.getString(key);
    (void)f.getInt(key);
    (void)f.getFloat(key);
    (void)f.getBool(key);
  }
  unsigned sum = 0;
  for (const GgufTensor &t : f.tensors()) {
    if (t.data < data || t.data + t.bytes > data + size)
      std::abort();
    for (uint64_t i = 0; i < t.bytes; ++i)
      sum += t.data[i];
    // The first row, decoded as the model loader would.
    if (t.dims.empty() || t.dims[0] <= 0 || t.dims[0] > (1 << 20))
      continue;
    auto rowBytes = ggmlRowBytes(t.type, t.dims[0]);
    if (!rowBytes || uint64_t(*rowBytes) > t.bytes)
      continue;
    std::vector<float> row(t.dims[0]);
    (void)dequantizeRow(t.type, t.data, row.data(), t.dims[0]);
  }
  return static_cast<int>(sum & 0);
}
