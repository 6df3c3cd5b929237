// An element-wise kernel launched with gpu.launch_func: c = (a + b) * s,
// with a scalar argument, on host memory registered with the GPU
// (gpu.host_register: the kernel reads a and b and writes c, which the host
// then prints), unregistered at the end. Written as for mlir-runner; only
// the tool's name differs.
//
// REQUIRES: vulkan
// RUN: hesper-run %s --backend=vulkan --validation \
// RUN:   --shared-libs=%mlir_runner_utils,%mlir_c_runner_utils | FileCheck %s
// The runner utilities are loaded by default, and -O levels are accepted.
// RUN: hesper-run %s --backend=vulkan -O0 | FileCheck %s
// RUN: hesper-run %s --backend=vulkan -O3 -e main --entry-point-result=void | FileCheck %s
// The same on the CPU target (the threads of a workgroup as fibers,
// subgroups of one lane):
// RUN: %if cpu-target %{ hesper-run %s --backend=cpu | FileCheck %s %}

// CHECK: Unranked Memref base@ = {{.*}} rank = 1 offset = 0 sizes = [8] strides = [1] data =
// CHECK-NEXT: [0, 5, 10, 15, 20, 25, 30, 35]
// CHECK: Unranked Memref
// CHECK-NEXT: [0, 1, 2, 3, 4, 5, 6, 7]
// The scalar printers of the C runner utilities: c[7] as f32, then 8 as
// i64, separated by a comma.
// CHECK-NEXT: 35, 8

module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @axpb(%a: memref<8xf32>, %b: memref<8xf32>, %c: memref<8xf32>,
                   %s: f32) kernel {
      %i = gpu.thread_id x
      %x = memref.load %a[%i] : memref<8xf32>
      %y = memref.load %b[%i] : memref<8xf32>
      %z = arith.addf %x, %y : f32
      %w = arith.mulf %z, %s : f32
      memref.store %w, %c[%i] : memref<8xf32>
      gpu.return
    }
  }

  func.func @main() {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c8 = arith.constant 8 : index
    %s = arith.constant 2.5 : f32
    %a = memref.alloc() : memref<8xf32>
    %b = memref.alloc() : memref<8xf32>
    %c = memref.alloc() : memref<8xf32>
    scf.for %i = %c0 to %c8 step %c1 {
      %ii = arith.index_cast %i : index to i32
      %f = arith.sitofp %ii : i32 to f32
      memref.store %f, %a[%i] : memref<8xf32>
      memref.store %f, %b[%i] : memref<8xf32>
    }
    %ua = memref.cast %a : memref<8xf32> to memref<*xf32>
    %ub = memref.cast %b : memref<8xf32> to memref<*xf32>
    %uc = memref.cast %c : memref<8xf32> to memref<*xf32>
    gpu.host_register %ua : memref<*xf32>
    gpu.host_register %ub : memref<*xf32>
    gpu.host_register %uc : memref<*xf32>
    gpu.launch_func @kernels::@axpb blocks in (%c1, %c1, %c1)
        threads in (%c8, %c1, %c1)
        args(%a : memref<8xf32>, %b : memref<8xf32>, %c : memref<8xf32>,
             %s : f32)
    call @printMemrefF32(%uc) : (memref<*xf32>) -> ()
    // The inputs are unchanged.
    call @printMemrefF32(%ua) : (memref<*xf32>) -> ()
    %c7 = arith.constant 7 : index
    %last = memref.load %c[%c7] : memref<8xf32>
    call @printF32(%last) : (f32) -> ()
    call @printComma() : () -> ()
    %eight = arith.constant 8 : i64
    call @printI64(%eight) : (i64) -> ()
    call @printNewline() : () -> ()
    gpu.host_unregister %ua : memref<*xf32>
    gpu.host_unregister %ub : memref<*xf32>
    gpu.host_unregister %uc : memref<*xf32>
    memref.dealloc %a : memref<8xf32>
    memref.dealloc %b : memref<8xf32>
    memref.dealloc %c : memref<8xf32>
    return
  }
  func.func private @printMemrefF32(memref<*xf32>) attributes { llvm.emit_c_interface }
  func.func private @printF32(f32)
  func.func private @printI64(i64)
  func.func private @printComma()
  func.func private @printNewline()
}
