//===- Cpu.cpp - CPU driver: ELF kernels run by a thread pool -------------===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//
//
// The CPU backend of the HAL. Buffers are host memory (64-byte aligned,
// zero-filled). A kernel is a C function exported by an ELF shared object
// (KernelDesc::format "elf:<features>"); every kernel of a program comes
// with the same object, which is loaded once per device -- from memory,
// through a memfd -- and stays loaded while the device or any of its
// objects lives. The function runs a range of workgroups (see KernelDesc).
//
// A dispatch of W workgroups runs on T threads (T-1 persistent workers and
// the submitting thread) as P = min(T, W, the kernel's hostThreads cap when
// it has one) calls over the fixed ranges
// [i*W/P, (i+1)*W/P): range i on worker i, or on the submitting thread when
// that worker is late (asleep or preempted); the next dispatch starts when
// all are done. Each workgroup is computed by exactly one call whatever T
// is, so results are the same bit for bit on any number of threads.
// A submission that finds the pool busy with another thread's submission
// runs its workgroups on its own thread, in order, instead of waiting: two
// kernels submitted from two threads (a gpu dialect program's two streams)
// run at the same time, as on a GPU, and one may wait for the other.
//
// Environment:
//   HESPER_CPU_SPIN_US=N   how long idle threads spin before they sleep
//                          (default 500 microseconds).
//   HESPER_CPU_NO_MEMFD=1  load kernels through a temporary file instead of
//                          a memfd (the fallback when memfd_create fails).
//
//===----------------------------------------------------------------------===//

#include "CpuFibers.h"
#include "CpuThreadPool.h"
#include "hal/Drivers.h"

#include <atomic>
#include <dlfcn.h>
#include <elf.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <mutex>
#include <unordered_map>

namespace hesper::rt::detail {
namespace {

//===----------------------------------------------------------------------===//
// Device state shared by every object of a device
//===----------------------------------------------------------------------===//

/// The C signature of a CPU kernel (see KernelDesc).
using KernelFn = void (*)(void *const *bindings, const void *pushConstants,
                          const uint32_t *grid, uint64_t begin, uint64_t end);
/// The C signature of one thread of a kernel whose workgroups have several
/// threads (see KernelDesc).
using ThreadFn = void (*)(void *const *bindings, const void *pushConstants,
                          const uint32_t *grid, uint64_t workgroup,
                          const uint32_t *thread, void *shared,
                          void (*barrier)(void *), void *barrierState);

/// A shared object loaded from a kernel binary.
struct LoadedObject {
  std::vector<uint8_t> bytes; ///< to tell hash collisions apart
  void *handle = nullptr;
  /// The memfd the object was loaded from, kept open while it is loaded:
  /// glibc finds loaded objects by path, and a closed fd's number -- and
  /// with it "/proc/self/fd/N" -- would be reused by the next object.
  int fd = -1;
};

/// The description and threads of the device, which objects are alive (with
/// a serial number each, to refuse objects of other devices and destroyed
/// ones), and the loaded shared objects. Buffers, kernels and command lists
/// hold it, so it lives until the last of them is gone.
struct CpuContext {
  DeviceInfo info;
  std::unique_ptr<CpuThreadPool> pool;
  std::mutex runMutex; ///< held by the submission running on the pool

  std::mutex mutex; ///< guards the members below
  std::unordered_map<const void *, uint64_t> live;
  uint64_t nextSerial = 1;
  std::unordered_multimap<uint64_t, LoadedObject> objects; ///< by loadedBinaryKey
  /// Objects destroyed so far: a command list whose check is more recent
  /// than the last destruction need not check again.
  std::atomic<uint64_t> destroyed{0};

  ~CpuContext() {
    pool.reset(); // no kernel code runs past this point
    for (auto &entry : objects) {
      dlclose(entry.second.handle);
      if (entry.second.fd >= 0)
        close(entry.second.fd);
    }
  }

