//===- CpuFibers.cpp - A workgroup's threads as fibers --------------------===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//
//
// ucontext fibers (glibc's makecontext/swapcontext), with the
// AddressSanitizer fiber annotations when it is on, so that the sanitizer
// follows the stack switches.
//
//===----------------------------------------------------------------------===//

#include "CpuFibers.h"

#include <cstdio>
#include <cstdlib>
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>
#include <vector>

#if defined(__SANITIZE_ADDRESS__)
#define HESPER_ASAN_FIBERS 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define HESPER_ASAN_FIBERS 1
#endif
#endif

#ifdef HESPER_ASAN_FIBERS
extern "C" {
void __sanitizer_start_switch_fiber(void **fakeStackSave, const void *bottom,
                                    size_t size);
void __sanitizer_finish_switch_fiber(void *fakeStackSave,
                                     const void **bottomOld, size_t *sizeOld);
}
#endif

using namespace hesper::rt::detail;

namespace {

/// Stack of one fiber: generous for kernel code, which keeps its private
/// arrays on it. Below it lies one inaccessible page, so that an overflow
/// faults instead of writing over other memory.
constexpr size_t kStackBytes = 256 * 1024;

/// A fiber's stack: an anonymous mapping whose lowest page is a guard.
class Stack {
public:
  Stack() = default;
  Stack(const Stack &) = delete;
  Stack &operator=(const Stack &) = delete;
  ~Stack() {
    if (base)
      munmap(base, kStackBytes + guard);
  }
  /// The usable bytes (kStackBytes of them), mapping them on first use;
  /// null when the mapping fails.
  char *get() {
    if (!base) {
      guard = static_cast<size_t>(sysconf(_SC_PAGESIZE));
      void *p = mmap(nullptr, kStackBytes + guard, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
      if (p == MAP_FAILED)
        return nullptr;
      mprotect(p, guard, PROT_NONE);
      base = static_cast<char *>(p);
    }
    return base + guard;
  }

private:
  char *base = nullptr;
  size_t guard = 0;
};

struct Fiber {
  ucontext_t context;
  Stack stack;
  bool done = false;
  bool failed = false; ///< ended by a failed assertion
};

/// The fibers of the calling OS thread (one workgroup at a time).
struct Team {
  ucontext_t scheduler;
  std::vector<Fiber> fibers;
  uint32_t count = 0;
  uint32_t current = 0;
  FiberBody body = nullptr;
  void *arg = nullptr;
#ifdef HESPER_ASAN_FIBERS
  const void *schedulerBottom = nullptr;
  size_t schedulerSize = 0;
#endif
};

thread_local Team team;

/// Switches from the scheduler to fiber `i`, and back when it yields or
/// ends.
void enter(uint32_t i) {
  team.current = i;
  Fiber &f = team.fibers[i];
#ifdef HESPER_ASAN_FIBERS
  void *fake = nullptr;
  __sanitizer_start_switch_fiber(&fake, f.stack.get(), kStackBytes);
#endif
  swapcontext(&team.scheduler, &f.context);
#ifdef HESPER_ASAN_FIBERS
  __sanitizer_finish_switch_fiber(fake, nullptr, nullptr);
#endif
}

/// Switches from the current fiber to the scheduler (`ending`: for good).
void leave(bool ending) {
  Fiber &f = team.fibers[team.current];
#ifdef HESPER_ASAN_FIBERS
  void *fake = nullptr;
  __sanitizer_start_switch_fiber(ending ? nullptr : &fake,
                                 team.schedulerBottom, team.schedulerSize);
#endif
  if (ending) {
    f.done = true;
    setcontext(&team.scheduler);
  }
  swapcontext(&f.context, &team.scheduler);
#ifdef HESPER_ASAN_FIBERS
  __sanitizer_finish_switch_fiber(fake, nullptr, nullptr);
#endif
}

void trampoline() {
#ifdef HESPER_ASAN_FIBERS
  __sanitizer_finish_switch_fiber(nullptr, &team.schedulerBottom,
                                  &team.schedulerSize);
#endif
  team.body(team.arg, team.current);
  leave(/*ending=*/true);
}

} // namespace

void *hesper::rt::detail::fiberState() { return &team; }

void hesper::rt::detail::fiberBarrier(void *state) {
  if (!state)
    team.fibers[team.current].failed = true;
  leave(/*ending=*/state == nullptr);
}

uint32_t hesper::rt::detail::runFibers(uint32_t count, FiberBody body,
                                       void *arg) {
  if (team.fibers.size() < count) {
    // Fibers hold their stacks, which must not move: a new vector.
    std::vector<Fiber> more(count);
    team.fibers.swap(more);
  }
  team.count = count;
  team.body = body;
  team.arg = arg;
  for (uint32_t i = 0; i < count; ++i) {
    Fiber &f = team.fibers[i];
    if (!f.stack.get()) {
      std::fprintf(stderr, "error: cannot map a %zu-byte stack for thread %u "
                           "of a workgroup\n",
                   kStackBytes, i);
      std::_Exit(1);
    }
    f.done = f.failed = false;
    getcontext(&f.context);
    f.context.uc_stack.ss_sp = f.stack.get();
    f.context.uc_stack.ss_size = kStackBytes;
    f.context.uc_link = nullptr;
    makecontext(&f.context, trampoline, 0);
  }
  // Rounds: each unfinished fiber runs, in order, to its next barrier or
  // its end.
  for (uint32_t running = count; running > 0;) {
    running = 0;
    for (uint32_t i = 0; i < count; ++i) {
      if (team.fibers[i].done)
        continue;
      enter(i);
      if (!team.fibers[i].done)
        ++running;
    }
  }
  uint32_t failed = 0;
  for (uint32_t i = 0; i < count; ++i)
    failed += team.fibers[i].failed;
  return failed;
}
