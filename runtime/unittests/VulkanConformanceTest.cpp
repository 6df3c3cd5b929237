//===- VulkanConformanceTest.cpp - Vulkan driver conformance tests --------===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//
//
// Runs hand-written SPIR-V kernels (kernels/*.spvasm) on the default Vulkan
// device with the validation layer on, and checks exact results. Every test
// also checks that the layer reported nothing. Without a Vulkan device (or
// without the validation layer) the tests skip with the reason.
//
//===----------------------------------------------------------------------===//

#include "hesper/runtime/Program.h"
#include "hesper/runtime/Runtime.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

using namespace hesper::rt;

namespace {

/// The assembled kernel kernels/NAME.spvasm (empty when missing).
std::vector<uint8_t> readKernel(const std::string &name) {
  std::string path = std::string(HESPER_RT_KERNEL_DIR) + "/" + name + ".spv";
  std::ifstream in(path, std::ios::binary);
  return std::vector<uint8_t>((std::istreambuf_iterator<char>(in)),
                              std::istreambuf_iterator<char>());
}

/// The bytes of `values` (push constants, uploads).
template <typename T>
std::vector<uint8_t> bytesOf(const std::vector<T> &values) {
  std::vector<uint8_t> bytes(values.size() * sizeof(T));
  std::memcpy(bytes.data(), values.data(), bytes.size());
  return bytes;
}

/// Whether an openDevice failure means "no usable Vulkan here" rather than
/// a driver bug.
bool isUnavailable(const Status &s) {
  const std::string &m = s.message();
  return m.find("Vulkan unavailable") != std::string::npos ||
         m.find("validation requested") != std::string::npos;
}

/// Opens the default Vulkan device with validation, and checks at the end of
/// every test (after the device is gone) that the layer reported nothing.
class VulkanConformance : public ::testing::Test {
protected:
  void SetUp() override {
    messagesBefore = validationMessageCount();
    DeviceOptions opts;
    opts.validation = true;
    auto opened = openDevice(Backend::Vulkan, opts);
    if (!opened) {
      if (isUnavailable(opened.status()))
        GTEST_SKIP() << opened.status().message();
      FAIL() << opened.status().message();
    }
    device = std::move(*opened);
  }

  void TearDown() override {
    // A skipped test opened nothing; the loader's own complaints about a
    // missing driver (counted as messages) are not the driver's problems.
    if (!device)
      return;
    device.reset();
    EXPECT_EQ(validationMessageCount(), messagesBefore)
        << "the Vulkan validation layer reported problems (see stderr)";
  }

  /// Loads kernels/NAME.spv as a kernel with entry point "main".
  std::unique_ptr<Kernel> kernel(const std::string &name, uint32_t bindings,
                                 uint32_t pushBytes) {
    KernelDesc d;
    d.name = "main";
    d.binary = readKernel(name);
    d.numBindings = bindings;
    d.pushConstantBytes = pushBytes;
    d.workgroupSize[0] = 64;
    EXPECT_FALSE(d.binary.empty()) << "kernel " << name << " was not built";
    auto k = device->createKernel(d);
    EXPECT_TRUE(k.ok()) << name << ": " << k.status().message();
    return k.ok() ? std::move(*k) : nullptr;
  }

  /// A buffer of `bytes`, or null after a test failure.
  std::unique_ptr<Buffer> buffer(size_t bytes) {
    auto b = device->createBuffer(bytes);
    EXPECT_TRUE(b.ok()) << b.status().message();
    return b.ok() ? std::move(*b) : nullptr;
  }

  /// Records `dispatches` into a new list and submits it once.
  void runOnce(const std::vector<Dispatch> &dispatches) {
    auto list = device->createCommandList();
    ASSERT_TRUE(list.ok()) << list.status().message();
    Status s = (*list)->record(dispatches);
    ASSERT_TRUE(s.ok()) << s.message();
    s = (*list)->submit();
    ASSERT_TRUE(s.ok()) << s.message();
  }