  uint64_t add(const void *p) {
    std::lock_guard<std::mutex> lock(mutex);
    return live[p] = nextSerial++;
  }
  void remove(const void *p) {
    {
      std::lock_guard<std::mutex> lock(mutex);
      live.erase(p);
    }
    destroyed.fetch_add(1, std::memory_order_release);
  }
  /// The serial of a live object, 0 when it is not one of this device's.
  uint64_t serial(const void *p) {
    std::lock_guard<std::mutex> lock(mutex);
    auto it = live.find(p);
    return it == live.end() ? 0 : it->second;
  }
};

class CpuBuffer final : public Buffer {
public:
  CpuBuffer(std::shared_ptr<CpuContext> c, size_t n)
      : ctx(std::move(c)), bytes(n) {}
  ~CpuBuffer() override {
    ctx->remove(static_cast<const Buffer *>(this));
    if (imported)
      return;
    if (mappedBytes)
      munmap(data, mappedBytes);
    else
      std::free(data);
  }
  size_t size() const override { return bytes; }

  std::shared_ptr<CpuContext> ctx;
  uint8_t *data = nullptr; ///< never null, even for an empty buffer
  size_t bytes;
  size_t mappedBytes = 0; ///< the mmap'ed length; 0 when malloc'ed
  /// The caller's memory (importHostMemory): read-only, not freed here.
  bool imported = false;
};

class CpuKernel final : public Kernel {
public:
  CpuKernel(std::shared_ptr<CpuContext> c, KernelDesc d, KernelFn f,
            ThreadFn t)
      : ctx(std::move(c)), kernelDesc(std::move(d)), fn(f), threadFn(t) {}
  ~CpuKernel() override { ctx->remove(static_cast<const Kernel *>(this)); }
  const KernelDesc &desc() const override { return kernelDesc; }

  std::shared_ptr<CpuContext> ctx;
  KernelDesc kernelDesc; ///< without the binary, held by the context
  KernelFn fn;          ///< one call per range of workgroups, or
  ThreadFn threadFn;    ///< one call per thread of a workgroup
};

//===----------------------------------------------------------------------===//
// Command lists
//===----------------------------------------------------------------------===//

/// One recorded dispatch in the form the threads run.
struct PreparedDispatch {
  KernelFn fn = nullptr;
  ThreadFn threadFn = nullptr;
  uint32_t threads[3] = {1, 1, 1}; ///< of a workgroup, for threadFn
  uint32_t sharedBytes = 0;        ///< of a workgroup, for threadFn
  uint32_t maxThreads = 0;         ///< KernelDesc::hostThreads
  std::vector<void *> bindings;
  const void *pushConstants = nullptr;
  uint32_t grid[3] = {1, 1, 1};
  uint64_t workgroups = 0;
  /// Threads ended by a failed assertion (the command list's counter).
  std::atomic<uint64_t> *failedThreads = nullptr;
};

/// One workgroup of a kernel with several threads per workgroup.
struct ThreadedWorkgroup {
  const PreparedDispatch *dispatch;
  uint64_t workgroup;
  void *shared;
};

void runThread(void *arg, uint32_t thread) {
  const auto *w = static_cast<const ThreadedWorkgroup *>(arg);
  const PreparedDispatch *d = w->dispatch;
  uint32_t id[3] = {thread % d->threads[0],
                    thread / d->threads[0] % d->threads[1],
                    thread / (d->threads[0] * d->threads[1])};
  d->threadFn(d->bindings.data(), d->pushConstants, d->grid, w->workgroup,
              id, w->shared, fiberBarrier, fiberState());
}

/// The pool's task: workgroups [begin, end) of one dispatch. A workgroup of
/// several threads runs them as fibers on this OS thread, with workgroup
/// memory of its own, zeroed.
void runWorkgroups(void *arg, uint64_t begin, uint64_t end) {
  const auto *d = static_cast<const PreparedDispatch *>(arg);
  if (!d->threadFn) {
    d->fn(d->bindings.data(), d->pushConstants, d->grid, begin, end);
    return;
  }
  thread_local std::vector<uint64_t> shared;
  uint32_t count = d->threads[0] * d->threads[1] * d->threads[2];
  for (uint64_t w = begin; w < end; ++w) {
    shared.assign((d->sharedBytes + 7) / 8, 0);
    ThreadedWorkgroup workgroup{d, w, shared.data()};
    if (uint32_t failed = runFibers(count, runThread, &workgroup))
      d->failedThreads->fetch_add(failed, std::memory_order_relaxed);
  }
}

uint64_t steadyNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

class CpuCommandList final : public CommandList {
public:
  CpuCommandList(std::shared_ptr<CpuContext> c, bool withTiming)
      : ctx(std::move(c)), timing(withTiming),
        state(ctx->info.maxWorkgroupCount) {}

