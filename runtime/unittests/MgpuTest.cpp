//===- MgpuTest.cpp - Tests of the mgpu* functions and module images ------===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//
//
// The module image format (round trip; every truncation and a bad magic
// refused), and the memory calls of Mgpu.cpp on the CPU device, which
// needs no GPU: allocations, copies in every direction, fills, host
// registration. Kernel launches are covered by the gpu dialect programs of
// test/Integration/Programs.
//
//===----------------------------------------------------------------------===//

#include "hesper/runtime/Mgpu.h"

#include "gtest/gtest.h"

#include <cstring>
#include <string>

using namespace hesper::rt;

namespace {

GpuModuleImage sampleImage() {
  GpuModuleImage image;
  image.format = "spirv";
  image.binary = {1, 2, 3, 4, 5, 6, 7, 8};
  GpuKernelImage k;
  k.name = "axpb";
  k.workgroupSize[0] = 8;
  k.workgroupSize[1] = 2;
  k.sharedBytes = 96;
  k.args = {{GpuKernelArg::MemRef, 2, 4, /*passSizes=*/1},
            {GpuKernelArg::Scalar, 0, 8}};
  k.printWords = 1024;
  k.printFormats = {{"x = %f\n", "f"}, {"%d %lld\n", "il"}};
  image.kernels.push_back(k);
  k.name = "other";
  k.args.clear();
  k.printWords = 0;
  k.printFormats.clear();
  // Compiled at launch, from the source.
  k.workgroupSize[0] = k.workgroupSize[1] = k.workgroupSize[2] = 0;
  image.kernels.push_back(k);
  image.source = "gpu.module @kernels {}";
  return image;
}

TEST(MgpuImage, RoundTrip) {
  std::vector<uint8_t> bytes = encodeGpuModuleImage(sampleImage());
  Result<GpuModuleImage> image = decodeGpuModuleImage(bytes.data(), bytes.size());
  ASSERT_TRUE(image.ok()) << image.status().message();
  EXPECT_EQ(image->format, "spirv");
  EXPECT_EQ(image->binary, sampleImage().binary);
  ASSERT_EQ(image->kernels.size(), 2u);
  const GpuKernelImage &k = image->kernels[0];
  EXPECT_EQ(k.name, "axpb");
  EXPECT_EQ(k.workgroupSize[0], 8u);
  EXPECT_EQ(k.workgroupSize[1], 2u);
  EXPECT_EQ(k.workgroupSize[2], 1u);
  EXPECT_EQ(k.sharedBytes, 96u);
  ASSERT_EQ(k.args.size(), 2u);
  EXPECT_EQ(k.args[0].kind, GpuKernelArg::MemRef);
  EXPECT_EQ(k.args[0].rank, 2u);
  EXPECT_EQ(k.args[0].bytes, 4u);
  EXPECT_EQ(k.args[0].passSizes, 1u);
  EXPECT_EQ(k.args[1].kind, GpuKernelArg::Scalar);
  EXPECT_EQ(k.args[1].passSizes, 0u);
  EXPECT_EQ(k.printWords, 1024u);
  ASSERT_EQ(k.printFormats.size(), 2u);
  EXPECT_EQ(k.printFormats[1].format, "%d %lld\n");
  EXPECT_EQ(k.printFormats[1].kinds, "il");
  EXPECT_TRUE(image->kernels[1].printFormats.empty());
  EXPECT_EQ(k.args[1].bytes, 8u);
  EXPECT_TRUE(image->kernels[1].args.empty());
  EXPECT_EQ(image->kernels[1].workgroupSize[0], 0u);
  EXPECT_EQ(image->source, "gpu.module @kernels {}");
}

TEST(MgpuImage, MalformedImagesAreRefused) {
  std::vector<uint8_t> bytes = encodeGpuModuleImage(sampleImage());
  // Every truncation, and one byte too many.
  for (size_t size = 0; size < bytes.size(); ++size)
    EXPECT_FALSE(decodeGpuModuleImage(bytes.data(), size).ok()) << size;
  std::vector<uint8_t> longer = bytes;
  longer.push_back(0);
  EXPECT_FALSE(decodeGpuModuleImage(longer.data(), longer.size()).ok());
  std::vector<uint8_t> magic = bytes;
  magic[0] = 'X';
  Result<GpuModuleImage> bad = decodeGpuModuleImage(magic.data(), magic.size());
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("bad magic"), std::string::npos);
  // An argument of zero bytes.
  GpuModuleImage zero = sampleImage();
  zero.kernels[0].args[0].bytes = 0;
  std::vector<uint8_t> z = encodeGpuModuleImage(zero);
  EXPECT_FALSE(decodeGpuModuleImage(z.data(), z.size()).ok());
}

