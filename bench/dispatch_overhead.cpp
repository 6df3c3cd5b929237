//===- dispatch_overhead.cpp - Replay cost of a recorded step -------------===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//
//
// hesper-bench-dispatch: what it costs the host to replay a recorded step of
// K tiny dispatches through Hesper's CommandList, against a hand-written
// Vulkan loop doing the same work directly.
//
//   hesper  one CommandList recorded once with K dispatches of the `tick`
//           kernel (one workgroup of one invocation each), then submit()
//           R x M times.
//   raw     its own instance, device, pipeline and one command buffer,
//           recorded with the same commands Hesper records (the same
//           barriers before, between and after the dispatches, a pipeline
//           and descriptor-set bind per dispatch), then vkQueueSubmit with a
//           fence, vkWaitForFences and vkResetFences R x M times.
//
// Both run in this process on the same physical device. Each of R rounds
// submits M steps per side, the sides taking turns every B steps (and the
// first side alternating between rounds), so that a busy machine slows both
// alike. Every submission is timed on its own: wall time (steady_clock, from
// the submission to the fence) and the submitting thread's CPU time
// (CLOCK_THREAD_CPUTIME_ID: the host work of recording-free replay, without
// the waiting). The figures are medians over all rounds, with the 10th
// percentiles and the per-round ratios as a measure of the noise. The kernel
// increments a counter, so after the run each side's counter must equal the
// number of dispatches it submitted, which is checked.
//
// The benchmark never fails on time: it exits non-zero only on errors (no
// device, a Vulkan call failing, a wrong counter).
//
//===----------------------------------------------------------------------===//

#include "hesper/runtime/Runtime.h"

#ifndef VK_NO_PROTOTYPES
#define VK_NO_PROTOTYPES
#endif
#include <vulkan/vulkan.h>

#include <dlfcn.h>
#include <sched.h>
#include <time.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

using namespace hesper::rt;