  Status record(const std::vector<Dispatch> &dispatches) override {
    if (Status st = state.validate(dispatches); !st)
      return st;
    uint64_t epoch = ctx->destroyed.load(std::memory_order_acquire);
    std::vector<uint64_t> newSerials;
    for (size_t i = 0; i < dispatches.size(); ++i) {
      const Dispatch &d = dispatches[i];
      uint64_t s = ctx->serial(static_cast<const Kernel *>(d.kernel));
      if (!s)
        return Status::error("dispatch " + std::to_string(i) +
                             ": the kernel is not one of this CPU device's");
      newSerials.push_back(s);
      for (size_t b = 0; b < d.bindings.size(); ++b) {
        s = ctx->serial(static_cast<const Buffer *>(d.bindings[b]));
        if (!s)
          return Status::error("dispatch " + std::to_string(i) + ": binding " +
                               std::to_string(b) +
                               " is not a buffer of this CPU device");
        const std::vector<uint8_t> &readOnly =
            d.kernel->desc().bindingReadOnly;
        if (static_cast<const CpuBuffer *>(d.bindings[b])->imported &&
            (b >= readOnly.size() || !readOnly[b]))
          return Status::error(
              "dispatch " + std::to_string(i) + ": binding " +
              std::to_string(b) + " may be written by kernel '" +
              d.kernel->desc().name +
              "' but is a read-only buffer of imported host memory");
        newSerials.push_back(s);
      }
    }
    if (Status st = state.record(dispatches); !st)
      return st;
    serials = std::move(newSerials);
    checkedEpoch = epoch;
    times.clear();
    return Status();
  }

  Status setPushConstants(size_t dispatchIndex,
                          const std::vector<uint8_t> &bytes) override {
    bool wasPrepared = !state.needsCapture();
    if (Status st = state.setPushConstants(dispatchIndex, bytes); !st)
      return st;
    if (wasPrepared) {
      // Only one pointer changed: no need to prepare the whole list again.
      const std::vector<uint8_t> &pc =
          state.dispatches()[dispatchIndex].pushConstants;
      prepared[dispatchIndex].pushConstants = pc.empty() ? nullptr : pc.data();
      state.markCaptured();
    }
    return Status();
  }

  Status submit() override {
    times.clear();
    if (Status st = state.checkSubmit(); !st)
      return st;
    if (Status st = checkAlive(); !st)
      return st;
    if (state.needsCapture()) {
      prepare();
      state.markCaptured();
    }
    std::vector<double> result;
    if (timing)
      result.reserve(prepared.size());
    {
      std::unique_lock<std::mutex> pool(ctx->runMutex, std::try_to_lock);
      for (size_t i = 0; i < prepared.size(); ++i) {
        PreparedDispatch &d = prepared[i];
        uint64_t start = timing ? steadyNs() : 0;
        failedThreads.store(0, std::memory_order_relaxed);
        if (pool.owns_lock())
          ctx->pool->run(d.workgroups, runWorkgroups, &d, d.maxThreads);
        else
          runWorkgroups(&d, 0, d.workgroups);
        if (timing)
          result.push_back(static_cast<double>(steadyNs() - start));
        // A failed assertion ends the list there, as a GPU's kernel error
        // does (the failures are printed by the threads themselves).
        if (uint64_t failed = failedThreads.load(std::memory_order_relaxed))
          return Status::error("kernel '" +
                               state.dispatches()[i].kernel->desc().name +
                               "': " +
                               std::to_string(failed) +
                               (failed == 1 ? " thread" : " threads") +
                               " failed an assertion");
      }
    }
    times = std::move(result);
    state.countSubmission();
    return Status();
  }

  uint64_t submissions() const override { return state.submissions(); }
  std::vector<double> lastKernelTimesNs() const override { return times; }

private:
  /// Refuses to replay a list whose kernels or buffers were destroyed
  /// (their serials are gone or belong to new objects at the same address).
  /// Skipped when nothing of the device was destroyed since the last check.
  Status checkAlive() {
    uint64_t epoch = ctx->destroyed.load(std::memory_order_acquire);
    if (epoch == checkedEpoch)
      return Status();
    size_t k = 0;
    const std::vector<Dispatch> &list = state.dispatches();
    for (size_t i = 0; i < list.size(); ++i) {
      const Dispatch &d = list[i];
      if (ctx->serial(static_cast<const Kernel *>(d.kernel)) != serials[k++])
        return Status::error("submit: dispatch " + std::to_string(i) +
                             ": its kernel has been destroyed");
      for (size_t b = 0; b < d.bindings.size(); ++b)
        if (ctx->serial(static_cast<const Buffer *>(d.bindings[b])) !=
            serials[k++])
          return Status::error("submit: dispatch " + std::to_string(i) +
                               ": buffer of binding " + std::to_string(b) +
                               " has been destroyed");
    }
    checkedEpoch = epoch;
    return Status();
  }

