//===- CudaInternal.h - Shared parts of the CUDA driver ---------*- C++ -*-===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//
//
// Internal to the runtime: what the files of the CUDA driver share (the
// slice of cuda.h it uses, the table of driver entry points, the device
// state every object of a device holds, its buffers and kernels, and the
// command list).
//
//===----------------------------------------------------------------------===//

#ifndef HESPER_RUNTIME_LIB_DRIVERS_CUDA_CUDAINTERNAL_H
#define HESPER_RUNTIME_LIB_DRIVERS_CUDA_CUDAINTERNAL_H

#include "hal/Drivers.h"

#include <mutex>
#include <unordered_map>

namespace hesper::rt::detail::cuda {

//===----------------------------------------------------------------------===//
// The slice of cuda.h used here
//===----------------------------------------------------------------------===//

using CUresult = int;
using CUdevice = int;
using CUdeviceptr = unsigned long long;
using CUjit_option = int; // C enums are int-sized
struct CUctx_st;
using CUcontext = CUctx_st *;
struct CUmod_st;
using CUmodule = CUmod_st *;
struct CUfunc_st;
using CUfunction = CUfunc_st *;
struct CUstream_st;
using CUstream = CUstream_st *;
struct CUevent_st;
using CUevent = CUevent_st *;
struct CUgraph_st;
using CUgraph = CUgraph_st *;
struct CUgraphNode_st;
using CUgraphNode = CUgraphNode_st *;
struct CUgraphExec_st;
using CUgraphExec = CUgraphExec_st *;
struct CUlinkState_st;
using CUlinkState = CUlinkState_st *;

constexpr CUresult CUDA_SUCCESS = 0;
constexpr CUresult CUDA_ERROR_INVALID_CONTEXT = 201;

// CUdevice_attribute
constexpr int CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK = 1;
constexpr int CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X = 2; // Y = 3, Z = 4
constexpr int CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X = 5;  // Y = 6, Z = 7
constexpr int CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK = 8;
constexpr int CU_DEVICE_ATTRIBUTE_WARP_SIZE = 10;
constexpr int CU_DEVICE_ATTRIBUTE_INTEGRATED = 18;
constexpr int CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75;
constexpr int CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76;
constexpr int CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN = 97;

// CUfunction_attribute
constexpr int CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8;

// CUjit_option
constexpr CUjit_option CU_JIT_INFO_LOG_BUFFER = 3;
constexpr CUjit_option CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES = 4;
constexpr CUjit_option CU_JIT_ERROR_LOG_BUFFER = 5;
constexpr CUjit_option CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES = 6;

// CUjitInputType
constexpr int CU_JIT_INPUT_PTX = 1;

// CUstream_flags, CUevent_flags, CUstreamCaptureMode
constexpr unsigned CU_STREAM_NON_BLOCKING = 1;
constexpr unsigned CU_EVENT_DEFAULT = 0;
constexpr int CU_STREAM_CAPTURE_MODE_THREAD_LOCAL = 1;

/// Dynamic shared memory a kernel may use without opting in.
constexpr uint32_t kDefaultDynamicSharedBytes = 48 * 1024;
/// Bytes of kernel parameters a launch may pass (bindings take 8 each).
constexpr uint32_t kMaxParamBytes = 4096;

//===----------------------------------------------------------------------===//
// The driver's entry points
//===----------------------------------------------------------------------===//

struct CudaApi {
  /// Empty when the driver is usable; otherwise why it is not.
  std::string unavailable;

  CUresult (*cuInit)(unsigned) = nullptr;
  CUresult (*cuDriverGetVersion)(int *) = nullptr; ///< optional
  CUresult (*cuGetErrorName)(CUresult, const char **) = nullptr;
  CUresult (*cuGetErrorString)(CUresult, const char **) = nullptr;
  CUresult (*cuDeviceGetCount)(int *) = nullptr;
  CUresult (*cuDeviceGet)(CUdevice *, int) = nullptr;
  CUresult (*cuDeviceGetName)(char *, int, CUdevice) = nullptr;
  CUresult (*cuDeviceGetAttribute)(int *, int, CUdevice) = nullptr;
  CUresult (*cuCtxCreate)(CUcontext *, unsigned, CUdevice) = nullptr;
  CUresult (*cuCtxDestroy)(CUcontext) = nullptr;
  CUresult (*cuCtxPushCurrent)(CUcontext) = nullptr;
  CUresult (*cuCtxPopCurrent)(CUcontext *) = nullptr;
  CUresult (*cuMemAlloc)(CUdeviceptr *, size_t) = nullptr;
  CUresult (*cuMemFree)(CUdeviceptr) = nullptr;
  CUresult (*cuMemcpyHtoDAsync)(CUdeviceptr, const void *, size_t,
                                CUstream) = nullptr;
  CUresult (*cuMemcpyDtoHAsync)(void *, CUdeviceptr, size_t,
                                CUstream) = nullptr;
  CUresult (*cuMemcpyDtoDAsync)(CUdeviceptr, CUdeviceptr, size_t,
                                CUstream) = nullptr;
  CUresult (*cuMemsetD32Async)(CUdeviceptr, unsigned, size_t,
                               CUstream) = nullptr;
  CUresult (*cuModuleLoadDataEx)(CUmodule *, const void *, unsigned,
                                 CUjit_option *, void **) = nullptr;
  CUresult (*cuModuleGetFunction)(CUfunction *, CUmodule,
                                  const char *) = nullptr;
  CUresult (*cuModuleUnload)(CUmodule) = nullptr;
  CUresult (*cuFuncSetAttribute)(CUfunction, int, int) = nullptr;
  CUresult (*cuLaunchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned,
                             unsigned, unsigned, unsigned, CUstream, void **,
                             void **) = nullptr;
  CUresult (*cuStreamCreate)(CUstream *, unsigned) = nullptr;
  CUresult (*cuStreamDestroy)(CUstream) = nullptr;
  CUresult (*cuStreamSynchronize)(CUstream) = nullptr;
  CUresult (*cuEventCreate)(CUevent *, unsigned) = nullptr;
  CUresult (*cuEventDestroy)(CUevent) = nullptr;
  CUresult (*cuEventRecord)(CUevent, CUstream) = nullptr;
  CUresult (*cuEventElapsedTime)(float *, CUevent, CUevent) = nullptr;

