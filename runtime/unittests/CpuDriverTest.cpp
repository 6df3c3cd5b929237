//===- CpuDriverTest.cpp - Tests of the CPU driver ------------------------===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//
//
// The CPU driver with real kernels: a small C file is compiled into a shared
// object by the system C compiler (`cc`) when the tests start; without one
// the kernel tests skip with the reason. Also: ProgramRunner on the CPU
// device, and bundle files keeping each kernel's format.
//
//===----------------------------------------------------------------------===//

#include "hesper/runtime/Program.h"

#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>

using namespace hesper::rt;

namespace {

/// The test kernels, all in one shared object (as a compiled program's are).
const char *const kKernelSource = R"(
#include <stddef.h>
#include <stdint.h>

#define KERNEL(name)                                                          \
  void name(void *const *b, const void *pc, const uint32_t *grid,             \
            uint64_t begin, uint64_t end)

KERNEL(empty) {}

/* z = x + y (float). */
KERNEL(add_arrays) {
  const float *x = b[0], *y = b[1];
  float *z = b[2];
  for (uint64_t w = begin; w < end; ++w)
    z[w] = x[w] + y[w];
}

/* out = 2 * in (float). */
KERNEL(double_it) {
  const float *in = b[0];
  float *out = b[1];
  for (uint64_t w = begin; w < end; ++w)
    out[w] = 2 * in[w];
}

/* a += 1 (u32). */
KERNEL(increment) {
  uint32_t *a = b[0];
  for (uint64_t w = begin; w < end; ++w)
    a[w] += 1;
}

/* out[w] = a[w] + a[W - 1 - w]: reads what other workgroups wrote. */
KERNEL(mirror_sum) {
  const uint32_t *a = b[0];
  uint32_t *out = b[1];
  uint64_t n = (uint64_t)grid[0] * grid[1] * grid[2];
  for (uint64_t w = begin; w < end; ++w)
    out[w] = a[w] + a[n - 1 - w];
}

/* out[w] = in[256 w] + ... + in[256 w + 255], summed in order (float). */
KERNEL(block_sum) {
  const float *in = b[0];
  float *out = b[1];
  for (uint64_t w = begin; w < end; ++w) {
    float s = 0;
    for (int i = 0; i < 256; ++i)
      s += in[w * 256 + i];
    out[w] = s;
  }
}

/* buf[w] += add for w < n; push constants {n, add}. */
KERNEL(add_scalar) {
  const uint32_t *p = pc;
  uint32_t *buf = b[0];
  for (uint64_t w = begin; w < end; ++w)
    if (w < p[0])
      buf[w] += p[1];
}

/* out[w] = the first workgroup of the call that ran w. */
KERNEL(record_ranges) {
  uint32_t *out = b[0];
  for (uint64_t w = begin; w < end; ++w)
    out[w] = (uint32_t)begin;
}

/* out[w] = x + 1000 y + 1000000 z of workgroup w. */
KERNEL(linear_index) {
  uint32_t *out = b[0];
  for (uint64_t w = begin; w < end; ++w) {
    uint64_t x = w % grid[0], y = w / grid[0] % grid[1];
    uint64_t z = w / ((uint64_t)grid[0] * grid[1]);
    out[w] = (uint32_t)(x + 1000 * y + 1000000 * z);
  }
}

/* out[i] = address of binding i modulo 64, for 2 bindings after out. */
KERNEL(alignment) {
  uint32_t *out = b[0];
  out[0] = (uint32_t)((uintptr_t)b[1] % 64);
  out[1] = (uint32_t)((uintptr_t)b[2] % 64);
}

/* A workgroup of threads meeting at barriers (the thread entry): each of
   the workgroup's threads stores in[64 w + t] into workgroup memory, then a
   tree of halving steps with a barrier after each sums it; thread 0 writes
   the workgroup's sum, and every thread writes the order in which it
   passed the first barrier relative to the others (all threads must have
   stored before any continues). */
typedef void (*Barrier)(void *);
void __hesper_threads_tree_sum(void *const *b, const void *pc,
                               const uint32_t *grid, uint64_t w,
                               const uint32_t *thread, void *shared,
                               Barrier barrier, void *state) {
  const float *in = b[0];
  float *out = b[1];
  float *sums = shared;
  uint32_t t = thread[0];
  sums[t] = in[64 * w + t];
  barrier(state);
  /* Every thread sees every store of the workgroup here. */
  int all = 1;
  for (int i = 0; i < 64; ++i)
    all &= sums[i] == in[64 * w + i];
  barrier(state);
  for (uint32_t s = 32; s > 0; s /= 2) {
    if (t < s)
      sums[t] += sums[t + s];
    barrier(state);
  }
  if (t == 0)
    out[2 * w] = sums[0];
  if (t == 1)
    out[2 * w + 1] = (float)all;
}

/* A counter private to one loaded copy of the object. */
static uint64_t calls;
KERNEL(bump) { calls += end - begin; }
KERNEL(read_calls) { *(uint64_t *)b[0] = calls; }
)";

struct TestObject {
  std::vector<uint8_t> binary; ///< the shared object
  std::string why;             ///< why there is none
};

std::vector<uint8_t> readBytes(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<uint8_t>((std::istreambuf_iterator<char>(in)),
                              std::istreambuf_iterator<char>());
}

/// Compiles kKernelSource once: `cc -O2 -shared -fPIC`.
TestObject buildTestObject() {
  TestObject t;
  if (std::system("command -v cc >/dev/null 2>&1") != 0) {
    t.why = "no C compiler (cc) to build the test kernels";
    return t;
  }
  std::string dir = ::testing::TempDir() + "/hesper-cpu-XXXXXX";
  if (!mkdtemp(&dir[0])) {
    t.why = "cannot create a directory under " + ::testing::TempDir();
    return t;
  }
  std::string src = dir + "/kernels.c", so = dir + "/kernels.so",
              log = dir + "/cc.log";
  std::ofstream(src) << kKernelSource;
  std::string cmd =
      "cc -O2 -shared -fPIC -o " + so + " " + src + " >" + log + " 2>&1";
  if (std::system(cmd.c_str()) != 0) {
    std::vector<uint8_t> out = readBytes(log);
    t.why = "cc failed: " + std::string(out.begin(), out.end());
  } else {
    t.binary = readBytes(so);
  }
  std::remove(src.c_str());
  std::remove(so.c_str());
  std::remove(log.c_str());
  rmdir(dir.c_str());
  return t;
}

const TestObject &testObject() {
  static const TestObject object = buildTestObject();
  return object;
}

KernelDesc kernelDesc(const std::string &name, uint32_t bindings,
                      uint32_t pushBytes = 0) {
  KernelDesc d;
  d.name = name;
  d.binary = testObject().binary;
  d.format = "elf:";
  d.numBindings = bindings;
  d.pushConstantBytes = pushBytes;
  return d;
}

bool contains(const std::string &s, const std::string &needle) {
  return s.find(needle) != std::string::npos;
}

std::unique_ptr<Device> openCpu(unsigned threads) {
  DeviceOptions opts;
  opts.threads = threads;
  Result<std::unique_ptr<Device>> dev = openDevice(Backend::Cpu, opts);
  EXPECT_TRUE(dev.ok()) << dev.status().message();
  return dev.ok() ? std::move(*dev) : nullptr;
}

