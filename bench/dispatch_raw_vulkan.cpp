//===- dispatch_raw_vulkan.cpp - Hand-written Vulkan loop -----------------===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//
//
// The hand-written Vulkan side of hesper-bench-dispatch: RawVulkan's
// instance, device, counter buffer and pipeline, and RawStep's command
// buffer, recorded with the barriers, binds and dispatches Hesper's driver
// records, submitted with a fence as CommandList::submit does.
//
//===----------------------------------------------------------------------===//

#include "dispatch_raw_vulkan.h"

#include <dlfcn.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

using namespace hesper::rt;
using namespace hesper::bench;

namespace {

/// "vkQueueSubmit failed: VkResult -4".
Status vkFailure(const char *call, VkResult result) {
  return Status::error(std::string(call) + " failed: VkResult " +
                       std::to_string(static_cast<int>(result)));
}

#define BENCH_VK_TRY(CALL, NAME, ...)                                          \
  do {                                                                         \
    VkResult benchResult = (CALL)(__VA_ARGS__);                                \
    if (benchResult != VK_SUCCESS)                                             \
      return vkFailure(NAME, benchResult);                                     \
  } while (false)

VKAPI_ATTR VkBool32 VKAPI_CALL onRawValidationMessage(
    VkDebugUtilsMessageSeverityFlagBitsEXT severity,
    VkDebugUtilsMessageTypeFlagsEXT,
    const VkDebugUtilsMessengerCallbackDataEXT *data, void *) {
  if (severity & (VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT |
                  VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT)) {
    rawValidationMessages.fetch_add(1, std::memory_order_relaxed);
    std::fprintf(stderr, "raw vulkan validation: %s\n",
                 data && data->pMessage ? data->pMessage : "(no message)");
  }
  return VK_FALSE;
}

} // namespace

std::atomic<uint64_t> hesper::bench::rawValidationMessages{0};

RawVulkan::~RawVulkan() {
  if (device != VK_NULL_HANDLE) {
    vkDeviceWaitIdle(device);
    if (descriptorPool != VK_NULL_HANDLE)
      vkDestroyDescriptorPool(device, descriptorPool, nullptr);
    if (pipeline != VK_NULL_HANDLE)
      vkDestroyPipeline(device, pipeline, nullptr);
    if (pipelineLayout != VK_NULL_HANDLE)
      vkDestroyPipelineLayout(device, pipelineLayout, nullptr);
    if (setLayout != VK_NULL_HANDLE)
      vkDestroyDescriptorSetLayout(device, setLayout, nullptr);
    if (module != VK_NULL_HANDLE)
      vkDestroyShaderModule(device, module, nullptr);
    if (counterMapped)
      vkUnmapMemory(device, counterMemory);
    if (counter != VK_NULL_HANDLE)
      vkDestroyBuffer(device, counter, nullptr);
    if (counterMemory != VK_NULL_HANDLE)
      vkFreeMemory(device, counterMemory, nullptr);
    vkDestroyDevice(device, nullptr);
  }
  if (messenger != VK_NULL_HANDLE && vkDestroyDebugUtilsMessengerEXT)
    vkDestroyDebugUtilsMessengerEXT(instance, messenger, nullptr);
  if (instance != VK_NULL_HANDLE)
    vkDestroyInstance(instance, nullptr);
  // The loader stays open: the driver may still be referenced at exit.
}

Status RawVulkan::init(const std::vector<uint8_t> &spirv,
                       const std::string &deviceName, bool validation) {
  if (Status s = createInstance(validation); !s)
    return s;
  if (Status s = pickPhysicalDevice(deviceName); !s)
    return s;
  if (Status s = createDevice(); !s)
    return s;
  if (Status s = createCounter(); !s)
    return s;
  return createPipeline(spirv);
}