  /// Turns the recorded list into function pointers and buffer addresses.
  void prepare() {
    const std::vector<Dispatch> &list = state.dispatches();
    prepared.assign(list.size(), PreparedDispatch());
    for (size_t i = 0; i < list.size(); ++i) {
      const Dispatch &d = list[i];
      PreparedDispatch &p = prepared[i];
      auto *kernel = static_cast<CpuKernel *>(d.kernel);
      p.fn = kernel->fn;
      p.threadFn = kernel->threadFn;
      std::copy(kernel->kernelDesc.workgroupSize,
                kernel->kernelDesc.workgroupSize + 3, p.threads);
      p.sharedBytes = kernel->kernelDesc.sharedMemoryBytes;
      p.maxThreads = kernel->kernelDesc.hostThreads;
      p.failedThreads = &failedThreads;
      for (Buffer *b : d.bindings)
        p.bindings.push_back(static_cast<CpuBuffer *>(b)->data);
      p.pushConstants =
          d.pushConstants.empty() ? nullptr : d.pushConstants.data();
      std::copy(d.grid, d.grid + 3, p.grid);
      // At most 2^32 * 2^16 * 2^16 workgroups (the device's limits).
      p.workgroups = uint64_t(d.grid[0]) * d.grid[1] * d.grid[2];
    }
  }

