//===- VulkanDevice.cpp - Vulkan driver of the Hesper runtime -------------===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//
//
// The Vulkan device (buffers, transfers, kernel creation, the pipeline
// cache file) and the driver's entry points. VulkanInstance.cpp,
// VulkanContext.cpp and VulkanCommands.cpp hold the rest of the driver,
// VulkanInternal.h what they share.
//
// The Vulkan backend of the HAL. Nothing is linked against the Vulkan loader:
// libvulkan.so.1 is opened with dlopen, vkGetInstanceProcAddr is the only
// symbol taken from it, and every other entry point is looked up by name,
// instance functions through the instance and device functions through the
// device.
//
// Ownership: a VulkanDevice, and every buffer, kernel and command list it
// creates, hold a shared Context (instance, logical device, queue, pipeline
// cache). The Vulkan objects are therefore destroyed after the last of their
// users, in the order the validation layer expects: children first, then the
// device, the debug messenger and the instance.
//
// Environment:
//   HESPER_VK_VALIDATION=1   enables the validation layer for every device.
//   HESPER_CACHE_DIR=DIR     pipeline cache directory when none is given.
//   HESPER_VK_FORCE_STAGING=1  never map storage buffers, so that uploads and
//                            downloads go through a staging buffer even on
//                            unified-memory devices (for tests).
//
//===----------------------------------------------------------------------===//

#include "hal/Drivers.h"

#ifndef HESPER_HAVE_VULKAN_HEADERS

namespace hesper::rt::detail {

static const char *const kNoVulkanHeaders =
    "Vulkan unavailable: the runtime was built without the Vulkan headers";

Result<std::vector<DeviceInfo>> listVulkanDevices() {
  return Status::error(kNoVulkanHeaders);
}

Result<std::unique_ptr<Device>> openVulkanDevice(const DeviceOptions &) {
  return Status::error(kNoVulkanHeaders);
}

uint64_t vulkanValidationMessageCount() { return 0; }

} // namespace hesper::rt::detail

#else // HESPER_HAVE_VULKAN_HEADERS

#include "VulkanInternal.h"

#include <unistd.h>

#ifdef HESPER_HAVE_SPIRV_TOOLS
#include <spirv-tools/libspirv.h>
#endif

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>

