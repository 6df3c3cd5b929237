// A 2-D memref with a row pitch wider than its rows: a 4x6 view of a 4x8
// buffer (memref<4x6xf32, strided<[8, 1]>>, a subview) passed to a kernel
// run on a 2-D block of 6x4 threads, which writes y * 10 + x into its
// element; the two padding columns keep their -1. Also the entry point's
// result: main returns the number of padding cells still at -1 (8), as
// mlir-runner prints a returned i32 with --entry-point-result=i32.
//
// REQUIRES: vulkan
// RUN: hesper-run %s --backend=vulkan --validation --entry-point-result=i32 | FileCheck %s
// The same on the CPU target (the threads of a workgroup as fibers,
// subgroups of one lane):
// RUN: %if cpu-target %{ hesper-run %s --backend=cpu --entry-point-result=i32 | FileCheck %s %}

// CHECK: sizes = [4, 8] strides = [8, 1] data =
// CHECK-NEXT: {{\[\[}}0, 1, 2, 3, 4, 5, -1, -1],
// CHECK-NEXT: [10, 11, 12, 13, 14, 15, -1, -1],
// CHECK-NEXT: [20, 21, 22, 23, 24, 25, -1, -1],
// CHECK-NEXT: [30, 31, 32, 33, 34, 35, -1, -1]]
// CHECK-NEXT: 8

module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @fill(%m: memref<4x6xf32, strided<[8, 1]>>) kernel {
      %x = gpu.thread_id x
      %y = gpu.thread_id y
      %c10 = arith.constant 10 : index
      %r = arith.muli %y, %c10 : index
      %v = arith.addi %r, %x : index
      %i = arith.index_cast %v : index to i32
      %f = arith.sitofp %i : i32 to f32
      memref.store %f, %m[%y, %x] : memref<4x6xf32, strided<[8, 1]>>
      gpu.return
    }
  }

  func.func @main() -> i32 {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c4 = arith.constant 4 : index
    %c6 = arith.constant 6 : index
    %c8 = arith.constant 8 : index
    %minus = arith.constant -1.0 : f32
    %buffer = memref.alloc() : memref<4x8xf32>
    scf.for %i = %c0 to %c4 step %c1 {
      scf.for %j = %c0 to %c8 step %c1 {
        memref.store %minus, %buffer[%i, %j] : memref<4x8xf32>
      }
    }
    %u = memref.cast %buffer : memref<4x8xf32> to memref<*xf32>
    gpu.host_register %u : memref<*xf32>
    %view = memref.subview %buffer[0, 0] [4, 6] [1, 1]
        : memref<4x8xf32> to memref<4x6xf32, strided<[8, 1]>>
    gpu.launch_func @kernels::@fill blocks in (%c1, %c1, %c1)
        threads in (%c6, %c4, %c1)
        args(%view : memref<4x6xf32, strided<[8, 1]>>)
    call @printMemrefF32(%u) : (memref<*xf32>) -> ()
    %zero = arith.constant 0 : i32
    %one = arith.constant 1 : i32
    %count = scf.for %i = %c0 to %c4 step %c1 iter_args(%n = %zero) -> (i32) {
      %n2 = scf.for %j = %c6 to %c8 step %c1 iter_args(%m = %n) -> (i32) {
        %v = memref.load %buffer[%i, %j] : memref<4x8xf32>
        %pad = arith.cmpf oeq, %v, %minus : f32
        %inc = arith.addi %m, %one : i32
        %next = arith.select %pad, %inc, %m : i32
        scf.yield %next : i32
      }
      scf.yield %n2 : i32
    }
    gpu.host_unregister %u : memref<*xf32>
    memref.dealloc %buffer : memref<4x8xf32>
    return %count : i32
  }
  func.func private @printMemrefF32(memref<*xf32>) attributes { llvm.emit_c_interface }
}
