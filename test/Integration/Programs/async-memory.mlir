// Async tokens and device memory: a chain of gpu.alloc, gpu.memcpy,
// gpu.memset and gpu.launch_func async ops, each waiting on the one before,
// then a round trip through device memory: host -> device (memcpy), a
// memset, device -> device (memcpy), device -> host (memcpy).
//   a = [0, 1, ..., 7] copied in; b = memset 0.5; kernel: b[i] += a[i] * 2;
//   c = copy of b; printed: b = [0.5, 2.5, ..., 14.5], and c.
// The integer part memsets a 16-element i32 buffer to 7 and copies it back.
//
// REQUIRES: vulkan
// RUN: hesper-run %s --backend=vulkan --validation | FileCheck %s
// The same on the CPU target (the threads of a workgroup as fibers,
// subgroups of one lane):
// RUN: %if cpu-target %{ hesper-run %s --backend=cpu | FileCheck %s %}

// CHECK: data =
// CHECK-NEXT: [0.5, 2.5, 4.5, 6.5, 8.5, 10.5, 12.5, 14.5]
// CHECK: data =
// CHECK-NEXT: [0.5, 2.5, 4.5, 6.5, 8.5, 10.5, 12.5, 14.5]
// CHECK: data =
// CHECK-NEXT: [7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7]

module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @fma(%a: memref<8xf32>, %b: memref<8xf32>) kernel {
      %i = gpu.thread_id x
      %x = memref.load %a[%i] : memref<8xf32>
      %y = memref.load %b[%i] : memref<8xf32>
      %two = arith.constant 2.0 : f32
      %z = math.fma %x, %two, %y : f32
      memref.store %z, %b[%i] : memref<8xf32>
      gpu.return
    }
  }

  func.func @main() {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c8 = arith.constant 8 : index
    %host = memref.alloc() : memref<8xf32>
    scf.for %i = %c0 to %c8 step %c1 {
      %ii = arith.index_cast %i : index to i32
      %f = arith.sitofp %ii : i32 to f32
      memref.store %f, %host[%i] : memref<8xf32>
    }
    %half = arith.constant 0.5 : f32
    %t0 = gpu.wait async
    %a, %t1 = gpu.alloc async [%t0] () : memref<8xf32>
    %b, %t2 = gpu.alloc async [%t1] () : memref<8xf32>
    %c, %t3 = gpu.alloc async [%t2] () : memref<8xf32>
    %t4 = gpu.memcpy async [%t3] %a, %host : memref<8xf32>, memref<8xf32>
    %t5 = gpu.memset async [%t4] %b, %half : memref<8xf32>, f32
    %t6 = gpu.launch_func async [%t5] @kernels::@fma blocks in (%c1, %c1, %c1)
        threads in (%c8, %c1, %c1) args(%a : memref<8xf32>, %b : memref<8xf32>)
    %t7 = gpu.memcpy async [%t6] %c, %b : memref<8xf32>, memref<8xf32>
    %outB = memref.alloc() : memref<8xf32>
    %outC = memref.alloc() : memref<8xf32>
    %t8 = gpu.memcpy async [%t7] %outB, %b : memref<8xf32>, memref<8xf32>
    %t9 = gpu.memcpy async [%t8] %outC, %c : memref<8xf32>, memref<8xf32>
    %t10 = gpu.dealloc async [%t9] %a : memref<8xf32>
    %t11 = gpu.dealloc async [%t10] %b : memref<8xf32>
    %t12 = gpu.dealloc async [%t11] %c : memref<8xf32>
    gpu.wait [%t12]
    %ub = memref.cast %outB : memref<8xf32> to memref<*xf32>
    %uc = memref.cast %outC : memref<8xf32> to memref<*xf32>
    call @printMemrefF32(%ub) : (memref<*xf32>) -> ()
    call @printMemrefF32(%uc) : (memref<*xf32>) -> ()

    %seven = arith.constant 7 : i32
    %d = gpu.alloc () : memref<16xi32>
    gpu.memset %d, %seven : memref<16xi32>, i32
    %hd = memref.alloc() : memref<16xi32>
    gpu.memcpy %hd, %d : memref<16xi32>, memref<16xi32>
    gpu.dealloc %d : memref<16xi32>
    %ud = memref.cast %hd : memref<16xi32> to memref<*xi32>
    call @printMemrefI32(%ud) : (memref<*xi32>) -> ()
    memref.dealloc %host : memref<8xf32>
    memref.dealloc %outB : memref<8xf32>
    memref.dealloc %outC : memref<8xf32>
    memref.dealloc %hd : memref<16xi32>
    return
  }
  func.func private @printMemrefF32(memref<*xf32>) attributes { llvm.emit_c_interface }
  func.func private @printMemrefI32(memref<*xi32>) attributes { llvm.emit_c_interface }
}
