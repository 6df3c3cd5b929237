//===- Mgpu.cpp - Upstream MLIR's GPU runtime calls on the Hesper HAL -----===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//
//
// See Mgpu.h. The signatures are those upstream's `gpu-to-llvm` and the
// gpu.binary translation emit calls to (LLVM 22).
//
//===----------------------------------------------------------------------===//

#include "hesper/runtime/Mgpu.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <thread>
#include <tuple>

using namespace hesper::rt;

//===----------------------------------------------------------------------===//
// Module images
//===----------------------------------------------------------------------===//

namespace {
constexpr char kMagic[8] = {'H', 'S', 'P', 'G', 'P', 'U', '0', '3'};

struct Writer {
  std::vector<uint8_t> out;
  void u32(uint32_t v) {
    for (int i = 0; i < 4; ++i)
      out.push_back(static_cast<uint8_t>(v >> (8 * i)));
  }
  void bytes(const void *data, size_t size) {
    u32(static_cast<uint32_t>(size));
    auto *p = static_cast<const uint8_t *>(data);
    out.insert(out.end(), p, p + size);
  }
};

struct Reader {
  const uint8_t *p, *end;
  bool failed = false;
  uint32_t u32() {
    if (end - p < 4) {
      failed = true;
      return 0;
    }
    uint32_t v = 0;
    for (int i = 0; i < 4; ++i)
      v |= static_cast<uint32_t>(p[i]) << (8 * i);
    p += 4;
    return v;
  }
  std::vector<uint8_t> bytes() {
    uint32_t size = u32();
    if (failed || static_cast<size_t>(end - p) < size) {
      failed = true;
      return {};
    }
    std::vector<uint8_t> v(p, p + size);
    p += size;
    return v;
  }
};
} // namespace

std::vector<uint8_t>
hesper::rt::encodeGpuModuleImage(const GpuModuleImage &image) {
  Writer w;
  w.out.assign(kMagic, kMagic + sizeof(kMagic));
  w.bytes(image.format.data(), image.format.size());
  w.bytes(image.binary.data(), image.binary.size());
  w.bytes(image.source.data(), image.source.size());
  w.u32(static_cast<uint32_t>(image.kernels.size()));
  for (const GpuKernelImage &k : image.kernels) {
    w.bytes(k.name.data(), k.name.size());
    for (uint32_t s : k.workgroupSize)
      w.u32(s);
    w.u32(k.sharedBytes);
    w.u32(static_cast<uint32_t>(k.args.size()));
    for (const GpuKernelArg &a : k.args) {
      w.u32(a.kind);
      w.u32(a.rank);
      w.u32(a.bytes);
      w.u32(a.passSizes);
    }
    w.u32(k.printWords);
    w.u32(static_cast<uint32_t>(k.printFormats.size()));
    for (const GpuPrintFormat &f : k.printFormats) {
      w.bytes(f.format.data(), f.format.size());
      w.bytes(f.kinds.data(), f.kinds.size());
    }
  }
  return std::move(w.out);
}

Result<GpuModuleImage> hesper::rt::decodeGpuModuleImage(const uint8_t *data,
                                                        size_t size) {
  if (size < sizeof(kMagic) || std::memcmp(data, kMagic, sizeof(kMagic)) != 0)
    return Status::error("not a Hesper GPU module image (bad magic)");
  Reader r{data + sizeof(kMagic), data + size};
  GpuModuleImage image;
  std::vector<uint8_t> format = r.bytes();
  image.format.assign(format.begin(), format.end());
  image.binary = r.bytes();
  std::vector<uint8_t> source = r.bytes();
  image.source.assign(source.begin(), source.end());
  uint32_t kernels = r.u32();
  for (uint32_t i = 0; i < kernels && !r.failed; ++i) {
    GpuKernelImage k;
    std::vector<uint8_t> name = r.bytes();
    k.name.assign(name.begin(), name.end());
    for (uint32_t &s : k.workgroupSize)
      s = r.u32();
    k.sharedBytes = r.u32();
    uint32_t args = r.u32();
    if (args > 4096)
      r.failed = true;
    for (uint32_t j = 0; j < args && !r.failed; ++j) {
      GpuKernelArg a;
      uint32_t kind = r.u32();
      a.kind = kind == 1 ? GpuKernelArg::Scalar : GpuKernelArg::MemRef;
      a.rank = r.u32();
      a.bytes = r.u32();
      a.passSizes = r.u32();
      if (kind > 1 || a.rank > 64 || a.bytes == 0 || a.bytes > 64 ||
          a.passSizes > 1 || (a.passSizes && kind != 0))
        r.failed = true;
      k.args.push_back(a);
    }
    k.printWords = r.u32();
    uint32_t formats = r.u32();
    if (formats > 65536)
      r.failed = true;
    for (uint32_t j = 0; j < formats && !r.failed; ++j) {
      GpuPrintFormat f;
      std::vector<uint8_t> text = r.bytes(), kinds = r.bytes();
      f.format.assign(text.begin(), text.end());
      f.kinds.assign(kinds.begin(), kinds.end());
      if (f.kinds.find_first_not_of("fil") != std::string::npos)
        r.failed = true;
      k.printFormats.push_back(std::move(f));
    }
    image.kernels.push_back(std::move(k));
  }
  if (r.failed || r.p != r.end)
    return Status::error("truncated or malformed Hesper GPU module image");
  return image;
}

//===----------------------------------------------------------------------===//
// printf records
//===----------------------------------------------------------------------===//