  std::shared_ptr<CpuContext> ctx;
  bool timing;
  ReplayState state;
  /// Serials of each dispatch's kernel then bindings, in recording order.
  std::vector<uint64_t> serials;
  uint64_t checkedEpoch = 0;
  std::vector<PreparedDispatch> prepared;
  std::vector<double> times;
  std::atomic<uint64_t> failedThreads{0};
};

//===----------------------------------------------------------------------===//
// Loading kernels
//===----------------------------------------------------------------------===//

/// Why `binary` cannot be a shared object of this host, or "".
std::string checkElfHeader(const std::vector<uint8_t> &binary) {
  Elf64_Ehdr h;
  if (binary.size() < sizeof(h))
    return std::to_string(binary.size()) +
           " bytes, too short for an ELF header";
  std::memcpy(&h, binary.data(), sizeof(h));
  if (std::memcmp(h.e_ident, ELFMAG, SELFMAG) != 0)
    return "no ELF magic";
  if (h.e_ident[EI_CLASS] != ELFCLASS64)
    return "not 64-bit";
  if (h.e_ident[EI_DATA] != ELFDATA2LSB)
    return "not little-endian";
  if (h.e_type != ET_DYN)
    return "ELF type " + std::to_string(h.e_type) + ", not ET_DYN";
#if defined(__x86_64__)
  if (h.e_machine != EM_X86_64)
    return "machine " + std::to_string(h.e_machine) + ", not x86-64";
#elif defined(__aarch64__)
  if (h.e_machine != EM_AARCH64)
    return "machine " + std::to_string(h.e_machine) + ", not AArch64";
#endif
  return "";
}

bool writeAll(int fd, const std::vector<uint8_t> &bytes) {
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

std::string dlopenError() {
  const char *e = dlerror();
  return e ? e : "dlopen failed";
}

/// Loads `binary` as a shared object: from a memfd, or else from a
/// temporary file under $TMPDIR (or /tmp) removed once it is loaded.
Result<LoadedObject> loadObject(const std::vector<uint8_t> &binary) {
  LoadedObject obj;
  const char *noMemfd = std::getenv("HESPER_CPU_NO_MEMFD");
  int fd = (noMemfd && *noMemfd && std::strcmp(noMemfd, "0") != 0)
               ? -1
               : memfd_create("hesper-kernels", MFD_CLOEXEC);
  if (fd >= 0) {
    if (!writeAll(fd, binary)) {
      int err = errno;
      close(fd);
      return Status::error(std::string("cannot write the shared object to a "
                                       "memfd: ") +
                           std::strerror(err));
    }
    std::string path = "/proc/self/fd/" + std::to_string(fd);
    obj.handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!obj.handle) {
      std::string why = dlopenError();
      close(fd);
      return Status::error("cannot load the shared object: " + why);
    }
    obj.fd = fd;
  } else {
    const char *tmp = std::getenv("TMPDIR");
    std::string path =
        std::string(tmp && *tmp ? tmp : "/tmp") + "/hesper-kernels-XXXXXX";
    fd = mkostemp(&path[0], O_CLOEXEC);
    if (fd < 0)
      return Status::error("cannot create " + path + ": " +
                           std::strerror(errno));
    bool written = writeAll(fd, binary);
    int err = errno;
    close(fd);
    if (!written) {
      unlink(path.c_str());
      return Status::error("cannot write " + path + ": " + std::strerror(err));
    }
    obj.handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    std::string why = obj.handle ? "" : dlopenError();
    unlink(path.c_str());
    if (!obj.handle)
      return Status::error("cannot load the shared object: " + why);
  }
  obj.bytes = binary;
  return obj;
}

/// Checks that `format` is "elf:" and features this host has.
Status checkFormat(const KernelDesc &d) {
  static const std::string kPrefix = "elf:";
  std::string what = "kernel '" + d.name + "'";
  if (d.format.compare(0, kPrefix.size(), kPrefix) != 0)
    return Status::error(what + ": format '" + d.format +
                         "' is not one the CPU driver runs (expected "
                         "'elf:<features>')");
  std::string lacking;
  size_t count = 0;
  if (d.format.size() > kPrefix.size()) {
    size_t pos = kPrefix.size();
    for (;;) {
      size_t comma = d.format.find(',', pos);
      std::string name = d.format.substr(pos, comma - pos);
      CpuFeatureState state = hostCpuFeature(name);
      if (state == CpuFeatureState::Unknown)
        return Status::error(what + ": unknown CPU feature '" + name +
                             "' in format '" + d.format + "'");
      if (state == CpuFeatureState::Absent) {
        lacking += (lacking.empty() ? "" : ", ") + name;
        ++count;
      }
      if (comma == std::string::npos)
        break;
      pos = comma + 1;
    }
  }
  if (count)
    return Status::error(what + " needs CPU feature" +
                         (count > 1 ? "s " : " ") + lacking +
                         " that this CPU lacks");
  return Status();
}

//===----------------------------------------------------------------------===//
// Devices
//===----------------------------------------------------------------------===//

/// Buffers from this size on are mmap'ed: page-aligned and zero-filled by
/// the kernel as they are first touched, so creating one writes nothing (a
/// model's weight and cache buffers: the session writes only the weights,
/// and a KV cache's pages become resident as positions are written).
constexpr size_t kMmapBytes = 64 << 10;
constexpr size_t kAlignment = 64;

class CpuDevice final : public Device {
public:
  explicit CpuDevice(std::shared_ptr<CpuContext> c) : ctx(std::move(c)) {}

  const DeviceInfo &info() const override { return ctx->info; }