Status RawVulkan::createInstance(bool validation) {
  void *library = dlopen("libvulkan.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!library)
    return Status::error("raw: cannot load libvulkan.so.1");
  vkGetInstanceProcAddr = reinterpret_cast<PFN_vkGetInstanceProcAddr>(
      dlsym(library, "vkGetInstanceProcAddr"));
  if (!vkGetInstanceProcAddr)
    return Status::error("raw: libvulkan.so.1 has no vkGetInstanceProcAddr");
  auto createInstanceFn = reinterpret_cast<PFN_vkCreateInstance>(
      vkGetInstanceProcAddr(VK_NULL_HANDLE, "vkCreateInstance"));
  if (!createInstanceFn)
    return Status::error("raw: the loader has no vkCreateInstance");

  VkApplicationInfo app{};
  app.sType = VK_STRUCTURE_TYPE_APPLICATION_INFO;
  app.pApplicationName = "hesper-bench-dispatch";
  app.apiVersion = VK_API_VERSION_1_1;
  VkInstanceCreateInfo info{};
  info.sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO;
  info.pApplicationInfo = &app;
  const char *layer = "VK_LAYER_KHRONOS_validation";
  const char *extension = VK_EXT_DEBUG_UTILS_EXTENSION_NAME;
  VkDebugUtilsMessengerCreateInfoEXT messengerInfo{};
  messengerInfo.sType = VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT;
  messengerInfo.messageSeverity =
      VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT |
      VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT;
  messengerInfo.messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT |
                              VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT |
                              VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT;
  messengerInfo.pfnUserCallback = onRawValidationMessage;
  if (validation) {
    info.enabledLayerCount = 1;
    info.ppEnabledLayerNames = &layer;
    info.enabledExtensionCount = 1;
    info.ppEnabledExtensionNames = &extension;
    info.pNext = &messengerInfo;
  }
  BENCH_VK_TRY(createInstanceFn, "vkCreateInstance", &info, nullptr, &instance);

#define BENCH_VK_LOAD_INSTANCE(NAME)                                           \
  NAME = reinterpret_cast<PFN_##NAME>(vkGetInstanceProcAddr(instance, #NAME)); \
  if (!NAME)                                                                   \
    return Status::error("raw: the instance has no " #NAME);
  BENCH_VK_INSTANCE_FUNCTIONS(BENCH_VK_LOAD_INSTANCE)
#undef BENCH_VK_LOAD_INSTANCE

  if (validation) {
    auto createMessenger = reinterpret_cast<PFN_vkCreateDebugUtilsMessengerEXT>(
        vkGetInstanceProcAddr(instance, "vkCreateDebugUtilsMessengerEXT"));
    vkDestroyDebugUtilsMessengerEXT =
        reinterpret_cast<PFN_vkDestroyDebugUtilsMessengerEXT>(
            vkGetInstanceProcAddr(instance, "vkDestroyDebugUtilsMessengerEXT"));
    if (!createMessenger || !vkDestroyDebugUtilsMessengerEXT)
      return Status::error("raw: VK_EXT_debug_utils is missing");
    BENCH_VK_TRY(createMessenger, "vkCreateDebugUtilsMessengerEXT", instance,
                 &messengerInfo, nullptr, &messenger);
  }
  return Status();
}

Status RawVulkan::pickPhysicalDevice(const std::string &deviceName) {
  uint32_t count = 0;
  BENCH_VK_TRY(vkEnumeratePhysicalDevices, "vkEnumeratePhysicalDevices",
               instance, &count, nullptr);
  std::vector<VkPhysicalDevice> devices(count);
  BENCH_VK_TRY(vkEnumeratePhysicalDevices, "vkEnumeratePhysicalDevices",
               instance, &count, devices.data());
  for (VkPhysicalDevice candidate : devices) {
    VkPhysicalDeviceProperties props{};
    vkGetPhysicalDeviceProperties(candidate, &props);
    if (deviceName != props.deviceName)
      continue;
    uint32_t families = 0;
    vkGetPhysicalDeviceQueueFamilyProperties(candidate, &families, nullptr);
    std::vector<VkQueueFamilyProperties> familyProps(families);
    vkGetPhysicalDeviceQueueFamilyProperties(candidate, &families,
                                             familyProps.data());
    for (uint32_t f = 0; f < families; ++f) {
      if (familyProps[f].queueFlags & VK_QUEUE_COMPUTE_BIT) {
        physical = candidate;
        queueFamily = f;
        return Status();
      }
    }
  }
  return Status::error("raw: no Vulkan device named '" + deviceName +
                       "' with a compute queue");
}

Status RawVulkan::createDevice() {
  float priority = 1.0f;
  VkDeviceQueueCreateInfo queueInfo{};
  queueInfo.sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO;
  queueInfo.queueFamilyIndex = queueFamily;
  queueInfo.queueCount = 1;
  queueInfo.pQueuePriorities = &priority;
  VkDeviceCreateInfo info{};
  info.sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO;
  info.queueCreateInfoCount = 1;
  info.pQueueCreateInfos = &queueInfo;
  BENCH_VK_TRY(vkCreateDevice, "vkCreateDevice", physical, &info, nullptr,
               &device);

#define BENCH_VK_LOAD_DEVICE(NAME)                                             \
  NAME = reinterpret_cast<PFN_##NAME>(vkGetDeviceProcAddr(device, #NAME));     \
  if (!NAME)                                                                   \
    return Status::error("raw: the device has no " #NAME);
  BENCH_VK_DEVICE_FUNCTIONS(BENCH_VK_LOAD_DEVICE)
#undef BENCH_VK_LOAD_DEVICE

  vkGetDeviceQueue(device, queueFamily, 0, &queue);
  return Status();
}

Status RawVulkan::createCounter() {
  VkBufferCreateInfo info{};
  info.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO;
  info.size = 4;
  info.usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT;
  info.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
  BENCH_VK_TRY(vkCreateBuffer, "vkCreateBuffer", device, &info, nullptr,
               &counter);
  VkMemoryRequirements req{};
  vkGetBufferMemoryRequirements(device, counter, &req);
  VkPhysicalDeviceMemoryProperties mem{};
  vkGetPhysicalDeviceMemoryProperties(physical, &mem);

  // Host-visible memory, coherent if there is any, so the counter can be read
  // by mapping it. (It is four bytes; where it lives does not matter here.)
  int chosen = -1;
  for (int pass = 0; pass < 2 && chosen < 0; ++pass) {
    VkMemoryPropertyFlags want =
        VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT |
        (pass == 0 ? VK_MEMORY_PROPERTY_HOST_COHERENT_BIT : 0);
    for (uint32_t t = 0; t < mem.memoryTypeCount; ++t) {
      if ((req.memoryTypeBits & (1u << t)) &&
          (mem.memoryTypes[t].propertyFlags & want) == want) {
        chosen = static_cast<int>(t);
        counterCoherent = pass == 0;
        break;
      }
    }
  }
  if (chosen < 0)
    return Status::error("raw: no host-visible memory type for the counter");
  VkMemoryAllocateInfo alloc{};
  alloc.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO;
  alloc.allocationSize = req.size;
  alloc.memoryTypeIndex = static_cast<uint32_t>(chosen);
  BENCH_VK_TRY(vkAllocateMemory, "vkAllocateMemory", device, &alloc, nullptr,
               &counterMemory);
  BENCH_VK_TRY(vkBindBufferMemory, "vkBindBufferMemory", device, counter,
               counterMemory, 0);
  void *mapped = nullptr;
  BENCH_VK_TRY(vkMapMemory, "vkMapMemory", device, counterMemory, 0,
               VK_WHOLE_SIZE, 0, &mapped);
  counterMapped = static_cast<uint32_t *>(mapped);
  return resetCounter();
}

Status RawVulkan::resetCounter() {
  BENCH_VK_TRY(vkDeviceWaitIdle, "vkDeviceWaitIdle", device);
  *counterMapped = 0;
  if (!counterCoherent) {
    VkMappedMemoryRange range{};
    range.sType = VK_STRUCTURE_TYPE_MAPPED_MEMORY_RANGE;
    range.memory = counterMemory;
    range.size = VK_WHOLE_SIZE;
    BENCH_VK_TRY(vkFlushMappedMemoryRanges, "vkFlushMappedMemoryRanges", device,
                 1, &range);
  }
  return Status();
}

Result<uint32_t> RawVulkan::readCounter() {
  BENCH_VK_TRY(vkDeviceWaitIdle, "vkDeviceWaitIdle", device);
  if (!counterCoherent) {
    VkMappedMemoryRange range{};
    range.sType = VK_STRUCTURE_TYPE_MAPPED_MEMORY_RANGE;
    range.memory = counterMemory;
    range.size = VK_WHOLE_SIZE;
    BENCH_VK_TRY(vkInvalidateMappedMemoryRanges,
                 "vkInvalidateMappedMemoryRanges", device, 1, &range);
  }
  return *counterMapped;
}

Status RawVulkan::createPipeline(const std::vector<uint8_t> &spirv) {
  std::vector<uint32_t> words(spirv.size() / 4);
  std::memcpy(words.data(), spirv.data(), spirv.size());
  VkShaderModuleCreateInfo moduleInfo{};
  moduleInfo.sType = VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO;
  moduleInfo.codeSize = spirv.size();
  moduleInfo.pCode = words.data();
  BENCH_VK_TRY(vkCreateShaderModule, "vkCreateShaderModule", device,
               &moduleInfo, nullptr, &module);

  VkDescriptorSetLayoutBinding binding{};
  binding.binding = 0;
  binding.descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
  binding.descriptorCount = 1;
  binding.stageFlags = VK_SHADER_STAGE_COMPUTE_BIT;
  VkDescriptorSetLayoutCreateInfo setInfo{};
  setInfo.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO;
  setInfo.bindingCount = 1;
  setInfo.pBindings = &binding;
  BENCH_VK_TRY(vkCreateDescriptorSetLayout, "vkCreateDescriptorSetLayout",
               device, &setInfo, nullptr, &setLayout);

  VkPipelineLayoutCreateInfo layoutInfo{};
  layoutInfo.sType = VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO;
  layoutInfo.setLayoutCount = 1;
  layoutInfo.pSetLayouts = &setLayout;
  BENCH_VK_TRY(vkCreatePipelineLayout, "vkCreatePipelineLayout", device,
               &layoutInfo, nullptr, &pipelineLayout);

  VkComputePipelineCreateInfo pipelineInfo{};
  pipelineInfo.sType = VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO;
  pipelineInfo.stage.sType =
      VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO;
  pipelineInfo.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
  pipelineInfo.stage.module = module;
  pipelineInfo.stage.pName = "main";
  pipelineInfo.layout = pipelineLayout;
  BENCH_VK_TRY(vkCreateComputePipelines, "vkCreateComputePipelines", device,
               VK_NULL_HANDLE, 1, &pipelineInfo, nullptr, &pipeline);

  VkDescriptorPoolSize poolSize{};
  poolSize.type = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
  poolSize.descriptorCount = 1;
  VkDescriptorPoolCreateInfo poolInfo{};
  poolInfo.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO;
  poolInfo.maxSets = 1;
  poolInfo.poolSizeCount = 1;
  poolInfo.pPoolSizes = &poolSize;
  BENCH_VK_TRY(vkCreateDescriptorPool, "vkCreateDescriptorPool", device,
               &poolInfo, nullptr, &descriptorPool);
  VkDescriptorSetAllocateInfo allocInfo{};
  allocInfo.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO;
  allocInfo.descriptorPool = descriptorPool;
  allocInfo.descriptorSetCount = 1;
  allocInfo.pSetLayouts = &setLayout;
  BENCH_VK_TRY(vkAllocateDescriptorSets, "vkAllocateDescriptorSets", device,
               &allocInfo, &set);
  VkDescriptorBufferInfo bufferInfo{};
  bufferInfo.buffer = counter;
  bufferInfo.range = VK_WHOLE_SIZE;
  VkWriteDescriptorSet write{};
  write.sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET;
  write.dstSet = set;
  write.dstBinding = 0;
  write.descriptorCount = 1;
  write.descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
  write.pBufferInfo = &bufferInfo;
  vkUpdateDescriptorSets(device, 1, &write, 0, nullptr);
  return Status();
}

RawStep::~RawStep() {
  if (fence != VK_NULL_HANDLE)
    vk.vkDestroyFence(vk.device, fence, nullptr);
  if (pool != VK_NULL_HANDLE)
    vk.vkDestroyCommandPool(vk.device, pool, nullptr);
}

void RawStep::barrier(VkPipelineStageFlags srcStages, VkAccessFlags srcAccess,
                      VkPipelineStageFlags dstStages, VkAccessFlags dstAccess) {
  VkMemoryBarrier b{};
  b.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER;
  b.srcAccessMask = srcAccess;
  b.dstAccessMask = dstAccess;
  vk.vkCmdPipelineBarrier(commands, srcStages, dstStages, 0, 1, &b, 0, nullptr,
                          0, nullptr);
}

Status RawStep::record(uint32_t dispatches) {
  VkCommandPoolCreateInfo poolInfo{};
  poolInfo.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO;
  poolInfo.queueFamilyIndex = vk.queueFamily;
  BENCH_VK_TRY(vk.vkCreateCommandPool, "vkCreateCommandPool", vk.device,
               &poolInfo, nullptr, &pool);
  VkCommandBufferAllocateInfo allocInfo{};
  allocInfo.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO;
  allocInfo.commandPool = pool;
  allocInfo.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
  allocInfo.commandBufferCount = 1;
  BENCH_VK_TRY(vk.vkAllocateCommandBuffers, "vkAllocateCommandBuffers",
               vk.device, &allocInfo, &commands);
  VkFenceCreateInfo fenceInfo{};
  fenceInfo.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO;
  BENCH_VK_TRY(vk.vkCreateFence, "vkCreateFence", vk.device, &fenceInfo,
               nullptr, &fence);

  VkCommandBufferBeginInfo begin{};
  begin.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO;
  BENCH_VK_TRY(vk.vkBeginCommandBuffer, "vkBeginCommandBuffer", commands,
               &begin);
  // Earlier work (transfers, the previous submission) comes first.
  barrier(VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT,
          VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT,
          VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
          VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT);
  for (uint32_t i = 0; i < dispatches; ++i) {
    if (i > 0)
      barrier(VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_ACCESS_SHADER_WRITE_BIT,
              VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
              VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT);
    vk.vkCmdBindPipeline(commands, VK_PIPELINE_BIND_POINT_COMPUTE, vk.pipeline);
    vk.vkCmdBindDescriptorSets(commands, VK_PIPELINE_BIND_POINT_COMPUTE,
                               vk.pipelineLayout, 0, 1, &vk.set, 0, nullptr);
    vk.vkCmdDispatch(commands, 1, 1, 1);
  }
  // The results are visible to later work and to the host.
  barrier(VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_ACCESS_SHADER_WRITE_BIT,
          VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT |
              VK_PIPELINE_STAGE_TRANSFER_BIT | VK_PIPELINE_STAGE_HOST_BIT,
          VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT |
              VK_ACCESS_TRANSFER_READ_BIT | VK_ACCESS_TRANSFER_WRITE_BIT |
              VK_ACCESS_HOST_READ_BIT);
  BENCH_VK_TRY(vk.vkEndCommandBuffer, "vkEndCommandBuffer", commands);
  return Status();
}

Status RawStep::submit() {
  VkSubmitInfo info{};
  info.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO;
  info.commandBufferCount = 1;
  info.pCommandBuffers = &commands;
  BENCH_VK_TRY(vk.vkQueueSubmit, "vkQueueSubmit", vk.queue, 1, &info, fence);
  BENCH_VK_TRY(vk.vkWaitForFences, "vkWaitForFences", vk.device, 1, &fence,
               VK_TRUE, UINT64_MAX);
  BENCH_VK_TRY(vk.vkResetFences, "vkResetFences", vk.device, 1, &fence);
  return Status();
}