namespace {
/// One conversion of `format` at `at` (just past its '%'): the spec with
/// its length modifiers dropped, and its conversion character.
struct Conversion {
  std::string spec; ///< "%-8.3" (without the conversion)
  char conv = 0;
  size_t end = 0; ///< past the conversion character
};

Conversion parseConversion(const std::string &format, size_t at) {
  Conversion c;
  c.spec = "%";
  size_t i = at;
  while (i < format.size() && std::strchr("-+ #0", format[i]))
    c.spec += format[i++];
  while (i < format.size() &&
         (std::isdigit(static_cast<unsigned char>(format[i])) ||
          format[i] == '.'))
    c.spec += format[i++];
  while (i < format.size() && std::strchr("hlLqjzt", format[i]))
    ++i; // the argument's own kind says its width
  if (i < format.size())
    c.conv = format[i++];
  c.end = i;
  return c;
}

/// One record formatted: each conversion takes the next argument word(s),
/// an integer widened to 64 bits (unsigned conversions read a 32-bit word
/// as unsigned, as C's promotion of a 32-bit unsigned would), a float as a
/// double.
std::string formatRecord(const GpuPrintFormat &f, const uint32_t *words) {
  std::string out;
  size_t arg = 0, word = 0;
  char buffer[512];
  for (size_t i = 0; i < f.format.size();) {
    if (f.format[i] != '%') {
      out += f.format[i++];
      continue;
    }
    if (i + 1 < f.format.size() && f.format[i + 1] == '%') {
      out += '%';
      i += 2;
      continue;
    }
    Conversion c = parseConversion(f.format, i + 1);
    i = c.end;
    if (arg >= f.kinds.size()) {
      out += "<missing argument>";
      continue;
    }
    char kind = f.kinds[arg++];
    uint64_t bits = words[word++];
    if (kind == 'l')
      bits |= uint64_t(words[word++]) << 32;
    double real = 0;
    if (kind == 'f') {
      float value;
      uint32_t w = static_cast<uint32_t>(bits);
      std::memcpy(&value, &w, sizeof(value));
      real = value;
    }
    bool isSigned = kind != 'f' && !std::strchr("uxXoc", c.conv);
    int64_t integer =
        kind == 'i' ? (isSigned ? int64_t(int32_t(uint32_t(bits)))
                                : int64_t(uint32_t(bits)))
                    : int64_t(bits);
    if (std::strchr("fFeEgGaA", c.conv)) {
      std::snprintf(buffer, sizeof(buffer), (c.spec + c.conv).c_str(),
                    kind == 'f' ? real : double(integer));
    } else if (std::strchr("diuxXoc", c.conv)) {
      std::string spec = c.spec + (c.conv == 'c' ? "" : "ll") + c.conv;
      if (c.conv == 'c')
        std::snprintf(buffer, sizeof(buffer), spec.c_str(), int(integer));
      else
        std::snprintf(buffer, sizeof(buffer), spec.c_str(),
                      static_cast<long long>(kind == 'f' ? int64_t(real)
                                                         : integer));
    } else {
      std::snprintf(buffer, sizeof(buffer), "%%%c", c.conv);
    }
    out += buffer;
  }
  return out;
}
} // namespace

std::string
hesper::rt::formatPrintRecords(const std::vector<GpuPrintFormat> &formats,
                               const std::vector<uint32_t> &words) {
  if (words.empty())
    return "";
  uint64_t used = words[0];
  struct Record {
    uint32_t group, nth, thread;
    size_t at;
  };
  std::vector<Record> records;
  std::map<std::pair<uint32_t, uint32_t>, uint32_t> seen;
  size_t at = 1;
  while (at < words.size() && at - 1 < used) {
    uint32_t index = words[at];
    if (index >= formats.size() || at + 3 > words.size())
      break;
    const std::string &kinds = formats[index].kinds;
    size_t size = 3 + kinds.size() + std::count(kinds.begin(), kinds.end(), 'l');
    if (at + size > words.size())
      break;
    uint32_t group = words[at + 1], thread = words[at + 2];
    records.push_back({group, seen[{group, thread}]++, thread, at});
    at += size;
  }
  // What the count reserved past the buffer's end was not written.
  bool dropped = used + 1 > words.size();
  std::stable_sort(records.begin(), records.end(),
                   [](const Record &a, const Record &b) {
                     return std::tie(a.group, a.nth, a.thread) <
                            std::tie(b.group, b.nth, b.thread);
                   });
  std::string out;
  for (const Record &r : records)
    out += formatRecord(formats[words[r.at]], &words[r.at + 3]);
  if (dropped)
    out += "(some printf records did not fit in the " +
           std::to_string(words.size() * 4) + "-byte print buffer)\n";
  return out;
}

//===----------------------------------------------------------------------===//
// State
//===----------------------------------------------------------------------===//

