//===- RuntimeTest.cpp - Tests of the HAL and the CUDA driver -------------===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//
//
// Names, hashes and cache keys, the command-list bookkeeping (ReplayState)
// with fake kernels and buffers, and the CUDA driver: without libcuda it must
// say so; with a GPU the CudaDriver tests run a hand-written PTX kernel,
// otherwise they skip with the reason.
//
//===----------------------------------------------------------------------===//

#include "../lib/hal/Drivers.h"

#include <gtest/gtest.h>

#include <dlfcn.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>

using namespace hesper::rt;
using hesper::rt::detail::ReplayState;

namespace {

uint64_t hashString(const std::string &s, uint64_t seed = 0) {
  return hashBytes(s.data(), s.size(), seed);
}

std::vector<uint8_t> bytesOf(const std::string &s) {
  return std::vector<uint8_t>(s.begin(), s.end());
}

bool startsWith(const std::string &s, const std::string &prefix) {
  return s.rfind(prefix, 0) == 0;
}

bool contains(const std::string &s, const std::string &needle) {
  return s.find(needle) != std::string::npos;
}

/// A kernel of no backend, for the bookkeeping tests.
class FakeKernel : public Kernel {
public:
  FakeKernel(uint32_t bindings, uint32_t pushBytes) {
    d.name = "fake";
    d.numBindings = bindings;
    d.pushConstantBytes = pushBytes;
  }
  const KernelDesc &desc() const override { return d; }

private:
  KernelDesc d;
};

class FakeBuffer : public Buffer {
public:
  size_t size() const override { return 16; }
};

Dispatch makeDispatch(Kernel *k, std::vector<Buffer *> bindings,
                      size_t pushBytes, uint32_t gx = 1) {
  Dispatch d;
  d.kernel = k;
  d.bindings = std::move(bindings);
  d.pushConstants.assign(pushBytes, 0);
  d.grid[0] = gx;
  return d;
}

} // namespace

//===----------------------------------------------------------------------===//
// Names, hashes, cache keys
//===----------------------------------------------------------------------===//

TEST(RuntimeTest, Names) {
  EXPECT_STREQ(backendName(Backend::Vulkan), "vulkan");
  EXPECT_STREQ(backendName(Backend::Cuda), "cuda");
  EXPECT_STREQ(backendName(Backend::Cpu), "cpu");
  EXPECT_STREQ(deviceTypeName(DeviceType::Discrete), "discrete");
  EXPECT_STREQ(deviceTypeName(DeviceType::Integrated), "integrated");
  EXPECT_STREQ(deviceTypeName(DeviceType::Virtual), "virtual");
  EXPECT_STREQ(deviceTypeName(DeviceType::Cpu), "cpu");
  EXPECT_STREQ(deviceTypeName(DeviceType::Other), "other");
}

TEST(RuntimeTest, HashBytesIsFnv1a) {
  // The published 64-bit FNV-1a values.
  EXPECT_EQ(hashString(""), 0xcbf29ce484222325ull);
  EXPECT_EQ(hashString("a"), 0xaf63dc4c8601ec8cull);
  EXPECT_EQ(hashString("foobar"), 0x85944171f73967e8ull);
  // The seed is xor'ed into the offset basis.
  EXPECT_EQ(hashString("", 1), 0xcbf29ce484222324ull);
  EXPECT_NE(hashString("a", 1), hashString("a"));
}

TEST(RuntimeTest, KernelCacheKeyIsStable) {
  std::vector<uint8_t> binary = bytesOf("hesper kernel");
  // Fixed values: keys name files on disk, so they must never change.
  EXPECT_EQ(kernelCacheKey(binary, "cuda:sm_90:NVIDIA H100 80GB HBM3"),
            "fd10ea0f6283b0be");
  EXPECT_EQ(kernelCacheKey(binary, "cuda:sm_80:NVIDIA A100-SXM4-40GB"),
            "95a833d26caad846");
  EXPECT_EQ(kernelCacheKey(binary, "cuda:sm_90:x"),
            kernelCacheKey(binary, "cuda:sm_90:x"));
}

