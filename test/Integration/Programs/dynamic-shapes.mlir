// Kernel memrefs of dynamic shape, 1-D and 2-D. On targets that bind a
// buffer as a pointer alone (the CPU target; CUDA compiles the same in
// kernels.test) each becomes the pointer and a binding of its sizes, and
// the kernel rebuilds the view (row-major, offset 0) from them; on Vulkan
// a 1-D one is a runtime array and a 2-D one a 1-D buffer and a binding
// of its sizes, its loads and stores indexed row-major. Either way
// memref.dim and 2-D indexing see the launch's shape. Thread (x, y) of a
// 3x2 block writes out[y][x] = 10 y + x + m + n, m = memref.dim of the
// 2-D argument's rows (2), n = memref.dim of the 1-D argument (5).
//
// RUN: %if cpu-target %{ hesper-run %s --backend=cpu | FileCheck %s %}
// RUN: %if vulkan %{ hesper-run %s --backend=vulkan --validation | FileCheck %s %}

// CHECK:      [7,   8,   9]
// CHECK-NEXT: [17,   18,   19]

module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @fill(%out: memref<?x?xi32>, %v: memref<?xi32>) kernel {
      %x = gpu.thread_id x
      %y = gpu.thread_id y
      %c0 = arith.constant 0 : index
      %c10 = arith.constant 10 : index
      %n1 = memref.dim %v, %c0 : memref<?xi32>
      %m = memref.dim %out, %c0 : memref<?x?xi32>
      %n = arith.addi %n1, %m : index
      %r = arith.muli %y, %c10 : index
      %s = arith.addi %r, %x : index
      %t = arith.addi %s, %n : index
      %i = arith.index_cast %t : index to i32
      memref.store %i, %out[%y, %x] : memref<?x?xi32>
      gpu.return
    }
  }
  func.func private @printMemrefI32(memref<*xi32>)
  func.func @main() {
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %c3 = arith.constant 3 : index
    %c5 = arith.constant 5 : index
    %out = gpu.alloc (%c2, %c3) : memref<?x?xi32>
    %v = gpu.alloc (%c5) : memref<?xi32>
    gpu.launch_func @kernels::@fill blocks in (%c1, %c1, %c1)
        threads in (%c3, %c2, %c1) args(%out : memref<?x?xi32>, %v : memref<?xi32>)
    %h = memref.alloc (%c2, %c3) : memref<?x?xi32>
    gpu.memcpy %h, %out : memref<?x?xi32>, memref<?x?xi32>
    %u = memref.cast %h : memref<?x?xi32> to memref<*xi32>
    call @printMemrefI32(%u) : (memref<*xi32>) -> ()
    gpu.dealloc %out : memref<?x?xi32>
    gpu.dealloc %v : memref<?xi32>
    memref.dealloc %h : memref<?x?xi32>
    return
  }
}