namespace {

/// A range of host addresses and the device buffer that holds (or mirrors)
/// it.
struct Allocation {
  std::unique_ptr<Buffer> buffer;
  uint8_t *host = nullptr;
  size_t bytes = 0;
  /// The host's copy is the current one between launches (host-registered
  /// memory, host_shared allocations): uploaded before each launch that
  /// binds it, read back after.
  bool hostIsCurrent = false;
  /// gpu.alloc's: `host` was allocated here (a shadow, or the buffer's own
  /// memory when `shared`) and goes with it.
  bool ownsHost = false;
  /// Host registrations of this range not yet undone.
  unsigned registrations = 0;
  /// `host` is the device buffer's own memory (Device::hostAddress): host
  /// and kernels share the bytes, and nothing is ever copied.
  bool shared = false;
};

struct KernelHandle {
  GpuKernelImage image;
  /// Null for a kernel compiled at launch, whose `variants` are.
  std::unique_ptr<Kernel> kernel;
  /// A kernel compiled at launch: its module's source, and the kernel
  /// compiled for each block size launched so far.
  const std::string *source = nullptr;
  std::map<std::array<uint32_t, 3>, std::unique_ptr<KernelHandle>> variants;
};

struct ModuleHandle {
  GpuModuleImage image;
  /// Created on first lookup: the host code looks a kernel up before
  /// every launch of it.
  std::map<std::string, std::unique_ptr<KernelHandle>> kernels;
};

struct State {
  std::mutex mutex;
  Device *device = nullptr;
  GpuKernelCompiler compiler;
  bool launchTimes = false;
  /// Keyed by start address.
  std::map<uintptr_t, Allocation> allocations;
};

State &state() {
  static State s;
  return s;
}

/// Ends the process with one error line. _Exit, not exit: the caller may
/// hold the state's lock, and static destructors would tear down buffers
/// of a device still in use.
[[noreturn]] void fail(const std::string &message) {
  std::fflush(nullptr);
  std::fprintf(stderr, "error: %s\n", message.c_str());
  std::fflush(stderr);
  std::_Exit(1);
}

Device &device() {
  if (!state().device)
    fail("a GPU runtime call ran with no device open");
  return *state().device;
}

void check(const Status &status, const char *what) {
  if (!status.ok())
    fail(std::string(what) + ": " + status.message());
}

/// The allocation that contains `p`, or null.
Allocation *find(const void *p) {
  auto &all = state().allocations;
  auto address = reinterpret_cast<uintptr_t>(p);
  auto it = all.upper_bound(address);
  if (it == all.begin())
    return nullptr;
  --it;
  // An empty range still names its own address.
  if (address >= it->first + std::max<size_t>(it->second.bytes, 1))
    return nullptr;
  return &it->second;
}

/// Device buffers are made whole 32-bit words (Vulkan's fill and copy
/// work in words).
size_t bufferBytes(size_t bytes) { return bytes == 0 ? 4 : (bytes + 3) & ~size_t(3); }

std::unique_ptr<Buffer> newBuffer(size_t bytes) {
  auto buffer = device().createBuffer(bufferBytes(bytes));
  if (!buffer.ok())
    fail("cannot allocate " + std::to_string(bytes) +
         " bytes of device memory: " + buffer.status().message());
  check(device().fill(**buffer, 0), "clearing device memory");
  return std::move(*buffer);
}

/// Copies between host memory and bytes [offset, offset + bytes) of an
/// allocation's device buffer (the drivers take any offset and size).
void writeDevice(Allocation &a, size_t offset, const void *src, size_t bytes) {
  check(device().upload(*a.buffer, src, bytes, offset), "copying to the device");
}

void readDevice(Allocation &a, size_t offset, void *dst, size_t bytes) {
  check(device().download(*a.buffer, dst, bytes, offset),
        "copying from the device");
}

/// Device memory whose device copy is the current one (and not the same
/// bytes as the host's).
bool onDevice(const Allocation *a) {
  return a && !a->hostIsCurrent && !a->shared;
}

/// Host memory mirrored by a device buffer: copied there before a launch
/// that binds it, and back after.
bool isMirror(const Allocation *a) { return a->hostIsCurrent && !a->shared; }

void registerRange(uint8_t *host, size_t bytes) {
  std::lock_guard<std::mutex> lock(state().mutex);
  if (Allocation *existing = find(host)) {
    if (existing->host == host && existing->bytes == bytes) {
      ++existing->registrations;
      return;
    }
    fail("gpu.host_register of memory that overlaps memory already "
         "registered or allocated");
  }
  // A range that starts inside the new one (the new one may also enclose
  // it whole).
  auto next = state().allocations.lower_bound(reinterpret_cast<uintptr_t>(host));
  if (next != state().allocations.end() &&
      next->first < reinterpret_cast<uintptr_t>(host) + std::max<size_t>(bytes, 1))
    fail("gpu.host_register of memory that overlaps memory already "
         "registered or allocated");
  Allocation a;
  a.buffer = newBuffer(bytes);
  a.host = host;
  a.bytes = bytes;
  a.hostIsCurrent = true;
  a.registrations = 1;
  state().allocations[reinterpret_cast<uintptr_t>(host)] = std::move(a);
}

void unregisterRange(uint8_t *host) {
  std::lock_guard<std::mutex> lock(state().mutex);
  auto it = state().allocations.find(reinterpret_cast<uintptr_t>(host));
  if (it == state().allocations.end() || it->second.ownsHost)
    fail("gpu.host_unregister of memory that is not registered");
  if (--it->second.registrations == 0)
    state().allocations.erase(it);
}

/// The memref descriptor upstream passes: allocated and aligned pointers,
/// offset, then `rank` sizes and `rank` strides.
struct Descriptor {
  void *allocated;
  void *aligned;
  int64_t offset;
  int64_t sizesAndStrides[1];
};

/// Bytes a contiguous memref of `rank` covers, from its descriptor.
size_t memrefBytes(int64_t rank, const Descriptor *d, int64_t elementBytes) {
  int64_t elements = 1;
  for (int64_t i = 0; i < rank; ++i)
    elements *= d->sizesAndStrides[i];
  return static_cast<size_t>(elements * elementBytes);
}

/// Bytes a memref view of `rank` reaches from its first element, from the
/// launch parameters that hold its sizes and then its strides.
size_t viewBytes(uint32_t rank, void **sizesAndStrides, int64_t elementBytes) {
  int64_t last = 0;
  for (uint32_t d = 0; d < rank; ++d) {
    int64_t size = *static_cast<int64_t *>(sizesAndStrides[d]);
    int64_t stride = *static_cast<int64_t *>(sizesAndStrides[rank + d]);
    if (size <= 0)
      return 0;
    last += (size - 1) * stride;
  }
  return static_cast<size_t>((last + 1) * elementBytes);
}

/// An allocation or registration that overlaps [host, host + bytes).
Allocation *findOverlap(const uint8_t *host, size_t bytes) {
  if (Allocation *a = find(host))
    return a;
  auto next =
      state().allocations.lower_bound(reinterpret_cast<uintptr_t>(host));
  if (next != state().allocations.end() &&
      next->first < reinterpret_cast<uintptr_t>(host) + std::max<size_t>(bytes, 1))
    return &next->second;
  return nullptr;
}

/// gpu.memset of `count` values.
template <typename T> void fillMemory(void *dst, T value, size_t count) {
  std::lock_guard<std::mutex> lock(state().mutex);
  std::vector<T> values(count, value);
  size_t bytes = count * sizeof(T);
  Allocation *d = find(dst);
  if (d && static_cast<uint8_t *>(dst) + bytes > d->host + d->bytes)
    fail("gpu.memset past the end of an allocation");
  if (onDevice(d))
    writeDevice(*d, static_cast<uint8_t *>(dst) - d->host, values.data(), bytes);
  else
    std::memcpy(dst, values.data(), bytes);
}

//===----------------------------------------------------------------------===//
// Streams and events
//===----------------------------------------------------------------------===//
//
// A stream is a queue of work (launches, copies, fills, frees) carried out
// in order. The host code's calls queue work and return; the work is done
// when something waits for it. The thread that waits for a stream does that
// stream's work itself, unless another thread is already doing it. Before
// any thread blocks -- on a stream, or on an event, from the host or from a
// stream -- every other stream with work waiting and no thread doing it
// gets a thread of its own. So kernels on two streams run at the same time
// (one may wait for the other, as on a GPU), and a program that only
// launches synchronously (a stream created, used, waited for and destroyed
// per call, as gpu-to-llvm lowers it) never starts a thread.

struct Stream {
  std::deque<std::function<void()>> work;
  /// A thread is doing this stream's work (it stops when the queue is
  /// empty).
  bool busy = false;
  /// The last thread started for this stream (joined before the next).
  std::thread helper;
};

struct Event {
  /// Records asked for so far, and records the streams have reached; a
  /// wait is for the records asked for when the wait was asked for.
  uint64_t recorded = 0;
  uint64_t reached = 0;
};

struct Streams {
  std::mutex mutex;
  std::condition_variable changed;
  std::set<Stream *> all;
};

Streams &streams() {
  static Streams s;
  return s;
}

/// Queues `work` on `stream`; a null stream (none given) does it now.
void enqueue(void *stream, std::function<void()> work) {
  if (!stream) {
    work();
    return;
  }
  std::lock_guard<std::mutex> lock(streams().mutex);
  static_cast<Stream *>(stream)->work.push_back(std::move(work));
}

/// Does `stream`'s work on this thread until its queue is empty; the caller
/// has marked it busy.
void drain(Stream *stream) {
  std::unique_lock<std::mutex> lock(streams().mutex);
  while (!stream->work.empty()) {
    std::function<void()> next = std::move(stream->work.front());
    stream->work.pop_front();
    lock.unlock();
    next();
    lock.lock();
  }
  stream->busy = false;
  streams().changed.notify_all();
}

/// Starts a thread for every stream but `except` that has work waiting and
/// no thread doing it. Called with the streams' lock held.
void startHelpers(Stream *except) {
  for (Stream *s : streams().all) {
    if (s == except || s->busy || s->work.empty())
      continue;
    s->busy = true;
    // The previous helper has left drain (it cleared busy) and does
    // nothing more.
    if (s->helper.joinable())
      s->helper.join();
    s->helper = std::thread(drain, s);
  }
}

/// Returns when every piece of work queued on `stream` so far is done.
void synchronize(Stream *stream) {
  std::unique_lock<std::mutex> lock(streams().mutex);
  startHelpers(stream);
  if (!stream->busy && !stream->work.empty()) {
    stream->busy = true;
    lock.unlock();
    drain(stream);
    return;
  }
  streams().changed.wait(
      lock, [&] { return !stream->busy && stream->work.empty(); });
}

/// Returns when the streams have reached `event`'s record number `target`.
void waitForEvent(Event *event, uint64_t target) {
  std::unique_lock<std::mutex> lock(streams().mutex);
  startHelpers(nullptr);
  streams().changed.wait(lock, [&] { return event->reached >= target; });
}

/// The streams that exist now.
std::vector<Stream *> allStreams() {
  std::lock_guard<std::mutex> lock(streams().mutex);
  return {streams().all.begin(), streams().all.end()};
}

/// Does all work queued on every stream (the program has returned, or a
/// module is unloaded).
void finishAllStreams() {
  for (Stream *s : allStreams())
    synchronize(s);
}

/// Ends a stream whose work is done.
void destroyStream(Stream *stream) {
  std::lock_guard<std::mutex> lock(streams().mutex);
  if (stream->helper.joinable())
    stream->helper.join();
  streams().all.erase(stream);
  delete stream;
}

} // namespace

