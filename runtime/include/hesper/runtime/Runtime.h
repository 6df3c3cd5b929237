//===- Runtime.h - Hesper's hardware abstraction layer ---------*- C++ -*-===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//
//
// The runtime links no MLIR or LLVM, so that a compiled program can run on a
// machine that has a GPU driver and nothing else. GPU drivers are loaded with
// dlopen at run time: Vulkan (libvulkan.so.1) and CUDA (libcuda.so.1). The
// CPU driver is native: kernels are ELF shared objects run by a thread pool.
// Errors are returned as values (the library builds without exceptions).
//
// The objects, in the order a program uses them:
//   Device       one GPU (or lavapipe's CPU device), or the host CPU.
//   Buffer       device memory; upload/download copy through staging memory.
//   Kernel       one compiled kernel (SPIR-V, PTX/cubin or an ELF shared
//                object) plus its ABI.
//   CommandList  launches recorded once and submitted (replayed) many times.
//
//===----------------------------------------------------------------------===//

#ifndef HESPER_RUNTIME_RUNTIME_H
#define HESPER_RUNTIME_RUNTIME_H

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace hesper::rt {

//===----------------------------------------------------------------------===//
// Errors
//===----------------------------------------------------------------------===//

/// Success, or one line saying what went wrong.
class Status {
public:
  Status() = default;
  static Status error(std::string message) {
    Status s;
    s.failed = true;
    s.msg = std::move(message);
    return s;
  }
  bool ok() const { return !failed; }
  explicit operator bool() const { return ok(); }
  const std::string &message() const { return msg; }

private:
  bool failed = false;
  std::string msg;
};

/// A value, or the Status that says why there is none.
template <typename T> class Result {
public:
  Result(T v) : val(std::move(v)) {}
  Result(Status s) : st(std::move(s)) {}
  bool ok() const { return st.ok(); }
  explicit operator bool() const { return ok(); }
  const Status &status() const { return st; }
  T &value() { return val; }
  T &operator*() { return val; }
  T *operator->() { return &val; }

private:
  Status st;
  T val{};
};

//===----------------------------------------------------------------------===//
// Devices
//===----------------------------------------------------------------------===//

/// Writes `bytes` to a temporary file of a unique name beside `path`
/// (creating the missing folders), then renames it onto `path`: a reader,
/// or another thread or process writing the same file, sees the old
/// contents or the new ones, never half a file. For the caches on disk
/// (cubins, pipeline caches, compiled model programs).
Status writeFileAtomically(const std::string &path,
                           const std::vector<uint8_t> &bytes);

enum class Backend { Vulkan, Cuda, Cpu };
const char *backendName(Backend b);

enum class DeviceType { Discrete, Integrated, Virtual, Cpu, Other };
const char *deviceTypeName(DeviceType t);

/// What the compiler must know about a device: kernels are specialized to
/// its subgroup size and limits, never assuming 32 lanes.
struct DeviceInfo {
  Backend backend = Backend::Vulkan;
  std::string name;
  DeviceType type = DeviceType::Other;
  uint32_t subgroupSize = 1;
  bool subgroupArithmetic = false; ///< subgroup reduce/shuffle in all stages
  uint32_t maxWorkgroupSize[3] = {1, 1, 1};
  uint32_t maxWorkgroupInvocations = 1;
  uint32_t maxWorkgroupCount[3] = {1, 1, 1};
  uint32_t maxSharedMemoryBytes = 0;
  /// The most bytes one kernel binding may cover (Vulkan's
  /// maxStorageBufferRange); 0 when the backend sets no such limit.
  uint64_t maxBindingBytes = 0;
  uint32_t maxPushConstantBytes = 0;
  /// The most buffers one kernel may bind (Vulkan's
  /// maxPerStageDescriptorStorageBuffers); 0 when the backend sets no limit.
  uint32_t maxKernelBuffers = 0;
  bool shaderFloat16 = false;
  bool shaderInt8 = false;
  bool shaderInt16 = false;
  bool shaderInt64 = false;
  bool storage8Bit = false;
  bool storage16Bit = false;
  /// Vulkan 1.3: the integer dot product of packed bytes in shaders
  /// (shaderIntegerDotProduct: SPIR-V 1.6's OpSDot), whether or not the
  /// device accelerates it.
  bool integerDotProduct = false;
  /// CUDA compute capability as major * 10 + minor (90: sm_90); 0 for
  /// other backends. The compiler targets this chip.
  uint32_t computeCapability = 0;
  /// Nanoseconds per timestamp tick (0: no timestamps on the queue).
  double timestampPeriodNs = 0;
  /// Threads that run a dispatch (the CPU device); 0 for GPUs.
  unsigned threads = 0;
  /// Backend-specific identity used in cache keys (e.g. vendor:device:driver,
  /// or the CUDA compute capability).
  std::string cacheId;
};

/// One kernel's binary and ABI. Bindings are storage buffers numbered
/// 0..numBindings-1 in descriptor set 0 (Vulkan) or kernel parameters in
/// that order (CUDA); push constants follow (Vulkan push-constant block at
/// offset 0; CUDA: one parameter per 4 bytes).
///
/// CPU kernels are C functions exported by the shared object, one per
/// kernel, named `name`:
///   void name(void *const *bindings, const void *pushConstants,
///             const uint32_t *grid, uint64_t begin, uint64_t end);
/// A call runs the workgroups of linear index w = x + gx * (y + gy * z) in
/// [begin, end) of the grid {gx, gy, gz}; `pushConstants` is null when the
/// kernel takes none. Workgroups are independent (each writes only its own
/// outputs), so any split of the grid over threads gives the same result.
///
/// A CPU kernel whose workgroups have several threads (workgroupSize, up to
/// 1024 in all) that meet at barriers (gpu dialect kernels) exports instead
/// one function per thread, named kCpuThreadEntryPrefix + `name`:
///   void t(void *const *bindings, const void *pushConstants,
///          const uint32_t *grid, uint64_t workgroup,
///          const uint32_t thread[3], void *shared,
///          void (*barrier)(void *), void *barrierState);
/// The driver runs a workgroup's threads as fibers on one OS thread, each
/// to its next barrier (a call of barrier(barrierState)) in thread order,
/// with `sharedMemoryBytes` of zeroed workgroup memory at `shared`. A call
/// of barrier(nullptr) ends the calling thread (a failed assertion, which
/// the thread has printed): the others go on, and `submit` fails naming
/// the kernel.
inline constexpr const char *kCpuThreadEntryPrefix = "__hesper_threads_";

struct KernelDesc {
  std::string name;              ///< entry point
  std::vector<uint8_t> binary;   ///< SPIR-V words, PTX text, cubin or ELF
  /// The binary's format: "spirv", "ptx", "cubin", or "elf:<features>" for
  /// the CPU, where <features> lists the x86 features the code needs,
  /// comma-separated, as GCC's __builtin_cpu_supports names them
  /// ("elf:avx2,fma,f16c"; "elf:" alone is baseline x86-64). Vulkan takes
  /// an empty format as "spirv" and CUDA as "cubin".
  std::string format;
  uint32_t numBindings = 0;
  uint32_t pushConstantBytes = 0;
  uint32_t workgroupSize[3] = {1, 1, 1};
  uint32_t sharedMemoryBytes = 0; ///< CUDA dynamic shared memory (0: static)
  /// CPU driver: the most threads the workgroups of one launch are spread
  /// over (0: all of the device's; the `threads` tuning knob). GPU drivers
  /// ignore it.
  uint32_t hostThreads = 0;
  /// From the kernel's ABI: the bytes of the buffer each binding expects (0
  /// where a binding's size is not fixed). Empty when not known. Programs
  /// and bundles check every launch's buffers against it.
  std::vector<uint64_t> bindingBytes;
  /// From the kernel's ABI: 1 where the kernel only reads a binding. Empty
  /// when not known.
  std::vector<uint8_t> bindingReadOnly;
  /// The largest grid (workgroups per dimension) the kernel's code was
  /// compiled to run over: a kernel without a bounds guard indexes its
  /// buffers by workgroup id, so programs and bundles refuse a launch past
  /// it. 0 where not known (a dimension is then not checked).
  uint32_t maxGrid[3] = {0, 0, 0};
};

class Buffer {
public:
  virtual ~Buffer() = default;
  virtual size_t size() const = 0;
};

class Kernel {
public:
  virtual ~Kernel() = default;
  /// The description the kernel was created from (the CPU driver's lacks
  /// the binary, which it keeps once per device for all its kernels).
  virtual const KernelDesc &desc() const = 0;
};

/// One recorded launch.
struct Dispatch {
  Kernel *kernel = nullptr;
  std::vector<Buffer *> bindings;
  std::vector<uint8_t> pushConstants;
  uint32_t grid[3] = {1, 1, 1}; ///< workgroups in x, y, z
};

/// Launches recorded once, in order, each depending on the one before (a
/// full memory barrier between them), and submitted as many times as
/// needed. Push constants can be changed between submissions without
/// re-recording (setPushConstants), for per-step scalars such as a position.
class CommandList {
public:
  virtual ~CommandList() = default;
  virtual Status record(const std::vector<Dispatch> &dispatches) = 0;
  virtual Status setPushConstants(size_t dispatchIndex,
                                  const std::vector<uint8_t> &bytes) = 0;
  /// Submits the recorded list and waits for it to finish.
  virtual Status submit() = 0;
  /// Number of submissions so far.
  virtual uint64_t submissions() const = 0;
  /// Per-dispatch GPU time of the last submission in nanoseconds (empty when
  /// the device has no timestamps or timing was not requested).
  virtual std::vector<double> lastKernelTimesNs() const = 0;
};

class Device {
public:
  virtual ~Device() = default;
  virtual const DeviceInfo &info() const = 0;

  virtual Result<std::unique_ptr<Buffer>> createBuffer(size_t bytes) = 0;
  /// A read-only buffer over `bytes` of host memory that the caller owns
  /// and keeps, unchanged, for the buffer's life (a weight in a model
  /// file's mapping): kernels read it where it is, nothing is copied. Only
  /// a device that runs on host memory can (the CPU device, for 16-byte
  /// aligned memory); the others return an error, and the caller creates
  /// a buffer and uploads instead. Writing the buffer -- upload, fill, a
  /// copy into it, a kernel binding that is not read-only -- is an error.
  virtual Result<std::unique_ptr<Buffer>> importHostMemory(const void *data,
                                                           size_t bytes);
  /// Where a buffer's bytes are in host memory, on a device whose buffers
  /// are host memory (the CPU device): the host may read and write them
  /// there, with the same rules as a kernel's other threads (atomics for
  /// what a running kernel also touches). Null on the other devices, and
  /// for a buffer of imported (read-only) memory.
  virtual void *hostAddress(Buffer &buffer);
  virtual Status upload(Buffer &dst, const void *src, size_t bytes,
                        size_t offset = 0) = 0;
  virtual Status download(Buffer &src, void *dst, size_t bytes,
                          size_t offset = 0) = 0;
  virtual Status fill(Buffer &dst, uint32_t pattern) = 0;
  virtual Status copy(Buffer &src, Buffer &dst, size_t bytes) = 0;

  virtual Result<std::unique_ptr<Kernel>> createKernel(const KernelDesc &d) = 0;
  /// `timing`: record timestamps around every dispatch.
  virtual Result<std::unique_ptr<CommandList>>
  createCommandList(bool timing = false) = 0;
};

struct DeviceOptions {
  /// Index into listDevices(backend); -1 picks the best (discrete GPU, then
  /// integrated, then virtual, then CPU).
  int index = -1;
  /// Enable the Khronos validation layer (Vulkan); every message it reports
  /// is counted and printed on stderr.
  bool validation = false;
  /// Directory for the pipeline cache (Vulkan) or cubin cache (CUDA); empty
  /// for none. Defaults to $HESPER_CACHE_DIR when that is set.
  std::string cacheDir;
  /// CPU: threads that run a dispatch, the caller's included; 0 for as many
  /// as the CPUs this process may run on.
  unsigned threads = 0;
};

/// Devices of a backend; an error when the driver is missing ("Vulkan
/// unavailable: ...", "CUDA unavailable: ...").
Result<std::vector<DeviceInfo>> listDevices(Backend b);
Result<std::unique_ptr<Device>> openDevice(Backend b,
                                           const DeviceOptions &opts = {});

/// Validation messages reported so far by every Vulkan device of this
/// process (0 when validation is off).
uint64_t validationMessageCount();

/// The host's CPU features among those a CPU kernel's format may name
/// (sse3 ... sse4.2, popcnt, avx, avx2, fma, f16c, bmi, bmi2, the avx512
/// family, amx-*, ...), comma-separated in a fixed order:
/// "sse3,ssse3,sse4.1,sse4.2,popcnt,avx,avx2,fma,f16c,bmi,bmi2,...".
std::string hostCpuFeatures();
/// The host's highest x86-64 micro-architecture level: "x86-64-v4",
/// "x86-64-v3", "x86-64-v2" or "x86-64" (another machine's name elsewhere).
std::string hostCpuIsa();

/// The device's copy bandwidth in GB/s (bytes read plus bytes written, per
/// second): the median of `runs` copies of `bytes` between two of its
/// buffers by Device::copy (cuMemcpyDtoD on CUDA, vkCmdCopyBuffer on
/// Vulkan, memcpy over the CPU device's threads), after one untimed. The
/// bytes should pass the device's last-level cache several times over.
Result<double> measureCopyGbps(Device &device, size_t bytes,
                               unsigned runs = 5);
/// The bytes measureCopyGbps copies on `info`'s device: 256 MiB on a GPU
/// (an H100's L2 holds 50 MB), 64 MiB on a CPU.
size_t copyBandwidthBytes(const DeviceInfo &info);

/// A stable 64-bit FNV-1a hash, used for cache keys.
uint64_t hashBytes(const void *data, size_t size, uint64_t seed = 0);
/// Cache key of a compiled kernel: hash of the binary and the device id.
std::string kernelCacheKey(const std::vector<uint8_t> &binary,
                           const std::string &deviceCacheId);

} // namespace hesper::rt

#endif // HESPER_RUNTIME_RUNTIME_H
