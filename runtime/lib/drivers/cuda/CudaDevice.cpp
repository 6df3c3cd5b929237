//===- CudaDevice.cpp - CUDA driver, loaded with dlopen -------------------===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//
//
// The CUDA device (buffers, transfers, kernels with the cubin cache), the
// loading of libcuda.so.1 and the driver's entry points; command lists are
// in CudaCommands.cpp, and CudaInternal.h holds what the two share.
//
// The CUDA backend talks to the CUDA driver API in libcuda.so.1, opened with
// dlopen, so neither the CUDA toolkit nor its headers are needed to build
// it: the few types, enum values and entry points used are declared in
// CudaInternal.h with the numbers and symbol names of cuda.h.
//
// One Device owns one CUDA context and one non-blocking stream; every
// transfer and launch goes to that stream and is waited for before the call
// returns. Kernels are PTX (format "ptx": JIT-compiled by the driver, with an
// optional disk cache of the resulting cubins) or cubins ("cubin", or an
// empty format); the kernels of one binary (a program's) share one loaded
// module. A CommandList is captured into a CUDA graph on its first
// submission and replayed with one graph launch per submission; changing
// push constants re-captures it.
//
//===----------------------------------------------------------------------===//

#include "CudaInternal.h"

#include <dlfcn.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>

namespace hesper::rt::detail::cuda {

//===----------------------------------------------------------------------===//
// The driver's entry points
//===----------------------------------------------------------------------===//

template <typename F>
static bool loadSymbol(void *lib, const char *name, F &fn) {
  fn = reinterpret_cast<F>(dlsym(lib, name));
  return fn != nullptr;
}

static CudaApi loadCudaApi() {
  CudaApi a;
  void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    // dlerror names the library: "libcuda.so.1: cannot open shared ...".
    const char *why = dlerror();
    a.unavailable = why ? why : "cannot load libcuda.so.1";
    return a;
  }
  // The library stays loaded for the life of the process.
  const char *missing = nullptr;
  auto need = [&](const char *name, auto &fn) {
    if (!missing && !loadSymbol(lib, name, fn))
      missing = name;
  };
  need("cuInit", a.cuInit);
  need("cuGetErrorName", a.cuGetErrorName);
  need("cuGetErrorString", a.cuGetErrorString);
  need("cuDeviceGetCount", a.cuDeviceGetCount);
  need("cuDeviceGet", a.cuDeviceGet);
  need("cuDeviceGetName", a.cuDeviceGetName);
  need("cuDeviceGetAttribute", a.cuDeviceGetAttribute);
  need("cuCtxCreate_v2", a.cuCtxCreate);
  need("cuCtxDestroy_v2", a.cuCtxDestroy);
  need("cuCtxPushCurrent_v2", a.cuCtxPushCurrent);
  need("cuCtxPopCurrent_v2", a.cuCtxPopCurrent);
  need("cuMemAlloc_v2", a.cuMemAlloc);
  need("cuMemFree_v2", a.cuMemFree);
  need("cuMemcpyHtoDAsync_v2", a.cuMemcpyHtoDAsync);
  need("cuMemcpyDtoHAsync_v2", a.cuMemcpyDtoHAsync);
  need("cuMemcpyDtoDAsync_v2", a.cuMemcpyDtoDAsync);
  need("cuMemsetD32Async", a.cuMemsetD32Async);
  need("cuModuleLoadDataEx", a.cuModuleLoadDataEx);
  need("cuModuleGetFunction", a.cuModuleGetFunction);
  need("cuModuleUnload", a.cuModuleUnload);
  need("cuFuncSetAttribute", a.cuFuncSetAttribute);
  need("cuLaunchKernel", a.cuLaunchKernel);
  need("cuStreamCreate", a.cuStreamCreate);
  need("cuStreamDestroy_v2", a.cuStreamDestroy);
  need("cuStreamSynchronize", a.cuStreamSynchronize);
  need("cuEventCreate", a.cuEventCreate);
  need("cuEventDestroy_v2", a.cuEventDestroy);
  need("cuEventRecord", a.cuEventRecord);
  // CUDA 12.8 renamed cuEventElapsedTime to _v2 (same signature).
  if (!loadSymbol(lib, "cuEventElapsedTime_v2", a.cuEventElapsedTime))
    need("cuEventElapsedTime", a.cuEventElapsedTime);
  if (missing) {
    a.unavailable = std::string("libcuda.so.1 lacks ") + missing;
    return a;
  }