void hesper::rt::setMgpuLaunchTimes(bool print) {
  std::lock_guard<std::mutex> lock(state().mutex);
  state().launchTimes = print;
}

void hesper::rt::setMgpuKernelCompiler(GpuKernelCompiler compiler) {
  std::lock_guard<std::mutex> lock(state().mutex);
  state().compiler = std::move(compiler);
}

void hesper::rt::setMgpuDevice(Device *device) {
  finishAllStreams();
  if (!device) {
    // Streams the program never waited for: their work is done.
    for (Stream *s : allStreams())
      destroyStream(s);
  }
  std::lock_guard<std::mutex> lock(state().mutex);
  state().device = device;
  if (device)
    return;
  // The program has ended: what it allocated and never freed goes, as a
  // driver frees a context's memory when the context is destroyed.
  for (auto &entry : state().allocations)
    if (entry.second.ownsHost && !entry.second.shared)
      std::free(entry.second.host);
  state().allocations.clear();
}

//===----------------------------------------------------------------------===//
// The C functions
//===----------------------------------------------------------------------===//

extern "C" {

static void *mgpuModuleLoad(void *data, size_t size) {
  auto image = decodeGpuModuleImage(static_cast<const uint8_t *>(data), size);
  if (!image.ok())
    fail("loading a kernel module: " + image.status().message());
  auto module = std::make_unique<ModuleHandle>();
  module->image = std::move(*image);
  return module.release();
}

static void *mgpuModuleLoadJIT(void *, int, size_t) {
  fail("kernel modules in assembly form are not loaded by Hesper's runtime; "
       "hesper-run compiles the kernels itself");
}

static void mgpuModuleUnload(void *module) {
  finishAllStreams();
  delete static_cast<ModuleHandle *>(module);
}

/// Kernel `k` of `module` on the device: created now, unless it is
/// compiled at launch (then only its signature and source are kept).
static std::unique_ptr<KernelHandle>
makeKernelHandle(const GpuModuleImage &module, const GpuKernelImage &k) {
  auto handle = std::make_unique<KernelHandle>();
  handle->image = k;
  if (k.workgroupSize[0] == 0) {
    handle->source = &module.source;
    return handle;
  }
  KernelDesc desc;
  desc.name = k.name;
  desc.binary = module.binary;
  desc.format = module.format;
  // A memref whose sizes the kernel takes has them as the next binding;
  // a kernel that prints takes the print buffer after its arguments.
  desc.numBindings = static_cast<uint32_t>(k.args.size()) +
                     (k.printFormats.empty() ? 0 : 1);
  for (const GpuKernelArg &a : k.args)
    desc.numBindings += a.passSizes;
  desc.sharedMemoryBytes = k.sharedBytes;
  for (int i = 0; i < 3; ++i)
    desc.workgroupSize[i] = k.workgroupSize[i];
  auto kernel = device().createKernel(desc);
  if (!kernel.ok())
    fail("creating kernel '" + k.name + "': " + kernel.status().message());
  handle->kernel = std::move(*kernel);
  return handle;
}

static void *mgpuModuleGetFunction(void *module, const char *name) {
  auto *m = static_cast<ModuleHandle *>(module);
  std::lock_guard<std::mutex> lock(state().mutex);
  if (auto it = m->kernels.find(name); it != m->kernels.end())
    return it->second.get();
  for (const GpuKernelImage &k : m->image.kernels) {
    if (k.name != name)
      continue;
    KernelHandle *result =
        (m->kernels[k.name] = makeKernelHandle(m->image, k)).get();
    return result;
  }
  fail(std::string("the kernel module has no kernel named '") + name + "'");
}

/// Kernel `k` compiled for `block`, where it is compiled at launch: the
/// compiler's image of it, made on the first launch with that size.
static KernelHandle *variantFor(KernelHandle *k, const intptr_t block[3]) {
  std::lock_guard<std::mutex> lock(state().mutex);
  std::array<uint32_t, 3> size;
  for (int i = 0; i < 3; ++i) {
    if (block[i] < 1 || block[i] > 65536)
      fail("kernel '" + k->image.name + "' is launched with a block size of " +
           std::to_string(block[i]) + " in dimension " + std::to_string(i));
    size[i] = static_cast<uint32_t>(block[i]);
  }
  if (auto it = k->variants.find(size); it != k->variants.end())
    return it->second.get();
  if (!state().compiler)
    fail("kernel '" + k->image.name + "' is compiled at launch (its block "
         "size is known only then), and no compiler is at hand");
  Result<GpuModuleImage> compiled =
      state().compiler(*k->source, k->image.name, size.data());
  if (!compiled.ok())
    fail("compiling kernel '" + k->image.name + "' for a block of " +
         std::to_string(size[0]) + "x" + std::to_string(size[1]) + "x" +
         std::to_string(size[2]) + ": " + compiled.status().message());
  for (const GpuKernelImage &image : compiled->kernels) {
    if (image.name != k->image.name)
      continue;
    // The variant's own image: its print formats, its workgroup memory.
    std::unique_ptr<KernelHandle> variant = makeKernelHandle(*compiled, image);
    if (!variant->kernel || image.args.size() != k->image.args.size())
      fail("compiling kernel '" + k->image.name +
           "' at launch gave a kernel of another signature");
    return (k->variants[size] = std::move(variant)).get();
  }
  fail("compiling kernel '" + k->image.name + "' at launch gave no such kernel");
}

/// A launch as the host code asked for it, with the values of its
/// parameters copied (the host's parameter array lives only for the call;
/// the launch may run later, on another thread).
struct Launch {
  KernelHandle *kernel;
  uint32_t grid[3];
  /// One slot of 8 bytes per memref field, `bytes` rounded up to 8 per
  /// scalar; `params` points into it as the host's array did.
  std::vector<uint64_t> values;
  std::vector<void *> params;
};

/// Runs one launch to completion: binds its arguments (mirrored and plain
/// host memory copied to the device), submits, copies back, and prints what
/// the kernel printed and, when asked, the launch's times.
static void runLaunch(Launch &launch) {
  using Clock = std::chrono::steady_clock;
  Clock::time_point begin = Clock::now();
  KernelHandle *k = launch.kernel;
  const GpuKernelImage &image = k->image;
  void **params = launch.params.data();
  std::unique_lock<std::mutex> lock(state().mutex);
  Dispatch dispatch;
  dispatch.kernel = k->kernel.get();
  for (int i = 0; i < 3; ++i)
    dispatch.grid[i] = launch.grid[i];
  std::vector<Allocation *> mirrored;
  std::vector<std::unique_ptr<Buffer>> scalars;
  // Plain host memory (never allocated or registered with the GPU) is
  // bound for this launch alone, as upstream's Vulkan runner binds the
  // memrefs it is given: copied to a device buffer before, back after.
  std::vector<std::unique_ptr<Allocation>> transient;
  size_t p = 0;
  for (size_t index = 0; index < image.args.size(); ++index) {
    const GpuKernelArg &arg = image.args[index];
    size_t count = arg.kind == GpuKernelArg::MemRef ? 3 + 2 * arg.rank : 1;
    std::string what =
        "argument #" + std::to_string(index) + " of kernel '" + image.name + "'";
    if (arg.kind == GpuKernelArg::Scalar) {
      scalars.push_back(newBuffer(arg.bytes));
      check(device().upload(*scalars.back(), params[p], arg.bytes, 0),
            "passing a scalar argument");
      dispatch.bindings.push_back(scalars.back().get());
      p += count;
      continue;
    }
    auto *aligned = *static_cast<uint8_t **>(params[p + 1]);
    int64_t offset = *static_cast<int64_t *>(params[p + 2]);
    uint8_t *data = aligned + offset * static_cast<int64_t>(arg.bytes);
    const size_t bytes = viewBytes(arg.rank, &params[p + 3], arg.bytes);
    Allocation *a = find(data);
    if (!a) {
      for (const auto &t : transient) {
        bool overlaps = data < t->host + t->bytes && t->host < data + bytes;
        if (t->host == data && t->bytes == bytes)
          a = t.get();
        else if (overlaps)
          fail(what + " overlaps another argument's host memory in a "
                      "different view; pass one view, or gpu.host_register "
                      "the memory");
      }
      if (!a) {
        if (Allocation *inside = findOverlap(data, bytes))
          fail(what + " overlaps memory allocated or registered with the "
                      "GPU (at byte " +
               std::to_string(inside->host - data) + " of the view)");
        transient.push_back(std::make_unique<Allocation>());
        a = transient.back().get();
        a->buffer = newBuffer(bytes);
        a->host = data;
        a->bytes = bytes;
        a->hostIsCurrent = true;
      }
    }
    if (a->host != data)
      fail(what + " starts " + std::to_string(data - a->host) +
           " bytes into its allocation; Hesper binds whole allocations, so "
           "pass the allocation itself");
    // The bytes the view reaches must lie in the allocation.
    if (bytes > a->bytes)
      fail(what + " reaches past the end of its allocation");
    if (isMirror(a) &&
        std::find(mirrored.begin(), mirrored.end(), a) == mirrored.end()) {
      writeDevice(*a, 0, a->host, a->bytes);
      mirrored.push_back(a);
    }
    dispatch.bindings.push_back(a->buffer.get());
    if (arg.passSizes) {
      // The view's sizes, for a kernel that takes its buffer as a pointer.
      std::vector<int64_t> sizes(arg.rank);
      for (uint32_t d = 0; d < arg.rank; ++d)
        sizes[d] = *static_cast<int64_t *>(params[p + 3 + d]);
      scalars.push_back(newBuffer(std::max<size_t>(sizes.size(), 1) * 8));
      if (!sizes.empty())
        check(device().upload(*scalars.back(), sizes.data(), sizes.size() * 8),
              "passing a memref's sizes");
      dispatch.bindings.push_back(scalars.back().get());
    }
    p += count;
  }
  // The print buffer, its count cleared.
  std::unique_ptr<Buffer> printBuffer;
  if (!image.printFormats.empty()) {
    printBuffer = newBuffer(size_t(image.printWords) * 4);
    const uint32_t zero = 0;
    check(device().upload(*printBuffer, &zero, sizeof(zero)),
          "clearing the print buffer");
    dispatch.bindings.push_back(printBuffer.get());
  }
  bool timing = state().launchTimes;
  auto list = device().createCommandList(timing);
  if (!list.ok())
    fail("launching kernel '" + image.name + "': " + list.status().message());
  check((*list)->record({dispatch}), "recording a kernel launch");
  // On the CPU device, whose driver takes submissions from several threads
  // at once, other streams' launches may run meanwhile (one may wait for
  // this one). The other drivers are used from one thread at a time.
  bool overlap = device().info().backend == Backend::Cpu;
  if (overlap)
    lock.unlock();
  Clock::time_point submitted = Clock::now();
  check((*list)->submit(), "running a kernel");
  if (overlap)
    lock.lock();
  for (Allocation *a : mirrored)
    readDevice(*a, 0, a->host, a->bytes);
  Clock::time_point done = Clock::now();
  if (printBuffer) {
    // What the launch printed, before the next launch prints anything.
    uint32_t used = 0;
    check(device().download(*printBuffer, &used, sizeof(used)),
          "reading the print buffer");
    std::vector<uint32_t> words(
        std::min<uint64_t>(uint64_t(used) + 1, image.printWords));
    check(device().download(*printBuffer, words.data(), words.size() * 4),
          "reading the print buffer");
    words[0] = used;
    std::string text = formatPrintRecords(image.printFormats, words);
    std::fwrite(text.data(), 1, text.size(), stdout);
    std::fflush(stdout);
  }
  if (timing) {
    // The lines upstream's Vulkan runtime prints after each launch. The
    // submission here waits for the kernel, so "submit" is the time to
    // bind and record the launch, and "wait" the submission and the
    // copies back; the kernel's own time is the device's (timestamps on
    // Vulkan and CUDA, the clock on the CPU).
    auto us = [](Clock::duration d) {
      return std::chrono::duration_cast<std::chrono::microseconds>(d).count();
    };
    std::vector<double> kernelNs = (*list)->lastKernelTimesNs();
    if (!kernelNs.empty())
      std::printf("Compute shader execution time: %.1fus\n",
                  kernelNs[0] / 1000.0);
    std::printf("Command buffer submit time: %lldus\nWait idle time: %lldus\n",
                static_cast<long long>(us(submitted - begin)),
                static_cast<long long>(us(done - submitted)));
    std::fflush(stdout);
  }
}

static void mgpuLaunchKernel(void *function, intptr_t gridX, intptr_t gridY,
                             intptr_t gridZ, intptr_t blockX, intptr_t blockY,
                             intptr_t blockZ, int32_t sharedBytes, void *stream,
                             void **params, void **, size_t paramCount) {
  auto *k = static_cast<KernelHandle *>(function);
  const intptr_t block[3] = {blockX, blockY, blockZ};
  if (!k->kernel)
    k = variantFor(k, block);
  const GpuKernelImage &image = k->image;
  for (int i = 0; i < 3; ++i)
    if (block[i] != static_cast<intptr_t>(image.workgroupSize[i]))
      fail("kernel '" + image.name + "' was compiled for a block of " +
           std::to_string(image.workgroupSize[0]) + "x" +
           std::to_string(image.workgroupSize[1]) + "x" +
           std::to_string(image.workgroupSize[2]) +
           " threads and launched with " + std::to_string(blockX) + "x" +
           std::to_string(blockY) + "x" + std::to_string(blockZ));
  if (sharedBytes != 0)
    fail("kernel '" + image.name +
         "' is launched with dynamic shared memory, which Hesper's "
         "backends do not provide; use a workgroup memory attribution");
  const intptr_t grid[3] = {gridX, gridY, gridZ};
  const DeviceInfo &info = device().info();
  for (int i = 0; i < 3; ++i)
    if (grid[i] < 1 || static_cast<uint64_t>(grid[i]) > info.maxWorkgroupCount[i])
      fail("kernel '" + image.name + "' is launched with " +
           std::to_string(grid[i]) + " blocks in dimension " +
           std::to_string(i) + ", outside 1.." +
           std::to_string(info.maxWorkgroupCount[i]) + " on this device");
  // The parameters' values, copied: a memref is 3 + 2 * rank fields of 8
  // bytes, a scalar its own size.
  std::vector<size_t> sizes;
  for (const GpuKernelArg &arg : image.args) {
    if (arg.kind == GpuKernelArg::MemRef)
      sizes.insert(sizes.end(), 3 + 2 * arg.rank, 8);
    else
      sizes.push_back(arg.bytes);
  }
  if (sizes.size() != paramCount)
    fail("kernel '" + image.name + "' was launched with " +
         std::to_string(paramCount) + " parameters, its arguments take " +
         std::to_string(sizes.size()));
  auto launch = std::make_shared<Launch>();
  launch->kernel = k;
  for (int i = 0; i < 3; ++i)
    launch->grid[i] = static_cast<uint32_t>(grid[i]);
  std::vector<size_t> slots;
  for (size_t bytes : sizes) {
    slots.push_back(launch->values.size());
    launch->values.resize(launch->values.size() + (bytes + 7) / 8);
  }
  for (size_t i = 0; i < sizes.size(); ++i) {
    std::memcpy(&launch->values[slots[i]], params[i], sizes[i]);
    launch->params.push_back(&launch->values[slots[i]]);
  }
  enqueue(stream, [launch] { runLaunch(*launch); });
}

static void *mgpuStreamCreate() {
  auto *stream = new Stream;
  std::lock_guard<std::mutex> lock(streams().mutex);
  streams().all.insert(stream);
  return stream;
}

static void mgpuStreamDestroy(void *stream) {
  auto *s = static_cast<Stream *>(stream);
  synchronize(s);
  destroyStream(s);
}

static void mgpuStreamSynchronize(void *stream) {
  synchronize(static_cast<Stream *>(stream));
}

// An event's handle holds it shared: work queued on a stream that records
// it or waits for it keeps it alive past mgpuEventDestroy (which the host
// code calls right after queuing the wait).
using EventRef = std::shared_ptr<Event>;

static void *mgpuEventCreate() { return new EventRef(new Event); }

static void mgpuEventDestroy(void *event) { delete static_cast<EventRef *>(event); }

/// The number of `event`'s latest record (0: never recorded).
static uint64_t latestRecord(const Event &event) {
  std::lock_guard<std::mutex> lock(streams().mutex);
  return event.recorded;
}

static void mgpuEventRecord(void *event, void *stream) {
  EventRef e = *static_cast<EventRef *>(event);
  uint64_t target;
  {
    std::lock_guard<std::mutex> lock(streams().mutex);
    target = ++e->recorded;
  }
  enqueue(stream, [e, target] {
    std::lock_guard<std::mutex> lock(streams().mutex);
    e->reached = std::max(e->reached, target);
    streams().changed.notify_all();
  });
}

static void mgpuStreamWaitEvent(void *stream, void *event) {
  EventRef e = *static_cast<EventRef *>(event);
  uint64_t target = latestRecord(*e);
  enqueue(stream, [e, target] { waitForEvent(e.get(), target); });
}

static void mgpuEventSynchronize(void *event) {
  Event *e = static_cast<EventRef *>(event)->get();
  waitForEvent(e, latestRecord(*e));
}

static void mgpuSetDefaultDevice(int32_t) {}

static void *mgpuMemAlloc(uint64_t bytes, void *, bool hostShared) {
  std::lock_guard<std::mutex> lock(state().mutex);
  // Whole granules of 256 bytes, as CUDA's allocators hand them out (and
  // as programs written against them may, strictly wrongly, rely on).
  bytes = (std::max<uint64_t>(bytes, 1) + 255) & ~uint64_t(255);
  Allocation a;
  a.buffer = newBuffer(bytes);
  a.bytes = bytes;
  // Where the device's buffers are host memory, the host's pointer is the
  // buffer's: a kernel and the host (or two kernels at once) see each
  // other's writes, as with CUDA's managed memory.
  a.host = static_cast<uint8_t *>(device().hostAddress(*a.buffer));
  a.shared = a.host != nullptr;
  if (!a.shared)
    a.host = static_cast<uint8_t *>(std::calloc(bufferBytes(bytes), 1));
  if (!a.host)
    fail("cannot allocate " + std::to_string(bytes) + " bytes of host memory");
  a.ownsHost = true;
  a.hostIsCurrent = hostShared;
  uint8_t *host = a.host;
  state().allocations[reinterpret_cast<uintptr_t>(host)] = std::move(a);
  return host;
}

static void freeMemory(void *ptr) {
  std::lock_guard<std::mutex> lock(state().mutex);
  auto it = state().allocations.find(reinterpret_cast<uintptr_t>(ptr));
  if (it == state().allocations.end() || !it->second.ownsHost)
    fail("gpu.dealloc of memory that gpu.alloc did not return");
  if (!it->second.shared)
    std::free(it->second.host);
  state().allocations.erase(it);
}

static void copyMemory(void *dst, void *src, size_t bytes) {
  std::lock_guard<std::mutex> lock(state().mutex);
  Allocation *d = find(dst), *s = find(src);
  if ((d && static_cast<uint8_t *>(dst) + bytes > d->host + d->bytes) ||
      (s && static_cast<uint8_t *>(src) + bytes > s->host + s->bytes))
    fail("gpu.memcpy of " + std::to_string(bytes) +
         " bytes past the end of an allocation");
  if (onDevice(d) && onDevice(s)) {
    std::vector<uint8_t> staging(bytes);
    readDevice(*s, static_cast<uint8_t *>(src) - s->host, staging.data(), bytes);
    writeDevice(*d, static_cast<uint8_t *>(dst) - d->host, staging.data(), bytes);
  } else if (onDevice(d)) {
    writeDevice(*d, static_cast<uint8_t *>(dst) - d->host, src, bytes);
  } else if (onDevice(s)) {
    readDevice(*s, static_cast<uint8_t *>(src) - s->host, dst, bytes);
  } else {
    std::memmove(dst, src, bytes);
  }
}

// Frees, copies and fills take their place in their stream's order.
static void mgpuMemFree(void *ptr, void *stream) {
  enqueue(stream, [ptr] { freeMemory(ptr); });
}

static void mgpuMemcpy(void *dst, void *src, size_t bytes, void *stream) {
  enqueue(stream, [=] { copyMemory(dst, src, bytes); });
}

static void mgpuMemset32(void *dst, unsigned value, size_t count,
                         void *stream) {
  enqueue(stream, [=] { fillMemory<uint32_t>(dst, value, count); });
}

static void mgpuMemset16(void *dst, unsigned short value, size_t count,
                         void *stream) {
  enqueue(stream, [=] { fillMemory<uint16_t>(dst, value, count); });
}

static void mgpuMemHostRegister(void *ptr, uint64_t bytes) {
  registerRange(static_cast<uint8_t *>(ptr), bytes);
}

static void mgpuMemHostRegisterMemRef(int64_t rank, void *descriptor,
                                      int64_t elementBytes) {
  auto *d = static_cast<const Descriptor *>(descriptor);
  registerRange(static_cast<uint8_t *>(d->aligned) + d->offset * elementBytes,
                memrefBytes(rank, d, elementBytes));
}

static void mgpuMemHostUnregister(void *ptr) {
  unregisterRange(static_cast<uint8_t *>(ptr));
}

static void mgpuMemHostUnregisterMemRef(int64_t, void *descriptor,
                                        int64_t elementBytes) {
  auto *d = static_cast<const Descriptor *>(descriptor);
  unregisterRange(static_cast<uint8_t *>(d->aligned) + d->offset * elementBytes);
}

} // extern "C"