std::unique_ptr<Kernel> makeKernel(Device &dev, const KernelDesc &d) {
  Result<std::unique_ptr<Kernel>> k = dev.createKernel(d);
  EXPECT_TRUE(k.ok()) << k.status().message();
  return k.ok() ? std::move(*k) : nullptr;
}

std::unique_ptr<Buffer> makeBuffer(Device &dev, size_t bytes) {
  Result<std::unique_ptr<Buffer>> b = dev.createBuffer(bytes);
  EXPECT_TRUE(b.ok()) << b.status().message();
  return b.ok() ? std::move(*b) : nullptr;
}

Dispatch dispatch(Kernel *k, std::vector<Buffer *> bindings, uint32_t gx,
                  uint32_t gy = 1, uint32_t gz = 1) {
  Dispatch d;
  d.kernel = k;
  d.bindings = std::move(bindings);
  d.pushConstants.assign(k ? k->desc().pushConstantBytes : 0, 0);
  d.grid[0] = gx;
  d.grid[1] = gy;
  d.grid[2] = gz;
  return d;
}

template <typename T> std::vector<T> download(Device &dev, Buffer &b) {
  std::vector<T> out(b.size() / sizeof(T));
  Status st = dev.download(b, out.data(), out.size() * sizeof(T));
  EXPECT_TRUE(st.ok()) << st.message();
  return out;
}

/// Runs `dispatches` once on a new list.
Status runOnce(Device &dev, const std::vector<Dispatch> &dispatches) {
  Result<std::unique_ptr<CommandList>> list = dev.createCommandList();
  if (!list)
    return list.status();
  if (Status st = (*list)->record(dispatches); !st)
    return st;
  return (*list)->submit();
}

#define REQUIRE_KERNELS()                                                      \
  if (testObject().binary.empty())                                             \
  GTEST_SKIP() << testObject().why

#define OPEN_CPU(dev, threads)                                                 \
  std::unique_ptr<Device> dev##Owner = openCpu(threads);                       \
  ASSERT_TRUE(dev##Owner);                                                     \
  Device &dev = *dev##Owner

} // namespace

//===----------------------------------------------------------------------===//
// Devices and buffers
//===----------------------------------------------------------------------===//

TEST(CpuDriver, ListsOneDevice) {
  Result<std::vector<DeviceInfo>> list = listDevices(Backend::Cpu);
  ASSERT_TRUE(list.ok()) << list.status().message();
  ASSERT_EQ(list->size(), 1u);
  const DeviceInfo &info = (*list)[0];
  EXPECT_EQ(info.backend, Backend::Cpu);
  EXPECT_EQ(info.type, DeviceType::Cpu);
  EXPECT_GE(info.threads, 1u);
  EXPECT_EQ(info.subgroupSize, 1u);
  EXPECT_EQ(info.maxWorkgroupInvocations, 1024u); // kernels with a thread entry
  EXPECT_EQ(info.maxWorkgroupSize[2], 64u);
  EXPECT_EQ(info.maxPushConstantBytes, 256u);
  EXPECT_EQ(info.maxBindingBytes, 0u);
  EXPECT_EQ(info.timestampPeriodNs, 1.0);
  EXPECT_EQ(info.cacheId, "cpu:" + hostCpuIsa());
  EXPECT_EQ(info.name.rfind("CPU: ", 0), 0u) << info.name;
  EXPECT_TRUE(contains(info.name, hostCpuIsa() + ")")) << info.name;
  EXPECT_STREQ(backendName(Backend::Cpu), "cpu");

  // The default device has as many threads as listed; others on request.
  OPEN_CPU(dev, 0);
  EXPECT_EQ(dev.info().threads, info.threads);
  OPEN_CPU(three, 3);
  EXPECT_EQ(three.info().threads, 3u);
  EXPECT_TRUE(contains(three.info().name, "(3 threads, ")) << three.info().name;

  DeviceOptions opts;
  opts.index = 1;
  Result<std::unique_ptr<Device>> none = openDevice(Backend::Cpu, opts);
  ASSERT_FALSE(none.ok());
  EXPECT_TRUE(contains(none.status().message(), "out of range"));
}

TEST(CpuDriver, HostCpuFeatures) {
  std::string isa = hostCpuIsa();
  std::string features = "," + hostCpuFeatures() + ",";
#if defined(__x86_64__)
  EXPECT_TRUE(isa == "x86-64" || isa == "x86-64-v2" || isa == "x86-64-v3" ||
              isa == "x86-64-v4")
      << isa;
  if (isa == "x86-64-v3" || isa == "x86-64-v4") {
    EXPECT_TRUE(contains(features, ",avx2,")) << features;
    EXPECT_TRUE(contains(features, ",fma,")) << features;
  }
  if (isa == "x86-64-v4") {
    EXPECT_TRUE(contains(features, ",avx512f,")) << features;
    EXPECT_TRUE(contains(features, ",avx512vl,")) << features;
  }
#endif
  if (!hostCpuFeatures().empty()) {
    EXPECT_FALSE(contains(features, ",,")) << features;
  }
}

