// Integer types of every width in buffers and arithmetic: i8 (wrapping add,
// signed shift), i16 (multiply), i64 (values past 2^32, division), the
// extended multiplies (arith.mulsi_extended / mului_extended: the high
// word of a 32x32 product), and f16 data (x * 1.5 + 0.25, in f16).
//   i8:  a = [100, -7, 127, 3];  a + 100 (wraps) -> [-56, 93, -29, 103]
//        a >> 1 (arithmetic)                     -> [50, -4, 63, 1]
//   i16: a * 300                                 -> [30000, -2100, 38100 - 65536 = -27436, 900]
//   i64: (a + 2^33) / 3 (truncating)             -> [2863311564, 2863311528, 2863311573, 2863311531]
//   mulsi_extended(-7 * 2^20, 2^20): low 0, high -7 * 2^8 = -1792
//   mului_extended(0xFFFFFFFF, 0xFFFFFFFF): low 1, high 0xFFFFFFFE (-2 as i32)
//   f16: [0.5, -2, 3.25, 1000] * 1.5 + 0.25 -> [1, -2.75, 5.125, 1500]
//
// REQUIRES: vulkan
// RUN: hesper-run %s --backend=vulkan --validation | FileCheck %s
// The same on the CPU target (the threads of a workgroup as fibers,
// subgroups of one lane):
// RUN: %if cpu-target %{ hesper-run %s --backend=cpu | FileCheck %s %}

// CHECK: data =
// CHECK-NEXT: {{\[\[}}-56, 93, -29, 103],
// CHECK-NEXT: [50, -4, 63, 1]]
// CHECK: data =
// CHECK-NEXT: [30000, -2100, -27436, 900]
// CHECK: data =
// CHECK-NEXT: [2863311564, 2863311528, 2863311573, 2863311531]
// CHECK: data =
// CHECK-NEXT: [0, -1792, 1, -2]
// CHECK: data =
// CHECK-NEXT: [1, -2.75, 5.125, 1500]

