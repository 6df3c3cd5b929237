//===- NpyFuzzer.cpp - libFuzzer harness for the .npy reader -------------===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//
//
// Any bytes through parseNpy: it must return an array whose data covers its
// shape, or an error, never read outside the input.
//
//===----------------------------------------------------------------------===//

#include "hesper/runtime/Npy.h"

#include <cstdint>
#include <cstdlib>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  auto array = hesper::rt::parseNpy(data, size, "fuzz.npy");
  if (!array)
    return 0;
  // A parsed array's data is as long as its shape and dtype say.
  size_t elements = 1;
  for (int64_t d : array->shape)
    elements *= static_cast<size_t>(d);
  if (array->data.size() != elements * hesper::rt::dtypeBytes(array->dtype))
    std::abort();
  return 0;
}
