//===- CpuThreadPool.cpp - Persistent threads of the CPU driver -----------===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//
//
// The protocol, per run() of generation g over P parts:
//   1. The caller writes the job (task, arg, total, parts), sets
//      `remaining` to P - 1, marks the slots of parts P.. as taken in g,
//      and stores g in `generation` (release).
//   2. Worker i sees generation g (acquire) and claims part i by moving its
//      slot from g - 1 to g (compare-exchange); it runs the part and
//      decrements `remaining` (release).
//   3. The caller runs part 0, then claims and runs any part whose worker
//      has not claimed it yet -- a worker that sleeps or was preempted does
//      not hold the dispatch up -- and waits for `remaining` to reach 0
//      (acquire).
// Every part is the same range whoever runs it. The job is only read after
// a successful claim, and the caller rewrites it only when every claimed
// part is done, so a worker that wakes up late finds its slot already at g
// (or later) and leaves the job alone. At the end of generation g every
// slot holds g, which is what makes a stale claim fail. The release/acquire
// pairs make every part's writes visible to the caller, and through the
// next generation to every thread of the next run.
//
// Waiting threads spin (a pause instruction per check, or sched_yield when
// there are more threads than CPUs) for a while, then sleep on a futex, so
// an idle pool costs no CPU. Sleepers announce themselves (`sleepers`,
// `callerSleeping`) before they re-check and sleep, and wakers check after
// they publish, both sequentially consistent: a wake-up is never lost.
//
//===----------------------------------------------------------------------===//

#include "CpuThreadPool.h"

#include <linux/futex.h>
#include <sched.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <chrono>
#include <climits>
#include <cstring>
#include <thread>

namespace hesper::rt::detail {

unsigned availableCpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0) {
    int n = CPU_COUNT(&set);
    if (n > 0)
      return static_cast<unsigned>(n);
  }
  unsigned n = std::thread::hardware_concurrency();
  return n ? n : 1;
}

namespace {

static_assert(sizeof(std::atomic<uint32_t>) == sizeof(uint32_t) &&
                  std::atomic<uint32_t>::is_always_lock_free,
              "a futex word must be a plain 32-bit integer");

uint32_t *futexWord(std::atomic<uint32_t> &a) {
  return reinterpret_cast<uint32_t *>(&a);
}

/// Sleeps while `word` holds `expected` (or until a spurious wake-up).
void futexWait(std::atomic<uint32_t> &word, uint32_t expected) {
  syscall(SYS_futex, futexWord(word), FUTEX_WAIT_PRIVATE, expected, nullptr,
          nullptr, 0);
}

void futexWakeAll(std::atomic<uint32_t> &word) {
  syscall(SYS_futex, futexWord(word), FUTEX_WAKE_PRIVATE, INT_MAX, nullptr,
          nullptr, 0);
}

inline void cpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

uint64_t nowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

/// Spins until `done()` or until `budgetNs` have passed; says which.
template <typename Done>
bool spinUntil(Done done, uint64_t budgetNs, bool yield) {
  uint64_t start = 0;
  for (uint32_t i = 0;; ++i) {
    if (done())
      return true;
    // Even with a CPU per thread, a spinner yields now and then: a thread
    // it waits for may have been put on its CPU (another process took the
    // other one, or the kernel balanced them so), and would otherwise wait
    // the whole budget -- measured: a 2 us dispatch took 510 us, the
    // default budget, in 4 of 5 tuning sessions on a 2-CPU machine.
    if (yield || (i & 255) == 255)
      sched_yield();
    else
      cpuRelax();
    // The clock (vDSO, ~20 ns) is read once per 64 pauses, or after every
    // yield, which may have given the CPU away for a while.
    if (yield || (i & 63) == 0) {
      uint64_t now = nowNs();
      if (!start)
        start = now;
      else if (now - start >= budgetNs)
        return done();
    }
  }
}

struct WorkerStart {
  CpuThreadPool *pool;
  unsigned index;
};

} // namespace

CpuThreadPool::CpuThreadPool(unsigned threads, unsigned spinMicros)
    : numThreads(threads), spinNs(uint64_t(spinMicros) * 1000),
      oversubscribed(threads > availableCpus()), slots(new Slot[threads]) {}

