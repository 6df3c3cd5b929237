// gpu.printf on the CPU target: the C library's printf. A workgroup's
// threads (fibers) print in thread order; workgroups run on the device's
// OS threads, so with more than one their lines may interleave: here one
// thread runs both workgroups. Each thread prints its id, an f32, an index
// and an i8 (promoted as C promotes variadic arguments), before and after
// a barrier.
// On Vulkan the kernel writes its records into a buffer that the runtime
// prints after the launch, by workgroup, then each thread's n-th record,
// then thread: the same lines in the same order, on every run. CUDA prints
// through vprintf in an order the GPU chooses.
//
// REQUIRES: cpu-target
// RUN: hesper-run %s --backend=cpu --threads 1 | FileCheck %s
// RUN: %if vulkan %{ hesper-run %s --backend=vulkan --validation | FileCheck %s %}

// CHECK:      thread 0 of 3: 0.500000 block 1 byte -3
// CHECK-NEXT: thread 1 of 3: 1.500000 block 1 byte -2
// CHECK-NEXT: thread 2 of 3: 2.500000 block 1 byte -1
// CHECK-NEXT: after the barrier: 0
// CHECK-NEXT: after the barrier: 1
// CHECK-NEXT: after the barrier: 2
// CHECK-NEXT: thread 0 of 3: 0.500000 block 2 byte -3
// CHECK-NEXT: thread 1 of 3: 1.500000 block 2 byte -2
// CHECK-NEXT: thread 2 of 3: 2.500000 block 2 byte -1
// CHECK-NEXT: after the barrier: 0
// CHECK-NEXT: after the barrier: 1
// CHECK-NEXT: after the barrier: 2

module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @talk() kernel {
      %t = gpu.thread_id x
      %n = gpu.block_dim x
      %b = gpu.block_id x
      %t32 = arith.index_cast %t : index to i32
      %f = arith.sitofp %t32 : i32 to f32
      %half = arith.constant 0.5 : f32
      %v = arith.addf %f, %half : f32
      %c1 = arith.constant 1 : index
      %b1 = arith.addi %b, %c1 : index
      %t8 = arith.trunci %t32 : i32 to i8
      %three = arith.constant 3 : i8
      %byte = arith.subi %t8, %three : i8
      gpu.printf "thread %d of %ld: %f block %ld byte %d\n", %t32, %n, %v, %b1, %byte : i32, index, f32, index, i8
      gpu.barrier
      gpu.printf "after the barrier: %d\n", %t32 : i32
      gpu.return
    }
  }

  func.func @main() {
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %c3 = arith.constant 3 : index
    gpu.launch_func @kernels::@talk blocks in (%c2, %c1, %c1)
        threads in (%c3, %c1, %c1)
    return
  }
}