namespace {

//===----------------------------------------------------------------------===//
// Options
//===----------------------------------------------------------------------===//

struct Options {
  /// Dispatches per step; one measurement per entry.
  std::vector<uint32_t> dispatchCounts = {1, 32};
  /// Timed submissions per round and per side.
  uint32_t steps = 200;
  /// Rounds; each side runs `steps` submissions per round.
  uint32_t rounds = 10;
  /// Steps a side runs before the other side takes over, within a round.
  uint32_t block = 10;
  /// Untimed submissions per side before the first round.
  uint32_t warmup = 20;
  /// Index of the Vulkan device (as in listDevices); -1 for Hesper's pick.
  int device = -1;
  /// The Khronos validation layer on both sides.
  bool validation = false;
  /// A second raw loop in Hesper's place (an A/A run: the noise floor).
  bool control = false;
  /// CPU to pin the process to before any device is opened (-1: none).
  int pin = -1;
  std::string kernelPath = HESPER_BENCH_KERNEL_DIR "/tick.spv";
};

void printUsage(const char *argv0) {
  std::printf(
      "usage: %s [options]\n"
      "Host cost of replaying K tiny dispatches: Hesper's CommandList against\n"
      "a hand-written Vulkan submit loop on the same device.\n"
      "  --dispatches=K1,K2,..  dispatches per step (default 1,32)\n"
      "  --steps=M              timed submissions per round (default 200)\n"
      "  --rounds=R             rounds, alternating which side goes first\n"
      "                         (default 10)\n"
      "  --block=B              steps a side runs before the other takes\n"
      "                         over within a round (default 10)\n"
      "  --warmup=W             untimed submissions first (default 20)\n"
      "  --device=I             Vulkan device index (default: Hesper's pick)\n"
      "  --validation           Khronos validation layer on both sides\n"
      "  --control              a second raw loop (own device) in Hesper's\n"
      "                         place: what two identical sides measure\n"
      "  --pin=CPU              run the process, and the driver threads it\n"
      "                         starts, on one CPU (steadier on lavapipe)\n"
      "  --kernel=PATH          the assembled tick kernel (default %s)\n",
      argv0, HESPER_BENCH_KERNEL_DIR "/tick.spv");
}

/// Parses a positive 32-bit number; false when `text` is not one.
bool parseCount(const char *text, uint32_t &out) {
  char *end = nullptr;
  unsigned long long v = std::strtoull(text, &end, 10);
  if (!*text || *end || v == 0 || v > 0xffffffffull)
    return false;
  out = static_cast<uint32_t>(v);
  return true;
}

/// Parses the command line; on error prints why and returns false.
bool parseOptions(int argc, char **argv, Options &opts, bool &help) {
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    auto value = [&](const char *flag) -> const char * {
      size_t n = std::strlen(flag);
      if (arg.compare(0, n, flag) == 0 && arg.size() > n && arg[n] == '=')
        return argv[i] + n + 1;
      return nullptr;
    };
    const char *v = nullptr;
    if (arg == "--help" || arg == "-h") {
      help = true;
    } else if (arg == "--validation") {
      opts.validation = true;
    } else if (arg == "--control") {
      opts.control = true;
    } else if ((v = value("--steps"))) {
      if (!parseCount(v, opts.steps))
        return std::fprintf(stderr, "error: bad --steps '%s'\n", v), false;
    } else if ((v = value("--rounds"))) {
      if (!parseCount(v, opts.rounds))
        return std::fprintf(stderr, "error: bad --rounds '%s'\n", v), false;
    } else if ((v = value("--block"))) {
      if (!parseCount(v, opts.block))
        return std::fprintf(stderr, "error: bad --block '%s'\n", v), false;
    } else if ((v = value("--warmup"))) {
      if (!parseCount(v, opts.warmup))
        return std::fprintf(stderr, "error: bad --warmup '%s'\n", v), false;
    } else if ((v = value("--device"))) {
      uint32_t index = 0;
      if (std::strcmp(v, "0") != 0 && !parseCount(v, index))
        return std::fprintf(stderr, "error: bad --device '%s'\n", v), false;
      opts.device = static_cast<int>(index);
    } else if ((v = value("--pin"))) {
      uint32_t cpu = 0;
      if (std::strcmp(v, "0") != 0 && !parseCount(v, cpu))
        return std::fprintf(stderr, "error: bad --pin '%s'\n", v), false;
      opts.pin = static_cast<int>(cpu);
    } else if ((v = value("--kernel"))) {
      opts.kernelPath = v;
    } else if ((v = value("--dispatches"))) {
      opts.dispatchCounts.clear();
      std::string list = v;
      size_t start = 0;
      while (start <= list.size()) {
        size_t comma = list.find(',', start);
        if (comma == std::string::npos)
          comma = list.size();
        std::string item = list.substr(start, comma - start);
        uint32_t k = 0;
        if (!parseCount(item.c_str(), k))
          return std::fprintf(stderr, "error: bad --dispatches '%s'\n", v),
                 false;
        opts.dispatchCounts.push_back(k);
        start = comma + 1;
      }
    } else {
      std::fprintf(stderr, "error: unknown argument '%s' (see --help)\n",
                   argv[i]);
      return false;
    }
  }
  return true;
}

//===----------------------------------------------------------------------===//
// Timing
//===----------------------------------------------------------------------===//

using Clock = std::chrono::steady_clock;

double microsecondsSince(Clock::time_point start) {
  return std::chrono::duration<double, std::micro>(Clock::now() - start)
      .count();
}

/// CPU time consumed so far by the calling thread, in microseconds.
double threadCpuMicroseconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

double median(std::vector<double> values) {
  if (values.empty())
    return 0;
  size_t mid = values.size() / 2;
  std::nth_element(values.begin(), values.begin() + mid, values.end());
  double upper = values[mid];
  if (values.size() % 2)
    return upper;
  double lower = *std::max_element(values.begin(), values.begin() + mid);
  return (lower + upper) / 2;
}

