// cf.assert in a kernel on the CPU target, with the message CUDA's
// __assertfail prints for a failed one: the file, line and function of the
// location (the innermost call site's callee), the block, the thread and
// the message. A failing thread ends there: it prints nothing after the
// assertion, while the workgroup's other threads go on (also past a barrier
// the failed thread never reaches). The launch then fails: hesper-run says
// which kernel and how many threads, and exits non-zero; the program stops
// there, as it does on a GPU whose kernel traps. Passing assertions cost
// nothing visible.
// Vulkan refuses cf.assert (errors.test); CUDA lowers it to __assertfail
// (kernels.test).
//
// REQUIRES: cpu-target
// RUN: not hesper-run %s --backend=cpu --threads 1 > %t.out 2> %t.err
// RUN: FileCheck %s < %t.out
// RUN: FileCheck %s --check-prefix=ERR < %t.err

// Thread 2 fails the second assertion, the others pass it; the first
// workgroup's threads run (fibers, in thread order) before the second's.
// CHECK:      thread 0 of block 0 passed
// CHECK-NEXT: thread 1 of block 0 passed
// CHECK-NEXT: inner.cc:7: inner_fn: block: [0,0,0], thread: [2,0,0] Assertion `100% sure thread 2 is out` failed.
// CHECK-NEXT: after the barrier: thread 0 of block 0
// CHECK-NEXT: after the barrier: thread 1 of block 0
// CHECK-NEXT: thread 0 of block 1 passed
// CHECK-NEXT: thread 1 of block 1 passed
// CHECK-NEXT: inner.cc:7: inner_fn: block: [1,0,0], thread: [2,0,0] Assertion `100% sure thread 2 is out` failed.
// CHECK-NEXT: after the barrier: thread 0 of block 1
// CHECK-NEXT: after the barrier: thread 1 of block 1
// CHECK-NOT: thread 2
// CHECK-NOT: 1.5
// ERR: error: running a kernel: kernel 'check': 2 threads failed an assertion
// The op's own location (the file's line) has no function name.
// RUN: sed -e 's/ loc(callsite.*$//' %s > %t.plain.mlir
// RUN: not hesper-run %t.plain.mlir --backend=cpu --threads 1 2>/dev/null | FileCheck %s --check-prefix=PLAIN
// PLAIN: plain.mlir:50: <unknown>: block: [0,0,0], thread: [2,0,0] Assertion `100% sure thread 2 is out` failed.

module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @check() kernel {
      %t = gpu.thread_id x
      %b = gpu.block_id x
      %true = arith.constant true
      cf.assert %true, "always holds"
      %c2 = arith.constant 2 : index
      %not2 = arith.cmpi ne, %t, %c2 : index
      scf.if %not2 {
        gpu.printf "thread %ld of block %ld passed\n", %t, %b : index, index
      }
      cf.assert %not2, "100% sure thread 2 is out" loc(callsite(callsite("inner_fn"("inner.cc":7:3) at "outer.cc":12:5) at "main.cc":20:1))
      gpu.barrier
      gpu.printf "after the barrier: thread %ld of block %ld\n", %t, %b : index, index
      gpu.return
    }
  }
  func.func @main() {
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %c3 = arith.constant 3 : index
    gpu.launch_func @kernels::@check blocks in (%c2, %c1, %c1) threads in (%c3, %c1, %c1)
    %v = arith.constant 1.5 : f32
    vector.print %v : f32
    return
  }
}
