//===- CpuThreadPool.h - Persistent threads of the CPU driver ---*- C++ -*-===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//
//
// Internal to the runtime: the threads that run the CPU device's dispatches.
// A pool of T threads is T-1 workers plus the thread that calls run(); it
// runs one parallel loop at a time over a range split the same way every
// time, and returns only when every part is done (a full barrier). Part i
// is worker i's, unless the caller, done with part 0, finds it unclaimed.
//
//===----------------------------------------------------------------------===//

#ifndef HESPER_RUNTIME_LIB_DRIVERS_CPU_CPUTHREADPOOL_H
#define HESPER_RUNTIME_LIB_DRIVERS_CPU_CPUTHREADPOOL_H

#include "hesper/runtime/Runtime.h"

#include <pthread.h>

#include <atomic>
#include <memory>
#include <vector>

namespace hesper::rt::detail {

/// The CPUs this process may run on (sched_getaffinity), else
/// std::thread::hardware_concurrency(), at least 1.
unsigned availableCpus();

class CpuThreadPool {
public:
  /// Runs items [begin, end) of a loop.
  using Task = void (*)(void *arg, uint64_t begin, uint64_t end);

  /// Starts `threads` - 1 workers (`threads` >= 1). Idle workers spin for
  /// `spinMicros` before they sleep.
  static Result<std::unique_ptr<CpuThreadPool>> create(unsigned threads,
                                                       unsigned spinMicros);
  ~CpuThreadPool();
  CpuThreadPool(const CpuThreadPool &) = delete;
  CpuThreadPool &operator=(const CpuThreadPool &) = delete;

  unsigned threads() const { return numThreads; }

  /// Runs `task` over [0, total) in P = min(threads, total, maxParts)
  /// parts (maxParts 0: no cap), part i
  /// being [partBegin(total, P, i), partBegin(total, P, i + 1)), one call
  /// each; part 0 runs on the calling thread, part i on worker i or, when
  /// that one is late, on the calling thread. Returns when all parts are
  /// done: what they wrote is visible to the caller and to every part of
  /// the next run(). One call at a time.
  void run(uint64_t total, Task task, void *arg, unsigned maxParts = 0);

  /// i * total / parts, without overflow.
  static uint64_t partBegin(uint64_t total, unsigned parts, unsigned i) {
    return static_cast<uint64_t>(static_cast<unsigned __int128>(total) * i /
                                 parts);
  }

private:
  CpuThreadPool(unsigned threads, unsigned spinMicros);
  static void *workerMain(void *self);
  void workerLoop(unsigned index);
  /// Takes part `part` of generation `g` for the calling thread.
  bool claim(unsigned part, uint32_t g);
  /// Runs a claimed part and counts it done.
  void runPart(unsigned part);
  void waitForWorkers();
  void stopWorkers();

  const unsigned numThreads;
  const uint64_t spinNs;
  /// More threads than CPUs: a waiting thread yields its CPU between checks.
  const bool oversubscribed;
  std::vector<pthread_t> workers;
  std::atomic<unsigned> started{0};
  std::atomic<bool> stopping{false};

  /// The generation in which a part was last claimed, one cache line each
  /// (slot 0, the caller's part, is unused).
  struct alignas(64) Slot {
    std::atomic<uint32_t> claimed{0};
  };
  std::unique_ptr<Slot[]> slots;

  // The job of the current generation, written by run() while no thread
  // reads it (every claimed part of the previous one is done) and
  // published by the release of the generation store.
  Task task = nullptr;
  void *arg = nullptr;
  uint64_t total = 0;
  unsigned parts = 0;
  uint32_t current = 0; ///< the caller's count of generations

  // Each counter on its own cache line. `generation` and `remaining` are
  // also futex words.
  alignas(64) std::atomic<uint32_t> generation{0};
  alignas(64) std::atomic<uint32_t> sleepers{0};  ///< workers in futex waits
  alignas(64) std::atomic<uint32_t> remaining{0}; ///< parts 1.. not yet done
  alignas(64) std::atomic<uint32_t> callerSleeping{0};
};

} // namespace hesper::rt::detail

#endif // HESPER_RUNTIME_LIB_DRIVERS_CPU_CPUTHREADPOOL_H