/// The q-quantile (0 <= q <= 1) by nearest rank.
double quantile(std::vector<double> values, double q) {
  if (values.empty())
    return 0;
  size_t rank = static_cast<size_t>(q * (values.size() - 1) + 0.5);
  std::nth_element(values.begin(), values.begin() + rank, values.end());
  return values[rank];
}

/// Reads a whole binary file; an error when it cannot be read or is empty.
Result<std::vector<uint8_t>> readFile(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return Status::error(path + ": cannot open (build the kernels, or pass "
                                "--kernel=PATH)");
  std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)),
                             std::istreambuf_iterator<char>());
  if (bytes.empty() || bytes.size() % 4)
    return Status::error(path + ": not a SPIR-V binary");
  return bytes;
}

//===----------------------------------------------------------------------===//
// The hand-written Vulkan side
//===----------------------------------------------------------------------===//

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

/// Warnings and errors the validation layer reported on the raw side.
std::atomic<uint64_t> rawValidationMessages{0};

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
  Status init(const std::vector<uint8_t> &spirv, const std::string &deviceName,
              bool validation);

  /// The counter's value (waits for the device first).
  Result<uint32_t> readCounter();
  Status resetCounter();

  BENCH_VK_DEVICE_FUNCTIONS(BENCH_VK_DECLARE)

  VkDevice device = VK_NULL_HANDLE;
  VkQueue queue = VK_NULL_HANDLE;
  uint32_t queueFamily = 0;
  VkPipeline pipeline = VK_NULL_HANDLE;
  VkPipelineLayout pipelineLayout = VK_NULL_HANDLE;
  VkDescriptorSet set = VK_NULL_HANDLE;

private:
  Status createInstance(bool validation);
  Status pickPhysicalDevice(const std::string &deviceName);
  Status createDevice();
  Status createCounter();
  Status createPipeline(const std::vector<uint8_t> &spirv);

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

/// One command buffer holding a step of K dispatches, and the fence its
/// submissions wait on.
class RawStep {
public:
  explicit RawStep(RawVulkan &vk) : vk(vk) {}
  RawStep(const RawStep &) = delete;
  RawStep &operator=(const RawStep &) = delete;
  ~RawStep();

  /// Records K dispatches with the commands Hesper's driver records.
  Status record(uint32_t dispatches);
  /// Submits the step and waits for it, as CommandList::submit does.
  Status submit();

private:
  void barrier(VkPipelineStageFlags srcStages, VkAccessFlags srcAccess,
               VkPipelineStageFlags dstStages, VkAccessFlags dstAccess);

  RawVulkan &vk;
  VkCommandPool pool = VK_NULL_HANDLE;
  VkCommandBuffer commands = VK_NULL_HANDLE;
  VkFence fence = VK_NULL_HANDLE;
};

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

//===----------------------------------------------------------------------===//
// The measurement
//===----------------------------------------------------------------------===//

/// Per-submission times of one side.
struct Samples {
  std::vector<double> wallUs; ///< submit to fence, steady_clock
  std::vector<double> cpuUs;  ///< CPU time of the submitting thread

  void append(const Samples &other) {
    wallUs.insert(wallUs.end(), other.wallUs.begin(), other.wallUs.end());
    cpuUs.insert(cpuUs.end(), other.cpuUs.begin(), other.cpuUs.end());
  }
};

/// What one configuration (one K) measured.
struct Measurement {
  uint32_t dispatches = 0;
  /// The side under test (Hesper, or raw2 in a control run) and the raw loop.
  Samples hesper, raw;
  /// Per round: the median tested step over the median raw step of that
  /// round (wall time; a paired comparison under the same machine load).
  std::vector<double> roundRatios;
};