  loadSymbol(lib, "cuStreamBeginCapture_v2", a.cuStreamBeginCapture);
  loadSymbol(lib, "cuStreamEndCapture", a.cuStreamEndCapture);
  loadSymbol(lib, "cuGraphInstantiateWithFlags", a.cuGraphInstantiateWithFlags);
  loadSymbol(lib, "cuGraphInstantiate_v2", a.cuGraphInstantiate);
  loadSymbol(lib, "cuGraphLaunch", a.cuGraphLaunch);
  loadSymbol(lib, "cuGraphExecDestroy", a.cuGraphExecDestroy);
  loadSymbol(lib, "cuGraphDestroy", a.cuGraphDestroy);
  loadSymbol(lib, "cuLinkCreate_v2", a.cuLinkCreate);
  loadSymbol(lib, "cuLinkAddData_v2", a.cuLinkAddData);
  loadSymbol(lib, "cuLinkComplete", a.cuLinkComplete);
  loadSymbol(lib, "cuLinkDestroy", a.cuLinkDestroy);
  loadSymbol(lib, "cuDriverGetVersion", a.cuDriverGetVersion);

  if (CUresult r = a.cuInit(0); r != CUDA_SUCCESS)
    a.unavailable = "cuInit failed: " + a.describe(r);
  return a;
}

/// The driver, loaded and initialized once per process.
static const CudaApi &cudaApi() {
  static const CudaApi api = loadCudaApi();
  return api;
}

static Status unavailable(const std::string &why) {
  return Status::error("CUDA unavailable: " + why);
}

/// A JIT log on one line: its lines joined with "; ".
static std::string oneLine(const char *log) {
  std::string s;
  bool lineBreak = false;
  for (const char *p = log; *p; ++p) {
    if (*p == '\n' || *p == '\r') {
      lineBreak = true;
      continue;
    }
    if (lineBreak && !s.empty())
      s += "; ";
    lineBreak = false;
    s += *p;
  }
  while (!s.empty() && s.back() == ' ')
    s.pop_back();
  return s;
}

namespace {

/// Error and info log buffers passed to the JIT as CUjit options.
struct JitLogs {
  static constexpr size_t kSize = 16384;
  char info[kSize] = {};
  char error[kSize] = {};
  CUjit_option options[4] = {
      CU_JIT_INFO_LOG_BUFFER, CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES,
      CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
  // One byte short of the buffers, so the logs always end in a NUL.
  void *values[4] = {info, reinterpret_cast<void *>(kSize - 1), error,
                     reinterpret_cast<void *>(kSize - 1)};

  /// `base` followed by the error log, when there is one.
  Status withLog(Status base) const {
    std::string log = oneLine(error);
    if (log.empty())
      return base;
    return Status::error(base.message() + ": " + log);
  }
};

} // namespace

//===----------------------------------------------------------------------===//
// Files of the cubin cache
//===----------------------------------------------------------------------===//

static bool readFile(const std::string &path, std::vector<uint8_t> &out) {
  std::FILE *f = std::fopen(path.c_str(), "rb");
  if (!f)
    return false;
  uint8_t chunk[65536];
  size_t n;
  while ((n = std::fread(chunk, 1, sizeof(chunk), f)) > 0)
    out.insert(out.end(), chunk, chunk + n);
  bool ok = !std::ferror(f);
  std::fclose(f);
  return ok && !out.empty();
}


//===----------------------------------------------------------------------===//
// Device state shared by every object of a device
//===----------------------------------------------------------------------===//

void CudaContext::releaseModule(CUmodule module) {
  std::lock_guard<std::mutex> lock(moduleMutex);
  for (auto it = modules.begin(); it != modules.end(); ++it) {
    if (it->second.module != module)
      continue;
    if (--it->second.kernels == 0) {
      ContextScope scope(*this);
      api->cuModuleUnload(module);
      modules.erase(it);
    }
    return;
  }
}

CudaContext::~CudaContext() {
  if (stream) {
    ContextScope scope(*this);
    api->cuStreamDestroy(stream);
  }
  if (ctx)
    api->cuCtxDestroy(ctx);
}

//===----------------------------------------------------------------------===//
// Devices
//===----------------------------------------------------------------------===//

namespace {

class CudaDevice final : public Device {
public:
  explicit CudaDevice(std::shared_ptr<CudaContext> c) : ctx(std::move(c)) {}