TEST(RuntimeTest, KernelCacheKeyDependsOnBothInputs) {
  std::vector<uint8_t> a = bytesOf("kernel a"), b = bytesOf("kernel b");
  EXPECT_NE(kernelCacheKey(a, "dev1"), kernelCacheKey(a, "dev2"));
  EXPECT_NE(kernelCacheKey(a, "dev1"), kernelCacheKey(b, "dev1"));
  std::string key = kernelCacheKey(a, "dev1");
  ASSERT_EQ(key.size(), 16u);
  for (char c : key)
    EXPECT_TRUE((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')) << key;
}

TEST(RuntimeTest, CubinCachePath) {
  std::vector<uint8_t> ptx = bytesOf("hesper kernel");
  const std::string id = "cuda:sm_90:NVIDIA H100 80GB HBM3";
  EXPECT_EQ(detail::cubinCachePath("/tmp/cache", ptx, id),
            "/tmp/cache/fd10ea0f6283b0be.cubin");
  EXPECT_EQ(detail::cubinCachePath("/tmp/cache/", ptx, id),
            "/tmp/cache/fd10ea0f6283b0be.cubin");
  EXPECT_EQ(detail::cubinCachePath("rel", ptx, id),
            "rel/fd10ea0f6283b0be.cubin");
}

TEST(RuntimeTest, EffectiveCacheDir) {
  const char *old = std::getenv("HESPER_CACHE_DIR");
  std::string saved = old ? old : "";
  DeviceOptions opts;
  unsetenv("HESPER_CACHE_DIR");
  EXPECT_EQ(detail::effectiveCacheDir(opts), "");
  setenv("HESPER_CACHE_DIR", "/from/env", 1);
  EXPECT_EQ(detail::effectiveCacheDir(opts), "/from/env");
  opts.cacheDir = "/from/options";
  EXPECT_EQ(detail::effectiveCacheDir(opts), "/from/options");
  if (old)
    setenv("HESPER_CACHE_DIR", saved.c_str(), 1);
  else
    unsetenv("HESPER_CACHE_DIR");
}

//===----------------------------------------------------------------------===//
// ReplayState
//===----------------------------------------------------------------------===//

TEST(RuntimeReplayState, RecordsValidLists) {
  FakeKernel k(2, 8);
  FakeBuffer b0, b1;
  ReplayState state;
  EXPECT_FALSE(state.recorded());
  ASSERT_TRUE(state
                  .record({makeDispatch(&k, {&b0, &b1}, 8),
                           makeDispatch(&k, {&b1, &b0}, 8, 70000)})
                  .ok());
  EXPECT_TRUE(state.recorded());
  EXPECT_EQ(state.dispatches().size(), 2u);
  EXPECT_EQ(state.dispatches()[1].bindings[0], &b1);
  EXPECT_TRUE(state.needsCapture());
}

TEST(RuntimeReplayState, BindingCountMismatch) {
  FakeKernel k(2, 0);
  FakeBuffer b;
  ReplayState state;
  Status st = state.record({makeDispatch(&k, {&b}, 0)});
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.message(), "dispatch 0: kernel 'fake' takes 2 bindings, got 1");
  st = state.record({makeDispatch(&k, {&b, nullptr}, 0)});
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.message(), "dispatch 0: kernel 'fake' binding 1 is null");
  EXPECT_FALSE(state.recorded());
}

TEST(RuntimeReplayState, PushConstantSizeMismatch) {
  FakeKernel k(0, 8);
  ReplayState state;
  Status st = state.record({makeDispatch(&k, {}, 8), makeDispatch(&k, {}, 4)});
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.message(),
            "dispatch 1: kernel 'fake' takes 8 push-constant bytes, got 4");
}

TEST(RuntimeReplayState, ZeroGridAndLimits) {
  FakeKernel k(0, 0);
  Dispatch d = makeDispatch(&k, {}, 0);
  d.grid[1] = 0;
  ReplayState state;
  Status st = state.record({d});
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.message(),
            "dispatch 0: kernel 'fake' grid (1, 0, 1) has a zero dimension");

  const uint32_t limits[3] = {100, 10, 10};
  ReplayState limited(limits);
  st = limited.record({makeDispatch(&k, {}, 0, 101)});
  ASSERT_FALSE(st.ok());
  EXPECT_TRUE(
      contains(st.message(), "exceeds the device's limit (100, 10, 10)"))
      << st.message();
  EXPECT_TRUE(limited.record({makeDispatch(&k, {}, 0, 100)}).ok());
}

TEST(RuntimeReplayState, MissingKernel) {
  ReplayState state;
  Status st = state.record({Dispatch()});
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.message(), "dispatch 0: no kernel");
}