/// Runs `count` submissions of `submit`, appending each one's times to
/// `samples` when `samples` is given.
template <typename SubmitFn>
Status runSteps(SubmitFn &&submit, uint32_t count, Samples *samples) {
  for (uint32_t i = 0; i < count; ++i) {
    double cpuStart = threadCpuMicroseconds();
    Clock::time_point start = Clock::now();
    Status s = submit();
    double wall = microsecondsSince(start);
    double cpu = threadCpuMicroseconds() - cpuStart;
    if (!s)
      return s;
    if (samples) {
      samples->wallUs.push_back(wall);
      samples->cpuUs.push_back(cpu);
    }
  }
  return Status();
}

/// One side of the comparison: a step of K dispatches that can be submitted
/// again and again, and the counter its dispatches increment.
class Side {
public:
  virtual ~Side() = default;
  virtual const char *name() const = 0;
  /// Zeroes the counter and records a step of `dispatches` dispatches.
  virtual Status prepare(uint32_t dispatches) = 0;
  /// Submits the recorded step and waits for it.
  virtual Status submit() = 0;
  virtual Result<uint32_t> readCounter() = 0;
};

/// Hesper: a CommandList on a HAL device.
class HesperSide final : public Side {
public:
  HesperSide(Device &device, Kernel &kernel, Buffer &counter)
      : device(device), kernel(kernel), counter(counter) {}
  const char *name() const override { return "hesper"; }

  Status prepare(uint32_t dispatches) override {
    list.reset();
    const uint32_t zero = 0;
    if (Status s = device.upload(counter, &zero, 4); !s)
      return s;
    Result<std::unique_ptr<CommandList>> created = device.createCommandList();
    if (!created)
      return created.status();
    list = std::move(*created);
    std::vector<Dispatch> step(dispatches);
    for (Dispatch &d : step) {
      d.kernel = &kernel;
      d.bindings = {&counter};
    }
    return list->record(step);
  }

  Status submit() override { return list->submit(); }

  Result<uint32_t> readCounter() override {
    uint32_t value = 0;
    if (Status s = device.download(counter, &value, 4); !s)
      return s;
    return value;
  }

private:
  Device &device;
  Kernel &kernel;
  Buffer &counter;
  std::unique_ptr<CommandList> list;
};

/// The hand-written loop on its own Vulkan device.
class RawSide final : public Side {
public:
  RawSide(RawVulkan &vk, const char *label) : vk(vk), label(label) {}
  const char *name() const override { return label; }

  Status prepare(uint32_t dispatches) override {
    step.reset();
    if (Status s = vk.resetCounter(); !s)
      return s;
    step = std::make_unique<RawStep>(vk);
    return step->record(dispatches);
  }

  Status submit() override { return step->submit(); }
  Result<uint32_t> readCounter() override { return vk.readCounter(); }

private:
  RawVulkan &vk;
  const char *label;
  std::unique_ptr<RawStep> step;
};