namespace hesper::rt::detail::vk {

//===----------------------------------------------------------------------===//
// SPIR-V modules
//===----------------------------------------------------------------------===//

/// SPIR-V's magic number, in the host's byte order.
constexpr uint32_t kSpirvMagic = 0x07230203;

/// Whether the module (whose header was checked) declares a GLCompute entry
/// point called `name`. Entry points precede the first function.
static bool hasComputeEntryPoint(const std::vector<uint32_t> &words,
                                 const std::string &name) {
  constexpr uint32_t opEntryPoint = 15, opFunction = 54, glCompute = 5;
  size_t at = 5;
  while (at < words.size()) {
    uint32_t wordCount = words[at] >> 16, opcode = words[at] & 0xffff;
    if (wordCount == 0 || wordCount > words.size() - at || opcode == opFunction)
      return false;
    if (opcode == opEntryPoint && wordCount >= 4 &&
        words[at + 1] == glCompute) {
      // The name is a nul-terminated string packed 4 bytes to a word, first
      // byte lowest.
      std::string entry;
      bool terminated = false;
      for (size_t w = at + 3; w < at + wordCount && !terminated; ++w) {
        for (int b = 0; b < 4; ++b) {
          char c = static_cast<char>((words[w] >> (8 * b)) & 0xff);
          if (c == '\0') {
            terminated = true;
            break;
          }
          entry += c;
        }
      }
      if (terminated && entry == name)
        return true;
    }
    at += wordCount;
  }
  return false;
}

/// Runs SPIRV-Tools' validator (what `spirv-val` runs) on a module before
/// any driver sees it: a driver may crash on invalid SPIR-V rather than
/// report it. The target environment follows the module's SPIR-V version
/// (1.3 and below: Vulkan 1.1; 1.4; 1.5: Vulkan 1.2; 1.6: Vulkan 1.3).
static Status validateSpirv(const std::vector<uint32_t> &words) {
#ifdef HESPER_HAVE_SPIRV_TOOLS
  uint32_t minor = (words[1] >> 8) & 0xff;
  spv_target_env env = minor <= 3   ? SPV_ENV_VULKAN_1_1
                       : minor == 4 ? SPV_ENV_VULKAN_1_1_SPIRV_1_4
                       : minor == 5 ? SPV_ENV_VULKAN_1_2
                                    : SPV_ENV_VULKAN_1_3;
  spv_context context = spvContextCreate(env);
  spv_diagnostic diagnostic = nullptr;
  spv_result_t result =
      spvValidateBinary(context, words.data(), words.size(), &diagnostic);
  std::string message;
  if (result != SPV_SUCCESS)
    message = diagnostic && diagnostic->error ? diagnostic->error
                                              : "invalid module";
  spvDiagnosticDestroy(diagnostic);
  spvContextDestroy(context);
  if (result != SPV_SUCCESS) {
    // One line: the validator's first line names the rule.
    message = message.substr(0, message.find('\n'));
    message.erase(message.find_last_not_of(' ') + 1);
    return Status::error("invalid SPIR-V: " + message);
  }
#else
  (void)words;
#endif
  return Status();
}

//===----------------------------------------------------------------------===//
// Device
//===----------------------------------------------------------------------===//

/// "offset 8 + 16 bytes exceed the 20-byte buffer" or an empty string.
static std::string checkRange(const char *what, size_t offset, size_t bytes,
                              size_t size) {
  if (rangeFits(bytes, offset, size))
    return {};
  return std::string(what) + ": offset " + std::to_string(offset) + " + " +
         std::to_string(bytes) + " bytes exceed the " + std::to_string(size) +
         "-byte buffer";
}

/// The pipeline cache file of a device in `dir`.
static std::string pipelineCachePath(const std::string &dir,
                                     const std::string &cacheId) {
  char hash[17];
  std::snprintf(hash, sizeof(hash), "%016llx",
                static_cast<unsigned long long>(
                    hashBytes(cacheId.data(), cacheId.size())));
  return (std::filesystem::path(dir) /
          ("vk-pipeline-cache-" + std::string(hash) + ".bin"))
      .string();
}

/// The file's contents, or nothing when it cannot be read.
static std::vector<uint8_t> readFile(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return {};
  std::vector<uint8_t> data((std::istreambuf_iterator<char>(in)),
                            std::istreambuf_iterator<char>());
  if (in.bad())
    return {};
  return data;
}

namespace {

/// One opened Vulkan device.
class VulkanDevice final : public Device {
public:
  VulkanDevice(std::shared_ptr<Context> ctx, std::string cachePath)
      : ctx(std::move(ctx)), cachePath(std::move(cachePath)) {}
  /// Saves the pipeline cache when a cache directory was given.
  ~VulkanDevice() override {
    if (!cachePath.empty()) {
      std::vector<uint8_t> data = ctx->pipelineCacheData();
      // A cache that cannot be written is only a slower next start.
      if (!data.empty())
        (void)writeFileAtomically(cachePath, data);
    }
  }

  const DeviceInfo &info() const override { return ctx->physical.info; }
  Result<std::unique_ptr<Buffer>> createBuffer(size_t bytes) override;
  Status upload(Buffer &dst, const void *src, size_t bytes,
                size_t offset) override;
  Status download(Buffer &src, void *dst, size_t bytes, size_t offset) override;
  Status fill(Buffer &dst, uint32_t pattern) override;
  Status copy(Buffer &src, Buffer &dst, size_t bytes) override;
  Result<std::unique_ptr<Kernel>> createKernel(const KernelDesc &d) override;
  Result<std::unique_ptr<CommandList>> createCommandList(bool timing) override;

private:
  /// `buffer` as a buffer of this device, or null.
  VulkanBuffer *lookup(Buffer &buffer) const {
    if (!ctx->isLive(static_cast<const Buffer *>(&buffer), 0))
      return nullptr;
    return static_cast<VulkanBuffer *>(&buffer);
  }