TEST(RuntimeReplayState, FailedRecordKeepsThePreviousOne) {
  FakeKernel k(1, 0);
  FakeBuffer b;
  ReplayState state;
  ASSERT_TRUE(state.record({makeDispatch(&k, {&b}, 0)}).ok());
  state.markCaptured();
  EXPECT_FALSE(state.record({makeDispatch(&k, {}, 0)}).ok());
  EXPECT_EQ(state.dispatches().size(), 1u);
  EXPECT_FALSE(state.needsCapture());
}

TEST(RuntimeReplayState, RecaptureAfterPushConstants) {
  FakeKernel k(0, 4);
  ReplayState state;
  ASSERT_TRUE(state.record({makeDispatch(&k, {}, 4)}).ok());
  EXPECT_TRUE(state.needsCapture());
  state.markCaptured();
  EXPECT_FALSE(state.needsCapture());

  ASSERT_TRUE(state.setPushConstants(0, {1, 2, 3, 4}).ok());
  EXPECT_TRUE(state.needsCapture());
  EXPECT_EQ(state.dispatches()[0].pushConstants,
            (std::vector<uint8_t>{1, 2, 3, 4}));
  state.markCaptured();

  Status st = state.setPushConstants(0, {1, 2});
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.message(), "setPushConstants: dispatch 0: kernel 'fake' takes "
                          "4 push-constant bytes, got 2");
  st = state.setPushConstants(3, {1, 2, 3, 4});
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.message(),
            "setPushConstants: dispatch 3 out of range (1 recorded)");
  // Failed updates change nothing.
  EXPECT_FALSE(state.needsCapture());

  // Recording again makes the capture stale too.
  ASSERT_TRUE(state.record({makeDispatch(&k, {}, 4)}).ok());
  EXPECT_TRUE(state.needsCapture());
}

TEST(RuntimeReplayState, SubmissionCount) {
  FakeKernel k(0, 0);
  ReplayState state;
  Status st = state.checkSubmit();
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.message(), "submit: nothing has been recorded");
  ASSERT_TRUE(state.record({makeDispatch(&k, {}, 0)}).ok());
  EXPECT_TRUE(state.checkSubmit().ok());
  EXPECT_EQ(state.submissions(), 0u);
  state.countSubmission();
  state.countSubmission();
  EXPECT_EQ(state.submissions(), 2u);
  // Re-recording keeps counting.
  ASSERT_TRUE(state.record({}).ok());
  state.countSubmission();
  EXPECT_EQ(state.submissions(), 3u);
}

//===----------------------------------------------------------------------===//
// CUDA driver
//===----------------------------------------------------------------------===//

TEST(CudaDriver, UnavailableWithoutLibcuda) {
  void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (lib) {
    dlclose(lib);
    GTEST_SKIP() << "libcuda.so.1 is installed on this machine";
  }
  Result<std::unique_ptr<Device>> dev = openDevice(Backend::Cuda);
  ASSERT_FALSE(dev.ok());
  EXPECT_TRUE(startsWith(dev.status().message(), "CUDA unavailable: "))
      << dev.status().message();
  EXPECT_TRUE(contains(dev.status().message(), "libcuda.so.1"))
      << dev.status().message();
  Result<std::vector<DeviceInfo>> list = listDevices(Backend::Cuda);
  ASSERT_FALSE(list.ok());
  EXPECT_TRUE(startsWith(list.status().message(), "CUDA unavailable: "));
}

namespace {

/// buf[i] += add for i < n; parameters: buf, then push constants n, add.
const char *const kAddScalarPtx = R"(
.version 7.0
.target sm_50
.address_size 64

.visible .entry add_scalar(
  .param .u64 p_buf,
  .param .u32 p_n,
  .param .u32 p_add
)
{
  .reg .pred %p<2>;
  .reg .b32 %r<8>;
  .reg .b64 %rd<5>;

  ld.param.u64 %rd1, [p_buf];
  ld.param.u32 %r1, [p_n];
  ld.param.u32 %r2, [p_add];
  mov.u32 %r3, %ctaid.x;
  mov.u32 %r4, %ntid.x;
  mov.u32 %r5, %tid.x;
  mad.lo.s32 %r6, %r3, %r4, %r5;
  setp.ge.u32 %p1, %r6, %r1;
  @%p1 bra DONE;
  cvta.to.global.u64 %rd2, %rd1;
  mul.wide.u32 %rd3, %r6, 4;
  add.s64 %rd4, %rd2, %rd3;
  ld.global.u32 %r7, [%rd4];
  add.s32 %r7, %r7, %r2;
  st.global.u32 [%rd4], %r7;
DONE:
  ret;
}
)";