TEST(CpuDriver, Buffers) {
  OPEN_CPU(dev, 2);
  std::unique_ptr<Buffer> a = makeBuffer(dev, 10), b = makeBuffer(dev, 10);
  ASSERT_TRUE(a && b);
  EXPECT_EQ(a->size(), 10u);
  uint8_t bytes[10];
  std::memset(bytes, 0xff, sizeof(bytes));
  ASSERT_TRUE(dev.download(*a, bytes, 10).ok());
  const uint8_t zeros[10] = {};
  EXPECT_EQ(std::memcmp(bytes, zeros, 10), 0) << "not zero-filled";

  ASSERT_TRUE(dev.fill(*a, 0x04030201u).ok());
  ASSERT_TRUE(dev.download(*a, bytes, 10).ok());
  const uint8_t filled[10] = {1, 2, 3, 4, 1, 2, 3, 4, 1, 2};
  EXPECT_EQ(std::memcmp(bytes, filled, 10), 0);

  const uint8_t up[3] = {9, 8, 7};
  ASSERT_TRUE(dev.upload(*a, up, 3, 7).ok());
  ASSERT_TRUE(dev.copy(*a, *b, 10).ok());
  ASSERT_TRUE(dev.download(*b, bytes, 10).ok());
  const uint8_t copied[10] = {1, 2, 3, 4, 1, 2, 3, 9, 8, 7};
  EXPECT_EQ(std::memcmp(bytes, copied, 10), 0);
  ASSERT_TRUE(dev.download(*b, bytes, 2, 8).ok());
  EXPECT_EQ(bytes[0], 8);
  EXPECT_EQ(bytes[1], 7);

  Status st = dev.upload(*a, up, 3, 8);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.message(),
            "upload: 3 bytes at offset 8 do not fit in a buffer of 10 bytes");
  st = dev.download(*a, bytes, 11);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(
      st.message(),
      "download: 11 bytes at offset 0 do not fit in a buffer of 10 bytes");
  EXPECT_FALSE(dev.download(*a, bytes, 1, SIZE_MAX).ok());
  EXPECT_FALSE(dev.upload(*a, up, SIZE_MAX, 2).ok());
  EXPECT_FALSE(dev.upload(*a, nullptr, 1).ok());
  EXPECT_FALSE(dev.download(*a, nullptr, 1).ok());
  st = dev.copy(*a, *b, 11);
  ASSERT_FALSE(st.ok());
  EXPECT_TRUE(contains(st.message(), "do not fit")) << st.message();

  // Buffers of another device are refused, not used.
  OPEN_CPU(other, 1);
  std::unique_ptr<Buffer> foreign = makeBuffer(other, 10);
  st = dev.upload(*foreign, up, 3);
  ASSERT_FALSE(st.ok());
  EXPECT_TRUE(contains(st.message(), "not one of this CPU device's"));
  EXPECT_FALSE(dev.copy(*a, *foreign, 1).ok());
  EXPECT_FALSE(dev.fill(*foreign, 0).ok());

  std::unique_ptr<Buffer> empty = makeBuffer(dev, 0);
  ASSERT_TRUE(empty);
  EXPECT_TRUE(dev.fill(*empty, 7).ok());
  EXPECT_TRUE(dev.upload(*empty, nullptr, 0).ok());

  // A large buffer (mmap'ed) is zero-filled too.
  std::unique_ptr<Buffer> large = makeBuffer(dev, 3 << 20);
  ASSERT_TRUE(large);
  std::vector<uint32_t> words = download<uint32_t>(dev, *large);
  EXPECT_EQ(std::count(words.begin(), words.end(), 0u),
            static_cast<long>(words.size()));
  ASSERT_TRUE(dev.fill(*large, 0x11111111u).ok());
  words = download<uint32_t>(dev, *large);
  EXPECT_EQ(words.front(), 0x11111111u);
  EXPECT_EQ(words.back(), 0x11111111u);
}

TEST(CpuDriver, HostAddressIsTheBuffersOwnMemory) {
  OPEN_CPU(dev, 2);
  std::unique_ptr<Buffer> a = makeBuffer(dev, 8);
  ASSERT_TRUE(a);
  auto *bytes = static_cast<uint8_t *>(dev.hostAddress(*a));
  ASSERT_NE(bytes, nullptr);
  const uint8_t up[2] = {5, 6};
  ASSERT_TRUE(dev.upload(*a, up, 2, 3).ok());
  EXPECT_EQ(bytes[3], 5);
  EXPECT_EQ(bytes[4], 6);
  bytes[7] = 42;
  EXPECT_EQ(download<uint8_t>(dev, *a)[7], 42);
  // Imported memory is read-only: no address to write through.
  alignas(16) static const float weights[4] = {1, 2, 3, 4};
  auto imported = dev.importHostMemory(weights, sizeof(weights));
  ASSERT_TRUE(imported.ok());
  EXPECT_EQ(dev.hostAddress(**imported), nullptr);
}

TEST(CpuDriver, LargeCopiesAreSplitOverThreads) {
  OPEN_CPU(dev, 3);
  // Past the 1 MiB where a copy is split, and not a whole number of pages:
  // every byte up to `bytes` arrives, none after it.
  const size_t bytes = (5 << 20) + 4097;
  std::unique_ptr<Buffer> src = makeBuffer(dev, bytes + 64);
  std::unique_ptr<Buffer> dst = makeBuffer(dev, bytes + 64);
  ASSERT_TRUE(src && dst);
  std::vector<uint8_t> pattern(bytes + 64);
  for (size_t i = 0; i < pattern.size(); ++i)
    pattern[i] = static_cast<uint8_t>(i * 131 + (i >> 12));
  ASSERT_TRUE(dev.upload(*src, pattern.data(), pattern.size()).ok());
  ASSERT_TRUE(dev.fill(*dst, 0xa5a5a5a5u).ok());
  ASSERT_TRUE(dev.copy(*src, *dst, bytes).ok());
  std::vector<uint8_t> got = download<uint8_t>(dev, *dst);
  EXPECT_TRUE(std::equal(got.begin(), got.begin() + bytes, pattern.begin()));
  for (size_t i = bytes; i < got.size(); ++i)
    ASSERT_EQ(got[i], 0xa5) << "byte " << i << " past the copy was written";
}

TEST(CpuDriver, MeasuresItsCopyBandwidth) {
  OPEN_CPU(dev, 2);
  Result<double> gbps = measureCopyGbps(dev, 4 << 20, 3);
  ASSERT_TRUE(gbps.ok()) << gbps.status().message();
  EXPECT_GT(*gbps, 0.0);
  EXPECT_EQ(copyBandwidthBytes(dev.info()), size_t(64) << 20);
  Result<double> none = measureCopyGbps(dev, 0, 3);
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.status().message(), "measureCopyGbps: nothing to copy");
}

//===----------------------------------------------------------------------===//
// Kernels and dispatches
//===----------------------------------------------------------------------===//

TEST(CpuDriver, BuffersAre64ByteAligned) {
  REQUIRE_KERNELS();
  OPEN_CPU(dev, 1);
  auto k = makeKernel(dev, kernelDesc("alignment", 3));
  auto out = makeBuffer(dev, 8), small = makeBuffer(dev, 3),
       large = makeBuffer(dev, 5 << 20);
  ASSERT_TRUE(k && out && small && large);
  ASSERT_TRUE(runOnce(dev, {dispatch(k.get(),
                                     {out.get(), small.get(), large.get()}, 1)})
                  .ok());
  EXPECT_EQ(download<uint32_t>(dev, *out), (std::vector<uint32_t>{0, 0}));
}

TEST(CpuDriver, AddArraysOnAnyNumberOfThreads) {
  REQUIRE_KERNELS();
  // One element per workgroup, a count no thread count divides.
  constexpr uint32_t kW = 1000003;
  std::vector<float> x(kW), y(kW);
  for (uint32_t i = 0; i < kW; ++i) {
    x[i] = static_cast<float>(i) * 0.5f;
    y[i] = 1.0f / static_cast<float>(i + 1);
  }
  for (unsigned threads : {1u, 2u, 3u}) {
    OPEN_CPU(dev, threads);
    auto k = makeKernel(dev, kernelDesc("add_arrays", 3));
    auto bx = makeBuffer(dev, kW * 4), by = makeBuffer(dev, kW * 4),
         bz = makeBuffer(dev, kW * 4);
    ASSERT_TRUE(k && bx && by && bz);
    ASSERT_TRUE(dev.upload(*bx, x.data(), kW * 4).ok());
    ASSERT_TRUE(dev.upload(*by, y.data(), kW * 4).ok());
    Status st =
        runOnce(dev, {dispatch(k.get(), {bx.get(), by.get(), bz.get()}, kW)});
    ASSERT_TRUE(st.ok()) << st.message();
    std::vector<float> z = download<float>(dev, *bz);
    for (uint32_t i = 0; i < kW; ++i)
      ASSERT_EQ(z[i], x[i] + y[i])
          << "at " << i << ", " << threads << " threads";
  }
}

