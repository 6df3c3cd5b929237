// A kernel whose block size is known only at run time (here read back
// from memory the host wrote, which no compile-time folding sees through)
// is compiled at its first launch with each size, for that size, and the
// compiled kernel kept for later launches of the size. The kernel writes,
// at thread t = x + X y of an X x Y block, out[t] = 100 X Y + 1000 Y + t
// into a buffer of 8 that starts as -1: a launch of 8 threads fills it,
// one of 3 overwrites elements 0..2, one of 4x2 all eight, and one of 8
// again (the first size's kernel, kept) all eight. The host prints the
// first two elements with vector.print of a vector.transfer_read.
//
// REQUIRES: vulkan
// RUN: hesper-run %s --backend=vulkan --validation | FileCheck %s
// RUN: %if cpu-target %{ hesper-run %s --backend=cpu | FileCheck %s %}

// CHECK: [1800,  1801,  1802,  1803,  1804,  1805,  1806,  1807]
// CHECK: [1300,  1301,  1302,  1803,  1804,  1805,  1806,  1807]
// CHECK: [2800,  2801,  2802,  2803,  2804,  2805,  2806,  2807]
// CHECK: [1800,  1801,  1802,  1803,  1804,  1805,  1806,  1807]
// CHECK: ( 1800, 1801 )

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

  // Launches @ids with the block size in sizes[i] x sizes[i + 1].
  func.func @launch(%out: memref<8xi32>, %sizes: memref<8xindex>, %i: index) {
    %c1 = arith.constant 1 : index
    %j = arith.addi %i, %c1 : index
    %x = memref.load %sizes[%i] : memref<8xindex>
    %y = memref.load %sizes[%j] : memref<8xindex>
    gpu.launch_func @kernels::@ids blocks in (%c1, %c1, %c1)
        threads in (%x, %y, %c1) args(%out : memref<8xi32>)
    %u = memref.cast %out : memref<8xi32> to memref<*xi32>
    call @printMemrefI32(%u) : (memref<*xi32>) -> ()
    return
  }

  func.func @main() {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %c3 = arith.constant 3 : index
    %c4 = arith.constant 4 : index
    %c5 = arith.constant 5 : index
    %c6 = arith.constant 6 : index
    %c7 = arith.constant 7 : index
    %c8 = arith.constant 8 : index
    %sizes = memref.alloc() : memref<8xindex>
    memref.store %c8, %sizes[%c0] : memref<8xindex>
    memref.store %c1, %sizes[%c1] : memref<8xindex>
    memref.store %c3, %sizes[%c2] : memref<8xindex>
    memref.store %c1, %sizes[%c3] : memref<8xindex>
    memref.store %c4, %sizes[%c4] : memref<8xindex>
    memref.store %c2, %sizes[%c5] : memref<8xindex>
    memref.store %c8, %sizes[%c6] : memref<8xindex>
    memref.store %c1, %sizes[%c7] : memref<8xindex>
    %out = memref.alloc() : memref<8xi32>
    %m1 = arith.constant -1 : i32
    %dout = memref.cast %out : memref<8xi32> to memref<?xi32>
    call @fillResource1DInt(%dout, %m1) : (memref<?xi32>, i32) -> ()
    call @launch(%out, %sizes, %c0) : (memref<8xi32>, memref<8xindex>, index) -> ()
    call @launch(%out, %sizes, %c2) : (memref<8xi32>, memref<8xindex>, index) -> ()
    call @launch(%out, %sizes, %c4) : (memref<8xi32>, memref<8xindex>, index) -> ()
    call @launch(%out, %sizes, %c6) : (memref<8xi32>, memref<8xindex>, index) -> ()
    %z = arith.constant 0 : i32
    %two = vector.transfer_read %out[%c0], %z : memref<8xi32>, vector<2xi32>
    vector.print %two : vector<2xi32>
    memref.dealloc %out : memref<8xi32>
    memref.dealloc %sizes : memref<8xindex>
    return
  }
  func.func private @fillResource1DInt(memref<?xi32>, i32)
  func.func private @printMemrefI32(memref<*xi32>)
}
