//===- dispatch_raw_vulkan.h - Hand-written Vulkan loop ---------*- C++ -*-===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//
//
// The hand-written side of hesper-bench-dispatch (dispatch_overhead.cpp): a
// minimal Vulkan compute setup of its own, loaded through libvulkan.so.1, and
// a step of K dispatches recorded with the commands Hesper's driver records.
// The code is in dispatch_raw_vulkan.cpp.
//
//===----------------------------------------------------------------------===//

#ifndef HESPER_BENCH_DISPATCH_RAW_VULKAN_H
#define HESPER_BENCH_DISPATCH_RAW_VULKAN_H

#include "hesper/runtime/Runtime.h"

#ifndef VK_NO_PROTOTYPES
#define VK_NO_PROTOTYPES
#endif
#include <vulkan/vulkan.h>

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

// The Vulkan functions RawVulkan loads from its instance and its device, as
// X-macro lists.
#define BENCH_VK_INSTANCE_FUNCTIONS(X)                                         \
  X(vkDestroyInstance)                                                         \
  X(vkEnumeratePhysicalDevices)                                                \
  X(vkGetPhysicalDeviceProperties)                                             \
  X(vkGetPhysicalDeviceQueueFamilyProperties)                                  \
  X(vkGetPhysicalDeviceMemoryProperties)                                       \
  X(vkCreateDevice)                                                            \
  X(vkGetDeviceProcAddr)

#define BENCH_VK_DEVICE_FUNCTIONS(X)                                           \
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
  X(vkInvalidateMappedMemoryRanges)                                            \
  X(vkFlushMappedMemoryRanges)                                                 \
  X(vkCreateShaderModule)                                                      \
  X(vkDestroyShaderModule)                                                     \
  X(vkCreateDescriptorSetLayout)                                               \
  X(vkDestroyDescriptorSetLayout)                                              \
  X(vkCreatePipelineLayout)                                                    \
  X(vkDestroyPipelineLayout)                                                   \
  X(vkCreateComputePipelines)                                                  \
  X(vkDestroyPipeline)                                                         \
  X(vkCreateDescriptorPool)                                                    \
  X(vkDestroyDescriptorPool)                                                   \
  X(vkAllocateDescriptorSets)                                                  \
  X(vkUpdateDescriptorSets)                                                    \
  X(vkCreateCommandPool)                                                       \
  X(vkDestroyCommandPool)                                                      \
  X(vkAllocateCommandBuffers)                                                  \
  X(vkResetCommandBuffer)                                                      \
  X(vkBeginCommandBuffer)                                                      \
  X(vkEndCommandBuffer)                                                        \
  X(vkCmdPipelineBarrier)                                                      \
  X(vkCmdBindPipeline)                                                         \
  X(vkCmdBindDescriptorSets)                                                   \
  X(vkCmdDispatch)

#define BENCH_VK_DECLARE(NAME) PFN_##NAME NAME = nullptr;

namespace hesper::bench {

/// Warnings and errors the validation layer reported on the raw side.
extern std::atomic<uint64_t> rawValidationMessages;

/// A minimal Vulkan compute setup for one kernel with one storage buffer:
/// instance, device, queue, a host-visible counter buffer, the pipeline and
/// one descriptor set. Command buffers are recorded by RawStep.
class RawVulkan {
public:
  RawVulkan() = default;
  RawVulkan(const RawVulkan &) = delete;
  RawVulkan &operator=(const RawVulkan &) = delete;
  ~RawVulkan();

  /// Opens the loader and sets everything up on the physical device named
  /// `deviceName` (the one Hesper opened).
  rt::Status init(const std::vector<uint8_t> &spirv,
                  const std::string &deviceName, bool validation);

  /// The counter's value (waits for the device first).
  rt::Result<uint32_t> readCounter();
  rt::Status resetCounter();

  BENCH_VK_DEVICE_FUNCTIONS(BENCH_VK_DECLARE)

  VkDevice device = VK_NULL_HANDLE;
  VkQueue queue = VK_NULL_HANDLE;
  uint32_t queueFamily = 0;
  VkPipeline pipeline = VK_NULL_HANDLE;
  VkPipelineLayout pipelineLayout = VK_NULL_HANDLE;
  VkDescriptorSet set = VK_NULL_HANDLE;

private:
  rt::Status createInstance(bool validation);
  rt::Status pickPhysicalDevice(const std::string &deviceName);
  rt::Status createDevice();
  rt::Status createCounter();
  rt::Status createPipeline(const std::vector<uint8_t> &spirv);

  PFN_vkGetInstanceProcAddr vkGetInstanceProcAddr = nullptr;
  BENCH_VK_INSTANCE_FUNCTIONS(BENCH_VK_DECLARE)
  PFN_vkDestroyDebugUtilsMessengerEXT vkDestroyDebugUtilsMessengerEXT = nullptr;

  VkInstance instance = VK_NULL_HANDLE;
  VkDebugUtilsMessengerEXT messenger = VK_NULL_HANDLE;
  VkPhysicalDevice physical = VK_NULL_HANDLE;
  VkBuffer counter = VK_NULL_HANDLE;
  VkDeviceMemory counterMemory = VK_NULL_HANDLE;
  bool counterCoherent = true;
  uint32_t *counterMapped = nullptr;
  VkShaderModule module = VK_NULL_HANDLE;
  VkDescriptorSetLayout setLayout = VK_NULL_HANDLE;
  VkDescriptorPool descriptorPool = VK_NULL_HANDLE;
};

/// One command buffer holding a step of K dispatches, and the fence its
/// submissions wait on.
class RawStep {
public:
  explicit RawStep(RawVulkan &vk) : vk(vk) {}
  RawStep(const RawStep &) = delete;
  RawStep &operator=(const RawStep &) = delete;
  ~RawStep();

  /// Records K dispatches with the commands Hesper's driver records.
  rt::Status record(uint32_t dispatches);
  /// Submits the step and waits for it, as CommandList::submit does.
  rt::Status submit();

private:
  void barrier(VkPipelineStageFlags srcStages, VkAccessFlags srcAccess,
               VkPipelineStageFlags dstStages, VkAccessFlags dstAccess);

  RawVulkan &vk;
  VkCommandPool pool = VK_NULL_HANDLE;
  VkCommandBuffer commands = VK_NULL_HANDLE;
  VkFence fence = VK_NULL_HANDLE;
};

} // namespace hesper::bench

#endif // HESPER_BENCH_DISPATCH_RAW_VULKAN_H