TEST(CpuDriver, ImportedHostMemoryIsReadInPlace) {
  REQUIRE_KERNELS();
  OPEN_CPU(dev, 2);
  constexpr uint32_t kW = 1000;
  std::vector<float> x(kW), y(kW);
  for (uint32_t i = 0; i < kW; ++i) {
    x[i] = static_cast<float>(i);
    y[i] = 0.25f;
  }
  Result<std::unique_ptr<Buffer>> bx = dev.importHostMemory(x.data(), kW * 4);
  Result<std::unique_ptr<Buffer>> by = dev.importHostMemory(y.data(), kW * 4);
  ASSERT_TRUE(bx.ok()) << bx.status().message();
  ASSERT_TRUE(by.ok()) << by.status().message();
  EXPECT_EQ((*bx)->size(), kW * 4u);
  auto bz = makeBuffer(dev, kW * 4);
  KernelDesc desc = kernelDesc("add_arrays", 3);
  desc.bindingReadOnly = {1, 1, 0};
  auto k = makeKernel(dev, desc);
  ASSERT_TRUE(k && bz);
  auto list = dev.createCommandList();
  ASSERT_TRUE(list.ok());
  Status st = (*list)->record(
      {dispatch(k.get(), {bx->get(), by->get(), bz.get()}, kW)});
  ASSERT_TRUE(st.ok()) << st.message();
  ASSERT_TRUE((*list)->submit().ok());
  EXPECT_EQ(download<float>(dev, *bz)[7], 7.25f);
  // The kernel reads the caller's memory, not a copy of it.
  x[7] = 100.0f;
  ASSERT_TRUE((*list)->submit().ok());
  EXPECT_EQ(download<float>(dev, *bz)[7], 100.25f);
  EXPECT_EQ(download<float>(dev, **bx)[7], 100.0f);

  // Read-only: no transfer writes it, no launch may bind it writable.
  const float one = 1.0f;
  st = dev.upload(**bx, &one, 4);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.message(),
            "upload: the buffer is imported host memory, which is read-only");
  EXPECT_FALSE(dev.fill(**bx, 0).ok());
  EXPECT_FALSE(dev.copy(*bz, **bx, 4).ok());
  EXPECT_TRUE(dev.copy(**bx, *bz, 4).ok());
  EXPECT_EQ(x[0], 0.0f);
  st = runOnce(dev, {dispatch(k.get(), {bz.get(), by->get(), bx->get()}, kW)});
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.message(),
            "dispatch 0: binding 2 may be written by kernel 'add_arrays' but "
            "is a read-only buffer of imported host memory");
  // A kernel without an ABI may write any binding.
  auto unknown = makeKernel(dev, kernelDesc("add_arrays", 3));
  st = runOnce(dev, {dispatch(unknown.get(),
                              {bx->get(), by->get(), bz.get()}, kW)});
  ASSERT_FALSE(st.ok());
  EXPECT_TRUE(contains(st.message(), "binding 0 may be written"))
      << st.message();
  EXPECT_EQ(x[7], 100.0f);

  // Memory that is not 16-byte aligned is refused.
  auto misaligned =
      dev.importHostMemory(reinterpret_cast<uint8_t *>(x.data()) + 4, 16);
  ASSERT_FALSE(misaligned.ok());
  EXPECT_TRUE(contains(misaligned.status().message(), "16-byte aligned"))
      << misaligned.status().message();
  EXPECT_FALSE(dev.importHostMemory(nullptr, 0).ok());
}

TEST(CpuDriver, WorkgroupsOfThreadsMeetAtBarriers) {
  REQUIRE_KERNELS();
  // 1000 workgroups of 64 threads each; in[i] = i % 97 + 0.25.
  constexpr uint32_t kW = 1000;
  std::vector<float> in(64 * kW);
  for (uint32_t i = 0; i < in.size(); ++i)
    in[i] = static_cast<float>(i % 97) + 0.25f;
  std::vector<float> first;
  for (unsigned threads : {1u, 2u, 3u}) {
    OPEN_CPU(dev, threads);
    KernelDesc d = kernelDesc("tree_sum", 2);
    d.workgroupSize[0] = 64;
    d.sharedMemoryBytes = 64 * 4;
    auto k = makeKernel(dev, d);
    auto bin = makeBuffer(dev, in.size() * 4), bout = makeBuffer(dev, kW * 8);
    ASSERT_TRUE(k && bin && bout);
    ASSERT_TRUE(dev.upload(*bin, in.data(), in.size() * 4).ok());
    Status st = runOnce(dev, {dispatch(k.get(), {bin.get(), bout.get()}, kW)});
    ASSERT_TRUE(st.ok()) << st.message();
    std::vector<float> out = download<float>(dev, *bout);
    for (uint32_t w = 0; w < kW; ++w) {
      double want = 0;
      for (uint32_t t = 0; t < 64; ++t)
        want += in[64 * w + t];
      ASSERT_EQ(out[2 * w], static_cast<float>(want)) << "workgroup " << w;
      ASSERT_EQ(out[2 * w + 1], 1.0f) << "workgroup " << w;
    }
    if (first.empty())
      first = out;
    EXPECT_EQ(first, out) << threads << " threads";
  }
}

TEST(CpuDriver, DependentDispatchesReplayed) {
  REQUIRE_KERNELS();
  constexpr uint32_t kW = 10007;
  OPEN_CPU(dev, 3);
  auto inc = makeKernel(dev, kernelDesc("increment", 1));
  auto mirror = makeKernel(dev, kernelDesc("mirror_sum", 2));
  auto a = makeBuffer(dev, kW * 4), out = makeBuffer(dev, kW * 4);
  ASSERT_TRUE(inc && mirror && a && out);
  std::vector<uint32_t> init(kW);
  for (uint32_t i = 0; i < kW; ++i)
    init[i] = i * 7;
  ASSERT_TRUE(dev.upload(*a, init.data(), kW * 4).ok());
  Result<std::unique_ptr<CommandList>> list = dev.createCommandList();
  ASSERT_TRUE(list.ok());
  EXPECT_FALSE((*list)->submit().ok()); // nothing recorded
  // The second dispatch reads elements the first wrote on other threads.
  ASSERT_TRUE((*list)
                  ->record({dispatch(inc.get(), {a.get()}, kW),
                            dispatch(mirror.get(), {a.get(), out.get()}, kW)})
                  .ok());
  for (uint32_t round = 1; round <= 50; ++round) {
    Status st = (*list)->submit();
    ASSERT_TRUE(st.ok()) << st.message();
    std::vector<uint32_t> got = download<uint32_t>(dev, *out);
    for (uint32_t i = 0; i < kW; ++i)
      ASSERT_EQ(got[i], init[i] + init[kW - 1 - i] + 2 * round)
          << "at " << i << ", round " << round;
  }
  EXPECT_EQ((*list)->submissions(), 50u);
  EXPECT_TRUE((*list)->lastKernelTimesNs().empty());

  // A list whose buffer is gone is refused, not replayed.
  out.reset();
  Status st = (*list)->submit();
  ASSERT_FALSE(st.ok());
  EXPECT_TRUE(contains(st.message(), "has been destroyed")) << st.message();
}