module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @ints(%a: memref<4xi8>, %sum: memref<4xi8>, %shr: memref<4xi8>,
                   %prod: memref<4xi16>, %wide: memref<4xi64>,
                   %ext: memref<4xi32>) kernel {
      %i = gpu.thread_id x
      %x = memref.load %a[%i] : memref<4xi8>
      %hundred = arith.constant 100 : i8
      %one = arith.constant 1 : i8
      %s = arith.addi %x, %hundred : i8
      memref.store %s, %sum[%i] : memref<4xi8>
      %h = arith.shrsi %x, %one : i8
      memref.store %h, %shr[%i] : memref<4xi8>
      %x16 = arith.extsi %x : i8 to i16
      %k = arith.constant 300 : i16
      %p = arith.muli %x16, %k : i16
      memref.store %p, %prod[%i] : memref<4xi16>
      %x64 = arith.extsi %x : i8 to i64
      %big = arith.constant 8589934592 : i64
      %three = arith.constant 3 : i64
      %w0 = arith.addi %x64, %big : i64
      %w = arith.divsi %w0, %three : i64
      memref.store %w, %wide[%i] : memref<4xi64>
      %c0 = arith.constant 0 : index
      %first = arith.cmpi eq, %i, %c0 : index
      scf.if %first {
        %m = arith.constant -7340032 : i32
        %n = arith.constant 1048576 : i32
        %lo, %hi = arith.mulsi_extended %m, %n : i32
        %all = arith.constant -1 : i32
        %ulo, %uhi = arith.mului_extended %all, %all : i32
        %c1 = arith.constant 1 : index
        %c2 = arith.constant 2 : index
        %c3 = arith.constant 3 : index
        memref.store %lo, %ext[%c0] : memref<4xi32>
        memref.store %hi, %ext[%c1] : memref<4xi32>
        memref.store %ulo, %ext[%c2] : memref<4xi32>
        memref.store %uhi, %ext[%c3] : memref<4xi32>
      }
      gpu.return
    }
    gpu.func @halves(%x: memref<4xf16>, %y: memref<4xf16>) kernel {
      %i = gpu.thread_id x
      %v = memref.load %x[%i] : memref<4xf16>
      %a = arith.constant 1.5 : f16
      %b = arith.constant 0.25 : f16
      %m = arith.mulf %v, %a : f16
      %r = arith.addf %m, %b : f16
      memref.store %r, %y[%i] : memref<4xf16>
      gpu.return
    }
  }

  func.func @main() {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %c3 = arith.constant 3 : index
    %c4 = arith.constant 4 : index
    %a = memref.alloc() : memref<4xi8>
    %v0 = arith.constant 100 : i8
    %v1 = arith.constant -7 : i8
    %v2 = arith.constant 127 : i8
    %v3 = arith.constant 3 : i8
    memref.store %v0, %a[%c0] : memref<4xi8>
    memref.store %v1, %a[%c1] : memref<4xi8>
    memref.store %v2, %a[%c2] : memref<4xi8>
    memref.store %v3, %a[%c3] : memref<4xi8>
    %sum = memref.alloc() : memref<4xi8>
    %shr = memref.alloc() : memref<4xi8>
    %prod = memref.alloc() : memref<4xi16>
    %wide = memref.alloc() : memref<4xi64>
    %ext = memref.alloc() : memref<4xi32>
    %ua = memref.cast %a : memref<4xi8> to memref<*xi8>
    %us = memref.cast %sum : memref<4xi8> to memref<*xi8>
    %uh = memref.cast %shr : memref<4xi8> to memref<*xi8>
    %up = memref.cast %prod : memref<4xi16> to memref<*xi16>
    %uw = memref.cast %wide : memref<4xi64> to memref<*xi64>
    %ue = memref.cast %ext : memref<4xi32> to memref<*xi32>
    gpu.host_register %ua : memref<*xi8>
    gpu.host_register %us : memref<*xi8>
    gpu.host_register %uh : memref<*xi8>
    gpu.host_register %up : memref<*xi16>
    gpu.host_register %uw : memref<*xi64>
    gpu.host_register %ue : memref<*xi32>
    gpu.launch_func @kernels::@ints blocks in (%c1, %c1, %c1)
        threads in (%c4, %c1, %c1)
        args(%a : memref<4xi8>, %sum : memref<4xi8>, %shr : memref<4xi8>,
             %prod : memref<4xi16>, %wide : memref<4xi64>,
             %ext : memref<4xi32>)
    // printMemrefI8 prints bytes as characters, as in mlir-runner: the i8
    // results are widened on the host first.
    %bytes = memref.alloc() : memref<2x4xi32>
    scf.for %i = %c0 to %c4 step %c1 {
      %s8 = memref.load %sum[%i] : memref<4xi8>
      %h8 = memref.load %shr[%i] : memref<4xi8>
      %s32 = arith.extsi %s8 : i8 to i32
      %h32 = arith.extsi %h8 : i8 to i32
      memref.store %s32, %bytes[%c0, %i] : memref<2x4xi32>
      memref.store %h32, %bytes[%c1, %i] : memref<2x4xi32>
    }
    %ub = memref.cast %bytes : memref<2x4xi32> to memref<*xi32>
    call @printMemrefI32(%ub) : (memref<*xi32>) -> ()
    call @printMemrefI16(%up) : (memref<*xi16>) -> ()
    call @printMemrefI64(%uw) : (memref<*xi64>) -> ()
    call @printMemrefI32(%ue) : (memref<*xi32>) -> ()

    %x = memref.alloc() : memref<4xf16>
    %h0 = arith.constant 0.5 : f16
    %h1 = arith.constant -2.0 : f16
    %h2 = arith.constant 3.25 : f16
    %h3 = arith.constant 1000.0 : f16
    memref.store %h0, %x[%c0] : memref<4xf16>
    memref.store %h1, %x[%c1] : memref<4xf16>
    memref.store %h2, %x[%c2] : memref<4xf16>
    memref.store %h3, %x[%c3] : memref<4xf16>
    %y = memref.alloc() : memref<4xf16>
    %ux = memref.cast %x : memref<4xf16> to memref<*xf16>
    %uy = memref.cast %y : memref<4xf16> to memref<*xf16>
    gpu.host_register %ux : memref<*xf16>
    gpu.host_register %uy : memref<*xf16>
    gpu.launch_func @kernels::@halves blocks in (%c1, %c1, %c1)
        threads in (%c4, %c1, %c1) args(%x : memref<4xf16>, %y : memref<4xf16>)
    call @printMemrefF16(%uy) : (memref<*xf16>) -> ()
    memref.dealloc %a : memref<4xi8>
    memref.dealloc %sum : memref<4xi8>
    memref.dealloc %shr : memref<4xi8>
    memref.dealloc %prod : memref<4xi16>
    memref.dealloc %wide : memref<4xi64>
    memref.dealloc %ext : memref<4xi32>
    memref.dealloc %bytes : memref<2x4xi32>
    memref.dealloc %x : memref<4xf16>
    memref.dealloc %y : memref<4xf16>
    return
  }
  func.func private @printMemrefI16(memref<*xi16>) attributes { llvm.emit_c_interface }
  func.func private @printMemrefI32(memref<*xi32>) attributes { llvm.emit_c_interface }
  func.func private @printMemrefI64(memref<*xi64>) attributes { llvm.emit_c_interface }
  func.func private @printMemrefF16(memref<*xf16>) attributes { llvm.emit_c_interface }
}