KernelDesc addScalarDesc() {
  KernelDesc d;
  d.name = "add_scalar";
  d.binary = bytesOf(kAddScalarPtx);
  d.format = "ptx";
  d.numBindings = 1;
  d.pushConstantBytes = 8;
  d.workgroupSize[0] = 128;
  return d;
}

std::vector<uint8_t> pushWords(uint32_t n, uint32_t add) {
  std::vector<uint8_t> out(8);
  std::memcpy(out.data(), &n, 4);
  std::memcpy(out.data() + 4, &add, 4);
  return out;
}

constexpr uint32_t kN = 1000;

/// A buffer of kN words holding 0, 1, ..., kN - 1.
Result<std::unique_ptr<Buffer>> iotaBuffer(Device &dev) {
  Result<std::unique_ptr<Buffer>> buf = dev.createBuffer(kN * 4);
  if (!buf.ok())
    return buf;
  std::vector<uint32_t> init(kN);
  for (uint32_t i = 0; i < kN; ++i)
    init[i] = i;
  if (Status s = dev.upload(**buf, init.data(), kN * 4); !s.ok())
    return s;
  return buf;
}

/// Checks buf[i] == i + delta.
void expectShifted(Device &dev, Buffer &buf, uint32_t delta) {
  std::vector<uint32_t> out(kN);
  ASSERT_TRUE(dev.download(buf, out.data(), kN * 4).ok());
  for (uint32_t i = 0; i < kN; ++i)
    ASSERT_EQ(out[i], i + delta) << "at " << i;
}

Dispatch addDispatch(Kernel *k, Buffer *b, uint32_t add) {
  Dispatch d;
  d.kernel = k;
  d.bindings = {b};
  d.pushConstants = pushWords(kN, add);
  d.grid[0] = (kN + 127) / 128;
  return d;
}

} // namespace

#define OPEN_CUDA_OR_SKIP(dev, opts)                                           \
  Result<std::unique_ptr<Device>> dev##Result =                                \
      openDevice(Backend::Cuda, opts);                                         \
  if (!dev##Result.ok())                                                       \
    GTEST_SKIP() << dev##Result.status().message();                            \
  Device &dev = **dev##Result

TEST(CudaDriver, DeviceInfo) {
  OPEN_CUDA_OR_SKIP(dev, DeviceOptions());
  const DeviceInfo &info = dev.info();
  EXPECT_EQ(info.backend, Backend::Cuda);
  EXPECT_EQ(info.subgroupSize, 32u);
  EXPECT_TRUE(info.subgroupArithmetic);
  EXPECT_GE(info.maxWorkgroupInvocations, 1024u);
  EXPECT_GE(info.maxSharedMemoryBytes, 48u * 1024);
  EXPECT_EQ(info.timestampPeriodNs, 1.0);
  EXPECT_TRUE(startsWith(info.cacheId, "cuda:sm_")) << info.cacheId;
  EXPECT_TRUE(contains(info.cacheId, info.name)) << info.cacheId;
  EXPECT_TRUE(contains(info.cacheId, ":driver")) << info.cacheId;
  EXPECT_GE(info.computeCapability, 50u);
  EXPECT_TRUE(contains(info.cacheId,
                       "sm_" + std::to_string(info.computeCapability)))
      << info.cacheId;
  Result<std::vector<DeviceInfo>> list = listDevices(Backend::Cuda);
  ASSERT_TRUE(list.ok());
  EXPECT_FALSE(list->empty());
}

TEST(CudaDriver, Buffers) {
  OPEN_CUDA_OR_SKIP(dev, DeviceOptions());
  Result<std::unique_ptr<Buffer>> a = dev.createBuffer(10);
  Result<std::unique_ptr<Buffer>> b = dev.createBuffer(10);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ((*a)->size(), 10u);

  ASSERT_TRUE(dev.fill(**a, 0x04030201u).ok());
  uint8_t bytes[10] = {};
  ASSERT_TRUE(dev.download(**a, bytes, 10).ok());
  const uint8_t filled[10] = {1, 2, 3, 4, 1, 2, 3, 4, 1, 2};
  EXPECT_EQ(std::memcmp(bytes, filled, 10), 0);

  const uint8_t up[3] = {9, 8, 7};
  ASSERT_TRUE(dev.upload(**a, up, 3, 7).ok());
  ASSERT_TRUE(dev.copy(**a, **b, 10).ok());
  ASSERT_TRUE(dev.download(**b, bytes, 10).ok());
  const uint8_t copied[10] = {1, 2, 3, 4, 1, 2, 3, 9, 8, 7};
  EXPECT_EQ(std::memcmp(bytes, copied, 10), 0);

  Status st = dev.upload(**a, up, 3, 8);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.message(),
            "upload: 3 bytes at offset 8 do not fit in a buffer of 10 bytes");
  st = dev.download(**a, bytes, 11);
  EXPECT_FALSE(st.ok());
  EXPECT_FALSE(dev.copy(**a, **b, 11).ok());

  FakeBuffer foreign;
  st = dev.upload(foreign, up, 3);
  ASSERT_FALSE(st.ok());
  EXPECT_TRUE(contains(st.message(), "not one of this CUDA device's"));

  Result<std::unique_ptr<Buffer>> empty = dev.createBuffer(0);
  ASSERT_TRUE(empty.ok());
  EXPECT_TRUE(dev.fill(**empty, 0).ok());
}

