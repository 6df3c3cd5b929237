// The host side of a Vulkan-runner-style program, as upstream MLIR's
// Vulkan tests write it: buffers from plain memref.alloc (never given to
// the GPU with gpu.alloc or gpu.host_register), filled with the Vulkan
// runner's fillResource{1,2,3}D{Float,Int,Int8} functions, passed to
// gpu.launch_func directly (copied to the device for the launch and back
// after it), then printed. The kernel writes out[z][y][x] = a[x] * 2 +
// b[y][x] + c[z][y][x] with a = 1.5, b = 7 (i8, widened), c = -4, so every
// element is 1.5 * 2 + 7 - 4 = 6; a 1-D i32 buffer filled with 42 and a
// 2-D f32 one filled with 0.25 are printed as filled.
//
// Naming upstream's Vulkan runtime in --shared-libs (or --launch-times)
// prints each launch's times as that runtime does; upstream's other GPU
// runtimes named there are not loaded (Hesper's runtime stands in), and
// without either nothing is timed.
//
// REQUIRES: vulkan
// RUN: hesper-run %s --backend=vulkan --validation | FileCheck %s --check-prefixes=CHECK,UNTIMED
// RUN: hesper-run %s --backend=vulkan --shared-libs=/nowhere/libmlir_vulkan_runtime.so | FileCheck %s --check-prefixes=TIMES,CHECK
// RUN: %if cpu-target %{ hesper-run %s --backend=cpu --shared-libs=libmlir_cuda_runtime.so | FileCheck %s --check-prefixes=CHECK,UNTIMED %}
// RUN: %if cpu-target %{ hesper-run %s --backend=cpu --launch-times | FileCheck %s --check-prefixes=TIMES,CHECK %}

// UNTIMED-NOT: time:
// TIMES: Compute shader execution time: {{[0-9]+\.[0-9]}}us
// TIMES-NEXT: Command buffer submit time: {{[0-9]+}}us
// TIMES-NEXT: Wait idle time: {{[0-9]+}}us
// TIMES-NOT: time:
// CHECK: sizes = [2, 2, 4]
// CHECK-NEXT: {{\[\[\[}}6, 6, 6, 6],
// CHECK-NEXT: [6, 6, 6, 6]],
// CHECK-NEXT: {{\[\[}}6, 6, 6, 6],
// CHECK-NEXT: [6, 6, 6, 6]]]
// CHECK: sizes = [3]
// CHECK-NEXT: [42, 42, 42]
// CHECK: sizes = [2, 3]
// CHECK-NEXT: {{\[\[}}0.25, 0.25, 0.25],
// CHECK-NEXT: [0.25, 0.25, 0.25]]

module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @combine(%a: memref<4xf32>, %b: memref<2x4xi8>,
                      %c: memref<2x2x4xf32>, %out: memref<2x2x4xf32>)
        kernel attributes {known_block_size = array<i32: 1, 1, 1>} {
      %x = gpu.block_id x
      %y = gpu.block_id y
      %z = gpu.block_id z
      %av = memref.load %a[%x] : memref<4xf32>
      %bv = memref.load %b[%y, %x] : memref<2x4xi8>
      %cv = memref.load %c[%z, %y, %x] : memref<2x2x4xf32>
      %two = arith.constant 2.0 : f32
      %a2 = arith.mulf %av, %two : f32
      %bf = arith.sitofp %bv : i8 to f32
      %s = arith.addf %a2, %bf : f32
      %r = arith.addf %s, %cv : f32
      memref.store %r, %out[%z, %y, %x] : memref<2x2x4xf32>
      gpu.return
    }
  }

  func.func @main() {
    %a = memref.alloc() : memref<4xf32>
    %b = memref.alloc() : memref<2x4xi8>
    %c = memref.alloc() : memref<2x2x4xf32>
    %out = memref.alloc() : memref<2x2x4xf32>
    %ints = memref.alloc() : memref<3xi32>
    %quarter = memref.alloc() : memref<2x3xf32>
    %da = memref.cast %a : memref<4xf32> to memref<?xf32>
    %db = memref.cast %b : memref<2x4xi8> to memref<?x?xi8>
    %dc = memref.cast %c : memref<2x2x4xf32> to memref<?x?x?xf32>
    %dout = memref.cast %out : memref<2x2x4xf32> to memref<?x?x?xf32>
    %dints = memref.cast %ints : memref<3xi32> to memref<?xi32>
    %dq = memref.cast %quarter : memref<2x3xf32> to memref<?x?xf32>
    %fa = arith.constant 1.5 : f32
    %fb = arith.constant 7 : i8
    %fc = arith.constant -4.0 : f32
    %zero = arith.constant 0.0 : f32
    %fi = arith.constant 42 : i32
    %fq = arith.constant 0.25 : f32
    call @fillResource1DFloat(%da, %fa) : (memref<?xf32>, f32) -> ()
    call @fillResource2DInt8(%db, %fb) : (memref<?x?xi8>, i8) -> ()
    call @fillResource3DFloat(%dc, %fc) : (memref<?x?x?xf32>, f32) -> ()
    call @fillResource3DFloat(%dout, %zero) : (memref<?x?x?xf32>, f32) -> ()
    call @fillResource1DInt(%dints, %fi) : (memref<?xi32>, i32) -> ()
    call @fillResource2DFloat(%dq, %fq) : (memref<?x?xf32>, f32) -> ()
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %c4 = arith.constant 4 : index
    gpu.launch_func @kernels::@combine blocks in (%c4, %c2, %c2)
        threads in (%c1, %c1, %c1)
        args(%a : memref<4xf32>, %b : memref<2x4xi8>, %c : memref<2x2x4xf32>,
             %out : memref<2x2x4xf32>)
    %uout = memref.cast %out : memref<2x2x4xf32> to memref<*xf32>
    call @printMemrefF32(%uout) : (memref<*xf32>) -> ()
    %uints = memref.cast %ints : memref<3xi32> to memref<*xi32>
    call @printMemrefI32(%uints) : (memref<*xi32>) -> ()
    %uq = memref.cast %quarter : memref<2x3xf32> to memref<*xf32>
    call @printMemrefF32(%uq) : (memref<*xf32>) -> ()
    memref.dealloc %a : memref<4xf32>
    memref.dealloc %b : memref<2x4xi8>
    memref.dealloc %c : memref<2x2x4xf32>
    memref.dealloc %out : memref<2x2x4xf32>
    memref.dealloc %ints : memref<3xi32>
    memref.dealloc %quarter : memref<2x3xf32>
    return
  }
  func.func private @fillResource1DFloat(memref<?xf32>, f32)
  func.func private @fillResource2DFloat(memref<?x?xf32>, f32)
  func.func private @fillResource3DFloat(memref<?x?x?xf32>, f32)
  func.func private @fillResource1DInt(memref<?xi32>, i32)
  func.func private @fillResource2DInt8(memref<?x?xi8>, i8)
  func.func private @printMemrefF32(memref<*xf32>)
  func.func private @printMemrefI32(memref<*xi32>)
}