/// The mgpu* functions by name, called through their C signatures.
template <typename F> F *symbol(const char *name) {
  for (auto [n, address] : mgpuSymbols())
    if (std::strcmp(n, name) == 0)
      return reinterpret_cast<F *>(address);
  return nullptr;
}

class MgpuMemory : public ::testing::Test {
protected:
  void SetUp() override {
    DeviceOptions opts;
    opts.threads = 1;
    auto opened = openDevice(Backend::Cpu, opts);
    if (!opened.ok())
      GTEST_SKIP() << opened.status().message();
    device = std::move(*opened);
    setMgpuDevice(device.get());
  }
  void TearDown() override { setMgpuDevice(nullptr); }
  std::unique_ptr<Device> device;

  using Alloc = void *(uint64_t, void *, bool);
  using Free = void(void *, void *);
  using Memcpy = void(void *, void *, size_t, void *);
  using Memset32 = void(void *, unsigned, size_t, void *);
  using Register = void(void *, uint64_t);
  using Unregister = void(void *);
};

TEST_F(MgpuMemory, CopiesAndFillsInEveryDirection) {
  auto *alloc = symbol<Alloc>("mgpuMemAlloc");
  auto *release = symbol<Free>("mgpuMemFree");
  auto *copy = symbol<Memcpy>("mgpuMemcpy");
  auto *fill = symbol<Memset32>("mgpuMemset32");
  ASSERT_TRUE(alloc && release && copy && fill);

  float host[6] = {1, 2, 3, 4, 5, 6}, back[6] = {};
  void *a = alloc(sizeof(host), nullptr, false);
  void *b = alloc(sizeof(host), nullptr, false);
  // New device memory reads as zeros.
  copy(back, a, sizeof(back), nullptr);
  for (float v : back)
    EXPECT_EQ(v, 0.0f);
  copy(a, host, sizeof(host), nullptr);         // host -> device
  copy(b, a, sizeof(host), nullptr);            // device -> device
  copy(back, b, sizeof(back), nullptr);         // device -> host
  for (int i = 0; i < 6; ++i)
    EXPECT_EQ(back[i], host[i]);
  // A part of a buffer, at an offset that is not a whole word of the
  // copy's size: elements 2..3 of b become 7.5.
  float seven = 7.5f;
  unsigned bits;
  std::memcpy(&bits, &seven, 4);
  fill(static_cast<float *>(b) + 2, bits, 2, nullptr);
  copy(back, b, sizeof(back), nullptr);
  const float want[6] = {1, 2, 7.5f, 7.5f, 5, 6};
  for (int i = 0; i < 6; ++i)
    EXPECT_EQ(back[i], want[i]) << i;
  // Three bytes from the middle of a word.
  char bytes[3];
  copy(bytes, static_cast<char *>(b) + 5, 3, nullptr);
  EXPECT_EQ(std::memcmp(bytes, reinterpret_cast<char *>(back) + 5, 3), 0);
  release(a, nullptr);
  release(b, nullptr);
}