  uint64_t messagesBefore = 0;
  std::unique_ptr<Device> device;
};

TEST_F(VulkanConformance, DeviceInfo) {
  const DeviceInfo &info = device->info();
  EXPECT_EQ(info.backend, Backend::Vulkan);
  EXPECT_FALSE(info.name.empty());
  EXPECT_GE(info.subgroupSize, 1u);
  EXPECT_GE(info.maxWorkgroupInvocations, 64u);
  EXPECT_GE(info.maxSharedMemoryBytes, 16384u);
  EXPECT_GE(info.maxPushConstantBytes, 128u);
  EXPECT_EQ(info.cacheId.rfind("vk:", 0), 0u) << info.cacheId;
  auto listed = listDevices(Backend::Vulkan);
  ASSERT_TRUE(listed.ok()) << listed.status().message();
  EXPECT_FALSE(listed->empty());
}

TEST_F(VulkanConformance, BufferLargerThanOneBinding) {
  // The device states how much one storage-buffer binding covers; a program
  // with a larger buffer is refused by name before anything is allocated.
  const DeviceInfo &info = device->info();
  ASSERT_GT(info.maxBindingBytes, 0u);
  Program program;
  program.name = "big";
  program.backend = Backend::Vulkan;
  program.buffers.push_back({"token_embd.weight", info.maxBindingBytes + 4});
  program.numArguments = 1;
  auto runner = ProgramRunner::create(*device, program, false);
  ASSERT_FALSE(runner.ok());
  EXPECT_NE(runner.status().message().find(
                "buffer 'token_embd.weight' has " +
                std::to_string(info.maxBindingBytes + 4) + " bytes"),
            std::string::npos)
      << runner.status().message();
  EXPECT_NE(runner.status().message().find("maxStorageBufferRange"),
            std::string::npos);
  // A buffer within the limit is accepted.
  program.buffers[0].bytes = 1024;
  EXPECT_TRUE(ProgramRunner::create(*device, program, false).ok());
}

TEST_F(VulkanConformance, FillAndCopy) {
  // 37 bytes: not a whole number of words.
  const size_t n = 37;
  auto a = buffer(n), b = buffer(n);
  ASSERT_TRUE(a && b);
  ASSERT_TRUE(device->fill(*a, 0xA5C3E10Fu).ok());
  std::vector<uint8_t> got(n);
  ASSERT_TRUE(device->download(*a, got.data(), n).ok());
  const uint8_t pattern[4] = {0x0F, 0xE1, 0xC3, 0xA5}; // little-endian
  for (size_t i = 0; i < n; ++i)
    ASSERT_EQ(got[i], pattern[i % 4]) << "byte " << i;

  std::vector<uint8_t> data(n);
  for (size_t i = 0; i < n; ++i)
    data[i] = static_cast<uint8_t>(i * 7 + 3);
  ASSERT_TRUE(device->upload(*a, data.data(), n).ok());
  ASSERT_TRUE(device->fill(*b, 0).ok());
  Status s = device->copy(*a, *b, 30);
  ASSERT_TRUE(s.ok()) << s.message();
  ASSERT_TRUE(device->download(*b, got.data(), n).ok());
  for (size_t i = 0; i < n; ++i)
    ASSERT_EQ(got[i], i < 30 ? data[i] : 0) << "byte " << i;

  // Partial transfers at an offset.
  uint8_t patch[3] = {0xAA, 0xBB, 0xCC};
  ASSERT_TRUE(device->upload(*b, patch, 3, 33).ok());
  uint8_t tail[4];
  ASSERT_TRUE(device->download(*b, tail, 4, 33).ok());
  EXPECT_EQ(tail[0], 0xAA);
  EXPECT_EQ(tail[1], 0xBB);
  EXPECT_EQ(tail[2], 0xCC);
  EXPECT_EQ(tail[3], 0);
}

TEST_F(VulkanConformance, TransferBounds) {
  auto a = buffer(16), b = buffer(8);
  ASSERT_TRUE(a && b);
  uint8_t bytes[32] = {};
  Status s = device->upload(*a, bytes, 8, 12);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("exceed"), std::string::npos) << s.message();
  EXPECT_FALSE(device->download(*a, bytes, 17).ok());
  EXPECT_FALSE(device->download(*a, bytes, 1, SIZE_MAX).ok());
  s = device->copy(*a, *b, 16);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("destination"), std::string::npos) << s.message();
  EXPECT_FALSE(device->copy(*a, *a, 4).ok());
}