  Result<std::unique_ptr<Buffer>> createBuffer(size_t bytes) override {
    std::string what = "createBuffer(" + std::to_string(bytes) + ")";
    if (bytes > SIZE_MAX - kAlignment)
      return Status::error(what + ": too large");
    // Rounded up to whole cache lines (an empty buffer still gets one).
    size_t rounded =
        std::max(kAlignment, (bytes + kAlignment - 1) & ~(kAlignment - 1));
    auto buffer = std::make_unique<CpuBuffer>(ctx, bytes);
    if (rounded >= kMmapBytes) {
      void *p = mmap(nullptr, rounded, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      if (p == MAP_FAILED)
        return Status::error(what + ": mmap failed: " + std::strerror(errno));
#ifdef MADV_HUGEPAGE
      if (rounded >= (2u << 20))
        madvise(p, rounded, MADV_HUGEPAGE); // fewer TLB misses; may fail
#endif
      buffer->data = static_cast<uint8_t *>(p);
      buffer->mappedBytes = rounded;
    } else {
      void *p = nullptr;
      if (posix_memalign(&p, kAlignment, rounded) != 0)
        return Status::error(what + ": out of memory");
      std::memset(p, 0, rounded);
      buffer->data = static_cast<uint8_t *>(p);
    }
    ctx->add(static_cast<const Buffer *>(buffer.get()));
    return std::unique_ptr<Buffer>(std::move(buffer));
  }

  Result<std::unique_ptr<Buffer>> importHostMemory(const void *data,
                                                   size_t bytes) override {
    if (!data || reinterpret_cast<uintptr_t>(data) % 16 != 0)
      return Status::error("importHostMemory: the memory is not 16-byte "
                           "aligned");
    auto buffer = std::make_unique<CpuBuffer>(ctx, bytes);
    // Kernels only read it (record refuses a writable binding).
    buffer->data = static_cast<uint8_t *>(const_cast<void *>(data));
    buffer->imported = true;
    ctx->add(static_cast<const Buffer *>(buffer.get()));
    return std::unique_ptr<Buffer>(std::move(buffer));
  }

  void *hostAddress(Buffer &buffer) override {
    CpuBuffer *b = own(buffer);
    return b && !b->imported ? b->data : nullptr;
  }

  Status upload(Buffer &dst, const void *src, size_t bytes,
                size_t offset) override {
    CpuBuffer *b = own(dst);
    if (!b)
      return notOurs("upload");
    if (b->imported)
      return readOnly("upload");
    if (Status s = checkTransfer("upload", src, bytes, offset, b->bytes);
        !s || !bytes)
      return s;
    std::memcpy(b->data + offset, src, bytes);
    return Status();
  }

  Status download(Buffer &src, void *dst, size_t bytes,
                  size_t offset) override {
    CpuBuffer *b = own(src);
    if (!b)
      return notOurs("download");
    if (Status s = checkTransfer("download", dst, bytes, offset, b->bytes);
        !s || !bytes)
      return s;
    std::memcpy(dst, b->data + offset, bytes);
    return Status();
  }

  /// Repeats the 32-bit pattern over the whole buffer; a size that is not a
  /// multiple of 4 ends with the pattern's first bytes.
  Status fill(Buffer &dst, uint32_t pattern) override {
    CpuBuffer *b = own(dst);
    if (!b)
      return notOurs("fill");
    if (b->imported)
      return readOnly("fill");
    uint8_t bytes[4] = {uint8_t(pattern), uint8_t(pattern >> 8),
                        uint8_t(pattern >> 16), uint8_t(pattern >> 24)};
    if (bytes[0] == bytes[1] && bytes[0] == bytes[2] && bytes[0] == bytes[3]) {
      std::memset(b->data, bytes[0], b->bytes);
      return Status();
    }
    size_t words = b->bytes / 4;
    for (size_t i = 0; i < words; ++i)
      std::memcpy(b->data + 4 * i, bytes, 4);
    std::memcpy(b->data + 4 * words, bytes, b->bytes % 4);
    return Status();
  }

  Status copy(Buffer &src, Buffer &dst, size_t bytes) override {
    CpuBuffer *s = own(src), *d = own(dst);
    if (!s || !d)
      return notOurs("copy");
    if (d->imported)
      return readOnly("copy");
    if (bytes > s->bytes || bytes > d->bytes)
      return Status::error("copy: " + std::to_string(bytes) +
                           " bytes do not fit in the source (" +
                           std::to_string(s->bytes) + " bytes) or the " +
                           "destination (" + std::to_string(d->bytes) +
                           " bytes)");
    if (!bytes || s == d)
      return Status();
    // A large copy is split over the pool's threads in 4 KiB pages: one
    // core does not reach the memory's bandwidth.
    struct Parts {
      uint8_t *dst;
      const uint8_t *src;
      size_t bytes;
    } parts{static_cast<uint8_t *>(d->data),
            static_cast<const uint8_t *>(s->data), bytes};
    constexpr size_t kPage = 4096;
    // Small copies, and copies while another submission has the pool, stay
    // on this thread.
    std::unique_lock<std::mutex> pool(ctx->runMutex, std::defer_lock);
    if (bytes < (size_t(1) << 20) || !pool.try_lock()) {
      std::memcpy(parts.dst, parts.src, bytes);
      return Status();
    }
    ctx->pool->run(
        (bytes + kPage - 1) / kPage,
        [](void *arg, uint64_t begin, uint64_t end) {
          auto *p = static_cast<Parts *>(arg);
          size_t from = begin * kPage;
          size_t to = std::min(p->bytes, size_t(end * kPage));
          std::memcpy(p->dst + from, p->src + from, to - from);
        },
        &parts);
    return Status();
  }

  Result<std::unique_ptr<Kernel>> createKernel(const KernelDesc &d) override;

  Result<std::unique_ptr<CommandList>> createCommandList(bool timing) override {
    return std::unique_ptr<CommandList>(
        std::make_unique<CpuCommandList>(ctx, timing));
  }

private:
  CpuBuffer *own(Buffer &b) {
    if (!ctx->serial(static_cast<const Buffer *>(&b)))
      return nullptr;
    return static_cast<CpuBuffer *>(&b);
  }
  static Status readOnly(const char *op) {
    return Status::error(std::string(op) +
                         ": the buffer is imported host memory, which is "
                         "read-only");
  }
  static Status notOurs(const char *op) {
    return Status::error(std::string(op) +
                         ": the buffer is not one of this CPU device's");
  }

  Status checkDesc(const KernelDesc &d) const;
  /// The loaded object of `binary`, loading it on first use.
  Result<void *> objectFor(const std::vector<uint8_t> &binary);

  std::shared_ptr<CpuContext> ctx;
};

Status CpuDevice::checkDesc(const KernelDesc &d) const {
  const DeviceInfo &info = ctx->info;
  if (d.name.empty())
    return Status::error("kernel has no entry point name");
  std::string what = "kernel '" + d.name + "': ";
  if (d.binary.empty())
    return Status::error(what + "empty binary");
  if (Status st = checkFormat(d); !st)
    return st;
  if (d.pushConstantBytes % 4 ||
      d.pushConstantBytes > info.maxPushConstantBytes)
    return Status::error(what + std::to_string(d.pushConstantBytes) +
                         " bytes of push constants (a multiple of 4 up to " +
                         std::to_string(info.maxPushConstantBytes) +
                         " is needed)");
  // Threads per workgroup: one (a workgroup is one call), or, for a
  // kernel that exports a thread entry, up to the device's limits.
  uint64_t threads = 1;
  for (int i = 0; i < 3; ++i) {
    if (d.workgroupSize[i] < 1 || d.workgroupSize[i] > info.maxWorkgroupSize[i])
      return Status::error(what + "workgroup size " +
                           std::to_string(d.workgroupSize[i]) +
                           " in dimension " + std::to_string(i) +
                           " is outside 1.." +
                           std::to_string(info.maxWorkgroupSize[i]));
    threads *= d.workgroupSize[i];
  }
  if (threads > info.maxWorkgroupInvocations)
    return Status::error(what + std::to_string(threads) +
                         " threads per workgroup exceed the device's " +
                         std::to_string(info.maxWorkgroupInvocations));
  if (d.sharedMemoryBytes > info.maxSharedMemoryBytes)
    return Status::error(what + std::to_string(d.sharedMemoryBytes) +
                         " bytes of shared memory exceed the device's " +
                         std::to_string(info.maxSharedMemoryBytes));
  if (std::string why = checkElfHeader(d.binary); !why.empty())
    return Status::error(what + "not an ELF shared object (" + why + ")");
  return Status();
}

Result<void *> CpuDevice::objectFor(const std::vector<uint8_t> &binary) {
  uint64_t hash = loadedBinaryKey(binary);
  std::lock_guard<std::mutex> lock(ctx->mutex);
  auto range = ctx->objects.equal_range(hash);
  for (auto it = range.first; it != range.second; ++it)
    if (it->second.bytes == binary)
      return it->second.handle;
  Result<LoadedObject> obj = loadObject(binary);
  if (!obj)
    return obj.status();
  void *handle = obj->handle;
  ctx->objects.emplace(hash, std::move(*obj));
  return handle;
}

Result<std::unique_ptr<Kernel>> CpuDevice::createKernel(const KernelDesc &d) {
  if (Status st = checkDesc(d); !st)
    return st;
  std::string what = "kernel '" + d.name + "'";
  Result<void *> handle = objectFor(d.binary);
  if (!handle)
    return Status::error(what + ": " + handle.status().message());
  dlerror(); // clear any earlier error
  std::string threadName = std::string(kCpuThreadEntryPrefix) + d.name;
  void *threadSymbol = dlsym(*handle, threadName.c_str());
  void *symbol = threadSymbol ? nullptr : dlsym(*handle, d.name.c_str());
  if (!symbol && !threadSymbol)
    return Status::error(what + ": the shared object has no symbol '" + d.name +
                         "'");
  if (symbol && (d.workgroupSize[0] != 1 || d.workgroupSize[1] != 1 ||
                 d.workgroupSize[2] != 1))
    return Status::error(what + ": workgroups of more than one thread need "
                                "a thread entry point ('" +
                         threadName + "')");
  KernelDesc kept = d;
  kept.binary.clear();
  kept.binary.shrink_to_fit();
  auto kernel = std::make_unique<CpuKernel>(
      ctx, std::move(kept), reinterpret_cast<KernelFn>(symbol),
      reinterpret_cast<ThreadFn>(threadSymbol));
  ctx->add(static_cast<const Kernel *>(kernel.get()));
  return std::unique_ptr<Kernel>(std::move(kernel));
}

/// The first "model name" of /proc/cpuinfo, or "unknown CPU".
std::string cpuModelName() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.compare(0, 10, "model name") != 0)
      continue;
    size_t colon = line.find(':');
    if (colon == std::string::npos)
      continue;
    size_t start = line.find_first_not_of(" \t", colon + 1);
    if (start != std::string::npos)
      return line.substr(start);
  }
  return "unknown CPU";
}

