// Streams: launches on two streams run at the same time, and a launch that
// depends on another stream's work waits for it (an event).
//
// @main_meet: two kernels on two streams meet through an atomic counter in
// host_shared memory: each adds 1, then waits (at most 2^27 reads) for the
// other's 1 and records in its own slot whether it came. Run one after the
// other, the first would give up and record 0, as @main_alone's kernel
// does. Only where two streams' kernels run at the same time: the CPU
// target (its host_shared memory is the kernels' own). On Vulkan, Hesper
// submits to the device's one queue, one launch after another (and
// lavapipe ends a loop after 65535 turns, so a lone kernel there would
// record 1).
//
// @main_order: a kernel on stream 1 stores 21 after a delay; a kernel on
// stream 2, which waits for the first launch's token, doubles it; a
// copy on stream 2 brings the result back: 42 (0 if the second kernel ran
// before the first was done).
//
// RUN: %if cpu-target %{ hesper-run %s --backend=cpu -e main_meet | FileCheck %s --check-prefix=MEET %}
// RUN: %if cpu-target %{ hesper-run %s --backend=cpu -e main_alone | FileCheck %s --check-prefix=ALONE %}
// RUN: %if vulkan %{ hesper-run %s --backend=vulkan -e main_order | FileCheck %s --check-prefix=ORDER %}
// RUN: %if cpu-target %{ hesper-run %s --backend=cpu -e main_order | FileCheck %s --check-prefix=ORDER %}

// MEET: [2,  1,  1,  0]
// ALONE: [1,  0,  0,  0]
// ORDER: [21,  42]

module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @meet(%c: memref<4xi32>, %slot: index) kernel
        attributes {known_block_size = array<i32: 1, 1, 1>} {
      %c0 = arith.constant 0 : index
      %zero = arith.constant 0 : i32
      %one = arith.constant 1 : i32
      %two = arith.constant 2 : i32
      %limit = arith.constant 134217728 : i32
      %old = memref.atomic_rmw addi %one, %c[%c0] : (i32, memref<4xi32>) -> i32
      %n = scf.while (%i = %zero) : (i32) -> i32 {
        %v = memref.atomic_rmw addi %zero, %c[%c0] : (i32, memref<4xi32>) -> i32
        %waiting = arith.cmpi slt, %v, %two : i32
        %more = arith.cmpi slt, %i, %limit : i32
        %go = arith.andi %waiting, %more : i1
        scf.condition(%go) %i : i32
      } do {
      ^bb0(%i: i32):
        %j = arith.addi %i, %one : i32
        scf.yield %j : i32
      }
      %came = arith.cmpi slt, %n, %limit : i32
      %flag = arith.extui %came : i1 to i32
      memref.store %flag, %c[%slot] : memref<4xi32>
      gpu.return
    }

    gpu.func @produce(%x: memref<2xi32>) kernel
        attributes {known_block_size = array<i32: 1, 1, 1>} {
      %c0 = arith.constant 0 : index
      %zero = arith.constant 0 : i32
      %one = arith.constant 1 : i32
      %delay = arith.constant 1048576 : i32
      // A delay the consumer would overtake, were it not waiting.
      %n = scf.for %i = %zero to %delay step %one iter_args(%s = %zero) -> i32 : i32 {
        %v = memref.atomic_rmw addi %zero, %x[%c0] : (i32, memref<2xi32>) -> i32
        %t = arith.addi %s, %v : i32
        scf.yield %t : i32
      }
      %base = arith.constant 21 : i32
      %r = arith.addi %base, %n : i32
      memref.store %r, %x[%c0] : memref<2xi32>
      gpu.return
    }

    gpu.func @double(%x: memref<2xi32>) kernel
        attributes {known_block_size = array<i32: 1, 1, 1>} {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %v = memref.load %x[%c0] : memref<2xi32>
      %w = arith.addi %v, %v : i32
      memref.store %w, %x[%c1] : memref<2xi32>
      gpu.return
    }
  }

  func.func private @printMemrefI32(memref<*xi32>)

  func.func @main_meet() {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %c = gpu.alloc host_shared () : memref<4xi32>
    %zero = arith.constant 0 : i32
    scf.for %i = %c0 to %c2 step %c1 {
      memref.store %zero, %c[%i] : memref<4xi32>
    }
    %s1 = gpu.wait async
    %s2 = gpu.wait async
    %t1 = gpu.launch_func async [%s1] @kernels::@meet
        blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1)
        args(%c : memref<4xi32>, %c1 : index)
    %t2 = gpu.launch_func async [%s2] @kernels::@meet
        blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1)
        args(%c : memref<4xi32>, %c2 : index)
    gpu.wait [%t1, %t2]
    %u = memref.cast %c : memref<4xi32> to memref<*xi32>
    call @printMemrefI32(%u) : (memref<*xi32>) -> ()
    gpu.dealloc %c : memref<4xi32>
    return
  }

  // One kernel alone: it waits in vain and records 0.
  func.func @main_alone() {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %c = gpu.alloc host_shared () : memref<4xi32>
    %zero = arith.constant 0 : i32
    scf.for %i = %c0 to %c2 step %c1 {
      memref.store %zero, %c[%i] : memref<4xi32>
    }
    %s1 = gpu.wait async
    %t1 = gpu.launch_func async [%s1] @kernels::@meet
        blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1)
        args(%c : memref<4xi32>, %c1 : index)
    gpu.wait [%t1]
    %u = memref.cast %c : memref<4xi32> to memref<*xi32>
    call @printMemrefI32(%u) : (memref<*xi32>) -> ()
    gpu.dealloc %c : memref<4xi32>
    return
  }

  func.func @main_order() {
    %c1 = arith.constant 1 : index
    %c0i = arith.constant 0 : i32
    %h = memref.alloc() : memref<2xi32>
    %s1 = gpu.wait async
    %s2 = gpu.wait async
    %x, %ta = gpu.alloc async [%s1] () : memref<2xi32>
    %tm = gpu.memset async [%ta] %x, %c0i : memref<2xi32>, i32
    %t1 = gpu.launch_func async [%tm] @kernels::@produce
        blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1)
        args(%x : memref<2xi32>)
    // Stream 2, after the first launch: an event recorded on stream 1.
    %both = gpu.wait async [%s2, %t1]
    %t2 = gpu.launch_func async [%both] @kernels::@double
        blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1)
        args(%x : memref<2xi32>)
    %t3 = gpu.memcpy async [%t2] %h, %x : memref<2xi32>, memref<2xi32>
    gpu.wait [%t3]
    %u = memref.cast %h : memref<2xi32> to memref<*xi32>
    call @printMemrefI32(%u) : (memref<*xi32>) -> ()
    gpu.dealloc %x : memref<2xi32>
    memref.dealloc %h : memref<2xi32>
    return
  }
}