TEST_F(VulkanConformance, ManyWorkgroups) {
  const uint32_t n = 1000003;
  auto k = kernel("axpb", 2, 4);
  auto x = buffer(n * 4), y = buffer(n * 4);
  ASSERT_TRUE(k && x && y);
  std::vector<float> xs(n);
  for (uint32_t i = 0; i < n; ++i)
    xs[i] = static_cast<float>(i);
  ASSERT_TRUE(device->upload(*x, xs.data(), n * 4).ok());
  ASSERT_TRUE(device->fill(*y, 0xFFFFFFFFu).ok());

  Dispatch d;
  d.kernel = k.get();
  d.bindings = {x.get(), y.get()};
  d.pushConstants = bytesOf(std::vector<uint32_t>{n});
  d.grid[0] = (n + 63) / 64;
  runOnce({d});

  std::vector<float> ys(n);
  ASSERT_TRUE(device->download(*y, ys.data(), n * 4).ok());
  for (uint32_t i = 0; i < n; ++i)
    ASSERT_EQ(ys[i], static_cast<float>(2 * i + 1)) << "element " << i;
}

TEST_F(VulkanConformance, SharedMemoryReverse) {
  const uint32_t groups = 37, n = groups * 64;
  auto k = kernel("reverse_tile", 2, 0);
  auto x = buffer(n * 4), y = buffer(n * 4);
  ASSERT_TRUE(k && x && y);
  std::vector<uint32_t> xs(n);
  for (uint32_t i = 0; i < n; ++i)
    xs[i] = i * 3 + 1;
  ASSERT_TRUE(device->upload(*x, xs.data(), n * 4).ok());

  Dispatch d;
  d.kernel = k.get();
  d.bindings = {x.get(), y.get()};
  d.grid[0] = groups;
  runOnce({d});

  std::vector<uint32_t> ys(n);
  ASSERT_TRUE(device->download(*y, ys.data(), n * 4).ok());
  for (uint32_t g = 0; g < groups; ++g)
    for (uint32_t l = 0; l < 64; ++l)
      ASSERT_EQ(ys[g * 64 + l], xs[g * 64 + 63 - l])
          << "group " << g << " lane " << l;
}

TEST_F(VulkanConformance, SubgroupReduce) {
  const DeviceInfo &info = device->info();
  if (!info.subgroupArithmetic)
    GTEST_SKIP() << info.name << " has no subgroup arithmetic in compute";
  const uint32_t groups = 8, n = groups * 64;
  auto k = kernel("subgroup_sum", 2, 0);
  auto sums = buffer(n * 4), sizes = buffer(n * 4);
  ASSERT_TRUE(k && sums && sizes);

  Dispatch d;
  d.kernel = k.get();
  d.bindings = {sums.get(), sizes.get()};
  d.grid[0] = groups;
  runOnce({d});

  // Lanes 0..s-1 of a full subgroup of s lanes add up 1..s; a workgroup of
  // 64 lanes is a whole number of subgroups, or one partial subgroup.
  uint32_t s = info.subgroupSize;
  uint32_t lanes = s <= 64 ? s : 64;
  uint32_t expected = lanes * (lanes + 1) / 2;
  std::vector<uint32_t> gotSums(n), gotSizes(n);
  ASSERT_TRUE(device->download(*sums, gotSums.data(), n * 4).ok());
  ASSERT_TRUE(device->download(*sizes, gotSizes.data(), n * 4).ok());
  for (uint32_t i = 0; i < n; ++i) {
    ASSERT_EQ(gotSizes[i], s) << "lane " << i;
    ASSERT_EQ(gotSums[i], expected) << "lane " << i << ", subgroup size " << s;
  }
}

TEST_F(VulkanConformance, PushConstants) {
  const uint32_t n = 1000;
  auto k = kernel("add_const", 2, 8);
  auto x = buffer(n * 4), y = buffer(n * 4);
  ASSERT_TRUE(k && x && y);
  std::vector<float> xs(n);
  for (uint32_t i = 0; i < n; ++i)
    xs[i] = static_cast<float>(i) * 0.5f;
  ASSERT_TRUE(device->upload(*x, xs.data(), n * 4).ok());

  auto push = [&](float c) {
    std::vector<uint8_t> bytes(8);
    std::memcpy(bytes.data(), &c, 4);
    std::memcpy(bytes.data() + 4, &n, 4);
    return bytes;
  };
  Dispatch d;
  d.kernel = k.get();
  d.bindings = {x.get(), y.get()};
  d.pushConstants = push(3.0f);
  d.grid[0] = (n + 63) / 64;
  auto list = device->createCommandList();
  ASSERT_TRUE(list.ok()) << list.status().message();
  ASSERT_TRUE((*list)->record({d}).ok());

  std::vector<float> ys(n);
  ASSERT_TRUE((*list)->submit().ok());
  ASSERT_TRUE(device->download(*y, ys.data(), n * 4).ok());
  for (uint32_t i = 0; i < n; ++i)
    ASSERT_EQ(ys[i], xs[i] + 3.0f) << "element " << i;

  Status s = (*list)->setPushConstants(0, push(-7.25f));
  ASSERT_TRUE(s.ok()) << s.message();
  ASSERT_TRUE((*list)->submit().ok());
  ASSERT_TRUE(device->download(*y, ys.data(), n * 4).ok());
  for (uint32_t i = 0; i < n; ++i)
    ASSERT_EQ(ys[i], xs[i] - 7.25f) << "element " << i;
  EXPECT_EQ((*list)->submissions(), 2u);

  // Wrong size, wrong index.
  s = (*list)->setPushConstants(0, std::vector<uint8_t>(4));
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("takes 8"), std::string::npos) << s.message();
  EXPECT_FALSE((*list)->setPushConstants(1, push(1.0f)).ok());
}

