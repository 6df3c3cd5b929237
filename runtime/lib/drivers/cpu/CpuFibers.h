//===- CpuFibers.h - A workgroup's threads as fibers ------------*- C++ -*-===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//
//
// CPU kernels whose workgroups have several threads that meet at barriers
// (gpu dialect kernels) run each workgroup on one OS thread, its threads as
// fibers: every fiber runs until its next barrier (or its end), in thread
// order, then every fiber waiting at the barrier resumes, in thread order.
// So a workgroup's results depend only on the kernel, never on scheduling,
// and a whole dispatch is bit-identical for every number of OS threads.
//
//===----------------------------------------------------------------------===//

#ifndef HESPER_RUNTIME_LIB_DRIVERS_CPU_CPUFIBERS_H
#define HESPER_RUNTIME_LIB_DRIVERS_CPU_CPUFIBERS_H

#include <cstdint>

namespace hesper::rt::detail {

/// One thread of a workgroup: `arg` and the thread's index.
using FiberBody = void (*)(void *arg, uint32_t thread);

/// Runs body(arg, 0..count-1) as fibers on the calling OS thread, each on
/// a stack of its own (kept per OS thread and reused), and returns when
/// every one has returned or ended. A body calls fiberBarrier(state) with
/// the `state` it is given through `arg` (fiberState()) to wait for the
/// others. Returns how many fibers ended by a failed assertion.
uint32_t runFibers(uint32_t count, FiberBody body, void *arg);

/// The barrier state of the fibers the calling OS thread runs now.
void *fiberState();

/// Waits until every unfinished fiber of the workgroup has reached a
/// barrier. A C function pointer the kernels call. Called with a null
/// `state`, it ends the calling fiber for good instead: the kernel's
/// lowering of a failed cf.assert (after printing the failure), so that
/// the thread stops there, the workgroup's other threads go on without it
/// and runFibers counts it.
void fiberBarrier(void *state);

} // namespace hesper::rt::detail

#endif // HESPER_RUNTIME_LIB_DRIVERS_CPU_CPUFIBERS_H