//===----------------------------------------------------------------------===//
// The Vulkan runner's host functions
//===----------------------------------------------------------------------===//

// Upstream's Vulkan runtime wrappers give Vulkan-written tests
// fillResource{1,2,3}D{Float,Int,Int8}(memref, value): every element of the
// memref set to the value. The host code here calls them with the memref
// descriptor expanded (allocated, aligned, offset, sizes, strides), as
// func-to-llvm lowers a call to an external function without
// llvm.emit_c_interface.

template <typename T, int Rank>
static void fillResource(T *aligned, int64_t offset, const int64_t *sizes,
                         const int64_t *strides, T value) {
  std::lock_guard<std::mutex> lock(state().mutex);
  int64_t extent = 1;
  bool empty = false;
  for (int d = 0; d < Rank; ++d) {
    empty |= sizes[d] <= 0;
    extent += sizes[d] > 0 ? (sizes[d] - 1) * strides[d] : 0;
  }
  if (empty)
    return;
  uint8_t *start = reinterpret_cast<uint8_t *>(aligned + offset);
  size_t bytes = static_cast<size_t>(extent) * sizeof(T);
  // Device memory (gpu.alloc) whose device copy is current: fill a host
  // copy of the range and write it back.
  Allocation *a = find(start);
  std::vector<uint8_t> staged;
  uint8_t *host = start;
  if (onDevice(a)) {
    if (start + bytes > a->host + a->bytes)
      fail("fillResource past the end of an allocation");
    staged.resize(bytes);
    readDevice(*a, start - a->host, staged.data(), bytes);
    host = staged.data();
  }
  T *base = reinterpret_cast<T *>(host);
  int64_t index[Rank] = {};
  for (;;) {
    int64_t at = 0;
    for (int d = 0; d < Rank; ++d)
      at += index[d] * strides[d];
    base[at] = value;
    int d = Rank - 1;
    while (d >= 0 && ++index[d] == sizes[d])
      index[d--] = 0;
    if (d < 0)
      break;
  }
  if (onDevice(a))
    writeDevice(*a, start - a->host, staged.data(), bytes);
}

