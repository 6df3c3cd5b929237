//===- CrashWatchdog.h - A crashed tool never hangs ----------*- C++ -*-===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//
//
// LLVM's fatal-signal handler prints a stack trace, and printing it may
// allocate: glibc's backtrace loads libgcc_s on first use, the demangler
// and the symbolizer call malloc. A crash inside malloc (a stack overflow
// that lands there, say) leaves malloc's lock held, and the handler then
// waits on it forever. The watchdog bounds that wait.
//
//===----------------------------------------------------------------------===//

#ifndef HESPER_TOOLS_COMMON_CRASHWATCHDOG_H
#define HESPER_TOOLS_COMMON_CRASHWATCHDOG_H

namespace hesper::tools {

/// Seconds the crash path may take before SIGALRM ends the process.
inline constexpr unsigned kCrashWatchdogSeconds = 10;

/// Call first in main, before llvm::InitLLVM or anything else that adds a
/// signal handler: LLVM runs the crash callbacks in the order they were
/// added, and this one only calls alarm() (async-signal-safe), so a stack
/// trace that blocks is cut off by SIGALRM's default action (the process
/// ends with it, status 142 in a shell) instead of hanging.
///
/// For the tests, HESPER_TEST_CRASH=segv raises SIGSEGV right after, and
/// HESPER_TEST_CRASH=stuck-handler first adds a crash callback that blocks
/// forever, standing in for a handler stuck on a lock.
void armCrashWatchdog();

} // namespace hesper::tools

#endif // HESPER_TOOLS_COMMON_CRASHWATCHDOG_H