TEST_F(VulkanConformance, Replay) {
  const uint32_t n = 5000;
  auto k = kernel("increment", 1, 4);
  auto buf = buffer(n * 4);
  ASSERT_TRUE(k && buf);
  std::vector<uint32_t> start(n);
  for (uint32_t i = 0; i < n; ++i)
    start[i] = i * 11;
  ASSERT_TRUE(device->upload(*buf, start.data(), n * 4).ok());

  Dispatch d;
  d.kernel = k.get();
  d.bindings = {buf.get()};
  d.pushConstants = bytesOf(std::vector<uint32_t>{n});
  d.grid[0] = (n + 63) / 64;
  auto list = device->createCommandList(/*timing=*/true);
  ASSERT_TRUE(list.ok()) << list.status().message();
  Status s = (*list)->record({d, d, d});
  ASSERT_TRUE(s.ok()) << s.message();
  for (int i = 0; i < 10; ++i) {
    s = (*list)->submit();
    ASSERT_TRUE(s.ok()) << s.message();
  }
  EXPECT_EQ((*list)->submissions(), 10u);

  std::vector<uint32_t> got(n);
  ASSERT_TRUE(device->download(*buf, got.data(), n * 4).ok());
  for (uint32_t i = 0; i < n; ++i)
    ASSERT_EQ(got[i], start[i] + 30) << "element " << i;

  std::vector<double> times = (*list)->lastKernelTimesNs();
  if (device->info().timestampPeriodNs > 0) {
    ASSERT_EQ(times.size(), 3u);
    for (double t : times)
      EXPECT_GE(t, 0.0);
  } else {
    EXPECT_TRUE(times.empty());
  }
}

TEST_F(VulkanConformance, Errors) {
  auto k = kernel("axpb", 2, 4);
  auto x = buffer(256);
  ASSERT_TRUE(k && x);

  // Wrong binding count.
  Dispatch d;
  d.kernel = k.get();
  d.bindings = {x.get()};
  d.pushConstants = bytesOf(std::vector<uint32_t>{64});
  auto list = device->createCommandList();
  ASSERT_TRUE(list.ok());
  Status s = (*list)->record({d});
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("binding"), std::string::npos) << s.message();
  EXPECT_FALSE((*list)->submit().ok());

  // Wrong push constant size, empty grid.
  d.bindings = {x.get(), x.get()};
  d.pushConstants.clear();
  s = (*list)->record({d});
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("push-constant"), std::string::npos)
      << s.message();
  d.pushConstants = bytesOf(std::vector<uint32_t>{64});
  d.grid[0] = 0;
  s = (*list)->record({d});
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("grid"), std::string::npos) << s.message();

  // Not SPIR-V.
  KernelDesc bad;
  bad.name = "main";
  bad.binary = {'n', 'o', 't', ' ', 's', 'p', 'i', 'r', '-', 'v',
                ' ', 'a', 't', ' ', 'a', 'l', 'l', '!', '!', '!'};
  auto badKernel = device->createKernel(bad);
  EXPECT_FALSE(badKernel.ok());
  EXPECT_NE(badKernel.status().message().find("not SPIR-V"), std::string::npos)
      << badKernel.status().message();
  bad.binary.resize(7);
  EXPECT_FALSE(device->createKernel(bad).ok());

  // A missing entry point.
  KernelDesc wrongName;
  wrongName.name = "nope";
  wrongName.binary = readKernel("axpb");
  wrongName.numBindings = 2;
  wrongName.pushConstantBytes = 4;
  auto wrong = device->createKernel(wrongName);
  EXPECT_FALSE(wrong.ok());
  EXPECT_NE(wrong.status().message().find("entry point"), std::string::npos)
      << wrong.status().message();

  // Another backend's format, even with SPIR-V words ("" and "spirv" are
  // SPIR-V).
  KernelDesc ptx = wrongName;
  ptx.name = "main";
  ptx.format = "ptx";
  auto ptxKernel = device->createKernel(ptx);
  EXPECT_FALSE(ptxKernel.ok());
  EXPECT_NE(ptxKernel.status().message().find("format 'ptx'"),
            std::string::npos)
      << ptxKernel.status().message();
  ptx.format = "spirv";
  EXPECT_TRUE(device->createKernel(ptx).ok());

  // More buffers than a kernel may bind on this device.
  const uint32_t limit = device->info().maxKernelBuffers;
  EXPECT_GT(limit, 0u);
  KernelDesc many = wrongName;
  many.name = "main";
  many.numBindings = limit + 1;
  auto manyKernel = device->createKernel(many);
  EXPECT_FALSE(manyKernel.ok());
  EXPECT_NE(manyKernel.status().message().find(
                "binds " + std::to_string(limit + 1) +
                " buffers; the device allows " + std::to_string(limit)),
            std::string::npos)
      << manyKernel.status().message();

  // An empty buffer.
  auto empty = device->createBuffer(0);
  EXPECT_FALSE(empty.ok());
  EXPECT_FALSE(empty.status().message().empty());

  // No such device.
  DeviceOptions opts;
  opts.index = 999;
  auto none = openDevice(Backend::Vulkan, opts);
  EXPECT_FALSE(none.ok());
  EXPECT_NE(none.status().message().find("no Vulkan device"), std::string::npos)
      << none.status().message();
}

