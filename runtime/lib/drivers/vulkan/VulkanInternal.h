//===- VulkanInternal.h - Shared parts of the Vulkan driver -----*- C++ -*-===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//
//
// Internal to the runtime: what the files of the Vulkan driver share (the
// entry-point tables, the instance, the physical device, the Context that
// owns the logical device, and the buffer, kernel and command-list
// objects). Include it only when HESPER_HAVE_VULKAN_HEADERS is defined.
//
//===----------------------------------------------------------------------===//

#ifndef HESPER_RUNTIME_LIB_DRIVERS_VULKAN_VULKANINTERNAL_H
#define HESPER_RUNTIME_LIB_DRIVERS_VULKAN_VULKANINTERNAL_H

#include "hal/Drivers.h"

#ifndef VK_NO_PROTOTYPES
#define VK_NO_PROTOTYPES
#endif
#include <vulkan/vulkan.h>

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <unordered_map>

namespace hesper::rt::detail::vk {

//===----------------------------------------------------------------------===//
// Small helpers
//===----------------------------------------------------------------------===//

/// "vkCreateComputePipelines failed: VK_ERROR_INITIALIZATION_FAILED (-3)".
Status vkFailure(const char *call, VkResult result);

/// Calls `FNS.NAME(...)` and returns a Status naming NAME when it fails.
#define HESPER_VK_TRY(FNS, NAME, ...)                                          \
  do {                                                                         \
    VkResult hesperVkResult = (FNS).NAME(__VA_ARGS__);                         \
    if (hesperVkResult != VK_SUCCESS)                                          \
      return vkFailure(#NAME, hesperVkResult);                                 \
  } while (false)

/// Whether the environment variable is set to something other than "" or 0.
bool envFlag(const char *name);

//===----------------------------------------------------------------------===//
// Entry points
//===----------------------------------------------------------------------===//

/// Functions looked up through the instance.
#define HESPER_VK_INSTANCE_FUNCTIONS(X)                                        \
  X(vkDestroyInstance)                                                         \
  X(vkEnumeratePhysicalDevices)                                                \
  X(vkGetPhysicalDeviceProperties)                                             \
  X(vkGetPhysicalDeviceProperties2)                                            \
  X(vkGetPhysicalDeviceFeatures2)                                              \
  X(vkGetPhysicalDeviceQueueFamilyProperties)                                  \
  X(vkGetPhysicalDeviceMemoryProperties)                                       \
  X(vkEnumerateDeviceExtensionProperties)                                      \
  X(vkCreateDevice)                                                            \
  X(vkGetDeviceProcAddr)

/// Functions looked up through the device (vkDestroyDevice first, so that a
/// device whose other functions are missing can still be destroyed).
#define HESPER_VK_DEVICE_FUNCTIONS(X)                                          \
  X(vkDestroyDevice)                                                           \
  X(vkDeviceWaitIdle)                                                          \
  X(vkGetDeviceQueue)                                                          \
  X(vkQueueSubmit)                                                             \
  X(vkCreateFence)                                                             \
  X(vkDestroyFence)                                                            \
  X(vkWaitForFences)                                                           \
  X(vkResetFences)                                                             \
  X(vkCreateBuffer)                                                            \
  X(vkDestroyBuffer)                                                           \
  X(vkGetBufferMemoryRequirements)                                             \
  X(vkAllocateMemory)                                                          \
  X(vkFreeMemory)                                                              \
  X(vkBindBufferMemory)                                                        \
  X(vkMapMemory)                                                               \
  X(vkUnmapMemory)                                                             \
  X(vkFlushMappedMemoryRanges)                                                 \
  X(vkInvalidateMappedMemoryRanges)                                            \
  X(vkCreateShaderModule)                                                      \
  X(vkDestroyShaderModule)                                                     \
  X(vkCreateDescriptorSetLayout)                                               \
  X(vkDestroyDescriptorSetLayout)                                              \
  X(vkCreatePipelineLayout)                                                    \
  X(vkDestroyPipelineLayout)                                                   \
  X(vkCreatePipelineCache)                                                     \
  X(vkDestroyPipelineCache)                                                    \
  X(vkGetPipelineCacheData)                                                    \
  X(vkCreateComputePipelines)                                                  \
  X(vkDestroyPipeline)                                                         \
  X(vkCreateDescriptorPool)                                                    \
  X(vkDestroyDescriptorPool)                                                   \
  X(vkAllocateDescriptorSets)                                                  \
  X(vkUpdateDescriptorSets)                                                    \
  X(vkCreateQueryPool)                                                         \
  X(vkDestroyQueryPool)                                                        \
  X(vkGetQueryPoolResults)                                                     \
  X(vkCreateCommandPool)                                                       \
  X(vkDestroyCommandPool)                                                      \
  X(vkAllocateCommandBuffers)                                                  \
  X(vkResetCommandBuffer)                                                      \
  X(vkBeginCommandBuffer)                                                      \
  X(vkEndCommandBuffer)                                                        \
  X(vkCmdPipelineBarrier)                                                      \
  X(vkCmdFillBuffer)                                                           \
  X(vkCmdCopyBuffer)                                                           \
  X(vkCmdBindPipeline)                                                         \
  X(vkCmdBindDescriptorSets)                                                   \
  X(vkCmdPushConstants)                                                        \
  X(vkCmdDispatch)                                                             \
  X(vkCmdResetQueryPool)                                                       \
  X(vkCmdWriteTimestamp)

#define HESPER_VK_DECLARE(NAME) PFN_##NAME NAME = nullptr;

/// The instance-level entry points.
struct InstanceFunctions {
  HESPER_VK_INSTANCE_FUNCTIONS(HESPER_VK_DECLARE)
  PFN_vkCreateDebugUtilsMessengerEXT vkCreateDebugUtilsMessengerEXT = nullptr;
  PFN_vkDestroyDebugUtilsMessengerEXT vkDestroyDebugUtilsMessengerEXT = nullptr;
};

/// The device-level entry points.
struct DeviceFunctions {
  HESPER_VK_DEVICE_FUNCTIONS(HESPER_VK_DECLARE)
};

#undef HESPER_VK_DECLARE

//===----------------------------------------------------------------------===//
// Instance and validation
//===----------------------------------------------------------------------===//

/// Warnings and errors reported by the validation layer, process-wide.
extern std::atomic<uint64_t> validationMessages;

/// An error naming `where` and the latest validation message when the layer
/// reported any since the count was `before`: a message stops the call that
/// caused it (the layer reports from inside the driver call).
Status validationStatus(uint64_t before, const std::string &where);

/// A VkInstance with its entry points and, under validation, the debug
/// messenger. Destroyed after everything created from it.
struct Instance {
  Instance() = default;
  Instance(const Instance &) = delete;
  Instance &operator=(const Instance &) = delete;
  ~Instance() {
    if (messenger != VK_NULL_HANDLE && fn.vkDestroyDebugUtilsMessengerEXT)
      fn.vkDestroyDebugUtilsMessengerEXT(handle, messenger, nullptr);
    if (handle != VK_NULL_HANDLE && fn.vkDestroyInstance)
      fn.vkDestroyInstance(handle, nullptr);
  }

  VkInstance handle = VK_NULL_HANDLE;
  /// The API version the instance was created with.
  uint32_t apiVersion = 0;
  InstanceFunctions fn;
  VkDebugUtilsMessengerEXT messenger = VK_NULL_HANDLE;
};

/// Creates an instance of Vulkan 1.1 or later (the newest the loader offers,
/// up to 1.3), with the validation layer and its messenger when asked.
Result<std::unique_ptr<Instance>> createInstance(bool validation);

//===----------------------------------------------------------------------===//
// Physical devices
//===----------------------------------------------------------------------===//

/// One physical device: its DeviceInfo and what opening it needs.
struct PhysicalDevice {
  VkPhysicalDevice handle = VK_NULL_HANDLE;
  DeviceInfo info;
  VkPhysicalDeviceProperties props{};
  VkPhysicalDeviceMemoryProperties memory{};
  /// The compute queue family and its timestamp width.
  uint32_t queueFamily = 0;
  uint32_t timestampValidBits = 0;
  /// Whether the feature structures may be chained (Vulkan 1.2, or their
  /// extension, which is then enabled along with the feature).
  bool canChainFloat16 = false;
  bool canChain8Bit = false;
  bool float16Extension = false;
  bool storage8BitExtension = false;
};

/// Lower is better: discrete, integrated, virtual, CPU, anything else.
int typePreference(DeviceType type);

/// The usable physical devices of `instance`, in enumeration order.
Result<std::vector<PhysicalDevice>>
enumeratePhysicalDevices(const Instance &instance);

//===----------------------------------------------------------------------===//
// Context: the logical device shared by a device's objects
//===----------------------------------------------------------------------===//

/// A buffer with its own memory, mapped for its whole life when mapped is
/// non-null.
struct Allocation {
  VkBuffer buffer = VK_NULL_HANDLE;
  VkDeviceMemory memory = VK_NULL_HANDLE;
  VkDeviceSize size = 0;
  void *mapped = nullptr;
  bool coherent = true;
};

/// What memory a buffer is for.
enum class MemoryUse { Storage, Staging };

/// The logical device and what its buffers, kernels and command lists
/// share. Each of them holds it, so it outlives all of them.
struct Context {
  Context() = default;
  Context(const Context &) = delete;
  Context &operator=(const Context &) = delete;
  ~Context();

  /// Creates the device, its queue, the transfer command buffer and the
  /// pipeline cache (seeded with `cacheData` when it fits this device).
  Status init(const std::vector<uint8_t> &cacheData);

  /// Creates a buffer of `bytes` (rounded up to 4) with its own memory.
  Status allocate(size_t bytes, MemoryUse use, Allocation &out);
  /// Destroys what allocate() created.
  void release(Allocation &a);

  /// Records `body` into the transfer command buffer between barriers that
  /// order it after earlier work and before later work or host reads,
  /// submits it and waits.
  Status runTransfer(const std::function<void(VkCommandBuffer)> &body);
  /// Submits `commands` with `fence` and waits; queueMutex must be held.
  Status submitAndWait(VkCommandBuffer commands, VkFence fence);

  /// Records a global memory barrier.
  void barrier(VkCommandBuffer commands, VkPipelineStageFlags srcStages,
               VkAccessFlags srcAccess, VkPipelineStageFlags dstStages,
               VkAccessFlags dstAccess) const;

  /// The pipeline cache's contents (empty on failure).
  std::vector<uint8_t> pipelineCacheData() const;

  /// Registry of live buffers and kernels, so that a recorded command list
  /// can refuse objects of other devices or objects destroyed since.
  uint64_t registerObject(const void *object);
  void unregisterObject(const void *object);
  bool isLive(const void *object, uint64_t serial) const;

  std::unique_ptr<Instance> instance;
  PhysicalDevice physical;
  VkDevice device = VK_NULL_HANDLE;
  DeviceFunctions fn;
  VkQueue queue = VK_NULL_HANDLE;
  VkPipelineCache pipelineCache = VK_NULL_HANDLE;
  VkCommandPool transferPool = VK_NULL_HANDLE;
  VkCommandBuffer transferCommands = VK_NULL_HANDLE;
  VkFence transferFence = VK_NULL_HANDLE;
  /// Storage buffers go to a device-local heap of their own (then uploads
  /// and downloads use staging buffers) rather than to host-visible memory.
  bool separateDeviceHeap = false;
  /// HESPER_VK_FORCE_STAGING: never map storage buffers.
  bool forceStaging = false;
  /// Guards the queue and the transfer command buffer.
  std::mutex queueMutex;

private:
  /// A memory type allowed by `typeBits` with all of `want` and none of
  /// `avoid`, or -1.
  int findMemoryType(uint32_t typeBits, VkMemoryPropertyFlags want,
                     VkMemoryPropertyFlags avoid = 0) const;

  mutable std::mutex registryMutex;
  std::unordered_map<const void *, uint64_t> live;
  uint64_t nextSerial = 1;
};

/// Stages and accesses of every command the runtime records.
constexpr VkPipelineStageFlags kDeviceStages =
    VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT;
constexpr VkAccessFlags kDeviceWrites =
    VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
constexpr VkAccessFlags kDeviceAccesses =
    VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT |
    VK_ACCESS_TRANSFER_READ_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;

//===----------------------------------------------------------------------===//
// Buffers and kernels
//===----------------------------------------------------------------------===//

/// A storage buffer of one device.
class VulkanBuffer final : public Buffer {
public:
  VulkanBuffer(std::shared_ptr<Context> ctx, size_t bytes)
      : ctx(std::move(ctx)), bytes(bytes) {}
  ~VulkanBuffer() override {
    ctx->unregisterObject(static_cast<const Buffer *>(this));
    ctx->release(memory);
  }
  size_t size() const override { return bytes; }

  std::shared_ptr<Context> ctx;
  size_t bytes;
  Allocation memory;
  /// Identity in the context's registry.
  uint64_t serial = 0;
};

/// A compute pipeline and its layouts.
class VulkanKernel final : public Kernel {
public:
  VulkanKernel(std::shared_ptr<Context> ctx, KernelDesc desc)
      : ctx(std::move(ctx)), kernelDesc(std::move(desc)) {}
  ~VulkanKernel() override {
    ctx->unregisterObject(static_cast<const Kernel *>(this));
    const DeviceFunctions &fn = ctx->fn;
    if (pipeline != VK_NULL_HANDLE)
      fn.vkDestroyPipeline(ctx->device, pipeline, nullptr);
    if (pipelineLayout != VK_NULL_HANDLE)
      fn.vkDestroyPipelineLayout(ctx->device, pipelineLayout, nullptr);
    if (setLayout != VK_NULL_HANDLE)
      fn.vkDestroyDescriptorSetLayout(ctx->device, setLayout, nullptr);
  }
  const KernelDesc &desc() const override { return kernelDesc; }

  std::shared_ptr<Context> ctx;
  KernelDesc kernelDesc;
  VkDescriptorSetLayout setLayout = VK_NULL_HANDLE;
  VkPipelineLayout pipelineLayout = VK_NULL_HANDLE;
  VkPipeline pipeline = VK_NULL_HANDLE;
  uint64_t serial = 0;
};

//===----------------------------------------------------------------------===//
// Command lists
//===----------------------------------------------------------------------===//

/// Launches recorded once into a primary command buffer and replayed.
class VulkanCommandList final : public CommandList {
public:
  VulkanCommandList(std::shared_ptr<Context> ctx, bool timing)
      : ctx(std::move(ctx)), timing(timing) {}
  ~VulkanCommandList() override;

  /// Creates the command pool, command buffer and fence.
  Status init();

  Status record(const std::vector<Dispatch> &dispatches) override;
  Status setPushConstants(size_t dispatchIndex,
                          const std::vector<uint8_t> &bytes) override;
  Status submit() override;
  uint64_t submissions() const override { return submitted; }
  std::vector<double> lastKernelTimesNs() const override { return times; }

private:
  /// One recorded dispatch, with the objects it uses and their registry
  /// serials (checked before every submission).
  struct Launch {
    VulkanKernel *kernel = nullptr;
    uint64_t kernelSerial = 0;
    std::vector<std::pair<VulkanBuffer *, uint64_t>> buffers;
    std::vector<uint8_t> pushConstants;
    uint32_t grid[3] = {1, 1, 1};
    VkDescriptorSet set = VK_NULL_HANDLE;
  };

  /// Checks `d` and resolves it into a Launch.
  Status resolve(size_t index, const Dispatch &d, Launch &launch) const;
  /// Records the command buffer from `launches`.
  Status recordCommands();
  /// Destroys the descriptor pool and the query pool of the last recording.
  void releaseRecording();

  std::shared_ptr<Context> ctx;
  bool timing;
  VkCommandPool pool = VK_NULL_HANDLE;
  VkCommandBuffer commands = VK_NULL_HANDLE;
  VkFence fence = VK_NULL_HANDLE;
  VkDescriptorPool descriptorPool = VK_NULL_HANDLE;
  VkQueryPool queryPool = VK_NULL_HANDLE;
  std::vector<Launch> launches;
  bool recorded = false;
  uint64_t submitted = 0;
  std::vector<double> times;
};

} // namespace hesper::rt::detail::vk

#endif // HESPER_RUNTIME_LIB_DRIVERS_VULKAN_VULKANINTERNAL_H
