// async.execute and async.await around GPU work, lowered as upstream's
// async GPU tests lower them (async-to-async-runtime, reference counting,
// convert-async-to-llvm) and run on MLIR's async runtime, whose library
// hesper-run loads with the runner utilities: a gpu.alloc and copy in one
// region, two launches in regions that wait on it in a chain, the copy
// back, then the host awaits the last token and prints. The regions run
// on the async runtime's threads; each region's gpu calls wait for their
// own streams, and the regions wait for each other, so the result is the
// chain's: (0, 1, 2, 3) * 10 * 3.
//
// RUN: %if vulkan %{ hesper-run %s --backend=vulkan --validation | FileCheck %s %}
// RUN: %if cpu-target %{ hesper-run %s --backend=cpu | FileCheck %s %}

// CHECK: [0,  30,  60,  90]

module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @scale(%a: memref<4xi32>, %k: i32) kernel
        attributes {known_block_size = array<i32: 4, 1, 1>} {
      %i = gpu.thread_id x
      %v = memref.load %a[%i] : memref<4xi32>
      %w = arith.muli %v, %k : i32
      memref.store %w, %a[%i] : memref<4xi32>
      gpu.return
    }
  }
  func.func private @printMemrefI32(memref<*xi32>)
  func.func @main() {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %c3 = arith.constant 3 : index
    %c4 = arith.constant 4 : index
    %h = memref.alloc() : memref<4xi32>
    scf.for %i = %c0 to %c4 step %c1 {
      %v = arith.index_cast %i : index to i32
      memref.store %v, %h[%i] : memref<4xi32>
    }
    %t0, %d = async.execute () -> !async.value<memref<4xi32>> {
      %b = gpu.alloc () : memref<4xi32>
      gpu.memcpy %b, %h : memref<4xi32>, memref<4xi32>
      async.yield %b : memref<4xi32>
    }
    %t1 = async.execute [%t0] (%d as %b : !async.value<memref<4xi32>>) {
      %k = arith.constant 10 : i32
      gpu.launch_func @kernels::@scale blocks in (%c1, %c1, %c1)
          threads in (%c4, %c1, %c1) args(%b : memref<4xi32>, %k : i32)
      async.yield
    }
    %t2 = async.execute [%t1] (%d as %b : !async.value<memref<4xi32>>) {
      %k = arith.constant 3 : i32
      gpu.launch_func @kernels::@scale blocks in (%c1, %c1, %c1)
          threads in (%c4, %c1, %c1) args(%b : memref<4xi32>, %k : i32)
      gpu.memcpy %h, %b : memref<4xi32>, memref<4xi32>
      async.yield
    }
    async.await %t2 : !async.token
    %u = memref.cast %h : memref<4xi32> to memref<*xi32>
    call @printMemrefI32(%u) : (memref<*xi32>) -> ()
    memref.dealloc %h : memref<4xi32>
    return
  }
}
