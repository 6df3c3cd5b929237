// One kernel launched with three block sizes: Hesper compiles it once per
// size (the kernel keeps the first; copies named <kernel>_block_XxYxZ take
// the others), and each launch runs with its own. The kernel writes, at
// thread t of a block of n threads, out[t] = n * 100 + t + (block y size)
// * 1000 into a buffer of 8 that starts as -1: a launch of 8 threads
// fills it, one of 2 threads then overwrites elements 0 and 1, and one of
// 4x2 threads (ids t = x + 4y; 8 * 100 + 2 * 1000 + t) elements 0..7
// again. A fourth launch takes its size from memref.dim of a cast of the
// buffer to a dynamic shape, which folds to 8 before the kernels are
// compiled: it runs the first copy again.
//
// REQUIRES: vulkan
// RUN: hesper-run %s --backend=vulkan --validation | FileCheck %s
// RUN: %if cpu-target %{ hesper-run %s --backend=cpu | FileCheck %s %}

// CHECK: [1800, 1801, 1802, 1803, 1804, 1805, 1806, 1807]
// CHECK: [1200, 1201, 1802, 1803, 1804, 1805, 1806, 1807]
// CHECK: [2800, 2801, 2802, 2803, 2804, 2805, 2806, 2807]
// CHECK: [1800, 1801, 1802, 1803, 1804, 1805, 1806, 1807]

module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @ids(%out: memref<8xi32>) kernel {
      %x = gpu.thread_id x
      %y = gpu.thread_id y
      %nx = gpu.block_dim x
      %ny = gpu.block_dim y
      %row = arith.muli %y, %nx : index
      %t = arith.addi %row, %x : index
      %n = arith.muli %nx, %ny : index
      %c100 = arith.constant 100 : index
      %c1000 = arith.constant 1000 : index
      %a = arith.muli %n, %c100 : index
      %b = arith.muli %ny, %c1000 : index
      %s = arith.addi %a, %b : index
      %v = arith.addi %s, %t : index
      %vi = arith.index_cast %v : index to i32
      memref.store %vi, %out[%t] : memref<8xi32>
      gpu.return
    }
  }

  func.func @main() {
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %c4 = arith.constant 4 : index
    %c8 = arith.constant 8 : index
    %out = memref.alloc() : memref<8xi32>
    %m1 = arith.constant -1 : i32
    %dout = memref.cast %out : memref<8xi32> to memref<?xi32>
    call @fillResource1DInt(%dout, %m1) : (memref<?xi32>, i32) -> ()
    %u = memref.cast %out : memref<8xi32> to memref<*xi32>
    gpu.launch_func @kernels::@ids blocks in (%c1, %c1, %c1)
        threads in (%c8, %c1, %c1) args(%out : memref<8xi32>)
    call @printMemrefI32(%u) : (memref<*xi32>) -> ()
    gpu.launch_func @kernels::@ids blocks in (%c1, %c1, %c1)
        threads in (%c2, %c1, %c1) args(%out : memref<8xi32>)
    call @printMemrefI32(%u) : (memref<*xi32>) -> ()
    gpu.launch_func @kernels::@ids blocks in (%c1, %c1, %c1)
        threads in (%c4, %c2, %c1) args(%out : memref<8xi32>)
    call @printMemrefI32(%u) : (memref<*xi32>) -> ()
    %c0 = arith.constant 0 : index
    %n = memref.dim %dout, %c0 : memref<?xi32>
    gpu.launch_func @kernels::@ids blocks in (%c1, %c1, %c1)
        threads in (%n, %c1, %c1) args(%out : memref<8xi32>)
    call @printMemrefI32(%u) : (memref<*xi32>) -> ()
    memref.dealloc %out : memref<8xi32>
    return
  }
  func.func private @fillResource1DInt(memref<?xi32>, i32)
  func.func private @printMemrefI32(memref<*xi32>)
}