  // Optional: CUDA graphs (without them lists are launched one by one).
  CUresult (*cuStreamBeginCapture)(CUstream, int) = nullptr;
  CUresult (*cuStreamEndCapture)(CUstream, CUgraph *) = nullptr;
  CUresult (*cuGraphInstantiateWithFlags)(CUgraphExec *, CUgraph,
                                          unsigned long long) = nullptr;
  CUresult (*cuGraphInstantiate)(CUgraphExec *, CUgraph, CUgraphNode *, char *,
                                 size_t) = nullptr;
  CUresult (*cuGraphLaunch)(CUgraphExec, CUstream) = nullptr;
  CUresult (*cuGraphExecDestroy)(CUgraphExec) = nullptr;
  CUresult (*cuGraphDestroy)(CUgraph) = nullptr;

  // Optional: the linker, which hands back the cubin for the disk cache.
  CUresult (*cuLinkCreate)(unsigned, CUjit_option *, void **,
                           CUlinkState *) = nullptr;
  CUresult (*cuLinkAddData)(CUlinkState, int, void *, size_t, const char *,
                            unsigned, CUjit_option *, void **) = nullptr;
  CUresult (*cuLinkComplete)(CUlinkState, void **, size_t *) = nullptr;
  CUresult (*cuLinkDestroy)(CUlinkState) = nullptr;

  bool haveGraphs() const {
    return cuStreamBeginCapture && cuStreamEndCapture &&
           (cuGraphInstantiateWithFlags || cuGraphInstantiate) &&
           cuGraphLaunch && cuGraphExecDestroy && cuGraphDestroy;
  }
  bool haveLinker() const {
    return cuLinkCreate && cuLinkAddData && cuLinkComplete && cuLinkDestroy;
  }

  /// "CUDA_ERROR_X (description)" for a result code.
  std::string describe(CUresult r) const {
    const char *name = nullptr, *text = nullptr;
    if (cuGetErrorName)
      cuGetErrorName(r, &name);
    if (cuGetErrorString)
      cuGetErrorString(r, &text);
    std::string s = name ? name : "CUDA error " + std::to_string(r);
    if (text)
      s += std::string(" (") + text + ")";
    return s;
  }

  /// "<what>: <call> failed: CUDA_ERROR_X (description)".
  Status fail(const std::string &what, const char *call, CUresult r) const {
    std::string prefix = what.empty() ? "" : what + ": ";
    return Status::error(prefix + call + " failed: " + describe(r));
  }
};

//===----------------------------------------------------------------------===//
// Device state shared by every object of a device
//===----------------------------------------------------------------------===//

/// The context, stream and description of one opened device. Buffers,
/// kernels and command lists hold it too, so it lives until the last of
/// them is gone. It also knows which buffers and kernels are alive (with a
/// serial number each) to refuse objects of other devices and destroyed
/// ones.
struct CudaContext {
  const CudaApi *api = nullptr;
  CUcontext ctx = nullptr;
  CUstream stream = nullptr;
  DeviceInfo info;
  std::string cacheDir;

  std::mutex mutex;
  std::unordered_map<const Buffer *, uint64_t> buffers;
  std::unordered_map<const Kernel *, uint64_t> kernels;
  uint64_t nextSerial = 1;

  /// A loaded module and the kernels that use it. A program's kernels
  /// carry the same binary (their module's), so it is loaded once, not
  /// once per kernel, and unloaded with its last kernel.
  struct SharedModule {
    std::vector<uint8_t> binary;
    std::string format;
    CUmodule module = nullptr;
    size_t kernels = 0;
  };
  std::mutex moduleMutex; ///< held while a module is looked up or loaded
  /// By loadedBinaryKey (equal keys are told apart by the bytes).
  std::unordered_multimap<uint64_t, SharedModule> modules;
  /// One kernel less uses `module`; the last one unloads it.
  void releaseModule(CUmodule module);

