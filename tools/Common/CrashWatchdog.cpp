//===- CrashWatchdog.cpp - A crashed tool never hangs ---------------------===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//

#include "CrashWatchdog.h"

#include "llvm/Support/Signals.h"

#include <csignal>
#include <cstdlib>
#include <cstring>

#include <unistd.h>

void hesper::tools::armCrashWatchdog() {
  llvm::sys::AddSignalHandler(
      [](void *) { alarm(kCrashWatchdogSeconds); }, nullptr);

  const char *test = std::getenv("HESPER_TEST_CRASH");
  if (!test)
    return;
  if (std::strcmp(test, "stuck-handler") == 0)
    llvm::sys::AddSignalHandler(
        [](void *) {
          for (;;)
            pause();
        },
        nullptr);
  if (std::strcmp(test, "segv") == 0 || std::strcmp(test, "stuck-handler") == 0)
    std::raise(SIGSEGV);
}