#define HESPER_FILL_RESOURCE(NAME, T)                                         \
  static void NAME##_1D(T *, T *aligned, int64_t offset, int64_t s0,           \
                       int64_t t0, T value) {                                 \
    const int64_t sizes[] = {s0}, strides[] = {t0};                          \
    fillResource<T, 1>(aligned, offset, sizes, strides, value);               \
  }                                                                           \
  static void NAME##_2D(T *, T *aligned, int64_t offset, int64_t s0,           \
                       int64_t s1, int64_t t0, int64_t t1, T value) {         \
    const int64_t sizes[] = {s0, s1}, strides[] = {t0, t1};                  \
    fillResource<T, 2>(aligned, offset, sizes, strides, value);               \
  }                                                                           \
  static void NAME##_3D(T *, T *aligned, int64_t offset, int64_t s0,           \
                       int64_t s1, int64_t s2, int64_t t0, int64_t t1,        \
                       int64_t t2, T value) {                                 \
    const int64_t sizes[] = {s0, s1, s2}, strides[] = {t0, t1, t2};          \
    fillResource<T, 3>(aligned, offset, sizes, strides, value);               \
  }
HESPER_FILL_RESOURCE(fillFloat, float)
HESPER_FILL_RESOURCE(fillInt, int32_t)
HESPER_FILL_RESOURCE(fillInt8, int8_t)
#undef HESPER_FILL_RESOURCE

