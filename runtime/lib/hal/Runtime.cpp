//===- Runtime.cpp - Backend-independent parts of the runtime -------------===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//
//
// Names of enums, the per-backend dispatch of listDevices/openDevice, the
// hashes behind cache keys and the atomic writes of cache files, and the
// command-list bookkeeping that the drivers share (ReplayState).
//
//===----------------------------------------------------------------------===//

#include "Drivers.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>

#include <sys/stat.h>
#include <unistd.h>

namespace hesper::rt {

/// Creates `dir` and its missing parents.
static bool makeDirs(const std::string &dir) {
  for (size_t i = 1; i <= dir.size(); ++i) {
    if (i != dir.size() && dir[i] != '/')
      continue;
    std::string prefix = dir.substr(0, i);
    if (mkdir(prefix.c_str(), 0755) != 0 && errno != EEXIST)
      return false;
  }
  return true;
}

Status writeFileAtomically(const std::string &path,
                           const std::vector<uint8_t> &bytes) {
  size_t slash = path.rfind('/');
  if (slash != std::string::npos && slash > 0 &&
      !makeDirs(path.substr(0, slash)))
    return Status::error("cannot create " + path.substr(0, slash) + ": " +
                         std::strerror(errno));
  // Unique per process and call: two threads writing the same entry must
  // not share a temporary file.
  static std::atomic<uint64_t> counter{0};
  std::string tmp = path + ".tmp." + std::to_string(getpid()) + "." +
                    std::to_string(counter++);
  std::FILE *f = std::fopen(tmp.c_str(), "wb");
  if (!f)
    return Status::error("cannot open " + tmp + ": " + std::strerror(errno));
  bool ok = std::fwrite(bytes.data(), 1, bytes.size(), f) == bytes.size();
  ok = std::fclose(f) == 0 && ok;
  if (!ok || std::rename(tmp.c_str(), path.c_str()) != 0) {
    int err = errno;
    std::remove(tmp.c_str());
    return Status::error("cannot write " + path + ": " + std::strerror(err));
  }
  return Status();
}

const char *backendName(Backend b) {
  switch (b) {
  case Backend::Vulkan:
    return "vulkan";
  case Backend::Cuda:
    return "cuda";
  case Backend::Cpu:
    return "cpu";
  }
  return "unknown";
}

const char *deviceTypeName(DeviceType t) {
  switch (t) {
  case DeviceType::Discrete:
    return "discrete";
  case DeviceType::Integrated:
    return "integrated";
  case DeviceType::Virtual:
    return "virtual";
  case DeviceType::Cpu:
    return "cpu";
  case DeviceType::Other:
    return "other";
  }
  return "other";
}

Result<std::vector<DeviceInfo>> listDevices(Backend b) {
  switch (b) {
  case Backend::Vulkan:
    return detail::listVulkanDevices();
  case Backend::Cuda:
    return detail::listCudaDevices();
  case Backend::Cpu:
    return detail::listCpuDevices();
  }
  return Status::error("unknown backend");
}

Result<std::unique_ptr<Device>> openDevice(Backend b,
                                           const DeviceOptions &opts) {
  switch (b) {
  case Backend::Vulkan:
    return detail::openVulkanDevice(opts);
  case Backend::Cuda:
    return detail::openCudaDevice(opts);
  case Backend::Cpu:
    return detail::openCpuDevice(opts);
  }
  return Status::error("unknown backend");
}

Result<std::unique_ptr<Buffer>> Device::importHostMemory(const void *,
                                                         size_t) {
  return Status::error(std::string("importHostMemory: a ") +
                       backendName(info().backend) +
                       " device does not read host memory in place");
}

void *Device::hostAddress(Buffer &) { return nullptr; }

Status detail::rangeError(const char *op, size_t bytes, size_t offset,
                          size_t size) {
  return Status::error(std::string(op) + ": " + std::to_string(bytes) +
                       " bytes at offset " + std::to_string(offset) +
                       " do not fit in a buffer of " + std::to_string(size) +
                       " bytes");
}

Status detail::checkTransfer(const char *op, const void *host, size_t bytes,
                             size_t offset, size_t size) {
  if (!rangeFits(bytes, offset, size))
    return rangeError(op, bytes, offset, size);
  if (bytes && !host)
    return Status::error(std::string(op) + ": null " +
                         (std::string(op) == "upload" ? "source"
                                                      : "destination"));
  return Status();
}

uint64_t validationMessageCount() {
  return detail::vulkanValidationMessageCount();
}

//===----------------------------------------------------------------------===//
// Hashes and cache keys
//===----------------------------------------------------------------------===//

namespace {
constexpr uint64_t kFnvOffsetBasis = 0xcbf29ce484222325ull;
constexpr uint64_t kFnvPrime = 0x100000001b3ull;
} // namespace

// 64-bit FNV-1a whose starting state is the offset basis xor'ed with the
// seed; seed 0 gives the standard FNV-1a.
uint64_t hashBytes(const void *data, size_t size, uint64_t seed) {
  uint64_t h = kFnvOffsetBasis ^ seed;
  const auto *p = static_cast<const unsigned char *>(data);
  for (size_t i = 0; i < size; ++i) {
    h ^= p[i];
    h *= kFnvPrime;
  }
  return h;
}

// The device id is hashed with the binary's hash as its seed, so the key
// depends on both and on which is which:
//   key = hex16(hashBytes(deviceCacheId, seed = hashBytes(binary, seed = 0)))
std::string kernelCacheKey(const std::vector<uint8_t> &binary,
                           const std::string &deviceCacheId) {
  uint64_t h = hashBytes(binary.data(), binary.size(), 0);
  h = hashBytes(deviceCacheId.data(), deviceCacheId.size(), h);
  static const char digits[] = "0123456789abcdef";
  std::string key(16, '0');
  for (int i = 15; i >= 0; --i, h >>= 4)
    key[i] = digits[h & 0xf];
  return key;
}

namespace detail {

std::string effectiveCacheDir(const DeviceOptions &opts) {
  if (!opts.cacheDir.empty())
    return opts.cacheDir;
  const char *env = std::getenv("HESPER_CACHE_DIR");
  return env ? std::string(env) : std::string();
}

std::string cubinCachePath(const std::string &dir,
                           const std::vector<uint8_t> &ptx,
                           const std::string &cacheId) {
  std::string path = dir;
  if (path.empty() || path.back() != '/')
    path += '/';
  return path + kernelCacheKey(ptx, cacheId) + ".cubin";
}

//===----------------------------------------------------------------------===//
// ReplayState
//===----------------------------------------------------------------------===//

ReplayState::ReplayState(const uint32_t *limits) {
  for (int i = 0; i < 3; ++i)
    maxGrid[i] = limits ? limits[i] : std::numeric_limits<uint32_t>::max();
}

static std::string gridString(const uint32_t g[3]) {
  return "(" + std::to_string(g[0]) + ", " + std::to_string(g[1]) + ", " +
         std::to_string(g[2]) + ")";
}

Status ReplayState::validate(const std::vector<Dispatch> &dispatches) const {
  for (size_t i = 0; i < dispatches.size(); ++i) {
    const Dispatch &d = dispatches[i];
    std::string where = "dispatch " + std::to_string(i) + ": ";
    if (!d.kernel)
      return Status::error(where + "no kernel");
    const KernelDesc &k = d.kernel->desc();
    where += "kernel '" + k.name + "' ";
    if (d.bindings.size() != k.numBindings)
      return Status::error(where + "takes " + std::to_string(k.numBindings) +
                           " bindings, got " +
                           std::to_string(d.bindings.size()));
    for (size_t b = 0; b < d.bindings.size(); ++b)
      if (!d.bindings[b])
        return Status::error(where + "binding " + std::to_string(b) +
                             " is null");
    if (d.pushConstants.size() != k.pushConstantBytes)
      return Status::error(where + "takes " +
                           std::to_string(k.pushConstantBytes) +
                           " push-constant bytes, got " +
                           std::to_string(d.pushConstants.size()));
    if (!d.grid[0] || !d.grid[1] || !d.grid[2])
      return Status::error(where + "grid " + gridString(d.grid) +
                           " has a zero dimension");
    for (int a = 0; a < 3; ++a)
      if (d.grid[a] > maxGrid[a])
        return Status::error(where + "grid " + gridString(d.grid) +
                             " exceeds the device's limit " +
                             gridString(maxGrid));
  }
  return Status();
}

Status ReplayState::record(const std::vector<Dispatch> &dispatches) {
  Status st = validate(dispatches);
  if (!st)
    return st;
  list = dispatches;
  haveRecording = true;
  stale = true;
  return Status();
}

Status ReplayState::setPushConstants(size_t dispatchIndex,
                                     const std::vector<uint8_t> &bytes) {
  if (dispatchIndex >= list.size())
    return Status::error("setPushConstants: dispatch " +
                         std::to_string(dispatchIndex) + " out of range (" +
                         std::to_string(list.size()) + " recorded)");
  Dispatch &d = list[dispatchIndex];
  const KernelDesc &k = d.kernel->desc();
  if (bytes.size() != k.pushConstantBytes)
    return Status::error("setPushConstants: dispatch " +
                         std::to_string(dispatchIndex) + ": kernel '" + k.name +
                         "' takes " + std::to_string(k.pushConstantBytes) +
                         " push-constant bytes, got " +
                         std::to_string(bytes.size()));
  d.pushConstants = bytes;
  stale = true;
  return Status();
}

Status ReplayState::checkSubmit() const {
  if (!haveRecording)
    return Status::error("submit: nothing has been recorded");
  return Status();
}

} // namespace detail
} // namespace hesper::rt