/// Measures one K: records both sides, warms them up, runs the rounds and
/// checks the counters. `a` is the side under test (Hesper), `b` the
/// baseline.
Status measure(Side &a, Side &b, const Options &opts, uint32_t k,
               Measurement &m) {
  m.dispatches = k;
  for (Side *side : {&a, &b}) {
    if (Status s = side->prepare(k); !s)
      return Status::error(std::string(side->name()) + ": " + s.message());
    if (Status s =
            runSteps([&] { return side->submit(); }, opts.warmup, nullptr);
        !s)
      return s;
  }
  for (uint32_t round = 0; round < opts.rounds; ++round) {
    // Blocks of `block` steps, the sides taking turns, the first side
    // alternating from round to round.
    bool aNext = round % 2 == 0;
    Samples aRound, bRound;
    uint32_t aLeft = opts.steps, bLeft = opts.steps;
    while (aLeft + bLeft > 0) {
      bool useA = aNext ? aLeft > 0 : bLeft == 0;
      Side &side = useA ? a : b;
      uint32_t &left = useA ? aLeft : bLeft;
      uint32_t n = std::min(left, opts.block);
      if (Status s = runSteps([&] { return side.submit(); }, n,
                              useA ? &aRound : &bRound);
          !s)
        return s;
      left -= n;
      aNext = !useA;
    }
    m.roundRatios.push_back(median(aRound.wallUs) / median(bRound.wallUs));
    m.hesper.append(aRound);
    m.raw.append(bRound);
  }

  // Every dispatch incremented its side's counter once.
  uint64_t expected =
      uint64_t(k) * (opts.warmup + uint64_t(opts.rounds) * opts.steps);
  for (Side *side : {&a, &b}) {
    Result<uint32_t> got = side->readCounter();
    if (!got)
      return got.status();
    if (*got != expected)
      return Status::error(std::string(side->name()) + " counter is " +
                           std::to_string(*got) + ", expected " +
                           std::to_string(expected));
  }
  return Status();
}

int fail(const Status &s) {
  std::fprintf(stderr, "error: %s\n", s.message().c_str());
  return 1;
}

} // namespace