  const DeviceInfo &info() const override { return ctx->info; }

  Result<std::unique_ptr<Buffer>> createBuffer(size_t bytes) override {
    CUdeviceptr ptr = 0;
    if (bytes) {
      ContextScope scope(*ctx);
      if (!scope.status())
        return scope.status();
      if (CUresult r = api().cuMemAlloc(&ptr, bytes); r != CUDA_SUCCESS)
        return api().fail("createBuffer(" + std::to_string(bytes) + ")",
                          "cuMemAlloc", r);
    }
    auto buffer = std::make_unique<CudaBuffer>(ctx, ptr, bytes);
    ctx->add<Buffer>(ctx->buffers, buffer.get());
    return std::unique_ptr<Buffer>(std::move(buffer));
  }

  Status upload(Buffer &dst, const void *src, size_t bytes,
                size_t offset) override {
    CudaBuffer *b = own(dst);
    if (!b)
      return notOurs("upload");
    if (Status s = checkTransfer("upload", src, bytes, offset, b->bytes);
        !s || !bytes)
      return s;
    ContextScope scope(*ctx);
    if (!scope.status())
      return scope.status();
    if (CUresult r =
            api().cuMemcpyHtoDAsync(b->ptr + offset, src, bytes, ctx->stream);
        r != CUDA_SUCCESS)
      return api().fail("upload", "cuMemcpyHtoDAsync", r);
    return sync("upload");
  }

  Status download(Buffer &src, void *dst, size_t bytes,
                  size_t offset) override {
    CudaBuffer *b = own(src);
    if (!b)
      return notOurs("download");
    if (Status s = checkTransfer("download", dst, bytes, offset, b->bytes);
        !s || !bytes)
      return s;
    ContextScope scope(*ctx);
    if (!scope.status())
      return scope.status();
    if (CUresult r =
            api().cuMemcpyDtoHAsync(dst, b->ptr + offset, bytes, ctx->stream);
        r != CUDA_SUCCESS)
      return api().fail("download", "cuMemcpyDtoHAsync", r);
    return sync("download");
  }

  /// Repeats the 32-bit pattern over the whole buffer; a size that is not a
  /// multiple of 4 ends with the pattern's first bytes.
  Status fill(Buffer &dst, uint32_t pattern) override {
    CudaBuffer *b = own(dst);
    if (!b)
      return notOurs("fill");
    if (!b->bytes)
      return Status();
    ContextScope scope(*ctx);
    if (!scope.status())
      return scope.status();
    size_t words = b->bytes / 4, tail = b->bytes % 4;
    if (words)
      if (CUresult r =
              api().cuMemsetD32Async(b->ptr, pattern, words, ctx->stream);
          r != CUDA_SUCCESS)
        return api().fail("fill", "cuMemsetD32Async", r);
    uint8_t tailBytes[4] = {uint8_t(pattern), uint8_t(pattern >> 8),
                            uint8_t(pattern >> 16), uint8_t(pattern >> 24)};
    if (tail)
      if (CUresult r = api().cuMemcpyHtoDAsync(b->ptr + words * 4, tailBytes,
                                               tail, ctx->stream);
          r != CUDA_SUCCESS)
        return api().fail("fill", "cuMemcpyHtoDAsync", r);
    return sync("fill");
  }