  std::shared_ptr<Context> ctx;
  std::string cachePath;
};

Result<std::unique_ptr<Buffer>> VulkanDevice::createBuffer(size_t bytes) {
  if (bytes == 0)
    return Status::error("createBuffer: a buffer cannot be empty");
  auto buffer = std::make_unique<VulkanBuffer>(ctx, bytes);
  Status s = ctx->allocate(bytes, MemoryUse::Storage, buffer->memory);
  if (!s)
    return Status::error("createBuffer(" + std::to_string(bytes) +
                         " bytes): " + s.message());
  buffer->serial =
      ctx->registerObject(static_cast<const Buffer *>(buffer.get()));
  return std::unique_ptr<Buffer>(std::move(buffer));
}

Status VulkanDevice::upload(Buffer &dst, const void *src, size_t bytes,
                            size_t offset) {
  VulkanBuffer *buffer = lookup(dst);
  if (!buffer)
    return Status::error("upload: the buffer belongs to another device");
  std::string range = checkRange("upload", offset, bytes, buffer->bytes);
  if (!range.empty())
    return Status::error(range);
  if (bytes == 0)
    return Status();
  if (!src)
    return Status::error("upload: no source data");

  const DeviceFunctions &fn = ctx->fn;
  Allocation &mem = buffer->memory;
  if (mem.mapped) {
    std::memcpy(static_cast<uint8_t *>(mem.mapped) + offset, src, bytes);
    if (!mem.coherent) {
      VkMappedMemoryRange r{};
      r.sType = VK_STRUCTURE_TYPE_MAPPED_MEMORY_RANGE;
      r.memory = mem.memory;
      r.size = VK_WHOLE_SIZE;
      HESPER_VK_TRY(fn, vkFlushMappedMemoryRanges, ctx->device, 1, &r);
    }
    return Status();
  }

  Allocation staging;
  Status s = ctx->allocate(bytes, MemoryUse::Staging, staging);
  if (!s)
    return Status::error("upload: staging buffer: " + s.message());
  std::memcpy(staging.mapped, src, bytes);
  if (!staging.coherent) {
    VkMappedMemoryRange r{};
    r.sType = VK_STRUCTURE_TYPE_MAPPED_MEMORY_RANGE;
    r.memory = staging.memory;
    r.size = VK_WHOLE_SIZE;
    fn.vkFlushMappedMemoryRanges(ctx->device, 1, &r);
  }
  s = ctx->runTransfer([&](VkCommandBuffer cmd) {
    VkBufferCopy region{};
    region.srcOffset = 0;
    region.dstOffset = offset;
    region.size = bytes;
    fn.vkCmdCopyBuffer(cmd, staging.buffer, mem.buffer, 1, &region);
  });
  ctx->release(staging);
  return s;
}

Status VulkanDevice::download(Buffer &src, void *dst, size_t bytes,
                              size_t offset) {
  VulkanBuffer *buffer = lookup(src);
  if (!buffer)
    return Status::error("download: the buffer belongs to another device");
  std::string range = checkRange("download", offset, bytes, buffer->bytes);
  if (!range.empty())
    return Status::error(range);
  if (bytes == 0)
    return Status();
  if (!dst)
    return Status::error("download: no destination");

  const DeviceFunctions &fn = ctx->fn;
  Allocation &mem = buffer->memory;
  if (mem.mapped) {
    if (!mem.coherent) {
      VkMappedMemoryRange r{};
      r.sType = VK_STRUCTURE_TYPE_MAPPED_MEMORY_RANGE;
      r.memory = mem.memory;
      r.size = VK_WHOLE_SIZE;
      HESPER_VK_TRY(fn, vkInvalidateMappedMemoryRanges, ctx->device, 1, &r);
    }
    std::memcpy(dst, static_cast<const uint8_t *>(mem.mapped) + offset, bytes);
    return Status();
  }

  Allocation staging;
  Status s = ctx->allocate(bytes, MemoryUse::Staging, staging);
  if (!s)
    return Status::error("download: staging buffer: " + s.message());
  s = ctx->runTransfer([&](VkCommandBuffer cmd) {
    VkBufferCopy region{};
    region.srcOffset = offset;
    region.dstOffset = 0;
    region.size = bytes;
    fn.vkCmdCopyBuffer(cmd, mem.buffer, staging.buffer, 1, &region);
  });
  if (s) {
    if (!staging.coherent) {
      VkMappedMemoryRange r{};
      r.sType = VK_STRUCTURE_TYPE_MAPPED_MEMORY_RANGE;
      r.memory = staging.memory;
      r.size = VK_WHOLE_SIZE;
      fn.vkInvalidateMappedMemoryRanges(ctx->device, 1, &r);
    }
    std::memcpy(dst, staging.mapped, bytes);
  }
  ctx->release(staging);
  return s;
}

Status VulkanDevice::fill(Buffer &dst, uint32_t pattern) {
  VulkanBuffer *buffer = lookup(dst);
  if (!buffer)
    return Status::error("fill: the buffer belongs to another device");
  VkBuffer handle = buffer->memory.buffer;
  // The whole (4-byte rounded) buffer.
  return ctx->runTransfer([&](VkCommandBuffer cmd) {
    ctx->fn.vkCmdFillBuffer(cmd, handle, 0, VK_WHOLE_SIZE, pattern);
  });
}

Status VulkanDevice::copy(Buffer &src, Buffer &dst, size_t bytes) {
  VulkanBuffer *from = lookup(src);
  VulkanBuffer *to = lookup(dst);
  if (!from || !to)
    return Status::error("copy: a buffer belongs to another device");
  if (from == to)
    return Status::error("copy: source and destination are the same buffer");
  std::string range = checkRange("copy source", 0, bytes, from->bytes);
  if (range.empty())
    range = checkRange("copy destination", 0, bytes, to->bytes);
  if (!range.empty())
    return Status::error(range);
  if (bytes == 0)
    return Status();
  return ctx->runTransfer([&](VkCommandBuffer cmd) {
    VkBufferCopy region{};
    region.size = bytes;
    ctx->fn.vkCmdCopyBuffer(cmd, from->memory.buffer, to->memory.buffer, 1,
                            &region);
  });
}

Result<std::unique_ptr<Kernel>>
VulkanDevice::createKernel(const KernelDesc &d) {
  std::string where = "createKernel '" + d.name + "'";
  const DeviceInfo &info = ctx->physical.info;
  // An empty format is SPIR-V, as before formats were named.
  if (!d.format.empty() && d.format != "spirv")
    return Status::error(where + ": format '" + d.format +
                         "' is not one the Vulkan driver runs (expected "
                         "'spirv')");
  const std::vector<uint8_t> &bin = d.binary;
  if (bin.size() < 20 || bin.size() % 4 != 0)
    return Status::error(where + ": not SPIR-V (" + std::to_string(bin.size()) +
                         " bytes; a module is a whole number of 32-bit words, "
                         "at least 5)");
  std::vector<uint32_t> words(bin.size() / 4);
  std::memcpy(words.data(), bin.data(), bin.size());
  if (words[0] != kSpirvMagic) {
    char magic[11];
    std::snprintf(magic, sizeof(magic), "0x%08x", words[0]);
    return Status::error(where + ": not SPIR-V (magic number " + magic +
                         ", expected 0x07230203)");
  }
  if (d.name.empty())
    return Status::error(where + ": no entry point name");
  if (!hasComputeEntryPoint(words, d.name))
    return Status::error(where +
                         ": the module has no GLCompute entry point "
                         "called '" +
                         d.name + "'");
  if (Status valid = validateSpirv(words); !valid)
    return Status::error(where + ": " + valid.message());
  if (info.maxKernelBuffers && d.numBindings > info.maxKernelBuffers)
    return Status::error(where + ": binds " + std::to_string(d.numBindings) +
                         " buffers; the device allows " +
                         std::to_string(info.maxKernelBuffers) +
                         " per kernel (maxPerStageDescriptorStorageBuffers)");
  if (d.pushConstantBytes % 4 != 0 ||
      d.pushConstantBytes > info.maxPushConstantBytes)
    return Status::error(where + ": " + std::to_string(d.pushConstantBytes) +
                         " bytes of push constants (a multiple of 4 up to " +
                         std::to_string(info.maxPushConstantBytes) +
                         " is needed)");
  uint64_t invocations = 1;
  for (int dim = 0; dim < 3; ++dim) {
    if (d.workgroupSize[dim] == 0 ||
        d.workgroupSize[dim] > info.maxWorkgroupSize[dim])
      return Status::error(where + ": workgroupSize[" + std::to_string(dim) +
                           "] = " + std::to_string(d.workgroupSize[dim]) +
                           " is outside 1.." +
                           std::to_string(info.maxWorkgroupSize[dim]));
    invocations *= d.workgroupSize[dim];
  }
  if (invocations > info.maxWorkgroupInvocations)
    return Status::error(where + ": " + std::to_string(invocations) +
                         " invocations per workgroup exceed the limit of " +
                         std::to_string(info.maxWorkgroupInvocations));

  const DeviceFunctions &fn = ctx->fn;
  auto kernel = std::make_unique<VulkanKernel>(ctx, d);
  uint64_t messages = validationMessages.load(std::memory_order_relaxed);

  std::vector<VkDescriptorSetLayoutBinding> bindings(d.numBindings);
  for (uint32_t b = 0; b < d.numBindings; ++b) {
    bindings[b] = {};
    bindings[b].binding = b;
    bindings[b].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
    bindings[b].descriptorCount = 1;
    bindings[b].stageFlags = VK_SHADER_STAGE_COMPUTE_BIT;
  }
  VkDescriptorSetLayoutCreateInfo setInfo{};
  setInfo.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO;
  setInfo.bindingCount = d.numBindings;
  setInfo.pBindings = bindings.data();
  HESPER_VK_TRY(fn, vkCreateDescriptorSetLayout, ctx->device, &setInfo, nullptr,
                &kernel->setLayout);

  VkPushConstantRange pushRange{};
  pushRange.stageFlags = VK_SHADER_STAGE_COMPUTE_BIT;
  pushRange.offset = 0;
  pushRange.size = d.pushConstantBytes;
  VkPipelineLayoutCreateInfo layoutInfo{};
  layoutInfo.sType = VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO;
  layoutInfo.setLayoutCount = 1;
  layoutInfo.pSetLayouts = &kernel->setLayout;
  layoutInfo.pushConstantRangeCount = d.pushConstantBytes > 0 ? 1 : 0;
  layoutInfo.pPushConstantRanges = &pushRange;
  HESPER_VK_TRY(fn, vkCreatePipelineLayout, ctx->device, &layoutInfo, nullptr,
                &kernel->pipelineLayout);

  VkShaderModuleCreateInfo moduleInfo{};
  moduleInfo.sType = VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO;
  moduleInfo.codeSize = bin.size();
  moduleInfo.pCode = words.data();
  VkShaderModule module = VK_NULL_HANDLE;
  HESPER_VK_TRY(fn, vkCreateShaderModule, ctx->device, &moduleInfo, nullptr,
                &module);

  VkComputePipelineCreateInfo pipelineInfo{};
  pipelineInfo.sType = VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO;
  pipelineInfo.stage.sType =
      VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO;
  pipelineInfo.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
  pipelineInfo.stage.module = module;
  pipelineInfo.stage.pName = d.name.c_str();
  pipelineInfo.layout = kernel->pipelineLayout;
  pipelineInfo.basePipelineIndex = -1;
  VkResult result =
      fn.vkCreateComputePipelines(ctx->device, ctx->pipelineCache, 1,
                                  &pipelineInfo, nullptr, &kernel->pipeline);
  fn.vkDestroyShaderModule(ctx->device, module, nullptr);
  if (result != VK_SUCCESS) {
    kernel->pipeline = VK_NULL_HANDLE;
    return Status::error(
        where + ": " + vkFailure("vkCreateComputePipelines", result).message());
  }
  if (Status s = validationStatus(messages, where); !s)
    return s;
  kernel->serial =
      ctx->registerObject(static_cast<const Kernel *>(kernel.get()));
  return std::unique_ptr<Kernel>(std::move(kernel));
}

Result<std::unique_ptr<CommandList>>
VulkanDevice::createCommandList(bool timing) {
  auto list = std::make_unique<VulkanCommandList>(ctx, timing);
  Status s = list->init();
  if (!s)
    return Status::error("createCommandList: " + s.message());
  return std::unique_ptr<CommandList>(std::move(list));
}

} // namespace

} // namespace hesper::rt::detail::vk