TEST(CpuDriver, ReductionIsBitIdenticalOnAnyNumberOfThreads) {
  REQUIRE_KERNELS();
  constexpr uint32_t kW = 4099;
  std::vector<float> in(kW * 256);
  uint32_t seed = 12345;
  for (float &v : in) {
    seed = seed * 1664525u + 1013904223u;
    // Magnitudes from 1e-3 to 1e3, both signs: the order of sums matters.
    float m = static_cast<float>(seed >> 8) / 16777216.0f;
    v = (seed & 1 ? -1.0f : 1.0f) * std::pow(10.0f, 6.0f * m - 3.0f);
  }
  std::vector<float> expected(kW);
  for (uint32_t w = 0; w < kW; ++w) {
    float s = 0;
    for (int i = 0; i < 256; ++i)
      s += in[w * 256 + i];
    expected[w] = s;
  }
  for (unsigned threads : {1u, 2u, 3u}) {
    OPEN_CPU(dev, threads);
    auto k = makeKernel(dev, kernelDesc("block_sum", 2));
    auto bin = makeBuffer(dev, in.size() * 4), bout = makeBuffer(dev, kW * 4);
    ASSERT_TRUE(k && bin && bout);
    ASSERT_TRUE(dev.upload(*bin, in.data(), in.size() * 4).ok());
    Result<std::unique_ptr<CommandList>> list = dev.createCommandList();
    ASSERT_TRUE(list.ok());
    ASSERT_TRUE(
        (*list)->record({dispatch(k.get(), {bin.get(), bout.get()}, kW)}).ok());
    for (int run = 0; run < 3; ++run) {
      ASSERT_TRUE(dev.fill(*bout, 0).ok());
      ASSERT_TRUE((*list)->submit().ok());
      std::vector<float> got = download<float>(dev, *bout);
      ASSERT_EQ(std::memcmp(got.data(), expected.data(), kW * 4), 0)
          << threads << " threads, run " << run;
    }
  }
}

TEST(CpuDriver, GridsSmallerThanThePool) {
  REQUIRE_KERNELS();
  OPEN_CPU(dev, 3);
  auto k = makeKernel(dev, kernelDesc("record_ranges", 1));
  auto out = makeBuffer(dev, 10 * 4);
  ASSERT_TRUE(k && out);
  ASSERT_TRUE(dev.fill(*out, 0xffffffffu).ok());
  // One workgroup: the caller runs it.
  ASSERT_TRUE(runOnce(dev, {dispatch(k.get(), {out.get()}, 1)}).ok());
  EXPECT_EQ(download<uint32_t>(dev, *out)[0], 0u);
  EXPECT_EQ(download<uint32_t>(dev, *out)[1], 0xffffffffu);
  // Two workgroups on three threads: one each.
  ASSERT_TRUE(runOnce(dev, {dispatch(k.get(), {out.get()}, 2)}).ok());
  std::vector<uint32_t> got = download<uint32_t>(dev, *out);
  EXPECT_EQ(got[0], 0u);
  EXPECT_EQ(got[1], 1u);
  // Ten on three: [0, 3), [3, 6), [6, 10), however often it runs.
  for (int run = 0; run < 20; ++run) {
    ASSERT_TRUE(runOnce(dev, {dispatch(k.get(), {out.get()}, 10)}).ok());
    EXPECT_EQ(download<uint32_t>(dev, *out),
              (std::vector<uint32_t>{0, 0, 0, 3, 3, 3, 6, 6, 6, 6}));
  }

  // Empty grids and grids past the limits are refused when recorded.
  Result<std::unique_ptr<CommandList>> list = dev.createCommandList();
  ASSERT_TRUE(list.ok());
  Status st = (*list)->record({dispatch(k.get(), {out.get()}, 0)});
  ASSERT_FALSE(st.ok());
  EXPECT_TRUE(contains(st.message(), "has a zero dimension")) << st.message();
  st = (*list)->record({dispatch(k.get(), {out.get()}, 1, 65536)});
  ASSERT_FALSE(st.ok());
  EXPECT_TRUE(contains(st.message(), "exceeds the device's limit"))
      << st.message();
  st = (*list)->record({dispatch(k.get(), {}, 1)});
  ASSERT_FALSE(st.ok());
  EXPECT_TRUE(contains(st.message(), "takes 1 bindings, got 0"));
}

TEST(CpuDriver, KernelCapsItsThreads) {
  REQUIRE_KERNELS();
  OPEN_CPU(dev, 3);
  // The same kernel uncapped, capped at 2 and at 1 thread
  // (KernelDesc::hostThreads, the `threads` tuning knob): ten workgroups
  // in 3, 2 and 1 ranges, the next dispatch back to 3.
  KernelDesc all = kernelDesc("record_ranges", 1), two = all, one = all;
  two.hostThreads = 2;
  one.hostThreads = 1;
  auto k3 = makeKernel(dev, all), k2 = makeKernel(dev, two),
       k1 = makeKernel(dev, one);
  auto a = makeBuffer(dev, 10 * 4), b = makeBuffer(dev, 10 * 4),
       c = makeBuffer(dev, 10 * 4), d = makeBuffer(dev, 10 * 4);
  ASSERT_TRUE(k3 && k2 && k1 && a && b && c && d);
  for (int run = 0; run < 20; ++run) {
    ASSERT_TRUE(runOnce(dev, {dispatch(k3.get(), {a.get()}, 10),
                              dispatch(k2.get(), {b.get()}, 10),
                              dispatch(k1.get(), {c.get()}, 10),
                              dispatch(k3.get(), {d.get()}, 10)})
                    .ok());
    EXPECT_EQ(download<uint32_t>(dev, *a),
              (std::vector<uint32_t>{0, 0, 0, 3, 3, 3, 6, 6, 6, 6}));
    EXPECT_EQ(download<uint32_t>(dev, *b),
              (std::vector<uint32_t>{0, 0, 0, 0, 0, 5, 5, 5, 5, 5}));
    EXPECT_EQ(download<uint32_t>(dev, *c), std::vector<uint32_t>(10, 0));
    EXPECT_EQ(download<uint32_t>(dev, *d), download<uint32_t>(dev, *a));
  }
}

TEST(CpuDriver, LinearWorkgroupIndex) {
  REQUIRE_KERNELS();
  OPEN_CPU(dev, 2);
  auto k = makeKernel(dev, kernelDesc("linear_index", 1));
  auto out = makeBuffer(dev, 7 * 5 * 3 * 4);
  ASSERT_TRUE(k && out);
  ASSERT_TRUE(runOnce(dev, {dispatch(k.get(), {out.get()}, 7, 5, 3)}).ok());
  std::vector<uint32_t> got = download<uint32_t>(dev, *out);
  for (uint32_t z = 0, w = 0; z < 3; ++z)
    for (uint32_t y = 0; y < 5; ++y)
      for (uint32_t x = 0; x < 7; ++x, ++w)
        EXPECT_EQ(got[w], x + 1000 * y + 1000000 * z) << "workgroup " << w;
}