  Status copy(Buffer &src, Buffer &dst, size_t bytes) override {
    CudaBuffer *s = own(src), *d = own(dst);
    if (!s || !d)
      return notOurs("copy");
    if (bytes > s->bytes || bytes > d->bytes)
      return Status::error("copy: " + std::to_string(bytes) +
                           " bytes do not fit in the source (" +
                           std::to_string(s->bytes) + " bytes) or the " +
                           "destination (" + std::to_string(d->bytes) +
                           " bytes)");
    if (!bytes || s == d)
      return Status();
    ContextScope scope(*ctx);
    if (!scope.status())
      return scope.status();
    if (CUresult r =
            api().cuMemcpyDtoDAsync(d->ptr, s->ptr, bytes, ctx->stream);
        r != CUDA_SUCCESS)
      return api().fail("copy", "cuMemcpyDtoDAsync", r);
    return sync("copy");
  }

  Result<std::unique_ptr<Kernel>> createKernel(const KernelDesc &d) override;

  Result<std::unique_ptr<CommandList>> createCommandList(bool timing) override {
    return std::unique_ptr<CommandList>(
        std::make_unique<CudaCommandList>(ctx, timing));
  }

private:
  const CudaApi &api() const { return *ctx->api; }

  CudaBuffer *own(Buffer &b) {
    if (!ctx->serial<Buffer>(ctx->buffers, &b))
      return nullptr;
    return static_cast<CudaBuffer *>(&b);
  }
  static Status notOurs(const char *op) {
    return Status::error(std::string(op) +
                         ": the buffer is not one of this CUDA device's");
  }

  Status sync(const char *op) {
    if (CUresult r = api().cuStreamSynchronize(ctx->stream); r != CUDA_SUCCESS)
      return api().fail(op, "cuStreamSynchronize", r);
    return Status();
  }

  Status checkDesc(const KernelDesc &d) const;
  /// The module of `d`'s binary: loaded already for another kernel (one
  /// more user), or loaded now. The caller holds the context current.
  Result<CUmodule> moduleFor(const KernelDesc &d, const std::string &what);
  /// Loads `d`'s binary: a cubin as it is, PTX through the cubin cache
  /// where there is one, else by the driver's JIT.
  Result<CUmodule> loadBinary(const KernelDesc &d, const std::string &what);
  Result<CUmodule> loadModule(const void *image, const std::string &what);
  Result<std::vector<uint8_t>> linkPtx(const std::string &ptx,
                                       const std::string &what);