//===----------------------------------------------------------------------===//
// Driver entry points
//===----------------------------------------------------------------------===//

namespace hesper::rt::detail {

using namespace vk; // VulkanInternal.h

Result<std::vector<DeviceInfo>> listVulkanDevices() {
  auto instance = createInstance(/*validation=*/false);
  if (!instance)
    return instance.status();
  auto physical = enumeratePhysicalDevices(**instance);
  if (!physical)
    return physical.status();
  std::vector<DeviceInfo> infos;
  for (const PhysicalDevice &pd : *physical)
    infos.push_back(pd.info);
  return infos;
}

Result<std::unique_ptr<Device>> openVulkanDevice(const DeviceOptions &opts) {
  bool validation = opts.validation || envFlag("HESPER_VK_VALIDATION");
  auto instance = createInstance(validation);
  if (!instance)
    return instance.status();
  auto physical = enumeratePhysicalDevices(**instance);
  if (!physical)
    return physical.status();

  std::vector<PhysicalDevice> &devices = *physical;
  size_t chosen = 0;
  if (opts.index >= 0) {
    if (static_cast<size_t>(opts.index) >= devices.size())
      return Status::error("no Vulkan device " + std::to_string(opts.index) +
                           " (" + std::to_string(devices.size()) + " found)");
    chosen = static_cast<size_t>(opts.index);
  } else {
    for (size_t i = 1; i < devices.size(); ++i)
      if (typePreference(devices[i].info.type) <
          typePreference(devices[chosen].info.type))
        chosen = i;
  }

  auto ctx = std::make_shared<Context>();
  ctx->instance = std::move(*instance);
  ctx->physical = std::move(devices[chosen]);

  std::string cacheDir = detail::effectiveCacheDir(opts);
  std::string cachePath;
  std::vector<uint8_t> cacheData;
  if (!cacheDir.empty()) {
    cachePath = pipelineCachePath(cacheDir, ctx->physical.info.cacheId);
    cacheData = readFile(cachePath);
  }

  Status s = ctx->init(cacheData);
  if (!s)
    return Status::error("opening Vulkan device '" + ctx->physical.info.name +
                         "': " + s.message());
  return std::unique_ptr<Device>(
      std::make_unique<VulkanDevice>(std::move(ctx), std::move(cachePath)));
}

uint64_t vulkanValidationMessageCount() {
  return validationMessages.load(std::memory_order_relaxed);
}

} // namespace hesper::rt::detail

#endif // HESPER_HAVE_VULKAN_HEADERS