DeviceInfo describeCpu(unsigned threads) {
  static const std::string model = cpuModelName();
  std::string isa = hostCpuIsa();
  DeviceInfo info;
  info.backend = Backend::Cpu;
  info.name = "CPU: " + model + " (" + std::to_string(threads) +
              (threads == 1 ? " thread, " : " threads, ") + isa + ")";
  info.type = DeviceType::Cpu;
  info.subgroupSize = 1;
  info.subgroupArithmetic = false;
  // A workgroup is one call; the grid is bounded so that the number of
  // workgroups always fits in 64 bits.
  info.maxWorkgroupCount[0] = UINT32_MAX;
  info.maxWorkgroupCount[1] = 65535;
  info.maxWorkgroupCount[2] = 65535;
  // Kernels with a thread entry run up to 1024 threads per workgroup.
  info.maxWorkgroupSize[0] = info.maxWorkgroupSize[1] = 1024;
  info.maxWorkgroupSize[2] = 64;
  info.maxWorkgroupInvocations = 1024;
  info.maxSharedMemoryBytes = 65536;
  info.maxBindingBytes = 0;
  info.maxPushConstantBytes = 256;
  info.shaderFloat16 = info.shaderInt8 = info.shaderInt16 = true;
  info.shaderInt64 = info.storage8Bit = info.storage16Bit = true;
  info.timestampPeriodNs = 1; // dispatch times come from steady_clock, in ns
  info.threads = threads;
  info.cacheId = "cpu:" + isa;
  return info;
}