TEST(CpuDriver, PushConstants) {
  REQUIRE_KERNELS();
  constexpr uint32_t kN = 1000;
  OPEN_CPU(dev, 2);
  auto k = makeKernel(dev, kernelDesc("add_scalar", 1, 8));
  auto buf = makeBuffer(dev, kN * 4);
  ASSERT_TRUE(k && buf);
  auto push = [](uint32_t n, uint32_t add) {
    std::vector<uint8_t> out(8);
    std::memcpy(out.data(), &n, 4);
    std::memcpy(out.data() + 4, &add, 4);
    return out;
  };
  Dispatch d = dispatch(k.get(), {buf.get()}, kN);
  d.pushConstants = push(kN, 5);
  Dispatch half = d;
  half.pushConstants = push(kN / 2, 100);
  Result<std::unique_ptr<CommandList>> list = dev.createCommandList();
  ASSERT_TRUE(list.ok());
  ASSERT_TRUE((*list)->record({d, half}).ok());
  ASSERT_TRUE((*list)->submit().ok());
  std::vector<uint32_t> got = download<uint32_t>(dev, *buf);
  for (uint32_t i = 0; i < kN; ++i)
    ASSERT_EQ(got[i], i < kN / 2 ? 105u : 5u) << "at " << i;
  // New push constants reach the kernel without recording again.
  ASSERT_TRUE((*list)->setPushConstants(1, push(kN, 1)).ok());
  ASSERT_TRUE((*list)->submit().ok());
  got = download<uint32_t>(dev, *buf);
  for (uint32_t i = 0; i < kN; ++i)
    ASSERT_EQ(got[i], i < kN / 2 ? 111u : 11u) << "at " << i;
  EXPECT_FALSE((*list)->setPushConstants(0, {1, 2, 3}).ok());
}

TEST(CpuDriver, TimingGivesOneTimePerDispatch) {
  REQUIRE_KERNELS();
  OPEN_CPU(dev, 2);
  auto k = makeKernel(dev, kernelDesc("increment", 1));
  auto buf = makeBuffer(dev, 4096 * 4);
  ASSERT_TRUE(k && buf);
  Result<std::unique_ptr<CommandList>> list = dev.createCommandList(true);
  ASSERT_TRUE(list.ok());
  ASSERT_TRUE((*list)
                  ->record({dispatch(k.get(), {buf.get()}, 4096),
                            dispatch(k.get(), {buf.get()}, 4096),
                            dispatch(k.get(), {buf.get()}, 4096)})
                  .ok());
  ASSERT_TRUE((*list)->submit().ok());
  EXPECT_EQ(download<uint32_t>(dev, *buf)[4095], 3u);
  std::vector<double> times = (*list)->lastKernelTimesNs();
  ASSERT_EQ(times.size(), 3u);
  for (double t : times)
    EXPECT_GT(t, 0.0);
}

TEST(CpuDriver, KernelErrors) {
  REQUIRE_KERNELS();
  OPEN_CPU(dev, 1);
  auto message = [&](const KernelDesc &d) {
    Result<std::unique_ptr<Kernel>> k = dev.createKernel(d);
    EXPECT_FALSE(k.ok()) << d.name;
    return k.ok() ? std::string() : k.status().message();
  };

  KernelDesc garbage = kernelDesc("garbage", 0);
  garbage.binary.assign(256, 0x5a);
  EXPECT_EQ(message(garbage),
            "kernel 'garbage': not an ELF shared object (no ELF magic)");
  garbage.binary.resize(10);
  EXPECT_TRUE(contains(message(garbage), "not an ELF shared object"));
  KernelDesc exec = kernelDesc("empty", 0);
  exec.binary[16] = 2; // e_type = ET_EXEC
  EXPECT_TRUE(contains(message(exec), "not an ELF shared object (ELF type 2"));
  KernelDesc empty = kernelDesc("empty", 0);
  empty.binary.clear();
  EXPECT_EQ(message(empty), "kernel 'empty': empty binary");

  KernelDesc spirv = kernelDesc("empty", 0);
  spirv.format = "spirv";
  EXPECT_EQ(message(spirv), "kernel 'empty': format 'spirv' is not one the "
                            "CPU driver runs (expected 'elf:<features>')");
  KernelDesc unknown = kernelDesc("empty", 0);
  unknown.format = "elf:sse4.2,frobnicate";
  EXPECT_EQ(message(unknown), "kernel 'empty': unknown CPU feature "
                              "'frobnicate' in format 'elf:sse4.2,frobnicate'");

  // A feature this host lacks, among those a format may name.
  std::string have = "," + hostCpuFeatures() + ",";
  std::vector<std::string> lacking;
  for (const char *f : {"amx-tile", "avx512fp16", "xop", "fma4", "sse4a",
                        "avx512vp2intersect", "avx512f", "avx2"})
    if (!contains(have, "," + std::string(f) + ","))
      lacking.push_back(f);
  if (lacking.empty()) {
    std::printf("note: this CPU has every feature the test could ask for\n");
  } else {
    KernelDesc lacks = kernelDesc("empty", 0);
    lacks.format = "elf:" + lacking[0];
    EXPECT_EQ(message(lacks), "kernel 'empty' needs CPU feature " + lacking[0] +
                                  " that this CPU lacks");
    if (lacking.size() > 1) {
      lacks.format = "elf:" + lacking[0] + "," + lacking[1];
      EXPECT_EQ(message(lacks), "kernel 'empty' needs CPU features " +
                                    lacking[0] + ", " + lacking[1] +
                                    " that this CPU lacks");
    }
  }
  // Every feature the host has is accepted.
  KernelDesc native = kernelDesc("empty", 0);
  native.format = "elf:" + hostCpuFeatures();
  EXPECT_TRUE(dev.createKernel(native).ok()) << native.format;

  KernelDesc missing = kernelDesc("no_such_kernel", 0);
  EXPECT_EQ(message(missing), "kernel 'no_such_kernel': the shared object has "
                              "no symbol 'no_such_kernel'");

  // Workgroups of several threads need a thread entry point; and at most
  // 1024 threads, 64 in z.
  KernelDesc wide = kernelDesc("empty", 0);
  wide.workgroupSize[0] = 64;
  EXPECT_EQ(message(wide), "kernel 'empty': workgroups of more than one "
                           "thread need a thread entry point "
                           "('__hesper_threads_empty')");
  KernelDesc huge = kernelDesc("tree_sum", 2);
  huge.workgroupSize[0] = 64;
  huge.workgroupSize[1] = 32;
  EXPECT_TRUE(contains(message(huge), "2048 threads per workgroup exceed"));
  huge.workgroupSize[1] = 1;
  huge.workgroupSize[2] = 65;
  EXPECT_TRUE(contains(message(huge), "workgroup size 65 in dimension 2"));
  KernelDesc odd = kernelDesc("empty", 0, 6);
  EXPECT_TRUE(contains(message(odd), "6 bytes of push constants"));
  KernelDesc big = kernelDesc("empty", 0, 260);
  EXPECT_TRUE(contains(message(big), "260 bytes of push constants"));
  KernelDesc shared = kernelDesc("empty", 0);
  shared.sharedMemoryBytes = 65537;
  EXPECT_TRUE(contains(message(shared), "shared memory"));
  KernelDesc unnamed = kernelDesc("", 0);
  EXPECT_EQ(message(unnamed), "kernel has no entry point name");

  // A kernel of another device is refused when recorded.
  OPEN_CPU(other, 1);
  auto foreign = makeKernel(other, kernelDesc("empty", 0));
  ASSERT_TRUE(foreign);
  Result<std::unique_ptr<CommandList>> list = dev.createCommandList();
  ASSERT_TRUE(list.ok());
  Status st = (*list)->record({dispatch(foreign.get(), {}, 1)});
  ASSERT_FALSE(st.ok());
  EXPECT_TRUE(contains(st.message(), "not one of this CPU device's"));
}

