//===- VulkanContext.cpp - The logical device of a Vulkan device ----------===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//
//
// The Context shared by a Vulkan device and the buffers, kernels and
// command lists it creates: the logical device and its queue, memory
// allocation, one-off transfers, the pipeline cache and the registry of
// live objects.
//
//===----------------------------------------------------------------------===//

#ifdef HESPER_HAVE_VULKAN_HEADERS

#include "VulkanInternal.h"

#include <cstring>

namespace hesper::rt::detail::vk {

//===----------------------------------------------------------------------===//
// Context: the logical device shared by a device's objects
//===----------------------------------------------------------------------===//

/// Rounds a byte count up to whole 32-bit words.
static VkDeviceSize roundUpTo4(size_t bytes) {
  return (static_cast<VkDeviceSize>(bytes) + 3) & ~VkDeviceSize(3);
}

Context::~Context() {
  if (device != VK_NULL_HANDLE && fn.vkDestroyDevice) {
    if (fn.vkDeviceWaitIdle)
      fn.vkDeviceWaitIdle(device);
    if (transferFence != VK_NULL_HANDLE)
      fn.vkDestroyFence(device, transferFence, nullptr);
    if (transferPool != VK_NULL_HANDLE)
      fn.vkDestroyCommandPool(device, transferPool, nullptr);
    if (pipelineCache != VK_NULL_HANDLE)
      fn.vkDestroyPipelineCache(device, pipelineCache, nullptr);
    fn.vkDestroyDevice(device, nullptr);
  }
  instance.reset();
}

/// Whether `data` is a pipeline cache written by this very device and
/// driver (the driver would ignore others, but need not do so gracefully).
static bool pipelineCacheFits(const std::vector<uint8_t> &data,
                              const VkPhysicalDeviceProperties &props) {
  // VkPipelineCacheHeaderVersionOne: size, version, vendor, device, UUID.
  constexpr size_t headerBytes = 16 + VK_UUID_SIZE;
  if (data.size() < headerBytes)
    return false;
  uint32_t words[4];
  std::memcpy(words, data.data(), sizeof(words));
  return words[0] >= headerBytes && words[0] <= data.size() &&
         words[1] == VK_PIPELINE_CACHE_HEADER_VERSION_ONE &&
         words[2] == props.vendorID && words[3] == props.deviceID &&
         std::memcmp(data.data() + 16, props.pipelineCacheUUID, VK_UUID_SIZE) ==
             0;
}

Status Context::init(const std::vector<uint8_t> &cacheData) {
  const InstanceFunctions &ifn = instance->fn;
  const DeviceInfo &info = physical.info;

  // Features: whichever of these the device has.
  VkPhysicalDevice16BitStorageFeatures storage16{};
  storage16.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_16BIT_STORAGE_FEATURES;
  storage16.storageBuffer16BitAccess = info.storage16Bit;
  VkPhysicalDevice8BitStorageFeatures storage8{};
  storage8.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_8BIT_STORAGE_FEATURES;
  storage8.storageBuffer8BitAccess = info.storage8Bit;
  VkPhysicalDeviceShaderFloat16Int8Features float16{};
  float16.sType =
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_FLOAT16_INT8_FEATURES;
  float16.shaderFloat16 = info.shaderFloat16;
  float16.shaderInt8 = info.shaderInt8;
  VkPhysicalDeviceFeatures2 features{};
  features.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2;
  features.features.shaderInt16 = info.shaderInt16;
  features.features.shaderInt64 = info.shaderInt64;
  features.pNext = &storage16;
  void **tail = &storage16.pNext;
  std::vector<const char *> extensions;
  if (info.storage8Bit) {
    *tail = &storage8;
    tail = &storage8.pNext;
    if (physical.storage8BitExtension)
      extensions.push_back(VK_KHR_8BIT_STORAGE_EXTENSION_NAME);
  }
  if (info.shaderFloat16 || info.shaderInt8) {
    *tail = &float16;
    tail = &float16.pNext;
    if (physical.float16Extension)
      extensions.push_back(VK_KHR_SHADER_FLOAT16_INT8_EXTENSION_NAME);
  }
  VkPhysicalDeviceShaderIntegerDotProductFeatures integerDot{};
  integerDot.sType =
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_INTEGER_DOT_PRODUCT_FEATURES;
  integerDot.shaderIntegerDotProduct = VK_TRUE;
  if (info.integerDotProduct) // core in Vulkan 1.3, the only devices
    *tail = &integerDot;         // that report it

  float priority = 1.0f;
  VkDeviceQueueCreateInfo queueInfo{};
  queueInfo.sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO;
  queueInfo.queueFamilyIndex = physical.queueFamily;
  queueInfo.queueCount = 1;
  queueInfo.pQueuePriorities = &priority;

  VkDeviceCreateInfo deviceInfo{};
  deviceInfo.sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO;
  deviceInfo.pNext = &features;
  deviceInfo.queueCreateInfoCount = 1;
  deviceInfo.pQueueCreateInfos = &queueInfo;
  deviceInfo.enabledExtensionCount = static_cast<uint32_t>(extensions.size());
  deviceInfo.ppEnabledExtensionNames = extensions.data();
  HESPER_VK_TRY(ifn, vkCreateDevice, physical.handle, &deviceInfo, nullptr,
                &device);

#define HESPER_VK_LOAD(NAME)                                                   \
  fn.NAME =                                                                    \
      reinterpret_cast<PFN_##NAME>(ifn.vkGetDeviceProcAddr(device, #NAME));    \
  if (!fn.NAME)                                                                \
    return Status::error("vkGetDeviceProcAddr found no " #NAME);
  HESPER_VK_DEVICE_FUNCTIONS(HESPER_VK_LOAD)
#undef HESPER_VK_LOAD

  fn.vkGetDeviceQueue(device, physical.queueFamily, 0, &queue);

  VkCommandPoolCreateInfo poolInfo{};
  poolInfo.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO;
  poolInfo.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT;
  poolInfo.queueFamilyIndex = physical.queueFamily;
  HESPER_VK_TRY(fn, vkCreateCommandPool, device, &poolInfo, nullptr,
                &transferPool);
  VkCommandBufferAllocateInfo allocInfo{};
  allocInfo.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO;
  allocInfo.commandPool = transferPool;
  allocInfo.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
  allocInfo.commandBufferCount = 1;
  HESPER_VK_TRY(fn, vkAllocateCommandBuffers, device, &allocInfo,
                &transferCommands);
  VkFenceCreateInfo fenceInfo{};
  fenceInfo.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO;
  HESPER_VK_TRY(fn, vkCreateFence, device, &fenceInfo, nullptr, &transferFence);

  VkPipelineCacheCreateInfo cacheInfo{};
  cacheInfo.sType = VK_STRUCTURE_TYPE_PIPELINE_CACHE_CREATE_INFO;
  if (pipelineCacheFits(cacheData, physical.props)) {
    cacheInfo.initialDataSize = cacheData.size();
    cacheInfo.pInitialData = cacheData.data();
  }
  if (fn.vkCreatePipelineCache(device, &cacheInfo, nullptr, &pipelineCache) !=
      VK_SUCCESS) {
    // The driver refused the saved data: start from an empty cache.
    pipelineCache = VK_NULL_HANDLE;
    cacheInfo.initialDataSize = 0;
    cacheInfo.pInitialData = nullptr;
    HESPER_VK_TRY(fn, vkCreatePipelineCache, device, &cacheInfo, nullptr,
                  &pipelineCache);
  }

  // Memory: a device-local type that the host cannot map means a heap of
  // its own (discrete GPU); otherwise (UMA, lavapipe) storage buffers live
  // in host-visible device memory and are mapped directly.
  for (uint32_t i = 0; i < physical.memory.memoryTypeCount; ++i) {
    VkMemoryPropertyFlags flags = physical.memory.memoryTypes[i].propertyFlags;
    if ((flags & VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT) &&
        !(flags & VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT))
      separateDeviceHeap = true;
  }
  forceStaging = envFlag("HESPER_VK_FORCE_STAGING");
  return Status();
}

int Context::findMemoryType(uint32_t typeBits, VkMemoryPropertyFlags want,
                            VkMemoryPropertyFlags avoid) const {
  for (uint32_t i = 0; i < physical.memory.memoryTypeCount; ++i) {
    VkMemoryPropertyFlags flags = physical.memory.memoryTypes[i].propertyFlags;
    if ((typeBits & (1u << i)) && (flags & want) == want && !(flags & avoid))
      return static_cast<int>(i);
  }
  return -1;
}

Status Context::allocate(size_t bytes, MemoryUse use, Allocation &out) {
  constexpr VkMemoryPropertyFlags deviceLocal =
      VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT;
  constexpr VkMemoryPropertyFlags hostVisible =
      VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT;
  constexpr VkMemoryPropertyFlags coherent =
      VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
  constexpr VkMemoryPropertyFlags cached = VK_MEMORY_PROPERTY_HOST_CACHED_BIT;

  out = Allocation();
  out.size = roundUpTo4(bytes);
  VkBufferCreateInfo bufferInfo{};
  bufferInfo.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO;
  bufferInfo.size = out.size;
  bufferInfo.usage =
      VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT;
  if (use == MemoryUse::Storage)
    bufferInfo.usage |= VK_BUFFER_USAGE_STORAGE_BUFFER_BIT;
  bufferInfo.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
  HESPER_VK_TRY(fn, vkCreateBuffer, device, &bufferInfo, nullptr, &out.buffer);

  VkMemoryRequirements req;
  fn.vkGetBufferMemoryRequirements(device, out.buffer, &req);
  // Memory types in order of preference.
  int type = -1;
  if (use == MemoryUse::Staging) {
    type = findMemoryType(req.memoryTypeBits, hostVisible | coherent | cached);
    if (type < 0)
      type = findMemoryType(req.memoryTypeBits, hostVisible | coherent);
    if (type < 0)
      type = findMemoryType(req.memoryTypeBits, hostVisible);
  } else if (separateDeviceHeap) {
    type = findMemoryType(req.memoryTypeBits, deviceLocal, hostVisible);
    if (type < 0)
      type = findMemoryType(req.memoryTypeBits, deviceLocal);
  } else {
    type = findMemoryType(req.memoryTypeBits,
                          deviceLocal | hostVisible | coherent);
    if (type < 0)
      type = findMemoryType(req.memoryTypeBits, hostVisible | coherent);
    if (type < 0)
      type = findMemoryType(req.memoryTypeBits, hostVisible);
  }
  if (type < 0)
    type = findMemoryType(req.memoryTypeBits, 0);
  if (type < 0) {
    release(out);
    return Status::error("no Vulkan memory type can hold a buffer");
  }
  VkMemoryPropertyFlags flags = physical.memory.memoryTypes[type].propertyFlags;

  VkMemoryAllocateInfo allocInfo{};
  allocInfo.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO;
  allocInfo.allocationSize = req.size;
  allocInfo.memoryTypeIndex = static_cast<uint32_t>(type);
  VkResult result =
      fn.vkAllocateMemory(device, &allocInfo, nullptr, &out.memory);
  if (result != VK_SUCCESS) {
    out.memory = VK_NULL_HANDLE;
    release(out);
    return vkFailure("vkAllocateMemory", result);
  }
  result = fn.vkBindBufferMemory(device, out.buffer, out.memory, 0);
  if (result != VK_SUCCESS) {
    release(out);
    return vkFailure("vkBindBufferMemory", result);
  }
  bool map =
      (flags & hostVisible) && (use == MemoryUse::Staging || !forceStaging);
  if (map) {
    out.coherent = (flags & coherent) != 0;
    result =
        fn.vkMapMemory(device, out.memory, 0, VK_WHOLE_SIZE, 0, &out.mapped);
    if (result != VK_SUCCESS) {
      out.mapped = nullptr;
      release(out);
      return vkFailure("vkMapMemory", result);
    }
  }
  return Status();
}

void Context::release(Allocation &a) {
  if (a.mapped)
    fn.vkUnmapMemory(device, a.memory);
  if (a.buffer != VK_NULL_HANDLE)
    fn.vkDestroyBuffer(device, a.buffer, nullptr);
  if (a.memory != VK_NULL_HANDLE)
    fn.vkFreeMemory(device, a.memory, nullptr);
  a = Allocation();
}

void Context::barrier(VkCommandBuffer commands, VkPipelineStageFlags srcStages,
                      VkAccessFlags srcAccess, VkPipelineStageFlags dstStages,
                      VkAccessFlags dstAccess) const {
  VkMemoryBarrier b{};
  b.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER;
  b.srcAccessMask = srcAccess;
  b.dstAccessMask = dstAccess;
  fn.vkCmdPipelineBarrier(commands, srcStages, dstStages, 0, 1, &b, 0, nullptr,
                          0, nullptr);
}

Status Context::submitAndWait(VkCommandBuffer commands, VkFence fence) {
  uint64_t messages = validationMessages.load(std::memory_order_relaxed);
  VkSubmitInfo submit{};
  submit.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO;
  submit.commandBufferCount = 1;
  submit.pCommandBuffers = &commands;
  HESPER_VK_TRY(fn, vkQueueSubmit, queue, 1, &submit, fence);
  HESPER_VK_TRY(fn, vkWaitForFences, device, 1, &fence, VK_TRUE, UINT64_MAX);
  HESPER_VK_TRY(fn, vkResetFences, device, 1, &fence);
  return validationStatus(messages, "vkQueueSubmit");
}

Status Context::runTransfer(const std::function<void(VkCommandBuffer)> &body) {
  std::lock_guard<std::mutex> lock(queueMutex);
  HESPER_VK_TRY(fn, vkResetCommandBuffer, transferCommands, 0);
  VkCommandBufferBeginInfo begin{};
  begin.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO;
  begin.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
  HESPER_VK_TRY(fn, vkBeginCommandBuffer, transferCommands, &begin);
  barrier(transferCommands, kDeviceStages, kDeviceWrites,
          VK_PIPELINE_STAGE_TRANSFER_BIT,
          VK_ACCESS_TRANSFER_READ_BIT | VK_ACCESS_TRANSFER_WRITE_BIT);
  body(transferCommands);
  barrier(transferCommands, VK_PIPELINE_STAGE_TRANSFER_BIT,
          VK_ACCESS_TRANSFER_WRITE_BIT,
          kDeviceStages | VK_PIPELINE_STAGE_HOST_BIT,
          kDeviceAccesses | VK_ACCESS_HOST_READ_BIT);
  HESPER_VK_TRY(fn, vkEndCommandBuffer, transferCommands);
  return submitAndWait(transferCommands, transferFence);
}

std::vector<uint8_t> Context::pipelineCacheData() const {
  size_t size = 0;
  if (fn.vkGetPipelineCacheData(device, pipelineCache, &size, nullptr) !=
      VK_SUCCESS)
    return {};
  std::vector<uint8_t> data(size);
  if (fn.vkGetPipelineCacheData(device, pipelineCache, &size, data.data()) !=
      VK_SUCCESS)
    return {};
  data.resize(size);
  return data;
}

uint64_t Context::registerObject(const void *object) {
  std::lock_guard<std::mutex> lock(registryMutex);
  uint64_t serial = nextSerial++;
  live[object] = serial;
  return serial;
}

void Context::unregisterObject(const void *object) {
  std::lock_guard<std::mutex> lock(registryMutex);
  live.erase(object);
}

bool Context::isLive(const void *object, uint64_t serial) const {
  std::lock_guard<std::mutex> lock(registryMutex);
  auto it = live.find(object);
  return it != live.end() && (serial == 0 || it->second == serial);
}

} // namespace hesper::rt::detail::vk

#endif // HESPER_HAVE_VULKAN_HEADERS