TEST_F(MgpuMemory, HostRegisteredMemoryIsCopiedLikeHostMemory) {
  auto *alloc = symbol<Alloc>("mgpuMemAlloc");
  auto *copy = symbol<Memcpy>("mgpuMemcpy");
  auto *reg = symbol<Register>("mgpuMemHostRegister");
  auto *unreg = symbol<Unregister>("mgpuMemHostUnregister");
  ASSERT_TRUE(alloc && copy && reg && unreg);
  int32_t host[4] = {10, 20, 30, 40}, out[4] = {};
  reg(host, sizeof(host));
  reg(host, sizeof(host)); // a second registration of the same range
  void *d = alloc(sizeof(host), nullptr, false);
  copy(d, host, sizeof(host), nullptr);
  copy(out, d, sizeof(out), nullptr);
  for (int i = 0; i < 4; ++i)
    EXPECT_EQ(out[i], host[i]);
  unreg(host);
  unreg(host);
}

using MgpuMemoryDeathTest = MgpuMemory;

TEST_F(MgpuMemoryDeathTest, MisuseIsOneErrorAndExitStatusOne) {
  auto *release = symbol<Free>("mgpuMemFree");
  auto *reg = symbol<Register>("mgpuMemHostRegister");
  auto *unreg = symbol<Unregister>("mgpuMemHostUnregister");
  int32_t host[8];
  EXPECT_EXIT(release(host, nullptr), ::testing::ExitedWithCode(1),
              "error: gpu.dealloc of memory that gpu.alloc did not return");
  EXPECT_EXIT(unreg(host), ::testing::ExitedWithCode(1),
              "error: gpu.host_unregister of memory that is not registered");
  EXPECT_EXIT(
      {
        reg(host, 16);
        reg(host + 2, 16);
      },
      ::testing::ExitedWithCode(1),
      "error: gpu.host_register of memory that overlaps memory already "
      "registered or allocated");
  // The other order: a range that encloses one registered before.
  EXPECT_EXIT(
      {
        reg(host + 2, 8);
        reg(host, 32);
      },
      ::testing::ExitedWithCode(1),
      "error: gpu.host_register of memory that overlaps memory already "
      "registered or allocated");
}

// A kernel compiled at launch asks the compiler setMgpuKernelCompiler
// installed, with the module's source, its name and the launch's block
// size; without one, or when it fails, the launch is one error line.
TEST_F(MgpuMemoryDeathTest, KernelsCompiledAtLaunchNeedTheCompiler) {
  using Load = void *(void *, size_t);
  using GetFunction = void *(void *, const char *);
  using Launch = void(void *, intptr_t, intptr_t, intptr_t, intptr_t,
                      intptr_t, intptr_t, int32_t, void *, void **, void **,
                      size_t);
  std::vector<uint8_t> bytes = encodeGpuModuleImage(sampleImage());
  void *module = symbol<Load>("mgpuModuleLoad")(bytes.data(), bytes.size());
  void *other = symbol<GetFunction>("mgpuModuleGetFunction")(module, "other");
  ASSERT_NE(other, nullptr);
  auto *launch = symbol<Launch>("mgpuLaunchKernel");
  EXPECT_EXIT(launch(other, 1, 1, 1, 4, 1, 1, 0, nullptr, nullptr, nullptr, 0),
              ::testing::ExitedWithCode(1),
              "error: kernel 'other' is compiled at launch \\(its block size "
              "is known only then\\), and no compiler is at hand");
  EXPECT_EXIT(
      {
        setMgpuKernelCompiler([](const std::string &source,
                                 const std::string &kernel,
                                 const uint32_t block[3])
                                  -> Result<GpuModuleImage> {
          return Status::error(source + " " + kernel + " " +
                               std::to_string(block[0]));
        });
        launch(other, 1, 1, 1, 4, 1, 1, 0, nullptr, nullptr, nullptr, 0);
      },
      ::testing::ExitedWithCode(1),
      "error: compiling kernel 'other' for a block of 4x1x1: gpu.module "
      "@kernels \\{\\} other 4");
  EXPECT_EXIT(launch(other, 1, 1, 1, 0, 1, 1, 0, nullptr, nullptr, nullptr, 0),
              ::testing::ExitedWithCode(1),
              "error: kernel 'other' is launched with a block size of 0 in "
              "dimension 0");
  symbol<void(void *)>("mgpuModuleUnload")(module);
}

