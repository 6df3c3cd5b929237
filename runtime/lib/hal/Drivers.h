//===- Drivers.h - Entry points of the runtime's drivers -------*- C++ -*-===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//
//
// Internal to the runtime: Runtime.cpp dispatches listDevices/openDevice to
// the driver of the requested backend.
//
//===----------------------------------------------------------------------===//

#ifndef HESPER_RUNTIME_LIB_HAL_DRIVERS_H
#define HESPER_RUNTIME_LIB_HAL_DRIVERS_H

#include "hesper/runtime/Runtime.h"

#include <functional>
#include <string_view>

namespace hesper::rt::detail {

Result<std::vector<DeviceInfo>> listVulkanDevices();
Result<std::unique_ptr<Device>> openVulkanDevice(const DeviceOptions &opts);
uint64_t vulkanValidationMessageCount();

Result<std::vector<DeviceInfo>> listCudaDevices();
Result<std::unique_ptr<Device>> openCudaDevice(const DeviceOptions &opts);

Result<std::vector<DeviceInfo>> listCpuDevices();
Result<std::unique_ptr<Device>> openCpuDevice(const DeviceOptions &opts);

enum class CpuFeatureState { Unknown, Absent, Present };
/// Whether the host has the CPU feature `name`; Unknown when it is not one
/// a CPU kernel's format may name (see hostCpuFeatures).
CpuFeatureState hostCpuFeature(const std::string &name);

/// The cache directory a device uses: opts.cacheDir, else $HESPER_CACHE_DIR,
/// else "" (no cache).
std::string effectiveCacheDir(const DeviceOptions &opts);

/// True when `bytes` at `offset` lie inside a buffer of `size` bytes
/// (without overflowing).
inline bool rangeFits(size_t bytes, size_t offset, size_t size) {
  return offset <= size && bytes <= size - offset;
}
/// "upload: 16 bytes at offset 60 do not fit in a buffer of 64 bytes".
Status rangeError(const char *op, size_t bytes, size_t offset, size_t size);
/// Checks an upload or download (`op`) of `bytes` at `offset` of a buffer
/// of `size` bytes from or to `host`: the range first, then (when there is
/// anything to copy) the host pointer ("upload: null source", "download:
/// null destination").
Status checkTransfer(const char *op, const void *host, size_t bytes,
                     size_t offset, size_t size);

/// A key for a driver's in-memory table of loaded binaries (the CPU
/// driver's shared objects, the CUDA driver's modules): the standard
/// library's string hash, eight bytes a step. Every kernel of a program
/// carries its program's whole binary, so a start looks it up once per
/// kernel; hashBytes (a multiply per byte) took a sixth of a warm start.
/// Kept in memory only: equal keys are told apart by the bytes.
inline uint64_t loadedBinaryKey(const std::vector<uint8_t> &binary) {
  return std::hash<std::string_view>{}(std::string_view(
      reinterpret_cast<const char *>(binary.data()), binary.size()));
}

/// Where the CUDA driver keeps the cubin JIT-compiled from `ptx` for the
/// device `cacheId`: "<dir>/<kernelCacheKey(ptx, cacheId)>.cubin" (a trailing
/// '/' on `dir` is not doubled).
std::string cubinCachePath(const std::string &dir,
                           const std::vector<uint8_t> &ptx,
                           const std::string &cacheId);

/// The part of a CommandList that needs no GPU: it checks recorded launches
/// against their kernels' ABI and the device's grid limits, keeps them (with
/// the push constants set since), says when a captured form of the list (a
/// CUDA graph) is stale, and counts submissions. Kernels and buffers are kept
/// as pointers: they must outlive the recording.
class ReplayState {
public:
  /// `maxGrid`: the device's maxWorkgroupCount (null: no limit).
  explicit ReplayState(const uint32_t *maxGrid = nullptr);

  /// Checks a list without keeping it: every dispatch has a kernel, as many
  /// non-null bindings as the kernel declares, exactly its push-constant
  /// bytes, and a grid with no zero dimension and within the limits.
  Status validate(const std::vector<Dispatch> &dispatches) const;
  /// Validates and keeps `dispatches`; on error the previous recording stays.
  Status record(const std::vector<Dispatch> &dispatches);
  /// Replaces the push constants of one recorded dispatch.
  Status setPushConstants(size_t dispatchIndex,
                          const std::vector<uint8_t> &bytes);
  /// Fails when nothing has been recorded yet.
  Status checkSubmit() const;

  const std::vector<Dispatch> &dispatches() const { return list; }
  bool recorded() const { return haveRecording; }
  /// True after record() or setPushConstants() until markCaptured().
  bool needsCapture() const { return stale; }
  void markCaptured() { stale = false; }
  void countSubmission() { ++count; }
  uint64_t submissions() const { return count; }

private:
  uint32_t maxGrid[3];
  std::vector<Dispatch> list;
  bool haveRecording = false;
  bool stale = true;
  uint64_t count = 0;
};

} // namespace hesper::rt::detail

#endif // HESPER_RUNTIME_LIB_HAL_DRIVERS_H