/// The "increment" kernel's description (one binding, 4 bytes of push
/// constants), for tests that change one field of it.
static KernelDesc incrementDesc() {
  KernelDesc d;
  d.name = "main";
  d.binary = readKernel("increment");
  d.numBindings = 1;
  d.pushConstantBytes = 4;
  d.workgroupSize[0] = 64;
  return d;
}

// Invalid SPIR-V never reaches the driver: SPIRV-Tools' validator refuses
// it in createKernel (a driver may crash on it instead of reporting it).
TEST_F(VulkanConformance, InvalidSpirvIsRefusedBeforeTheDriver) {
  KernelDesc d = incrementDesc();
  ASSERT_GT(d.binary.size(), 24u);
  // Word 5 is OpCapability Shader (2 words); flipping its opcode's low bit
  // makes it an OpExecutionMode that is too short.
  d.binary[20] ^= 1;
  auto k = device->createKernel(d);
  ASSERT_FALSE(k.ok());
  EXPECT_NE(k.status().message().find("invalid SPIR-V: "), std::string::npos)
      << k.status().message();
}

// A message of the validation layer fails the call that caused it: here a
// pipeline whose layout lacks the push constants the shader declares.
TEST_F(VulkanConformance, ValidationMessageFailsTheCall) {
  KernelDesc d = incrementDesc();
  d.pushConstantBytes = 0; // the shader reads 4 bytes of push constants
  auto k = device->createKernel(d);
  ASSERT_FALSE(k.ok());
  EXPECT_NE(k.status().message().find(
                "createKernel 'main': the Vulkan validation layer reported: "),
            std::string::npos)
      << k.status().message();
  EXPECT_GT(validationMessageCount(), messagesBefore);
  messagesBefore = validationMessageCount(); // expected: not a failure
}

TEST_F(VulkanConformance, ObjectsOfAnotherDevice) {
  DeviceOptions opts;
  opts.validation = true;
  auto other = openDevice(Backend::Vulkan, opts);
  ASSERT_TRUE(other.ok()) << other.status().message();
  auto theirs = (*other)->createBuffer(64);
  ASSERT_TRUE(theirs.ok());
  auto mine = buffer(64);
  ASSERT_TRUE(mine);
  uint32_t word = 0;
  EXPECT_FALSE(device->download(**theirs, &word, 4).ok());
  EXPECT_FALSE(device->copy(*mine, **theirs, 4).ok());

  auto k = kernel("increment", 1, 4);
  ASSERT_TRUE(k);
  Dispatch d;
  d.kernel = k.get();
  d.bindings = {theirs->get()};
  d.pushConstants = bytesOf(std::vector<uint32_t>{16});
  auto list = device->createCommandList();
  ASSERT_TRUE(list.ok());
  EXPECT_FALSE((*list)->record({d}).ok());

  // A buffer destroyed after recording is caught at submit.
  d.bindings = {mine.get()};
  ASSERT_TRUE((*list)->record({d}).ok());
  mine.reset();
  Status s = (*list)->submit();
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("destroyed"), std::string::npos) << s.message();
}