  ~CudaContext();

  template <typename T>
  void add(std::unordered_map<const T *, uint64_t> &live, const T *p) {
    std::lock_guard<std::mutex> lock(mutex);
    live[p] = nextSerial++;
  }
  template <typename T>
  void remove(std::unordered_map<const T *, uint64_t> &live, const T *p) {
    std::lock_guard<std::mutex> lock(mutex);
    live.erase(p);
  }
  /// The serial of a live object, 0 when it is not one of this device's.
  template <typename T>
  uint64_t serial(std::unordered_map<const T *, uint64_t> &live, const T *p) {
    std::lock_guard<std::mutex> lock(mutex);
    auto it = live.find(p);
    return it == live.end() ? 0 : it->second;
  }
};

/// Makes a device's context current on this thread for a scope.
class ContextScope {
public:
  explicit ContextScope(const CudaContext &c) : api(*c.api) {
    CUresult r =
        c.ctx ? api.cuCtxPushCurrent(c.ctx) : CUDA_ERROR_INVALID_CONTEXT;
    pushed = r == CUDA_SUCCESS;
    if (!pushed)
      failure = api.fail("making the device's context current",
                         "cuCtxPushCurrent", r);
  }
  /// Why the context could not be made current (calls would then run in
  /// no context or another one), or success.
  const Status &status() const { return failure; }
  ~ContextScope() {
    CUcontext popped;
    if (pushed)
      api.cuCtxPopCurrent(&popped);
  }
  ContextScope(const ContextScope &) = delete;
  ContextScope &operator=(const ContextScope &) = delete;

private:
  const CudaApi &api;
  bool pushed = false;
  Status failure;
};

class CudaBuffer final : public Buffer {
public:
  CudaBuffer(std::shared_ptr<CudaContext> c, CUdeviceptr p, size_t n)
      : ctx(std::move(c)), ptr(p), bytes(n) {}
  ~CudaBuffer() override {
    ctx->remove<Buffer>(ctx->buffers, this);
    if (ptr) {
      ContextScope scope(*ctx);
      ctx->api->cuMemFree(ptr);
    }
  }
  size_t size() const override { return bytes; }

  std::shared_ptr<CudaContext> ctx;
  CUdeviceptr ptr; ///< 0 for an empty buffer
  size_t bytes;
};

class CudaKernel final : public Kernel {
public:
  CudaKernel(std::shared_ptr<CudaContext> c, KernelDesc d, CUmodule m,
             CUfunction f)
      : ctx(std::move(c)), kernelDesc(std::move(d)), module(m), function(f) {}
  ~CudaKernel() override {
    ctx->remove<Kernel>(ctx->kernels, this);
    ctx->releaseModule(module);
  }
  const KernelDesc &desc() const override { return kernelDesc; }

  std::shared_ptr<CudaContext> ctx;
  KernelDesc kernelDesc;
  CUmodule module;
  CUfunction function;
};

//===----------------------------------------------------------------------===//
// Command lists
//===----------------------------------------------------------------------===//

class CudaCommandList final : public CommandList {
public:
  CudaCommandList(std::shared_ptr<CudaContext> c, bool withTiming)
      : ctx(std::move(c)), timing(withTiming),
        state(ctx->info.maxWorkgroupCount) {}
  ~CudaCommandList() override;

  Status record(const std::vector<Dispatch> &dispatches) override;

  Status setPushConstants(size_t dispatchIndex,
                          const std::vector<uint8_t> &bytes) override {
    return state.setPushConstants(dispatchIndex, bytes);
  }

  Status submit() override;

  uint64_t submissions() const override { return state.submissions(); }
  std::vector<double> lastKernelTimesNs() const override { return times; }

private:
  /// Refuses to replay a list whose kernels or buffers were destroyed
  /// (their serials are gone or belong to new objects at the same address).
  Status checkAlive();
  Status launchAll();
  Status synchronize();
  Status runDirect();
  void dropGraph();
  /// Captures the whole list into a graph and instantiates it.
  Status capture();
  Status runGraph();
  /// Launches the dispatches one by one with an event between each two, so
  /// the event times are the kernel times (no graph in this mode).
  Status runTimed();

  std::shared_ptr<CudaContext> ctx;
  bool timing;
  ReplayState state;
  /// Serials of each dispatch's kernel then bindings, in recording order.
  std::vector<uint64_t> serials;
  CUgraph graph = nullptr;
  CUgraphExec exec = nullptr;
  std::vector<CUevent> events;
  std::vector<double> times;
};

} // namespace hesper::rt::detail::cuda

#endif // HESPER_RUNTIME_LIB_DRIVERS_CUDA_CUDAINTERNAL_H