hesper::rt::Result<double>
hesper::rt::measureCopyGbps(Device &device, size_t bytes, unsigned runs) {
  if (bytes == 0 || runs == 0)
    return Status::error("measureCopyGbps: nothing to copy");
  auto src = device.createBuffer(bytes);
  if (!src)
    return src.status();
  auto dst = device.createBuffer(bytes);
  if (!dst)
    return dst.status();
  // Written first, so that no page is first touched inside a timed copy.
  for (Buffer *b : {src->get(), dst->get()})
    if (Status s = device.fill(*b, 0x3f800000u); !s)
      return s;
  if (Status s = device.copy(**src, **dst, bytes); !s)
    return s;
  std::vector<double> seconds;
  for (unsigned i = 0; i < runs; ++i) {
    auto start = std::chrono::steady_clock::now();
    if (Status s = device.copy(**src, **dst, bytes); !s)
      return s;
    seconds.push_back(std::chrono::duration<double>(
                          std::chrono::steady_clock::now() - start)
                          .count());
  }
  std::sort(seconds.begin(), seconds.end());
  double median = seconds[seconds.size() / 2];
  return median > 0 ? 2.0 * static_cast<double>(bytes) / median / 1e9 : 0.0;
}

size_t hesper::rt::copyBandwidthBytes(const DeviceInfo &info) {
  // The CPU device and lavapipe are both of type Cpu.
  return size_t(info.type == DeviceType::Cpu ? 64 : 256) << 20;
}
