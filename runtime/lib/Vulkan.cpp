//===- Vulkan.cpp - Vulkan driver of the Hesper runtime -------------------===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//
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

#include "Drivers.h"

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

#ifndef VK_NO_PROTOTYPES
#define VK_NO_PROTOTYPES
#endif
#include <vulkan/vulkan.h>

#include <dlfcn.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <mutex>
#include <unordered_map>

using namespace hesper::rt;

namespace {

//===----------------------------------------------------------------------===//
// Small helpers
//===----------------------------------------------------------------------===//

/// A Vulkan version number (variant 0, patch 0).
constexpr uint32_t vkVersion(uint32_t major, uint32_t minor) {
  return (major << 22) | (minor << 12);
}

/// The version with its patch number cleared, for comparisons.
constexpr uint32_t vkMajorMinor(uint32_t version) {
  return version & ~uint32_t(0xfff);
}

/// "1.3" for a Vulkan version number.
std::string versionString(uint32_t version) {
  return std::to_string((version >> 22) & 0x7f) + "." +
         std::to_string((version >> 12) & 0x3ff);
}

/// The enumerator name of a VkResult ("VK_ERROR_DEVICE_LOST").
const char *resultName(VkResult result) {
  switch (static_cast<int>(result)) {
  case 0:
    return "VK_SUCCESS";
  case 1:
    return "VK_NOT_READY";
  case 2:
    return "VK_TIMEOUT";
  case 3:
    return "VK_EVENT_SET";
  case 4:
    return "VK_EVENT_RESET";
  case 5:
    return "VK_INCOMPLETE";
  case -1:
    return "VK_ERROR_OUT_OF_HOST_MEMORY";
  case -2:
    return "VK_ERROR_OUT_OF_DEVICE_MEMORY";
  case -3:
    return "VK_ERROR_INITIALIZATION_FAILED";
  case -4:
    return "VK_ERROR_DEVICE_LOST";
  case -5:
    return "VK_ERROR_MEMORY_MAP_FAILED";
  case -6:
    return "VK_ERROR_LAYER_NOT_PRESENT";
  case -7:
    return "VK_ERROR_EXTENSION_NOT_PRESENT";
  case -8:
    return "VK_ERROR_FEATURE_NOT_PRESENT";
  case -9:
    return "VK_ERROR_INCOMPATIBLE_DRIVER";
  case -10:
    return "VK_ERROR_TOO_MANY_OBJECTS";
  case -11:
    return "VK_ERROR_FORMAT_NOT_SUPPORTED";
  case -12:
    return "VK_ERROR_FRAGMENTED_POOL";
  case -13:
    return "VK_ERROR_UNKNOWN";
  case -1000069000:
    return "VK_ERROR_OUT_OF_POOL_MEMORY";
  case -1000072003:
    return "VK_ERROR_INVALID_EXTERNAL_HANDLE";
  case -1000161000:
    return "VK_ERROR_FRAGMENTATION";
  case -1000257000:
    return "VK_ERROR_INVALID_OPAQUE_CAPTURE_ADDRESS";
  case 1000297000:
    return "VK_PIPELINE_COMPILE_REQUIRED";
  case -1000011001:
    return "VK_ERROR_VALIDATION_FAILED_EXT";
  default:
    return "VK_RESULT_UNKNOWN";
  }
}

/// "vkCreateComputePipelines failed: VK_ERROR_INITIALIZATION_FAILED (-3)".
Status vkFailure(const char *call, VkResult result) {
  return Status::error(std::string(call) + " failed: " + resultName(result) +
                       " (" + std::to_string(static_cast<int>(result)) + ")");
}

/// Calls `FNS.NAME(...)` and returns a Status naming NAME when it fails.
#define HESPER_VK_TRY(FNS, NAME, ...)                                          \
  do {                                                                         \
    VkResult hesperVkResult = (FNS).NAME(__VA_ARGS__);                         \
    if (hesperVkResult != VK_SUCCESS)                                          \
      return vkFailure(#NAME, hesperVkResult);                                 \
  } while (false)

/// Whether the environment variable is set to something other than "" or 0.
bool envFlag(const char *name) {
  const char *value = std::getenv(name);
  return value && *value && std::strcmp(value, "0") != 0;
}

/// Rounds a byte count up to whole 32-bit words.
VkDeviceSize roundUpTo4(size_t bytes) {
  return (static_cast<VkDeviceSize>(bytes) + 3) & ~VkDeviceSize(3);
}

/// "offset 8 + 16 bytes exceed the 20-byte buffer" or an empty string.
std::string checkRange(const char *what, size_t offset, size_t bytes,
                       size_t size) {
  if (offset <= size && bytes <= size - offset)
    return {};
  return std::string(what) + ": offset " + std::to_string(offset) + " + " +
         std::to_string(bytes) + " bytes exceed the " + std::to_string(size) +
         "-byte buffer";
}

//===----------------------------------------------------------------------===//
// Entry points
//===----------------------------------------------------------------------===//

/// Functions of the loader that need no instance.
#define HESPER_VK_GLOBAL_FUNCTIONS(X)                                          \
  X(vkCreateInstance)                                                          \
  X(vkEnumerateInstanceExtensionProperties)                                    \
  X(vkEnumerateInstanceLayerProperties)

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

/// The loader library, opened once per process and never closed (layers and
/// drivers it loaded may still be referenced by atexit handlers).
struct Loader {
  void *library = nullptr;
  PFN_vkGetInstanceProcAddr vkGetInstanceProcAddr = nullptr;
  /// Null with a Vulkan 1.0 loader.
  PFN_vkEnumerateInstanceVersion vkEnumerateInstanceVersion = nullptr;
  HESPER_VK_GLOBAL_FUNCTIONS(HESPER_VK_DECLARE)
  /// Why the loader cannot be used, or success.
  Status status;
};

#undef HESPER_VK_DECLARE

/// Opens libvulkan.so.1 and looks up the global entry points.
Loader openLoader() {
  Loader loader;
  loader.library = dlopen("libvulkan.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!loader.library) {
    const char *why = dlerror();
    loader.status = Status::error(
        std::string("Vulkan unavailable: cannot load libvulkan.so.1 (") +
        (why ? why : "unknown error") + ")");
    return loader;
  }
  loader.vkGetInstanceProcAddr = reinterpret_cast<PFN_vkGetInstanceProcAddr>(
      dlsym(loader.library, "vkGetInstanceProcAddr"));
  if (!loader.vkGetInstanceProcAddr) {
    loader.status = Status::error("Vulkan unavailable: libvulkan.so.1 has no "
                                  "vkGetInstanceProcAddr");
    return loader;
  }
#define HESPER_VK_LOAD(NAME)                                                   \
  loader.NAME = reinterpret_cast<PFN_##NAME>(                                  \
      loader.vkGetInstanceProcAddr(VK_NULL_HANDLE, #NAME));                    \
  if (!loader.NAME) {                                                          \
    loader.status =                                                            \
        Status::error("Vulkan unavailable: the loader has no " #NAME);         \
    return loader;                                                             \
  }
  HESPER_VK_GLOBAL_FUNCTIONS(HESPER_VK_LOAD)
#undef HESPER_VK_LOAD
  loader.vkEnumerateInstanceVersion =
      reinterpret_cast<PFN_vkEnumerateInstanceVersion>(
          loader.vkGetInstanceProcAddr(VK_NULL_HANDLE,
                                       "vkEnumerateInstanceVersion"));
  return loader;
}

/// The process-wide loader (opened on first use).
const Loader &getLoader() {
  static const Loader loader = openLoader();
  return loader;
}

//===----------------------------------------------------------------------===//
// Instance and validation
//===----------------------------------------------------------------------===//

/// Warnings and errors reported by the validation layer, process-wide.
std::atomic<uint64_t> validationMessages{0};

const char *const kValidationLayer = "VK_LAYER_KHRONOS_validation";

/// Counts and prints every warning or error of the validation layer.
VKAPI_ATTR VkBool32 VKAPI_CALL
onValidationMessage(VkDebugUtilsMessageSeverityFlagBitsEXT severity,
                    VkDebugUtilsMessageTypeFlagsEXT,
                    const VkDebugUtilsMessengerCallbackDataEXT *data, void *) {
  if (severity & (VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT |
                  VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT)) {
    validationMessages.fetch_add(1, std::memory_order_relaxed);
    std::fprintf(stderr, "vulkan validation: %s\n",
                 data && data->pMessage ? data->pMessage : "(no message)");
  }
  return VK_FALSE;
}

/// The messenger's settings: warnings and errors of every type.
VkDebugUtilsMessengerCreateInfoEXT messengerCreateInfo() {
  VkDebugUtilsMessengerCreateInfoEXT info{};
  info.sType = VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT;
  info.messageSeverity = VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT |
                         VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT;
  info.messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT |
                     VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT |
                     VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT;
  info.pfnUserCallback = onValidationMessage;
  return info;
}

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

/// Whether `name` is among the instance extensions of the loader, or of
/// `layer` when given.
bool hasInstanceExtension(const Loader &loader, const char *layer,
                          const char *name) {
  uint32_t count = 0;
  if (loader.vkEnumerateInstanceExtensionProperties(layer, &count, nullptr) !=
      VK_SUCCESS)
    return false;
  std::vector<VkExtensionProperties> props(count);
  if (loader.vkEnumerateInstanceExtensionProperties(layer, &count,
                                                    props.data()) < 0)
    return false;
  props.resize(count);
  return std::any_of(props.begin(), props.end(), [&](const auto &p) {
    return std::strcmp(p.extensionName, name) == 0;
  });
}

/// Whether the validation layer is installed.
bool hasValidationLayer(const Loader &loader) {
  uint32_t count = 0;
  if (loader.vkEnumerateInstanceLayerProperties(&count, nullptr) != VK_SUCCESS)
    return false;
  std::vector<VkLayerProperties> props(count);
  if (loader.vkEnumerateInstanceLayerProperties(&count, props.data()) < 0)
    return false;
  props.resize(count);
  return std::any_of(props.begin(), props.end(), [](const auto &p) {
    return std::strcmp(p.layerName, kValidationLayer) == 0;
  });
}

/// Creates an instance of Vulkan 1.1 or later (the newest the loader offers,
/// up to 1.3), with the validation layer and its messenger when asked.
Result<std::unique_ptr<Instance>> createInstance(bool validation) {
  const Loader &loader = getLoader();
  if (!loader.status)
    return loader.status;

  uint32_t loaderVersion = vkVersion(1, 0);
  if (loader.vkEnumerateInstanceVersion &&
      loader.vkEnumerateInstanceVersion(&loaderVersion) != VK_SUCCESS)
    loaderVersion = vkVersion(1, 0);
  if (vkMajorMinor(loaderVersion) < vkVersion(1, 1))
    return Status::error("Vulkan unavailable: the loader supports Vulkan " +
                         versionString(loaderVersion) +
                         ", Vulkan 1.1 is needed");

  std::vector<const char *> layers, extensions;
  VkDebugUtilsMessengerCreateInfoEXT messengerInfo = messengerCreateInfo();
  if (validation) {
    if (!hasValidationLayer(loader))
      return Status::error("Vulkan validation requested but the layer " +
                           std::string(kValidationLayer) + " is not installed");
    if (!hasInstanceExtension(loader, nullptr,
                              VK_EXT_DEBUG_UTILS_EXTENSION_NAME) &&
        !hasInstanceExtension(loader, kValidationLayer,
                              VK_EXT_DEBUG_UTILS_EXTENSION_NAME))
      return Status::error("Vulkan validation requested but " +
                           std::string(VK_EXT_DEBUG_UTILS_EXTENSION_NAME) +
                           " is not available");
    layers.push_back(kValidationLayer);
    extensions.push_back(VK_EXT_DEBUG_UTILS_EXTENSION_NAME);
  }

  auto instance = std::make_unique<Instance>();
  instance->apiVersion = std::min(vkMajorMinor(loaderVersion), vkVersion(1, 3));

  VkApplicationInfo app{};
  app.sType = VK_STRUCTURE_TYPE_APPLICATION_INFO;
  app.pApplicationName = "hesper";
  app.pEngineName = "hesper";
  app.apiVersion = instance->apiVersion;

  VkInstanceCreateInfo info{};
  info.sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO;
  // Chaining the messenger settings also reports on vkCreateInstance and
  // vkDestroyInstance themselves.
  info.pNext = validation ? &messengerInfo : nullptr;
  info.pApplicationInfo = &app;
  info.enabledLayerCount = static_cast<uint32_t>(layers.size());
  info.ppEnabledLayerNames = layers.data();
  info.enabledExtensionCount = static_cast<uint32_t>(extensions.size());
  info.ppEnabledExtensionNames = extensions.data();
  VkResult result = loader.vkCreateInstance(&info, nullptr, &instance->handle);
  if (result != VK_SUCCESS) {
    instance->handle = VK_NULL_HANDLE;
    return Status::error("Vulkan unavailable: " +
                         vkFailure("vkCreateInstance", result).message());
  }

  InstanceFunctions &fn = instance->fn;
  VkInstance handle = instance->handle;
  // vkDestroyInstance first, so that a failure below still cleans up.
#define HESPER_VK_LOAD(NAME)                                                   \
  fn.NAME = reinterpret_cast<PFN_##NAME>(                                      \
      loader.vkGetInstanceProcAddr(handle, #NAME));                            \
  if (!fn.NAME)                                                                \
    return Status::error("Vulkan unavailable: the instance has no " #NAME);
  HESPER_VK_INSTANCE_FUNCTIONS(HESPER_VK_LOAD)
  if (validation) {
    HESPER_VK_LOAD(vkCreateDebugUtilsMessengerEXT)
    HESPER_VK_LOAD(vkDestroyDebugUtilsMessengerEXT)
    HESPER_VK_TRY(fn, vkCreateDebugUtilsMessengerEXT, handle, &messengerInfo,
                  nullptr, &instance->messenger);
  }
#undef HESPER_VK_LOAD
  return Result<std::unique_ptr<Instance>>(std::move(instance));
}

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

DeviceType mapDeviceType(VkPhysicalDeviceType type) {
  switch (type) {
  case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU:
    return DeviceType::Discrete;
  case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU:
    return DeviceType::Integrated;
  case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU:
    return DeviceType::Virtual;
  case VK_PHYSICAL_DEVICE_TYPE_CPU:
    return DeviceType::Cpu;
  default:
    return DeviceType::Other;
  }
}

/// Lower is better: discrete, integrated, virtual, CPU, anything else.
int typePreference(DeviceType type) {
  switch (type) {
  case DeviceType::Discrete:
    return 0;
  case DeviceType::Integrated:
    return 1;
  case DeviceType::Virtual:
    return 2;
  case DeviceType::Cpu:
    return 3;
  case DeviceType::Other:
    break;
  }
  return 4;
}

/// Describes `handle`; false when it cannot run Hesper's kernels (older than
/// Vulkan 1.1, or no compute queue), in which case it is not listed.
bool describePhysicalDevice(const Instance &instance, VkPhysicalDevice handle,
                            PhysicalDevice &pd) {
  const InstanceFunctions &fn = instance.fn;
  pd.handle = handle;
  fn.vkGetPhysicalDeviceProperties(handle, &pd.props);
  uint32_t apiVersion =
      std::min(vkMajorMinor(pd.props.apiVersion), instance.apiVersion);
  if (apiVersion < vkVersion(1, 1))
    return false;

  // The compute queue: the first family with compute and timestamps, else
  // the first with compute.
  uint32_t familyCount = 0;
  fn.vkGetPhysicalDeviceQueueFamilyProperties(handle, &familyCount, nullptr);
  std::vector<VkQueueFamilyProperties> families(familyCount);
  fn.vkGetPhysicalDeviceQueueFamilyProperties(handle, &familyCount,
                                              families.data());
  int family = -1;
  for (uint32_t i = 0; i < familyCount; ++i) {
    if (!(families[i].queueFlags & VK_QUEUE_COMPUTE_BIT) ||
        families[i].queueCount == 0)
      continue;
    if (family < 0 || (families[family].timestampValidBits == 0 &&
                       families[i].timestampValidBits != 0))
      family = static_cast<int>(i);
  }
  if (family < 0)
    return false;
  pd.queueFamily = static_cast<uint32_t>(family);
  pd.timestampValidBits = families[family].timestampValidBits;

  // Extensions that carry Vulkan 1.2 features on a 1.1 device.
  bool core12 = apiVersion >= vkVersion(1, 2);
  std::vector<VkExtensionProperties> extensions;
  uint32_t extensionCount = 0;
  if (fn.vkEnumerateDeviceExtensionProperties(handle, nullptr, &extensionCount,
                                              nullptr) == VK_SUCCESS) {
    extensions.resize(extensionCount);
    if (fn.vkEnumerateDeviceExtensionProperties(
            handle, nullptr, &extensionCount, extensions.data()) < 0)
      extensionCount = 0;
    extensions.resize(extensionCount);
  }
  auto hasExtension = [&](const char *name) {
    return std::any_of(extensions.begin(), extensions.end(), [&](auto &e) {
      return std::strcmp(e.extensionName, name) == 0;
    });
  };
  pd.float16Extension =
      !core12 && hasExtension(VK_KHR_SHADER_FLOAT16_INT8_EXTENSION_NAME);
  pd.storage8BitExtension =
      !core12 && hasExtension(VK_KHR_8BIT_STORAGE_EXTENSION_NAME);
  pd.canChainFloat16 = core12 || pd.float16Extension;
  pd.canChain8Bit = core12 || pd.storage8BitExtension;

  // Subgroups.
  VkPhysicalDeviceSubgroupProperties subgroup{};
  subgroup.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES;
  VkPhysicalDeviceProperties2 props2{};
  props2.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2;
  props2.pNext = &subgroup;
  fn.vkGetPhysicalDeviceProperties2(handle, &props2);

  // Features.
  VkPhysicalDevice16BitStorageFeatures storage16{};
  storage16.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_16BIT_STORAGE_FEATURES;
  VkPhysicalDevice8BitStorageFeatures storage8{};
  storage8.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_8BIT_STORAGE_FEATURES;
  VkPhysicalDeviceShaderFloat16Int8Features float16{};
  float16.sType =
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_FLOAT16_INT8_FEATURES;
  VkPhysicalDeviceFeatures2 features{};
  features.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2;
  features.pNext = &storage16;
  void **tail = &storage16.pNext;
  if (pd.canChain8Bit) {
    *tail = &storage8;
    tail = &storage8.pNext;
  }
  if (pd.canChainFloat16)
    *tail = &float16;
  fn.vkGetPhysicalDeviceFeatures2(handle, &features);

  fn.vkGetPhysicalDeviceMemoryProperties(handle, &pd.memory);

  const VkPhysicalDeviceLimits &limits = pd.props.limits;
  DeviceInfo &info = pd.info;
  info.backend = Backend::Vulkan;
  info.name = pd.props.deviceName;
  info.type = mapDeviceType(pd.props.deviceType);
  info.subgroupSize = std::max(subgroup.subgroupSize, 1u);
  info.subgroupArithmetic =
      (subgroup.supportedOperations & VK_SUBGROUP_FEATURE_ARITHMETIC_BIT) &&
      (subgroup.supportedStages & VK_SHADER_STAGE_COMPUTE_BIT);
  for (int d = 0; d < 3; ++d) {
    info.maxWorkgroupSize[d] = limits.maxComputeWorkGroupSize[d];
    info.maxWorkgroupCount[d] = limits.maxComputeWorkGroupCount[d];
  }
  info.maxWorkgroupInvocations = limits.maxComputeWorkGroupInvocations;
  info.maxSharedMemoryBytes = limits.maxComputeSharedMemorySize;
  info.maxBindingBytes = limits.maxStorageBufferRange;
  info.maxPushConstantBytes = limits.maxPushConstantsSize;
  info.shaderFloat16 = pd.canChainFloat16 && float16.shaderFloat16;
  info.shaderInt8 = pd.canChainFloat16 && float16.shaderInt8;
  info.shaderInt16 = features.features.shaderInt16;
  info.shaderInt64 = features.features.shaderInt64;
  info.storage8Bit = pd.canChain8Bit && storage8.storageBuffer8BitAccess;
  info.storage16Bit = storage16.storageBuffer16BitAccess;
  info.timestampPeriodNs =
      pd.timestampValidBits ? static_cast<double>(limits.timestampPeriod) : 0;
  static const char hexDigits[] = "0123456789abcdef";
  std::string uuid;
  for (uint8_t byte : pd.props.pipelineCacheUUID) {
    uuid += hexDigits[byte >> 4];
    uuid += hexDigits[byte & 15];
  }
  info.cacheId = "vk:" + std::to_string(pd.props.vendorID) + ":" +
                 std::to_string(pd.props.deviceID) + ":" +
                 std::to_string(pd.props.driverVersion) + ":" + uuid;
  return true;
}

/// The usable physical devices of `instance`, in enumeration order.
Result<std::vector<PhysicalDevice>>
enumeratePhysicalDevices(const Instance &instance) {
  uint32_t count = 0;
  HESPER_VK_TRY(instance.fn, vkEnumeratePhysicalDevices, instance.handle,
                &count, nullptr);
  std::vector<VkPhysicalDevice> handles(count);
  VkResult result = instance.fn.vkEnumeratePhysicalDevices(
      instance.handle, &count, handles.data());
  if (result < 0)
    return vkFailure("vkEnumeratePhysicalDevices", result);
  handles.resize(count);
  std::vector<PhysicalDevice> devices;
  for (VkPhysicalDevice handle : handles) {
    PhysicalDevice pd;
    if (describePhysicalDevice(instance, handle, pd))
      devices.push_back(std::move(pd));
  }
  if (devices.empty())
    return Status::error("Vulkan unavailable: no Vulkan 1.1 device with a "
                         "compute queue");
  return devices;
}

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
bool pipelineCacheFits(const std::vector<uint8_t> &data,
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
    if (physical.float16Extension)
      extensions.push_back(VK_KHR_SHADER_FLOAT16_INT8_EXTENSION_NAME);
  }

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

/// Stages and accesses of every command the runtime records.
constexpr VkPipelineStageFlags kDeviceStages =
    VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT;
constexpr VkAccessFlags kDeviceWrites =
    VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
constexpr VkAccessFlags kDeviceAccesses =
    VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT |
    VK_ACCESS_TRANSFER_READ_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;

Status Context::submitAndWait(VkCommandBuffer commands, VkFence fence) {
  VkSubmitInfo submit{};
  submit.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO;
  submit.commandBufferCount = 1;
  submit.pCommandBuffers = &commands;
  HESPER_VK_TRY(fn, vkQueueSubmit, queue, 1, &submit, fence);
  HESPER_VK_TRY(fn, vkWaitForFences, device, 1, &fence, VK_TRUE, UINT64_MAX);
  HESPER_VK_TRY(fn, vkResetFences, device, 1, &fence);
  return Status();
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

/// SPIR-V's magic number, in the host's byte order.
constexpr uint32_t kSpirvMagic = 0x07230203;

/// Whether the module (whose header was checked) declares a GLCompute entry
/// point called `name`. Entry points precede the first function.
bool hasComputeEntryPoint(const std::vector<uint32_t> &words,
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

VulkanCommandList::~VulkanCommandList() {
  const DeviceFunctions &fn = ctx->fn;
  releaseRecording();
  if (fence != VK_NULL_HANDLE)
    fn.vkDestroyFence(ctx->device, fence, nullptr);
  if (pool != VK_NULL_HANDLE)
    fn.vkDestroyCommandPool(ctx->device, pool, nullptr);
}

void VulkanCommandList::releaseRecording() {
  const DeviceFunctions &fn = ctx->fn;
  if (descriptorPool != VK_NULL_HANDLE)
    fn.vkDestroyDescriptorPool(ctx->device, descriptorPool, nullptr);
  if (queryPool != VK_NULL_HANDLE)
    fn.vkDestroyQueryPool(ctx->device, queryPool, nullptr);
  descriptorPool = VK_NULL_HANDLE;
  queryPool = VK_NULL_HANDLE;
  launches.clear();
  recorded = false;
  times.clear();
}

Status VulkanCommandList::init() {
  const DeviceFunctions &fn = ctx->fn;
  VkCommandPoolCreateInfo poolInfo{};
  poolInfo.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO;
  poolInfo.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT;
  poolInfo.queueFamilyIndex = ctx->physical.queueFamily;
  HESPER_VK_TRY(fn, vkCreateCommandPool, ctx->device, &poolInfo, nullptr,
                &pool);
  VkCommandBufferAllocateInfo allocInfo{};
  allocInfo.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO;
  allocInfo.commandPool = pool;
  allocInfo.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
  allocInfo.commandBufferCount = 1;
  HESPER_VK_TRY(fn, vkAllocateCommandBuffers, ctx->device, &allocInfo,
                &commands);
  VkFenceCreateInfo fenceInfo{};
  fenceInfo.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO;
  HESPER_VK_TRY(fn, vkCreateFence, ctx->device, &fenceInfo, nullptr, &fence);
  return Status();
}

Status VulkanCommandList::resolve(size_t index, const Dispatch &d,
                                  Launch &launch) const {
  // The ABI and the grid were checked by ReplayState::validate; what is left
  // is whether the objects belong to this device.
  std::string where = "dispatch " + std::to_string(index) + ": ";
  if (!ctx->isLive(static_cast<const Kernel *>(d.kernel), 0))
    return Status::error(where + "the kernel belongs to another device");
  launch.kernel = static_cast<VulkanKernel *>(d.kernel);
  launch.kernelSerial = launch.kernel->serial;
  for (size_t b = 0; b < d.bindings.size(); ++b) {
    Buffer *buffer = d.bindings[b];
    if (!ctx->isLive(static_cast<const Buffer *>(buffer), 0))
      return Status::error(where + "the buffer of binding " +
                           std::to_string(b) + " belongs to another device");
    auto *vkBuffer = static_cast<VulkanBuffer *>(buffer);
    launch.buffers.emplace_back(vkBuffer, vkBuffer->serial);
  }
  launch.pushConstants = d.pushConstants;
  for (int dim = 0; dim < 3; ++dim)
    launch.grid[dim] = d.grid[dim];
  return Status();
}

Status VulkanCommandList::record(const std::vector<Dispatch> &dispatches) {
  // Check everything before touching the previous recording: the kernels'
  // ABI and the grid limits (shared with the other drivers), then ownership.
  Status valid = detail::ReplayState(ctx->physical.info.maxWorkgroupCount)
                     .validate(dispatches);
  if (!valid)
    return valid;
  std::vector<Launch> resolved(dispatches.size());
  for (size_t i = 0; i < dispatches.size(); ++i) {
    Status s = resolve(i, dispatches[i], resolved[i]);
    if (!s)
      return s;
  }

  releaseRecording();
  launches = std::move(resolved);
  const DeviceFunctions &fn = ctx->fn;

  // One descriptor set per dispatch that has bindings.
  uint32_t sets = 0, descriptors = 0;
  for (const Launch &l : launches) {
    if (!l.buffers.empty()) {
      ++sets;
      descriptors += static_cast<uint32_t>(l.buffers.size());
    }
  }
  if (sets > 0) {
    VkDescriptorPoolSize poolSize{};
    poolSize.type = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
    poolSize.descriptorCount = descriptors;
    VkDescriptorPoolCreateInfo poolInfo{};
    poolInfo.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO;
    poolInfo.maxSets = sets;
    poolInfo.poolSizeCount = 1;
    poolInfo.pPoolSizes = &poolSize;
    HESPER_VK_TRY(fn, vkCreateDescriptorPool, ctx->device, &poolInfo, nullptr,
                  &descriptorPool);

    std::vector<VkDescriptorSetLayout> layouts;
    for (const Launch &l : launches)
      if (!l.buffers.empty())
        layouts.push_back(l.kernel->setLayout);
    std::vector<VkDescriptorSet> allocated(layouts.size());
    VkDescriptorSetAllocateInfo allocInfo{};
    allocInfo.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO;
    allocInfo.descriptorPool = descriptorPool;
    allocInfo.descriptorSetCount = sets;
    allocInfo.pSetLayouts = layouts.data();
    HESPER_VK_TRY(fn, vkAllocateDescriptorSets, ctx->device, &allocInfo,
                  allocated.data());

    std::vector<VkDescriptorBufferInfo> bufferInfos;
    bufferInfos.reserve(descriptors);
    std::vector<VkWriteDescriptorSet> writes;
    writes.reserve(descriptors);
    size_t next = 0;
    for (Launch &l : launches) {
      if (l.buffers.empty())
        continue;
      l.set = allocated[next++];
      for (size_t b = 0; b < l.buffers.size(); ++b) {
        VkDescriptorBufferInfo bufferInfo{};
        bufferInfo.buffer = l.buffers[b].first->memory.buffer;
        bufferInfo.offset = 0;
        bufferInfo.range = VK_WHOLE_SIZE;
        bufferInfos.push_back(bufferInfo);
        VkWriteDescriptorSet write{};
        write.sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET;
        write.dstSet = l.set;
        write.dstBinding = static_cast<uint32_t>(b);
        write.descriptorCount = 1;
        write.descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
        write.pBufferInfo = &bufferInfos.back();
        writes.push_back(write);
      }
    }
    fn.vkUpdateDescriptorSets(ctx->device, static_cast<uint32_t>(writes.size()),
                              writes.data(), 0, nullptr);
  }

  // Two timestamps per dispatch.
  if (timing && ctx->physical.info.timestampPeriodNs > 0 && !launches.empty()) {
    VkQueryPoolCreateInfo queryInfo{};
    queryInfo.sType = VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO;
    queryInfo.queryType = VK_QUERY_TYPE_TIMESTAMP;
    queryInfo.queryCount = static_cast<uint32_t>(2 * launches.size());
    HESPER_VK_TRY(fn, vkCreateQueryPool, ctx->device, &queryInfo, nullptr,
                  &queryPool);
  }

  Status s = recordCommands();
  if (!s) {
    releaseRecording();
    return s;
  }
  recorded = true;
  return Status();
}

Status VulkanCommandList::recordCommands() {
  const DeviceFunctions &fn = ctx->fn;
  HESPER_VK_TRY(fn, vkResetCommandBuffer, commands, 0);
  VkCommandBufferBeginInfo begin{};
  begin.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO;
  // Neither one-time nor simultaneous: the buffer is submitted again after
  // each submission has finished.
  HESPER_VK_TRY(fn, vkBeginCommandBuffer, commands, &begin);
  uint32_t queries = static_cast<uint32_t>(2 * launches.size());
  if (queryPool != VK_NULL_HANDLE)
    fn.vkCmdResetQueryPool(commands, queryPool, 0, queries);
  // Earlier transfers and submissions (of this list too) come first.
  ctx->barrier(commands, kDeviceStages, kDeviceWrites,
               VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
               VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT);
  for (size_t i = 0; i < launches.size(); ++i) {
    const Launch &l = launches[i];
    const VulkanKernel &k = *l.kernel;
    if (i > 0)
      ctx->barrier(commands, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
                   VK_ACCESS_SHADER_WRITE_BIT,
                   VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
                   VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT);
    fn.vkCmdBindPipeline(commands, VK_PIPELINE_BIND_POINT_COMPUTE, k.pipeline);
    if (l.set != VK_NULL_HANDLE)
      fn.vkCmdBindDescriptorSets(commands, VK_PIPELINE_BIND_POINT_COMPUTE,
                                 k.pipelineLayout, 0, 1, &l.set, 0, nullptr);
    if (!l.pushConstants.empty())
      fn.vkCmdPushConstants(commands, k.pipelineLayout,
                            VK_SHADER_STAGE_COMPUTE_BIT, 0,
                            static_cast<uint32_t>(l.pushConstants.size()),
                            l.pushConstants.data());
    if (queryPool != VK_NULL_HANDLE)
      fn.vkCmdWriteTimestamp(commands, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
                             queryPool, static_cast<uint32_t>(2 * i));
    fn.vkCmdDispatch(commands, l.grid[0], l.grid[1], l.grid[2]);
    if (queryPool != VK_NULL_HANDLE)
      fn.vkCmdWriteTimestamp(commands, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
                             queryPool, static_cast<uint32_t>(2 * i + 1));
  }
  // Results are read by later transfers, dispatches or the host.
  ctx->barrier(commands, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
               VK_ACCESS_SHADER_WRITE_BIT,
               kDeviceStages | VK_PIPELINE_STAGE_HOST_BIT,
               kDeviceAccesses | VK_ACCESS_HOST_READ_BIT);
  HESPER_VK_TRY(fn, vkEndCommandBuffer, commands);
  return Status();
}

Status VulkanCommandList::setPushConstants(size_t dispatchIndex,
                                           const std::vector<uint8_t> &bytes) {
  if (!recorded)
    return Status::error("setPushConstants: the command list is not recorded");
  if (dispatchIndex >= launches.size())
    return Status::error("setPushConstants: dispatch " +
                         std::to_string(dispatchIndex) + " out of range (" +
                         std::to_string(launches.size()) + " recorded)");
  Launch &l = launches[dispatchIndex];
  if (!ctx->isLive(static_cast<const Kernel *>(l.kernel), l.kernelSerial))
    return Status::error("setPushConstants: the kernel of dispatch " +
                         std::to_string(dispatchIndex) + " has been destroyed");
  const KernelDesc &desc = l.kernel->kernelDesc;
  if (bytes.size() != desc.pushConstantBytes)
    return Status::error(
        "setPushConstants: dispatch " + std::to_string(dispatchIndex) +
        ": kernel '" + desc.name + "' takes " +
        std::to_string(desc.pushConstantBytes) + " push-constant bytes, got " +
        std::to_string(bytes.size()));
  l.pushConstants = bytes;
  Status s = recordCommands();
  if (!s)
    recorded = false;
  return s;
}

Status VulkanCommandList::submit() {
  if (!recorded)
    return Status::error("submit: the command list is not recorded");
  for (size_t i = 0; i < launches.size(); ++i) {
    const Launch &l = launches[i];
    bool live =
        ctx->isLive(static_cast<const Kernel *>(l.kernel), l.kernelSerial);
    for (const auto &[buffer, serial] : l.buffers)
      live = live && ctx->isLive(static_cast<const Buffer *>(buffer), serial);
    if (!live)
      return Status::error("submit: a kernel or buffer of dispatch " +
                           std::to_string(i) + " has been destroyed");
  }

  {
    std::lock_guard<std::mutex> lock(ctx->queueMutex);
    Status s = ctx->submitAndWait(commands, fence);
    if (!s)
      return s;
  }
  ++submitted;

  times.clear();
  if (queryPool == VK_NULL_HANDLE)
    return Status();
  std::vector<uint64_t> stamps(2 * launches.size());
  HESPER_VK_TRY(ctx->fn, vkGetQueryPoolResults, ctx->device, queryPool, 0,
                static_cast<uint32_t>(stamps.size()),
                stamps.size() * sizeof(uint64_t), stamps.data(),
                sizeof(uint64_t),
                VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT);
  uint32_t bits = ctx->physical.timestampValidBits;
  uint64_t mask = bits >= 64 ? ~uint64_t(0) : (uint64_t(1) << bits) - 1;
  double period = ctx->physical.info.timestampPeriodNs;
  for (size_t i = 0; i < launches.size(); ++i) {
    uint64_t ticks = (stamps[2 * i + 1] - stamps[2 * i]) & mask;
    times.push_back(static_cast<double>(ticks) * period);
  }
  return Status();
}

//===----------------------------------------------------------------------===//
// Device
//===----------------------------------------------------------------------===//

/// The pipeline cache file of a device in `dir`.
std::string pipelineCachePath(const std::string &dir,
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
std::vector<uint8_t> readFile(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return {};
  std::vector<uint8_t> data((std::istreambuf_iterator<char>(in)),
                            std::istreambuf_iterator<char>());
  if (in.bad())
    return {};
  return data;
}

/// Writes the file through a temporary and a rename, so that a concurrent
/// reader sees the old contents or the new ones; failures are ignored.
void writeFileQuietly(const std::string &path,
                      const std::vector<uint8_t> &data) {
  std::error_code ec;
  std::filesystem::path file(path);
  std::filesystem::create_directories(file.parent_path(), ec);
  std::string temp = path + ".tmp" + std::to_string(getpid());
  {
    std::ofstream out(temp, std::ios::binary | std::ios::trunc);
    if (!out)
      return;
    out.write(reinterpret_cast<const char *>(data.data()),
              static_cast<std::streamsize>(data.size()));
    if (!out) {
      out.close();
      std::filesystem::remove(temp, ec);
      return;
    }
  }
  std::filesystem::rename(temp, file, ec);
  if (ec)
    std::filesystem::remove(temp, ec);
}

/// One opened Vulkan device.
class VulkanDevice final : public Device {
public:
  VulkanDevice(std::shared_ptr<Context> ctx, std::string cachePath)
      : ctx(std::move(ctx)), cachePath(std::move(cachePath)) {}
  /// Saves the pipeline cache when a cache directory was given.
  ~VulkanDevice() override {
    if (!cachePath.empty()) {
      std::vector<uint8_t> data = ctx->pipelineCacheData();
      if (!data.empty())
        writeFileQuietly(cachePath, data);
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

//===----------------------------------------------------------------------===//
// Driver entry points
//===----------------------------------------------------------------------===//

namespace hesper::rt::detail {

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