TEST(CpuDriver, ObjectLoadedOncePerDevice) {
  REQUIRE_KERNELS();
  OPEN_CPU(dev, 2);
  auto bump = makeKernel(dev, kernelDesc("bump", 0));
  auto read = makeKernel(dev, kernelDesc("read_calls", 1));
  auto out = makeBuffer(dev, 8);
  ASSERT_TRUE(bump && read && out);
  // One workgroup per dispatch: the counter is not atomic.
  ASSERT_TRUE(
      runOnce(dev, {dispatch(bump.get(), {}, 1), dispatch(bump.get(), {}, 1),
                    dispatch(read.get(), {out.get()}, 1)})
          .ok());
  EXPECT_EQ(download<uint64_t>(dev, *out)[0], 2u);

  // Another device loads its own copy, with its own counter.
  OPEN_CPU(other, 1);
  auto read2 = makeKernel(other, kernelDesc("read_calls", 1));
  auto out2 = makeBuffer(other, 8);
  ASSERT_TRUE(read2 && out2);
  ASSERT_TRUE(runOnce(other, {dispatch(read2.get(), {out2.get()}, 1)}).ok());
  EXPECT_EQ(download<uint64_t>(other, *out2)[0], 0u);

  // Kernels keep the object loaded after their device is gone.
  devOwner.reset();
  ASSERT_TRUE(bump->desc().binary.empty());
  EXPECT_EQ(read->desc().name, "read_calls");
}

TEST(CpuDriver, LoadsThroughATemporaryFileWithoutMemfd) {
  REQUIRE_KERNELS();
  setenv("HESPER_CPU_NO_MEMFD", "1", 1);
  OPEN_CPU(dev, 2);
  auto k = makeKernel(dev, kernelDesc("increment", 1));
  unsetenv("HESPER_CPU_NO_MEMFD");
  auto buf = makeBuffer(dev, 64 * 4);
  ASSERT_TRUE(k && buf);
  ASSERT_TRUE(runOnce(dev, {dispatch(k.get(), {buf.get()}, 64)}).ok());
  EXPECT_EQ(download<uint32_t>(dev, *buf)[63], 1u);
}

/// Prints the cost of an empty dispatch: 1000 per submission.
TEST(CpuDriver, DispatchOverhead) {
  REQUIRE_KERNELS();
  for (unsigned threads : {1u, 2u}) {
    OPEN_CPU(dev, threads);
    auto k = makeKernel(dev, kernelDesc("empty", 0));
    ASSERT_TRUE(k);
    Result<std::unique_ptr<CommandList>> list = dev.createCommandList();
    ASSERT_TRUE(list.ok());
    // As many workgroups as threads, so every thread takes part.
    std::vector<Dispatch> dispatches(1000, dispatch(k.get(), {}, threads));
    ASSERT_TRUE((*list)->record(dispatches).ok());
    double best = 1e30;
    for (int rep = 0; rep < 20; ++rep) {
      auto start = std::chrono::steady_clock::now();
      ASSERT_TRUE((*list)->submit().ok());
      std::chrono::duration<double, std::micro> us =
          std::chrono::steady_clock::now() - start;
      best = std::min(best, us.count() / 1000);
    }
    std::printf("[ overhead ] %u thread(s): %.3f us per empty dispatch\n",
                threads, best);
    // Loose: catches a pool that sleeps between dispatches, not noise.
    EXPECT_LT(best, 200.0);
  }
}

//===----------------------------------------------------------------------===//
// Programs and bundles
//===----------------------------------------------------------------------===//

namespace {

/// out = 2 * (x + y) in two launches, over n floats.
Program twoLaunchProgram(uint32_t n) {
  Program p;
  p.name = "add_then_double";
  p.backend = Backend::Cpu;
  p.kernels = {kernelDesc("add_arrays", 3), kernelDesc("double_it", 2)};
  p.buffers = {{"x", n * 4}, {"y", n * 4}, {"", n * 4}, {"", n * 4}};
  p.numArguments = 2;
  ProgramLaunch add, twice;
  add.kernel = 0;
  add.buffers = {0, 1, 2};
  add.grid[0] = n;
  twice.kernel = 1;
  twice.buffers = {2, 3};
  twice.grid[0] = n;
  p.launches = {add, twice};
  p.results = {3};
  return p;
}

void expectProgramRuns(Device &dev, const Program &program, uint32_t n) {
  Result<std::unique_ptr<ProgramRunner>> runner =
      ProgramRunner::create(dev, program, /*timing=*/true);
  ASSERT_TRUE(runner.ok()) << runner.status().message();
  std::vector<float> x(n), y(n);
  for (uint32_t i = 0; i < n; ++i) {
    x[i] = static_cast<float>(i);
    y[i] = 0.25f * static_cast<float>(i % 7);
  }
  ASSERT_TRUE((*runner)->setArgument(0, x.data(), n * 4).ok());
  ASSERT_TRUE((*runner)->setArgument(1, y.data(), n * 4).ok());
  for (int run = 0; run < 3; ++run) {
    Status st = (*runner)->run();
    ASSERT_TRUE(st.ok()) << st.message();
  }
  std::vector<uint8_t> bytes;
  ASSERT_TRUE((*runner)->readResult(0, bytes).ok());
  ASSERT_EQ(bytes.size(), n * 4u);
  std::vector<float> out(n);
  std::memcpy(out.data(), bytes.data(), bytes.size());
  for (uint32_t i = 0; i < n; ++i)
    ASSERT_EQ(out[i], 2 * (x[i] + y[i])) << "at " << i;
  EXPECT_EQ((*runner)->lastKernelTimesNs().size(), 2u);
}

std::string tempPath(const std::string &name) {
  return ::testing::TempDir() + "/hesper-" + std::to_string(getpid()) + "-" +
         name;
}

} // namespace

TEST(CpuDriver, ProgramRunner) {
  REQUIRE_KERNELS();
  OPEN_CPU(dev, 2);
  expectProgramRuns(dev, twoLaunchProgram(1001), 1001);

  // A program for another backend is refused.
  Program gpu = twoLaunchProgram(16);
  gpu.backend = Backend::Vulkan;
  Result<std::unique_ptr<ProgramRunner>> runner =
      ProgramRunner::create(dev, gpu, false);
  ASSERT_FALSE(runner.ok());
  EXPECT_TRUE(contains(runner.status().message(), "compiled for vulkan"));
}

