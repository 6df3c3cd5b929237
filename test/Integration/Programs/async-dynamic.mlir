// upstream's async GPU test's shape: memrefs of dynamic size (gpu.alloc of
// %n elements, a kernel taking memref<?xi32>), gpu async tokens inside
// async.execute regions (gpu.wait async, gpu.alloc async, gpu.memcpy
// async, gpu.launch_func async) and async values carrying the buffers
// from region to region. Vulkan binds each buffer whole (its kernels index
// a runtime array); the CPU target (and CUDA) pass the buffer as a pointer
// and its sizes as one more binding, from which the kernel rebuilds the
// view.
//
// RUN: %if vulkan %{ hesper-run %s --backend=vulkan --validation | FileCheck %s %}
// RUN: %if cpu-target %{ hesper-run %s --backend=cpu | FileCheck %s %}

// CHECK: [84,  84]

module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @add(%a: memref<?xi32>, %b: memref<?xi32>) kernel {
      %i = gpu.thread_id x
      %v = memref.load %a[%i] : memref<?xi32>
      %w = memref.load %b[%i] : memref<?xi32>
      %s = arith.addi %v, %w : i32
      memref.store %s, %b[%i] : memref<?xi32>
      gpu.return
    }
  }
  func.func private @printMemrefI32(memref<*xi32>)
  func.func @main() {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %n = arith.constant 2 : index
    %h = memref.alloc(%n) : memref<?xi32>
    %hu = memref.cast %h : memref<?xi32> to memref<*xi32>
    gpu.host_register %hu : memref<*xi32>
    %v0 = arith.constant 42 : i32
    memref.store %v0, %h[%c0] : memref<?xi32>
    memref.store %v0, %h[%c1] : memref<?xi32>
    %t0, %f0 = async.execute () -> !async.value<memref<?xi32>> {
      %b0 = gpu.alloc (%n) : memref<?xi32>
      gpu.memcpy %b0, %h : memref<?xi32>, memref<?xi32>
      async.yield %b0 : memref<?xi32>
    }
    %t1, %f1 = async.execute [%t0] (%f0 as %b0 : !async.value<memref<?xi32>>) -> !async.value<memref<?xi32>> {
      %w = gpu.wait async
      %b1, %t = gpu.alloc async [%w] (%n) : memref<?xi32>
      %t2 = gpu.memcpy async [%t] %b1, %b0 : memref<?xi32>, memref<?xi32>
      %t3 = gpu.launch_func async [%t2] @kernels::@add blocks in (%c1, %c1, %c1)
          threads in (%n, %c1, %c1) args(%b0 : memref<?xi32>, %b1 : memref<?xi32>)
      gpu.wait [%t3]
      async.yield %b1 : memref<?xi32>
    }
    %t4 = async.execute [%t1] (%f1 as %b1 : !async.value<memref<?xi32>>) {
      gpu.memcpy %h, %b1 : memref<?xi32>, memref<?xi32>
      async.yield
    }
    async.await %t4 : !async.token
    call @printMemrefI32(%hu) : (memref<*xi32>) -> ()
    memref.dealloc %h : memref<?xi32>
    return
  }
}