TEST(CudaDriver, GraphReplayAndPushConstants) {
  OPEN_CUDA_OR_SKIP(dev, DeviceOptions());
  Result<std::unique_ptr<Kernel>> k = dev.createKernel(addScalarDesc());
  ASSERT_TRUE(k.ok()) << k.status().message();
  Result<std::unique_ptr<Buffer>> buf = iotaBuffer(dev);
  ASSERT_TRUE(buf.ok()) << buf.status().message();

  Result<std::unique_ptr<CommandList>> list = dev.createCommandList();
  ASSERT_TRUE(list.ok());
  EXPECT_FALSE((*list)->submit().ok()); // nothing recorded
  // Two dependent launches: +1 then +2.
  ASSERT_TRUE((*list)
                  ->record({addDispatch(k->get(), buf->get(), 1),
                            addDispatch(k->get(), buf->get(), 2)})
                  .ok());
  ASSERT_TRUE((*list)->submit().ok());
  expectShifted(dev, **buf, 3);
  ASSERT_TRUE((*list)->submit().ok());
  expectShifted(dev, **buf, 6);
  EXPECT_EQ((*list)->submissions(), 2u);
  EXPECT_TRUE((*list)->lastKernelTimesNs().empty());

  ASSERT_TRUE((*list)->setPushConstants(1, pushWords(kN, 100)).ok());
  Status st = (*list)->submit();
  ASSERT_TRUE(st.ok()) << st.message();
  expectShifted(dev, **buf, 107);
  EXPECT_EQ((*list)->submissions(), 3u);

  // A list whose buffer is gone is refused, not replayed.
  buf->reset();
  st = (*list)->submit();
  ASSERT_FALSE(st.ok());
  EXPECT_TRUE(contains(st.message(), "has been destroyed")) << st.message();
}

TEST(CudaDriver, TimingGivesOneTimePerDispatch) {
  OPEN_CUDA_OR_SKIP(dev, DeviceOptions());
  Result<std::unique_ptr<Kernel>> k = dev.createKernel(addScalarDesc());
  ASSERT_TRUE(k.ok()) << k.status().message();
  Result<std::unique_ptr<Buffer>> buf = iotaBuffer(dev);
  ASSERT_TRUE(buf.ok()) << buf.status().message();
  Result<std::unique_ptr<CommandList>> list = dev.createCommandList(true);
  ASSERT_TRUE(list.ok());
  ASSERT_TRUE((*list)
                  ->record({addDispatch(k->get(), buf->get(), 1),
                            addDispatch(k->get(), buf->get(), 1),
                            addDispatch(k->get(), buf->get(), 1)})
                  .ok());
  Status st = (*list)->submit();
  ASSERT_TRUE(st.ok()) << st.message();
  expectShifted(dev, **buf, 3);
  std::vector<double> times = (*list)->lastKernelTimesNs();
  ASSERT_EQ(times.size(), 3u);
  for (double t : times)
    EXPECT_GE(t, 0.0);
}

