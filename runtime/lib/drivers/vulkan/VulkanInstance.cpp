//===- VulkanInstance.cpp - Vulkan loader, instance, physical devices -----===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//
//
// The first steps of the Vulkan driver: libvulkan.so.1 opened with dlopen
// and its global entry points, the instance (with the validation layer and
// its messenger when asked for), and the physical devices with what each
// one can run.
//
//===----------------------------------------------------------------------===//

#ifdef HESPER_HAVE_VULKAN_HEADERS

#include "VulkanInternal.h"

#include <dlfcn.h>
#include <link.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

namespace hesper::rt::detail::vk {

//===----------------------------------------------------------------------===//
// Small helpers
//===----------------------------------------------------------------------===//

/// A Vulkan version number (variant 0, patch 0).
static constexpr uint32_t vkVersion(uint32_t major, uint32_t minor) {
  return (major << 22) | (minor << 12);
}

/// The version with its patch number cleared, for comparisons.
static constexpr uint32_t vkMajorMinor(uint32_t version) {
  return version & ~uint32_t(0xfff);
}

/// "1.3" for a Vulkan version number.
static std::string versionString(uint32_t version) {
  return std::to_string((version >> 22) & 0x7f) + "." +
         std::to_string((version >> 12) & 0x3ff);
}

/// The enumerator name of a VkResult ("VK_ERROR_DEVICE_LOST").
static const char *resultName(VkResult result) {
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

Status vkFailure(const char *call, VkResult result) {
  return Status::error(std::string(call) + " failed: " + resultName(result) +
                       " (" + std::to_string(static_cast<int>(result)) + ")");
}

bool envFlag(const char *name) {
  const char *value = std::getenv(name);
  return value && *value && std::strcmp(value, "0") != 0;
}

//===----------------------------------------------------------------------===//
// Entry points
//===----------------------------------------------------------------------===//

/// Functions of the loader that need no instance.
#define HESPER_VK_GLOBAL_FUNCTIONS(X)                                          \
  X(vkCreateInstance)                                                          \
  X(vkEnumerateInstanceExtensionProperties)                                    \
  X(vkEnumerateInstanceLayerProperties)

#define HESPER_VK_DECLARE(NAME) PFN_##NAME NAME = nullptr;

namespace {

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

} // namespace

#undef HESPER_VK_DECLARE

/// Opens libvulkan.so.1 and looks up the global entry points.
static Loader openLoader() {
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
static const Loader &getLoader() {
  static const Loader loader = openLoader();
  return loader;
}

//===----------------------------------------------------------------------===//
// Instance and validation
//===----------------------------------------------------------------------===//

std::atomic<uint64_t> validationMessages{0};

/// The latest message, for validationStatus.
static std::mutex lastMessageMutex;
static std::string lastMessage;

Status validationStatus(uint64_t before, const std::string &where) {
  if (validationMessages.load(std::memory_order_relaxed) == before)
    return Status();
  std::lock_guard<std::mutex> lock(lastMessageMutex);
  // The first line of the message: the layer's are long.
  std::string first = lastMessage.substr(0, lastMessage.find('\n'));
  return Status::error(where + ": the Vulkan validation layer reported: " +
                       first);
}

const char *const kValidationLayer = "VK_LAYER_KHRONOS_validation";

/// Counts and prints every warning or error of the validation layer.
static VKAPI_ATTR VkBool32 VKAPI_CALL
onValidationMessage(VkDebugUtilsMessageSeverityFlagBitsEXT severity,
                    VkDebugUtilsMessageTypeFlagsEXT,
                    const VkDebugUtilsMessengerCallbackDataEXT *data, void *) {
  if (severity & (VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT |
                  VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT)) {
    const char *text =
        data && data->pMessage ? data->pMessage : "(no message)";
    {
      std::lock_guard<std::mutex> lock(lastMessageMutex);
      lastMessage = text;
    }
    validationMessages.fetch_add(1, std::memory_order_relaxed);
    std::fprintf(stderr, "vulkan validation: %s\n", text);
  }
  return VK_FALSE;
}

/// The messenger's settings: warnings and errors of every type.
static VkDebugUtilsMessengerCreateInfoEXT messengerCreateInfo() {
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

/// With HESPER_VULKAN_KEEP_DRIVERS_LOADED=1, every shared object loaded so
/// far (the loader's drivers and what they depend on, such as Mesa's LLVM)
/// stays loaded until the process exits, though vkDestroyInstance lets the
/// loader unload them. For leak checkers: memory that a driver library
/// keeps in its globals is reachable while the library is loaded, and
/// once it is unloaded neither reachable nor attributable to it
/// (`make check-sanitized` sets the variable).
static void keepDriversLoadedIfAsked() {
  const char *keep = std::getenv("HESPER_VULKAN_KEEP_DRIVERS_LOADED");
  if (!keep || std::strcmp(keep, "1") != 0)
    return;
  std::vector<std::string> names;
  dl_iterate_phdr(
      [](dl_phdr_info *info, size_t, void *out) {
        if (info->dlpi_name && *info->dlpi_name)
          static_cast<std::vector<std::string> *>(out)->push_back(
              info->dlpi_name);
        return 0;
      },
      &names);
  // Outside the iteration, which holds the dynamic linker's lock.
  for (const std::string &name : names)
    if (void *handle =
            dlopen(name.c_str(), RTLD_NOW | RTLD_NOLOAD | RTLD_NODELETE))
      dlclose(handle); // RTLD_NODELETE stays
}

/// Whether `name` is among the instance extensions of the loader, or of
/// `layer` when given.
static bool hasInstanceExtension(const Loader &loader, const char *layer,
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
static bool hasValidationLayer(const Loader &loader) {
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

  keepDriversLoadedIfAsked();

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

static DeviceType mapDeviceType(VkPhysicalDeviceType type) {
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
static bool describePhysicalDevice(const Instance &instance,
                                   VkPhysicalDevice handle,
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
  // The integer dot product from Vulkan 1.3 on, where it is core: the
  // kernels that use it are SPIR-V 1.6, which Vulkan 1.3 takes.
  bool canChainIntegerDot = apiVersion >= vkVersion(1, 3);
  VkPhysicalDeviceShaderIntegerDotProductProperties integerDotProps{};
  integerDotProps.sType =
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_INTEGER_DOT_PRODUCT_PROPERTIES;

  // Subgroups.
  VkPhysicalDeviceSubgroupProperties subgroup{};
  subgroup.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES;
  VkPhysicalDeviceProperties2 props2{};
  props2.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2;
  props2.pNext = &subgroup;
  if (canChainIntegerDot)
    subgroup.pNext = &integerDotProps;
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
  if (pd.canChainFloat16) {
    *tail = &float16;
    tail = &float16.pNext;
  }
  VkPhysicalDeviceShaderIntegerDotProductFeatures integerDot{};
  integerDot.sType =
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_INTEGER_DOT_PRODUCT_FEATURES;
  if (canChainIntegerDot)
    *tail = &integerDot;
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
  info.maxKernelBuffers = limits.maxPerStageDescriptorStorageBuffers;
  info.shaderFloat16 = pd.canChainFloat16 && float16.shaderFloat16;
  info.shaderInt8 = pd.canChainFloat16 && float16.shaderInt8;
  info.shaderInt16 = features.features.shaderInt16;
  info.shaderInt64 = features.features.shaderInt64;
  info.storage8Bit = pd.canChain8Bit && storage8.storageBuffer8BitAccess;
  info.storage16Bit = storage16.storageBuffer16BitAccess;
  // Used where the device accelerates signed 4 x 8-bit dot products:
  // elsewhere (lavapipe) the driver expands OpSDot into the byte
  // arithmetic Hesper's own lowering emits, a little slower.
  // HESPER_VULKAN_INTEGER_DOT=1 uses it wherever the feature exists (the
  // tests run it on lavapipe that way).
  info.integerDotProduct =
      canChainIntegerDot && integerDot.shaderIntegerDotProduct &&
      (integerDotProps.integerDotProduct4x8BitPackedSignedAccelerated ||
       envFlag("HESPER_VULKAN_INTEGER_DOT"));
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
                 std::to_string(pd.props.driverVersion) + ":" + uuid +
                 (info.integerDotProduct ? ":idot" : "");
  return true;
}

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

} // namespace hesper::rt::detail::vk

#endif // HESPER_HAVE_VULKAN_HEADERS