// gpu.alloc hands out whole 256-byte granules, as CUDA's allocators do.
TEST_F(MgpuMemory, AllocationsAreWholeGranules) {
  auto *alloc = symbol<Alloc>("mgpuMemAlloc");
  auto *release = symbol<Free>("mgpuMemFree");
  auto *copy = symbol<Memcpy>("mgpuMemcpy");
  void *device = alloc(4, nullptr, false);
  std::vector<uint8_t> in(256), out(256);
  for (size_t i = 0; i < in.size(); ++i)
    in[i] = static_cast<uint8_t>(i * 7 + 1);
  copy(device, in.data(), in.size(), nullptr);
  copy(out.data(), device, out.size(), nullptr);
  EXPECT_EQ(in, out);
  release(device, nullptr);
}

TEST_F(MgpuMemory, EmptyAllocationsAreStillNamed) {
  auto *alloc = symbol<Alloc>("mgpuMemAlloc");
  auto *release = symbol<Free>("mgpuMemFree");
  auto *copy = symbol<Memcpy>("mgpuMemcpy");
  void *empty = alloc(0, nullptr, false);
  ASSERT_NE(empty, nullptr);
  char byte = 0;
  copy(&byte, empty, 0, nullptr); // nothing to copy, but a known pointer
  release(empty, nullptr);
}

// printf records as a Vulkan kernel leaves them (PrintfToBuffer.cpp):
// word 0 counts the words, then [format, workgroup, thread, words...].
TEST(MgpuPrint, RecordsInWorkgroupThenCallThenThreadOrder) {
  std::vector<GpuPrintFormat> formats = {
      {"t%d: %5.2f %x %u%%\n", "ifii"}, {"after %lld %c\n", "li"}};
  auto bits = [](float f) {
    uint32_t w;
    std::memcpy(&w, &f, 4);
    return w;
  };
  std::vector<uint32_t> words = {0};
  auto add = [&](std::vector<uint32_t> record) {
    words.insert(words.end(), record.begin(), record.end());
  };
  // [format, group, thread, words...], in the order the lanes happened to
  // reserve them; format 1's i64 is two words, low first.
  add({1, 0, 1, 1, 1, 1});                       // group 0, thread 1
  add({0, 1, 0, 7, bits(-0.25f), 16, 3});        // group 1, thread 0
  add({0, 0, 1, 1, bits(2.5f), 10, 4});          // group 0, thread 1
  add({0, 0, 0, 0, bits(0.5f), 0xbeef, 5});      // group 0, thread 0
  add({1, 0, 0, 0xffffffffu, 0x7fffffffu, 'A'}); // group 0, thread 0
  words[0] = static_cast<uint32_t>(words.size() - 1);
  // Group 0: each thread's first record in thread order, then each one's
  // second; then group 1.
  EXPECT_EQ(formatPrintRecords(formats, words),
            "t0:  0.50 beef 5%\n"
            "after 4294967297 \x01\n"
            "after 9223372036854775807 A\n"
            "t1:  2.50 a 4%\n"
            "t7: -0.25 10 3%\n");
}

TEST(MgpuPrint, SaysWhenRecordsDidNotFit) {
  std::vector<GpuPrintFormat> formats = {{"%d\n", "i"}};
  // Four words: one record fits; the count says three were reserved.
  std::vector<uint32_t> words = {12, 0, 0, 0, 42};
  std::string text = formatPrintRecords(formats, words);
  EXPECT_EQ(text, "42\n(some printf records did not fit in the 20-byte "
                  "print buffer)\n");
  // Unsigned conversions read a word as unsigned.
  EXPECT_EQ(formatPrintRecords({{"%u %d\n", "ii"}},
                               {5, 0, 0, 0, uint32_t(-2), uint32_t(-2)}),
            "4294967294 -2\n");
}

} // namespace