std::vector<std::pair<const char *, void *>> hesper::rt::mgpuSymbols() {
  auto fn = [](auto *f) { return reinterpret_cast<void *>(f); };
  return {
      {"mgpuModuleLoad", fn(mgpuModuleLoad)},
      {"mgpuModuleLoadJIT", fn(mgpuModuleLoadJIT)},
      {"mgpuModuleUnload", fn(mgpuModuleUnload)},
      {"mgpuModuleGetFunction", fn(mgpuModuleGetFunction)},
      {"mgpuLaunchKernel", fn(mgpuLaunchKernel)},
      {"mgpuStreamCreate", fn(mgpuStreamCreate)},
      {"mgpuStreamDestroy", fn(mgpuStreamDestroy)},
      {"mgpuStreamSynchronize", fn(mgpuStreamSynchronize)},
      {"mgpuStreamWaitEvent", fn(mgpuStreamWaitEvent)},
      {"mgpuEventCreate", fn(mgpuEventCreate)},
      {"mgpuEventDestroy", fn(mgpuEventDestroy)},
      {"mgpuEventSynchronize", fn(mgpuEventSynchronize)},
      {"mgpuEventRecord", fn(mgpuEventRecord)},
      {"mgpuSetDefaultDevice", fn(mgpuSetDefaultDevice)},
      {"mgpuMemAlloc", fn(mgpuMemAlloc)},
      {"mgpuMemFree", fn(mgpuMemFree)},
      {"mgpuMemcpy", fn(mgpuMemcpy)},
      {"mgpuMemset32", fn(mgpuMemset32)},
      {"mgpuMemset16", fn(mgpuMemset16)},
      {"mgpuMemHostRegister", fn(mgpuMemHostRegister)},
      {"mgpuMemHostRegisterMemRef", fn(mgpuMemHostRegisterMemRef)},
      {"mgpuMemHostUnregister", fn(mgpuMemHostUnregister)},
      {"mgpuMemHostUnregisterMemRef", fn(mgpuMemHostUnregisterMemRef)},
      {"fillResource1DFloat", fn(fillFloat_1D)},
      {"fillResource2DFloat", fn(fillFloat_2D)},
      {"fillResource3DFloat", fn(fillFloat_3D)},
      {"fillResource1DInt", fn(fillInt_1D)},
      {"fillResource2DInt", fn(fillInt_2D)},
      {"fillResource3DInt", fn(fillInt_3D)},
      {"fillResource1DInt8", fn(fillInt8_1D)},
      {"fillResource2DInt8", fn(fillInt8_2D)},
      {"fillResource3DInt8", fn(fillInt8_3D)},
  };
}