Result<std::unique_ptr<CpuThreadPool>>
CpuThreadPool::create(unsigned threads, unsigned spinMicros) {
  if (threads == 0)
    return Status::error("a thread pool needs at least one thread");
  std::unique_ptr<CpuThreadPool> pool(new CpuThreadPool(threads, spinMicros));
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  // Kernels may keep sizeable arrays on the stack ("shared memory").
  pthread_attr_setstacksize(&attr, 8u << 20);
  // Signals go to the application's threads, never to a worker -- except
  // those a fault in a kernel raises, so that crash handlers still run.
  sigset_t all, previous;
  sigfillset(&all);
  for (int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP, SIGABRT})
    sigdelset(&all, sig);
  pthread_sigmask(SIG_SETMASK, &all, &previous);
  Status st;
  std::vector<std::unique_ptr<WorkerStart>> starts;
  for (unsigned i = 1; i < threads; ++i) {
    starts.push_back(std::make_unique<WorkerStart>(WorkerStart{pool.get(), i}));
    pthread_t thread;
    if (int err = pthread_create(&thread, &attr, &CpuThreadPool::workerMain,
                                 starts.back().get())) {
      st = Status::error("cannot start CPU worker thread " + std::to_string(i) +
                         " of " + std::to_string(threads) + ": " +
                         std::strerror(err));
      break;
    }
    pool->workers.push_back(thread);
  }
  pthread_sigmask(SIG_SETMASK, &previous, nullptr);
  pthread_attr_destroy(&attr);
  // Wait until every worker has copied its start record.
  while (pool->started.load(std::memory_order_acquire) != pool->workers.size())
    sched_yield();
  if (!st) {
    pool->stopWorkers();
    return st;
  }
  return pool;
}

CpuThreadPool::~CpuThreadPool() { stopWorkers(); }

void CpuThreadPool::stopWorkers() {
  if (workers.empty())
    return;
  stopping.store(true, std::memory_order_relaxed);
  generation.fetch_add(1, std::memory_order_seq_cst);
  futexWakeAll(generation);
  for (pthread_t t : workers)
    pthread_join(t, nullptr);
  workers.clear();
}

void *CpuThreadPool::workerMain(void *start) {
  WorkerStart s = *static_cast<WorkerStart *>(start);
  s.pool->started.fetch_add(1, std::memory_order_release);
  s.pool->workerLoop(s.index);
  return nullptr;
}

bool CpuThreadPool::claim(unsigned part, uint32_t g) {
  std::atomic<uint32_t> &slot = slots[part].claimed;
  uint32_t expected = g - 1;
  // A plain load first: most failed claims need not own the cache line.
  return slot.load(std::memory_order_relaxed) == expected &&
         slot.compare_exchange_strong(expected, g, std::memory_order_acq_rel,
                                      std::memory_order_relaxed);
}

void CpuThreadPool::runPart(unsigned part) {
  task(arg, partBegin(total, parts, part), partBegin(total, parts, part + 1));
  if (remaining.fetch_sub(1, std::memory_order_seq_cst) == 1 &&
      callerSleeping.load(std::memory_order_seq_cst))
    futexWakeAll(remaining);
}

void CpuThreadPool::workerLoop(unsigned index) {
  // Workers start before the first generation is published.
  uint32_t seen = 0;
  for (;;) {
    auto changed = [&] {
      return generation.load(std::memory_order_acquire) != seen;
    };
    while (!spinUntil(changed, spinNs, oversubscribed)) {
      sleepers.fetch_add(1, std::memory_order_seq_cst);
      if (generation.load(std::memory_order_seq_cst) == seen)
        futexWait(generation, seen);
      sleepers.fetch_sub(1, std::memory_order_relaxed);
    }
    // The latest generation: the ones in between, if any, are done.
    seen = generation.load(std::memory_order_acquire);
    if (stopping.load(std::memory_order_relaxed))
      return;
    if (claim(index, seen))
      runPart(index);
  }
}

void CpuThreadPool::run(uint64_t n, Task fn, void *context,
                        unsigned maxParts) {
  if (n == 0)
    return;
  unsigned p = n < numThreads ? static_cast<unsigned>(n) : numThreads;
  if (maxParts && maxParts < p)
    p = maxParts;
  if (p == 1) {
    // Nothing to share: the workers are not woken.
    fn(context, 0, n);
    return;
  }
  uint32_t g = ++current;
  task = fn;
  arg = context;
  total = n;
  parts = p;
  remaining.store(p - 1, std::memory_order_relaxed);
  for (unsigned i = p; i < numThreads; ++i)
    slots[i].claimed.store(g, std::memory_order_relaxed);
  generation.store(g, std::memory_order_seq_cst);
  if (sleepers.load(std::memory_order_seq_cst))
    futexWakeAll(generation);
  fn(context, 0, partBegin(n, p, 1));
  for (unsigned i = 1; i < p; ++i)
    if (claim(i, g))
      runPart(i);
  waitForWorkers();
}

void CpuThreadPool::waitForWorkers() {
  auto done = [&] { return remaining.load(std::memory_order_acquire) == 0; };
  while (!spinUntil(done, spinNs, oversubscribed)) {
    callerSleeping.store(1, std::memory_order_seq_cst);
    if (uint32_t left = remaining.load(std::memory_order_seq_cst))
      futexWait(remaining, left);
    callerSleeping.store(0, std::memory_order_relaxed);
  }
}

} // namespace hesper::rt::detail