  std::shared_ptr<CudaContext> ctx;
};

Status CudaDevice::checkDesc(const KernelDesc &d) const {
  const DeviceInfo &info = ctx->info;
  std::string what = "kernel '" + d.name + "': ";
  if (d.name.empty())
    return Status::error("kernel has no entry point name");
  if (d.binary.empty())
    return Status::error(what + "empty binary");
  // An empty format is a cubin, as before formats were named.
  if (!d.format.empty() && d.format != "ptx" && d.format != "cubin")
    return Status::error(what + "format '" + d.format +
                         "' is not one the CUDA driver runs (expected 'ptx' "
                         "or 'cubin')");
  if (d.pushConstantBytes % 4)
    return Status::error(what + std::to_string(d.pushConstantBytes) +
                         " push-constant bytes are not a multiple of 4");
  uint64_t paramBytes = 8ull * d.numBindings + d.pushConstantBytes;
  if (paramBytes > kMaxParamBytes)
    return Status::error(
        what + std::to_string(d.numBindings) + " bindings and " +
        std::to_string(d.pushConstantBytes) +
        " push-constant bytes exceed the " + std::to_string(kMaxParamBytes) +
        " bytes of kernel parameters");
  uint64_t invocations = 1;
  for (int i = 0; i < 3; ++i) {
    uint32_t s = d.workgroupSize[i];
    if (s == 0 || s > info.maxWorkgroupSize[i])
      return Status::error(what + "workgroup size " + std::to_string(s) +
                           " in dimension " + std::to_string(i) +
                           " is not in 1.." +
                           std::to_string(info.maxWorkgroupSize[i]));
    invocations *= s;
  }
  if (invocations > info.maxWorkgroupInvocations)
    return Status::error(what + "workgroup of " + std::to_string(invocations) +
                         " threads exceeds the device's " +
                         std::to_string(info.maxWorkgroupInvocations));
  if (d.sharedMemoryBytes > info.maxSharedMemoryBytes)
    return Status::error(what + std::to_string(d.sharedMemoryBytes) +
                         " bytes of shared memory exceed the device's " +
                         std::to_string(info.maxSharedMemoryBytes));
  return Status();
}

Result<CUmodule> CudaDevice::loadModule(const void *image,
                                        const std::string &what) {
  JitLogs logs;
  CUmodule module = nullptr;
  if (CUresult r = api().cuModuleLoadDataEx(&module, image, 4, logs.options,
                                            logs.values);
      r != CUDA_SUCCESS)
    return logs.withLog(api().fail(what, "cuModuleLoadDataEx", r));
  return module;
}

Result<std::vector<uint8_t>> CudaDevice::linkPtx(const std::string &ptx,
                                                 const std::string &what) {
  JitLogs logs;
  CUlinkState link = nullptr;
  if (CUresult r = api().cuLinkCreate(4, logs.options, logs.values, &link);
      r != CUDA_SUCCESS)
    return logs.withLog(api().fail(what, "cuLinkCreate", r));
  Status st;
  std::vector<uint8_t> cubin;
  // The PTX text is passed with its terminating NUL, as the JIT expects.
  if (CUresult r = api().cuLinkAddData(
          link, CU_JIT_INPUT_PTX, const_cast<char *>(ptx.c_str()),
          std::strlen(ptx.c_str()) + 1, "kernel.ptx", 0, nullptr, nullptr);
      r != CUDA_SUCCESS) {
    st = logs.withLog(api().fail(what, "cuLinkAddData", r));
  } else {
    void *image = nullptr;
    size_t size = 0;
    if (CUresult done = api().cuLinkComplete(link, &image, &size);
        done != CUDA_SUCCESS)
      st = logs.withLog(api().fail(what, "cuLinkComplete", done));
    else
      cubin.assign(static_cast<uint8_t *>(image),
                   static_cast<uint8_t *>(image) + size);
  }
  api().cuLinkDestroy(link);
  if (!st)
    return st;
  return cubin;
}

Result<CUmodule> CudaDevice::moduleFor(const KernelDesc &d,
                                      const std::string &what) {
  std::lock_guard<std::mutex> lock(ctx->moduleMutex);
  uint64_t hash = loadedBinaryKey(d.binary);
  auto range = ctx->modules.equal_range(hash);
  for (auto it = range.first; it != range.second; ++it) {
    CudaContext::SharedModule &shared = it->second;
    if (shared.format == d.format && shared.binary == d.binary) {
      ++shared.kernels;
      return shared.module;
    }
  }
  Result<CUmodule> module = loadBinary(d, what);
  if (module.ok())
    ctx->modules.emplace(
        hash, CudaContext::SharedModule{d.binary, d.format, *module, 1});
  return module;
}

Result<CUmodule> CudaDevice::loadBinary(const KernelDesc &d,
                                        const std::string &what) {
  // PTX must reach the driver NUL-terminated; a cubin is passed as is.
  bool isPtx = d.format == "ptx";
  std::string ptx;
  if (isPtx)
    ptx.assign(d.binary.begin(), d.binary.end());
  const void *image = isPtx ? static_cast<const void *>(ptx.c_str())
                            : static_cast<const void *>(d.binary.data());

  CUmodule module = nullptr;
  if (isPtx && !ctx->cacheDir.empty() && api().haveLinker()) {
    std::string path =
        cubinCachePath(ctx->cacheDir, d.binary, ctx->info.cacheId);
    std::vector<uint8_t> cached;
    if (readFile(path, cached)) {
      // A cubin that no longer loads (say, after a driver downgrade) is
      // compiled again and replaced.
      if (Result<CUmodule> m = loadModule(cached.data(), what); m.ok())
        module = *m;
    }
    if (!module) {
      Result<std::vector<uint8_t>> cubin = linkPtx(ptx, what);
      if (!cubin)
        return cubin.status();
      if (Status st = writeFileAtomically(path, *cubin); !st)
        std::fprintf(stderr, "hesper: cubin cache: %s\n", st.message().c_str());
      Result<CUmodule> m = loadModule(cubin->data(), what);
      if (!m)
        return m.status();
      module = *m;
    }
  } else {
    Result<CUmodule> m = loadModule(image, what);
    if (!m)
      return m.status();
    module = *m;
  }
  return module;
}

Result<std::unique_ptr<Kernel>> CudaDevice::createKernel(const KernelDesc &d) {
  if (Status st = checkDesc(d); !st)
    return st;
  std::string what = "kernel '" + d.name + "'";
  ContextScope scope(*ctx);
  if (!scope.status())
    return scope.status();
  Result<CUmodule> loaded = moduleFor(d, what);
  if (!loaded)
    return loaded.status();
  CUmodule module = *loaded;

  CUfunction function = nullptr;
  if (CUresult r = api().cuModuleGetFunction(&function, module, d.name.c_str());
      r != CUDA_SUCCESS) {
    ctx->releaseModule(module);
    return api().fail(what, "cuModuleGetFunction", r);
  }
  if (d.sharedMemoryBytes > kDefaultDynamicSharedBytes) {
    if (CUresult r = api().cuFuncSetAttribute(
            function, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
            static_cast<int>(d.sharedMemoryBytes));
        r != CUDA_SUCCESS) {
      ctx->releaseModule(module);
      return api().fail(what, "cuFuncSetAttribute", r);
    }
  }
  auto kernel = std::make_unique<CudaKernel>(ctx, d, module, function);
  ctx->add<Kernel>(ctx->kernels, kernel.get());
  return std::unique_ptr<Kernel>(std::move(kernel));
}

} // namespace

/// Describes device `ordinal`.
static Result<DeviceInfo> queryDevice(const CudaApi &a, int ordinal) {
  std::string what = "CUDA device " + std::to_string(ordinal);
  CUdevice dev;
  if (CUresult r = a.cuDeviceGet(&dev, ordinal); r != CUDA_SUCCESS)
    return a.fail(what, "cuDeviceGet", r);
  char name[256] = {};
  if (CUresult r = a.cuDeviceGetName(name, sizeof(name) - 1, dev);
      r != CUDA_SUCCESS)
    return a.fail(what, "cuDeviceGetName", r);
  Status st;
  auto attr = [&](int attribute) -> uint32_t {
    int v = 0;
    if (CUresult r = a.cuDeviceGetAttribute(&v, attribute, dev);
        r != CUDA_SUCCESS && st.ok())
      st = a.fail(what, "cuDeviceGetAttribute", r);
    return v > 0 ? static_cast<uint32_t>(v) : 0;
  };

  DeviceInfo info;
  info.backend = Backend::Cuda;
  info.name = name;
  info.type = attr(CU_DEVICE_ATTRIBUTE_INTEGRATED) ? DeviceType::Integrated
                                                   : DeviceType::Discrete;
  info.subgroupSize = attr(CU_DEVICE_ATTRIBUTE_WARP_SIZE);
  info.subgroupArithmetic = true;
  for (int i = 0; i < 3; ++i) {
    info.maxWorkgroupSize[i] = attr(CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X + i);
    info.maxWorkgroupCount[i] = attr(CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X + i);
  }
  info.maxWorkgroupInvocations =
      attr(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK);
  info.maxSharedMemoryBytes =
      std::max(attr(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK),
               attr(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN));
  info.maxPushConstantBytes = kMaxParamBytes;
  uint32_t major = attr(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR);
  uint32_t minor = attr(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
  // Half-precision arithmetic arrived with sm_53; 8- and 16-bit loads and
  // stores work everywhere.
  info.computeCapability = major * 10 + minor;
  info.shaderFloat16 = info.computeCapability >= 53;
  info.storage8Bit = true;
  info.storage16Bit = true;
  info.timestampPeriodNs = 1; // kernel times come from events, in ns
  // The driver version is part of the identity: a newer driver's JIT may
  // compile the same PTX differently, so its cubins are not reused.
  int driverVersion = 0;
  if (a.cuDriverGetVersion)
    a.cuDriverGetVersion(&driverVersion);
  info.cacheId = "cuda:sm_" + std::to_string(major) + std::to_string(minor) +
                 ":" + info.name + ":driver" + std::to_string(driverVersion);
  if (!st)
    return st;
  return info;
}

static Result<std::vector<DeviceInfo>> listDevicesOf(const CudaApi &a) {
  if (!a.unavailable.empty())
    return unavailable(a.unavailable);
  int count = 0;
  if (CUresult r = a.cuDeviceGetCount(&count); r != CUDA_SUCCESS)
    return unavailable("cuDeviceGetCount failed: " + a.describe(r));
  if (count <= 0)
    return unavailable("no CUDA devices");
  std::vector<DeviceInfo> devices;
  for (int i = 0; i < count; ++i) {
    Result<DeviceInfo> info = queryDevice(a, i);
    if (!info)
      return info.status();
    devices.push_back(std::move(*info));
  }
  return devices;
}

} // namespace hesper::rt::detail::cuda

namespace hesper::rt::detail {

using namespace cuda; // CudaInternal.h

Result<std::vector<DeviceInfo>> listCudaDevices() {
  return listDevicesOf(cudaApi());
}

Result<std::unique_ptr<Device>> openCudaDevice(const DeviceOptions &opts) {
  const CudaApi &a = cudaApi();
  Result<std::vector<DeviceInfo>> devices = listDevicesOf(a);
  if (!devices)
    return devices.status();
  int count = static_cast<int>(devices->size());
  int index = opts.index;
  if (index < 0) {
    // The first discrete GPU, else the first device.
    index = 0;
    for (int i = count - 1; i >= 0; --i)
      if ((*devices)[i].type == DeviceType::Discrete)
        index = i;
  } else if (index >= count) {
    return Status::error("CUDA device index " + std::to_string(index) +
                         " out of range (" + std::to_string(count) +
                         " devices)");
  }

  auto ctx = std::make_shared<CudaContext>();
  ctx->api = &a;
  ctx->info = (*devices)[index];
  ctx->cacheDir = effectiveCacheDir(opts);
  std::string what = "CUDA device " + std::to_string(index);
  CUdevice dev;
  if (CUresult r = a.cuDeviceGet(&dev, index); r != CUDA_SUCCESS)
    return a.fail(what, "cuDeviceGet", r);
  if (CUresult r = a.cuCtxCreate(&ctx->ctx, 0, dev); r != CUDA_SUCCESS)
    return a.fail(what, "cuCtxCreate", r);
  // cuCtxCreate made the context current; every call pushes it instead.
  CUcontext popped;
  a.cuCtxPopCurrent(&popped);
  {
    ContextScope scope(*ctx);
    if (!scope.status())
      return scope.status();
    if (CUresult r = a.cuStreamCreate(&ctx->stream, CU_STREAM_NON_BLOCKING);
        r != CUDA_SUCCESS)
      return a.fail(what, "cuStreamCreate", r);
  }
  return std::unique_ptr<Device>(std::make_unique<CudaDevice>(ctx));
}

} // namespace hesper::rt::detail