int main(int argc, char **argv) {
  Options opts;
  bool help = false;
  if (!parseOptions(argc, argv, opts, help))
    return 2;
  if (help) {
    printUsage(argv[0]);
    return 0;
  }

  Result<std::vector<uint8_t>> spirv = readFile(opts.kernelPath);
  if (!spirv)
    return fail(spirv.status());

  // Before any device exists, so that the driver's threads inherit it.
  if (opts.pin >= CPU_SETSIZE)
    return fail(
        Status::error("--pin=" + std::to_string(opts.pin) + ": no such CPU"));
  if (opts.pin >= 0) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(opts.pin, &set);
    if (sched_setaffinity(0, sizeof(set), &set) != 0)
      return fail(Status::error("--pin=" + std::to_string(opts.pin) + ": " +
                                std::strerror(errno)));
  }

  DeviceOptions deviceOpts;
  deviceOpts.index = opts.device;
  deviceOpts.validation = opts.validation;
  Result<std::unique_ptr<Device>> device =
      openDevice(Backend::Vulkan, deviceOpts);
  if (!device)
    return fail(device.status());
  const DeviceInfo &info = (*device)->info();

  KernelDesc desc;
  desc.name = "main";
  desc.binary = *spirv;
  desc.numBindings = 1;
  Result<std::unique_ptr<Kernel>> kernel = (*device)->createKernel(desc);
  if (!kernel)
    return fail(kernel.status());
  Result<std::unique_ptr<Buffer>> counter = (*device)->createBuffer(4);
  if (!counter)
    return fail(counter.status());

  RawVulkan raw;
  if (Status s = raw.init(*spirv, info.name, opts.validation); !s)
    return fail(s);
  HesperSide hesperSide(**device, **kernel, **counter);
  RawSide rawSide(raw, "raw");
  // --control: a second hand-written loop on a device of its own takes
  // Hesper's place, so the ratios show what two identical sides measure.
  RawVulkan control;
  RawSide controlSide(control, "raw2");
  if (opts.control) {
    if (Status s = control.init(*spirv, info.name, opts.validation); !s)
      return fail(s);
  }
  Side &tested = opts.control ? static_cast<Side &>(controlSide) : hesperSide;

  std::string pinned =
      opts.pin >= 0 ? ", pinned to CPU " + std::to_string(opts.pin) : "";
  std::printf("hesper-bench-dispatch: %s (%s)%s%s\n", info.name.c_str(),
              deviceTypeName(info.type), pinned.c_str(),
              opts.control ? ", control run: raw2 (a second raw loop) in "
                             "Hesper's place"
                           : "");
  if (opts.pin < 0 && info.type == DeviceType::Cpu)
    std::printf("note: a CPU device's threads move between cores; --pin=CPU "
                "gives steadier figures (see bench/README.md)\n");
  std::printf("each side: %u warm-up steps, then %u rounds of %u timed steps, "
              "the sides taking turns every %u steps\n",
              opts.warmup, opts.rounds, opts.steps, opts.block);

  std::vector<Measurement> results;
  for (uint32_t k : opts.dispatchCounts) {
    Measurement m;
    if (Status s = measure(tested, rawSide, opts, k, m); !s)
      return fail(s);
    results.push_back(std::move(m));
  }

  // The wall-clock medians are the headline. On a shared machine
  // interference only adds time and comes and goes; the 10th percentiles, the
  // per-round ratios (each round's two sides ran interleaved, under the same
  // load) and the submitting thread's CPU time (which leaves out the time
  // spent waiting for a core) show how much of a difference is noise.
  std::printf("\n%-4s %-7s %14s %12s %12s %12s %12s\n", "K", "side",
              "median us/step", "us/dispatch", "p10 us/step", "min us/step",
              "cpu us/step");
  for (const Measurement &m : results) {
    for (bool hesper : {true, false}) {
      const Samples &t = hesper ? m.hesper : m.raw;
      double step = median(t.wallUs);
      std::printf("%-4u %-7s %14.2f %12.3f %12.2f %12.2f %12.2f\n",
                  m.dispatches, hesper ? tested.name() : "raw", step,
                  step / m.dispatches, quantile(t.wallUs, 0.1),
                  *std::min_element(t.wallUs.begin(), t.wallUs.end()),
                  median(t.cpuUs));
    }
  }
  std::printf("\nratio %s/raw (target <= 1.1, on the median wall time)\n",
              tested.name());
  std::printf("%-8s %8s %8s %8s   %s\n", "", "median", "p10", "cpu",
              "per-round medians: median [range]");
  for (const Measurement &m : results) {
    double med = median(m.hesper.wallUs) / median(m.raw.wallUs);
    double p10 = quantile(m.hesper.wallUs, 0.1) / quantile(m.raw.wallUs, 0.1);
    double cpu = median(m.hesper.cpuUs) / median(m.raw.cpuUs);
    auto [lo, hi] =
        std::minmax_element(m.roundRatios.begin(), m.roundRatios.end());
    std::printf("K = %-4u %8.3f %8.3f %8.3f   %.3f [%.3f .. %.3f]  %s\n",
                m.dispatches, med, p10, cpu, median(m.roundRatios), *lo, *hi,
                med <= 1.1 ? "met" : "NOT met");
  }
  if (results.size() >= 2) {
    // The cost of one more dispatch in a step, from the smallest and the
    // largest K: the per-dispatch figure with the fixed cost of a submission
    // taken out.
    const Measurement &lo = results.front(), &hi = results.back();
    if (hi.dispatches != lo.dispatches) {
      double extra = hi.dispatches - lo.dispatches;
      auto marginal = [&](bool hesper, bool cpu) {
        const Samples &a = hesper ? lo.hesper : lo.raw;
        const Samples &b = hesper ? hi.hesper : hi.raw;
        return cpu ? (median(b.cpuUs) - median(a.cpuUs)) / extra
                   : (median(b.wallUs) - median(a.wallUs)) / extra;
      };
      std::printf("\none more dispatch in a step (medians, K=%u vs K=%u): "
                  "wall %s %.3f us, raw %.3f us; cpu %s %.3f us, raw %.3f "
                  "us\n",
                  hi.dispatches, lo.dispatches, tested.name(),
                  marginal(true, false), marginal(false, false), tested.name(),
                  marginal(true, true), marginal(false, true));
    }
  }

  if (opts.validation) {
    uint64_t messages = validationMessageCount() + rawValidationMessages;
    std::printf("validation: %llu messages\n",
                static_cast<unsigned long long>(messages));
    if (messages)
      return 1;
  }
  return 0;
}