TEST(CpuDriver, PaddedArgumentZeroesTheRestOfItsBuffer) {
  REQUIRE_KERNELS();
  OPEN_CPU(dev, 1);
  Program p = twoLaunchProgram(4);
  Result<std::unique_ptr<ProgramRunner>> runner =
      ProgramRunner::create(dev, p, false);
  ASSERT_TRUE(runner.ok()) << runner.status().message();
  // Fill the buffer, then write 6 of its 16 bytes: the other 10 are zero.
  std::vector<uint8_t> ones(16, 0xff), six{1, 2, 3, 4, 5, 6};
  ASSERT_TRUE((*runner)->setArgument(0, ones.data(), ones.size()).ok());
  ASSERT_TRUE((*runner)->setArgumentPadded(0, six.data(), six.size()).ok());
  std::vector<uint8_t> back;
  ASSERT_TRUE((*runner)->readArgument(0, back).ok());
  std::vector<uint8_t> expected{1, 2, 3, 4, 5, 6, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
  EXPECT_EQ(back, expected);
  // A whole buffer goes in as it is; a longer input is refused.
  ASSERT_TRUE((*runner)->setArgumentPadded(0, ones.data(), 16).ok());
  ASSERT_TRUE((*runner)->readArgument(0, back).ok());
  EXPECT_EQ(back, ones);
  std::vector<uint8_t> long_(20, 7);
  Status st = (*runner)->setArgumentPadded(0, long_.data(), long_.size());
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.message(), "argument 'x' takes 16 bytes, got 20");
}

TEST(Bundle, RoundTripKeepsFormats) {
  Program p = twoLaunchProgram(64);
  // Any bytes will do here: nothing is run.
  for (KernelDesc &k : p.kernels)
    k.binary = {1, 2, 3, 4, 5};
  p.kernels[0].format = "elf:avx2,fma,f16c";
  p.kernels[0].hostThreads = 3;
  p.kernels[1].format = "elf:";
  KernelDesc ptx = p.kernels[1];
  ptx.format = "ptx";
  KernelDesc unnamed = p.kernels[1];
  unnamed.format = "";
  p.kernels.push_back(ptx);
  p.kernels.push_back(unnamed);
  std::string path = tempPath("formats.hb");
  ASSERT_TRUE(saveBundle(p, path).ok());
  Result<Program> loaded = loadBundle(path);
  std::remove(path.c_str());
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  EXPECT_EQ(loaded->backend, Backend::Cpu);
  ASSERT_EQ(loaded->kernels.size(), 4u);
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(loaded->kernels[i].format, p.kernels[i].format) << i;
    EXPECT_EQ(loaded->kernels[i].binary, p.kernels[i].binary) << i;
    EXPECT_EQ(loaded->kernels[i].name, p.kernels[i].name) << i;
    EXPECT_EQ(loaded->kernels[i].hostThreads, p.kernels[i].hostThreads) << i;
  }
}

TEST(Bundle, LaunchTrafficRoundTrips) {
  Program p = twoLaunchProgram(64);
  ASSERT_EQ(p.launches.size(), 2u);
  p.launches[0].traffic = {1000, 200, 480, 16, 100};
  p.launches[1].traffic = {uint64_t(1) << 40, 3, 0, 0, 0};
  std::vector<uint8_t> image = serializeBundle(p);
  Result<Program> loaded = parseBundle(image.data(), image.size(), "image");
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  for (size_t i = 0; i < 2; ++i) {
    const LaunchTraffic &a = p.launches[i].traffic;
    const LaunchTraffic &b = loaded->launches[i].traffic;
    EXPECT_EQ(a.readBytes, b.readBytes) << i;
    EXPECT_EQ(a.writtenBytes, b.writtenBytes) << i;
    EXPECT_EQ(a.positionBytes, b.positionBytes) << i;
    EXPECT_EQ(a.window, b.window) << i;
    EXPECT_EQ(a.positions, b.positions) << i;
  }
}

TEST(Bundle, LaunchTrafficGrowsWithThePositionsAttended) {
  LaunchTraffic t{1000, 200, 480, 0, 100};
  // One token at position 0 attends 1 position; at 9, 10.
  EXPECT_EQ(t.bytes(0, 1), 1200u + 480u);
  EXPECT_EQ(t.bytes(9, 1), 1200u + 4800u);
  // A chunk of 4 rows at 9: its last row attends positions 0 .. 12.
  EXPECT_EQ(t.bytes(9, 4), 1200u + 13u * 480u);
  // Never past the cache's 100 positions.
  EXPECT_EQ(t.bytes(98, 8), 1200u + 100u * 480u);
  // A window of 16: the first row at 40 sees back to 25, the last of 4
  // rows up to 43.
  t.window = 16;
  EXPECT_EQ(t.bytes(40, 4), 1200u + 19u * 480u);
  EXPECT_EQ(t.bytes(3, 1), 1200u + 4u * 480u);
  // Nothing per position: the fixed bytes alone.
  LaunchTraffic fixed{64, 32, 0, 0, 0};
  EXPECT_EQ(fixed.bytes(500, 8), 96u);
}

TEST(Bundle, KernelBinariesAreStoredOnce) {
  Program p = twoLaunchProgram(64);
  ASSERT_EQ(p.kernels.size(), 2u);
  std::vector<uint8_t> shared(100000, 7), own(300, 9);
  p.kernels[0].binary = shared;
  p.kernels[1].binary = shared;
  KernelDesc third = p.kernels[1];
  third.name = "third";
  third.binary = own;
  p.kernels.push_back(third);
  std::vector<uint8_t> image = serializeBundle(p);
  // One copy of the shared binary, one of the other.
  EXPECT_LT(image.size(), 100000u + 300u + 4096u);
  EXPECT_GT(image.size(), 100000u + 300u);
  Result<Program> loaded = parseBundle(image.data(), image.size(), "image");
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  ASSERT_EQ(loaded->kernels.size(), 3u);
  EXPECT_EQ(loaded->kernels[0].binary, shared);
  EXPECT_EQ(loaded->kernels[1].binary, shared);
  EXPECT_EQ(loaded->kernels[2].binary, own);
  EXPECT_EQ(loaded->kernels[2].name, "third");
}

TEST(Bundle, CpuProgramRunsAfterLoading) {
  REQUIRE_KERNELS();
  std::string path = tempPath("cpu.hb");
  ASSERT_TRUE(saveBundle(twoLaunchProgram(257), path).ok());
  Result<Program> loaded = loadBundle(path);
  std::remove(path.c_str());
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  OPEN_CPU(dev, 3);
  expectProgramRuns(dev, *loaded, 257);
}

TEST(Bundle, OldVersionIsRefused) {
  std::string path = tempPath("v1.hb");
  {
    std::ofstream out(path, std::ios::binary);
    const uint32_t version = 1;
    out.write("HESPERPB", 8);
    out.write(reinterpret_cast<const char *>(&version), 4);
    out.write("\0\0\0\0\0\0\0\0", 8);
  }
  Result<Program> loaded = loadBundle(path);
  std::remove(path.c_str());
  ASSERT_FALSE(loaded.ok());
  EXPECT_TRUE(contains(loaded.status().message(), "unsupported version"))
      << loaded.status().message();
}