/// Threads beyond this are surely a mistake (and each costs a stack).
constexpr unsigned kMaxThreads = 4096;

unsigned spinMicros() {
  const char *env = std::getenv("HESPER_CPU_SPIN_US");
  if (!env || !*env)
    return 500;
  char *end = nullptr;
  unsigned long v = std::strtoul(env, &end, 10);
  return *end ? 500 : static_cast<unsigned>(std::min(v, 1000000ul));
}

} // namespace

Result<std::vector<DeviceInfo>> listCpuDevices() {
  return std::vector<DeviceInfo>{describeCpu(availableCpus())};
}

Result<std::unique_ptr<Device>> openCpuDevice(const DeviceOptions &opts) {
  if (opts.index > 0)
    return Status::error("CPU device index " + std::to_string(opts.index) +
                         " out of range (1 device)");
  unsigned threads = opts.threads ? opts.threads : availableCpus();
  if (threads > kMaxThreads)
    return Status::error("CPU device: " + std::to_string(threads) +
                         " threads requested, at most " +
                         std::to_string(kMaxThreads) + " are supported");
  auto ctx = std::make_shared<CpuContext>();
  ctx->info = describeCpu(threads);
  Result<std::unique_ptr<CpuThreadPool>> pool =
      CpuThreadPool::create(threads, spinMicros());
  if (!pool)
    return Status::error("opening the CPU device: " + pool.status().message());
  ctx->pool = std::move(*pool);
  return std::unique_ptr<Device>(std::make_unique<CpuDevice>(std::move(ctx)));
}

} // namespace hesper::rt::detail