TEST_F(VulkanConformance, StagingTransfers) {
  // Storage buffers that are never mapped: uploads and downloads go through
  // staging buffers and copy commands, as on a discrete GPU.
  setenv("HESPER_VK_FORCE_STAGING", "1", 1);
  DeviceOptions opts;
  opts.validation = true;
  auto staged = openDevice(Backend::Vulkan, opts);
  unsetenv("HESPER_VK_FORCE_STAGING");
  ASSERT_TRUE(staged.ok()) << staged.status().message();
  Device &dev = **staged;

  const uint32_t n = 4099;
  auto buf = dev.createBuffer(n * 4);
  ASSERT_TRUE(buf.ok());
  std::vector<uint32_t> data(n);
  for (uint32_t i = 0; i < n; ++i)
    data[i] = i * 2654435761u;
  ASSERT_TRUE(dev.upload(**buf, data.data(), n * 4).ok());

  auto k = dev.createKernel(incrementDesc());
  ASSERT_TRUE(k.ok()) << k.status().message();
  Dispatch dispatch;
  dispatch.kernel = k->get();
  dispatch.bindings = {buf->get()};
  dispatch.pushConstants = bytesOf(std::vector<uint32_t>{n});
  dispatch.grid[0] = (n + 63) / 64;
  auto list = dev.createCommandList();
  ASSERT_TRUE(list.ok());
  ASSERT_TRUE((*list)->record({dispatch}).ok());
  ASSERT_TRUE((*list)->submit().ok());

  std::vector<uint32_t> got(n);
  ASSERT_TRUE(dev.download(**buf, got.data(), n * 4).ok());
  for (uint32_t i = 0; i < n; ++i)
    ASSERT_EQ(got[i], data[i] + 1) << "element " << i;
  uint32_t middle[2];
  ASSERT_TRUE(dev.download(**buf, middle, 8, 400).ok());
  EXPECT_EQ(middle[0], data[100] + 1);
  EXPECT_EQ(middle[1], data[101] + 1);
}

TEST_F(VulkanConformance, PipelineCache) {
  std::filesystem::path dir =
      std::filesystem::temp_directory_path() /
      ("hesper-vk-cache-test-" + std::to_string(getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::path cacheDir = dir / "nested";

  auto cacheFiles = [&] {
    std::vector<std::filesystem::path> files;
    std::error_code ec;
    for (const auto &entry :
         std::filesystem::directory_iterator(cacheDir, ec)) {
      std::string name = entry.path().filename().string();
      if (name.rfind("vk-pipeline-cache-", 0) == 0 &&
          entry.path().extension() == ".bin")
        files.push_back(entry.path());
    }
    return files;
  };

  for (int round = 0; round < 2; ++round) {
    // Round 0 writes the cache; round 1 loads it and writes it again.
    DeviceOptions opts;
    opts.validation = true;
    opts.cacheDir = cacheDir.string();
    auto opened = openDevice(Backend::Vulkan, opts);
    ASSERT_TRUE(opened.ok()) << opened.status().message();
    KernelDesc d;
    d.name = "main";
    d.binary = readKernel("axpb");
    d.numBindings = 2;
    d.pushConstantBytes = 4;
    d.workgroupSize[0] = 64;
    auto k = (*opened)->createKernel(d);
    ASSERT_TRUE(k.ok()) << k.status().message();
    k->reset();
    opened->reset();
    std::vector<std::filesystem::path> files = cacheFiles();
    ASSERT_EQ(files.size(), 1u) << "round " << round;
    EXPECT_GT(std::filesystem::file_size(files[0]), 0u);
  }

  // A corrupt cache file is ignored.
  {
    std::vector<std::filesystem::path> files = cacheFiles();
    ASSERT_EQ(files.size(), 1u);
    std::ofstream(files[0], std::ios::binary | std::ios::trunc) << "garbage";
    DeviceOptions opts;
    opts.validation = true;
    opts.cacheDir = cacheDir.string();
    auto opened = openDevice(Backend::Vulkan, opts);
    ASSERT_TRUE(opened.ok()) << opened.status().message();
  }
  std::filesystem::remove_all(dir);
}

} // namespace