TEST(CudaDriver, KernelErrors) {
  OPEN_CUDA_OR_SKIP(dev, DeviceOptions());
  KernelDesc bad = addScalarDesc();
  bad.name = "bad";
  bad.binary = bytesOf("this is not PTX");
  Result<std::unique_ptr<Kernel>> k = dev.createKernel(bad);
  ASSERT_FALSE(k.ok());
  EXPECT_TRUE(startsWith(k.status().message(), "kernel 'bad': "))
      << k.status().message();
  EXPECT_TRUE(contains(k.status().message(), "cuModuleLoadDataEx failed"))
      << k.status().message();

  KernelDesc odd = addScalarDesc();
  odd.pushConstantBytes = 6;
  k = dev.createKernel(odd);
  ASSERT_FALSE(k.ok());
  EXPECT_TRUE(contains(k.status().message(), "not a multiple of 4"));

  KernelDesc wide = addScalarDesc();
  wide.workgroupSize[0] = 4096;
  EXPECT_FALSE(dev.createKernel(wide).ok());

  KernelDesc spirv = addScalarDesc();
  spirv.format = "spirv";
  k = dev.createKernel(spirv);
  ASSERT_FALSE(k.ok());
  EXPECT_TRUE(contains(k.status().message(), "format 'spirv'"))
      << k.status().message();

  KernelDesc missing = addScalarDesc();
  missing.name = "no_such_entry";
  k = dev.createKernel(missing);
  ASSERT_FALSE(k.ok());
  EXPECT_TRUE(contains(k.status().message(), "cuModuleGetFunction"));
}

TEST(CudaDriver, KernelsOfOneBinaryShareItsModule) {
  // A program's kernels carry one binary: it is loaded once, and stays
  // loaded while any of its kernels lives.
  OPEN_CUDA_OR_SKIP(dev, DeviceOptions());
  KernelDesc desc = addScalarDesc();
  Result<std::unique_ptr<Kernel>> first = dev.createKernel(desc);
  desc.workgroupSize[0] = 64; // another kernel of the same binary
  Result<std::unique_ptr<Kernel>> second = dev.createKernel(desc);
  ASSERT_TRUE(first.ok() && second.ok());
  first->reset();
  for (uint32_t add : {3u, 4u}) {
    Result<std::unique_ptr<Buffer>> buf = iotaBuffer(dev);
    ASSERT_TRUE(buf.ok()) << buf.status().message();
    Result<std::unique_ptr<CommandList>> list = dev.createCommandList();
    ASSERT_TRUE(list.ok());
    Dispatch d = addDispatch(second->get(), buf->get(), add);
    d.grid[0] = (kN + 63) / 64;
    ASSERT_TRUE((*list)->record({d}).ok());
    ASSERT_TRUE((*list)->submit().ok());
    expectShifted(dev, **buf, add);
    // The last kernel gone, a new one loads the binary again.
    second->reset();
    second = dev.createKernel(desc);
    ASSERT_TRUE(second.ok()) << second.status().message();
  }
}

TEST(CudaDriver, CubinCache) {
  DeviceOptions opts;
  opts.cacheDir = ::testing::TempDir() + "/hesper-cubin-" +
                  std::to_string(getpid()) + "/nested";
  OPEN_CUDA_OR_SKIP(dev, opts);
  KernelDesc desc = addScalarDesc();
  std::string path =
      detail::cubinCachePath(opts.cacheDir, desc.binary, dev.info().cacheId);
  for (int round = 0; round < 2; ++round) {
    // Round 0 compiles and writes the cubin, round 1 loads it.
    Result<std::unique_ptr<Kernel>> k = dev.createKernel(desc);
    ASSERT_TRUE(k.ok()) << k.status().message();
    struct stat st;
    ASSERT_EQ(stat(path.c_str(), &st), 0) << path;
    EXPECT_GT(st.st_size, 0);
    Result<std::unique_ptr<Buffer>> buf = iotaBuffer(dev);
    ASSERT_TRUE(buf.ok()) << buf.status().message();
    Result<std::unique_ptr<CommandList>> list = dev.createCommandList();
    ASSERT_TRUE(list.ok());
    ASSERT_TRUE((*list)->record({addDispatch(k->get(), buf->get(), 5)}).ok());
    ASSERT_TRUE((*list)->submit().ok());
    expectShifted(dev, **buf, 5);
  }
  std::remove(path.c_str());
  rmdir(opts.cacheDir.c_str());
  rmdir(opts.cacheDir.substr(0, opts.cacheDir.rfind('/')).c_str());
}
