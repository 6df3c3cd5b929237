// gpu.shuffle wider than the target's subgroups (lavapipe's are 8 lanes or
// so, the CPU target's one): the workgroup carries it out through a
// workgroup buffer between barriers, with lanes numbered as in a CUDA warp
// of 32 (the linear thread id modulo 32), so a program written for CUDA
// gets CUDA's answers. Thread t of a block of 13 shuffles the value 10 t
// in each mode, width 13: xor 4, down 3, up 2 and idx (5 t mod 16);
// a lane whose source falls outside [0, 13) is not valid and stores -1.
// A block of 64 (two warps) then sums its warp's thread ids with five xor
// steps of width 32 in an scf.for: 0 + ... + 31 = 496 in the first warp,
// 32 + ... + 63 = 1520 in the second.
//
// REQUIRES: vulkan
// RUN: hesper-run %s --backend=vulkan --validation | FileCheck %s
// RUN: %if cpu-target %{ hesper-run %s --backend=cpu | FileCheck %s %}

// CHECK:      [40,   50,   60,   70,   0,   10,   20,   30,   120,   -1,   -1,   -1,   80]
// CHECK-NEXT: [30,   40,   50,   60,   70,   80,   90,   100,   110,   120,   -1,   -1,   -1]
// CHECK-NEXT: [-1,   -1,   0,   10,   20,   30,   40,   50,   60,   70,   80,   90,   100]
// CHECK-NEXT: [0,   50,   100,   -1,   40,   90,   -1,   30,   80,   -1,   20,   70,   120]
// CHECK:      [496,  496,  496,  496,  496,  496,  496,  496,  496,  496,  496,  496,  496,  496,  496,  496,  496,  496,  496,  496,  496,  496,  496,  496,  496,  496,  496,  496,  496,  496,  496,  496,  1520,  1520,  1520,  1520,  1520,  1520,  1520,  1520,  1520,  1520,  1520,  1520,  1520,  1520,  1520,  1520,  1520,  1520,  1520,  1520,  1520,  1520,  1520,  1520,  1520,  1520,  1520,  1520,  1520,  1520,  1520,  1520]

module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @modes(%out: memref<4x13xi32>) kernel {
      %t = gpu.thread_id x
      %ti = arith.index_cast %t : index to i32
      %c10 = arith.constant 10 : i32
      %v = arith.muli %ti, %c10 : i32
      %w = arith.constant 13 : i32
      %none = arith.constant -1 : i32
      %c2 = arith.constant 2 : i32
      %c3 = arith.constant 3 : i32
      %c4 = arith.constant 4 : i32
      %c5 = arith.constant 5 : i32
      %c15 = arith.constant 15 : i32
      %t5 = arith.muli %ti, %c5 : i32
      %lane = arith.andi %t5, %c15 : i32
      %x, %xok = gpu.shuffle xor %v, %c4, %w : i32
      %d, %dok = gpu.shuffle down %v, %c3, %w : i32
      %u, %uok = gpu.shuffle up %v, %c2, %w : i32
      %i, %iok = gpu.shuffle idx %v, %lane, %w : i32
      %x1 = arith.select %xok, %x, %none : i32
      %d1 = arith.select %dok, %d, %none : i32
      %u1 = arith.select %uok, %u, %none : i32
      %i1 = arith.select %iok, %i, %none : i32
      %r0 = arith.constant 0 : index
      %r1 = arith.constant 1 : index
      %r2 = arith.constant 2 : index
      %r3 = arith.constant 3 : index
      memref.store %x1, %out[%r0, %t] : memref<4x13xi32>
      memref.store %d1, %out[%r1, %t] : memref<4x13xi32>
      memref.store %u1, %out[%r2, %t] : memref<4x13xi32>
      memref.store %i1, %out[%r3, %t] : memref<4x13xi32>
      gpu.return
    }
    gpu.func @warp_sums(%out: memref<64xi32>) kernel {
      %t = gpu.thread_id x
      %ti = arith.index_cast %t : index to i32
      %w = arith.constant 32 : i32
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c5 = arith.constant 5 : index
      %sixteen = arith.constant 16 : i32
      %sum = scf.for %step = %c0 to %c5 step %c1 iter_args(%acc = %ti) -> (i32) {
        %s = arith.index_cast %step : index to i32
        %offset = arith.shrui %sixteen, %s : i32
        %other, %ok = gpu.shuffle xor %acc, %offset, %w : i32
        %next = arith.addi %acc, %other : i32
        scf.yield %next : i32
      }
      memref.store %sum, %out[%t] : memref<64xi32>
      gpu.return
    }
  }

  func.func @main() {
    %c1 = arith.constant 1 : index
    %c13 = arith.constant 13 : index
    %c64 = arith.constant 64 : index
    %modes = memref.alloc() : memref<4x13xi32>
    %sums = memref.alloc() : memref<64xi32>
    gpu.launch_func @kernels::@modes blocks in (%c1, %c1, %c1)
        threads in (%c13, %c1, %c1) args(%modes : memref<4x13xi32>)
    gpu.launch_func @kernels::@warp_sums blocks in (%c1, %c1, %c1)
        threads in (%c64, %c1, %c1) args(%sums : memref<64xi32>)
    %m = memref.cast %modes : memref<4x13xi32> to memref<*xi32>
    %s = memref.cast %sums : memref<64xi32> to memref<*xi32>
    call @printMemrefI32(%m) : (memref<*xi32>) -> ()
    call @printMemrefI32(%s) : (memref<*xi32>) -> ()
    memref.dealloc %modes : memref<4x13xi32>
    memref.dealloc %sums : memref<64xi32>
    return
  }
  func.func private @printMemrefI32(memref<*xi32>)
}
