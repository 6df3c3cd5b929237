// RUN: hesper-opt %s -split-input-file -verify-diagnostics --hesper-expand-subgroup-reduce | FileCheck %s --check-prefix=SG32
// RUN: hesper-opt %s -split-input-file -verify-diagnostics --hesper-expand-subgroup-reduce="size=8" | FileCheck %s --check-prefix=SG8

// hesper-expand-subgroup-reduce: gpu.subgroup_reduce becomes log2(size)
// butterfly steps, each a gpu.shuffle xor with offsets 1, 2, 4, ... and
// width = the subgroup size, followed by the combining op: 5 steps for the
// default size 32, 3 for size 8. Values that are not 32 bits wide are
// refused.

// SG32-LABEL: gpu.func @warp_sum(
// SG32-SAME:    %[[X:.*]]: memref<32xf32>
// SG32-DAG:     %[[C1:.*]] = arith.constant 1 : i32
// SG32-DAG:     %[[C2:.*]] = arith.constant 2 : i32
// SG32-DAG:     %[[C4:.*]] = arith.constant 4 : i32
// SG32-DAG:     %[[C8:.*]] = arith.constant 8 : i32
// SG32-DAG:     %[[C16:.*]] = arith.constant 16 : i32
// SG32-DAG:     %[[W:.*]] = arith.constant 32 : i32
// SG32:         %[[V:.*]] = memref.load %[[X]]
// SG32-NEXT:    %[[S1:.*]], %{{.*}} = gpu.shuffle xor %[[V]], %[[C1]], %[[W]] : f32
// SG32-NEXT:    %[[A1:.*]] = arith.addf %[[V]], %[[S1]] : f32
// SG32-NEXT:    %[[S2:.*]], %{{.*}} = gpu.shuffle xor %[[A1]], %[[C2]], %[[W]] : f32
// SG32-NEXT:    %[[A2:.*]] = arith.addf %[[A1]], %[[S2]] : f32
// SG32-NEXT:    %[[S4:.*]], %{{.*}} = gpu.shuffle xor %[[A2]], %[[C4]], %[[W]] : f32
// SG32-NEXT:    %[[A4:.*]] = arith.addf %[[A2]], %[[S4]] : f32
// SG32-NEXT:    %[[S8:.*]], %{{.*}} = gpu.shuffle xor %[[A4]], %[[C8]], %[[W]] : f32
// SG32-NEXT:    %[[A8:.*]] = arith.addf %[[A4]], %[[S8]] : f32
// SG32-NEXT:    %[[S16:.*]], %{{.*}} = gpu.shuffle xor %[[A8]], %[[C16]], %[[W]] : f32
// SG32-NEXT:    %[[A16:.*]] = arith.addf %[[A8]], %[[S16]] : f32
// SG32-NEXT:    memref.store %[[A16]], %[[X]]
// SG32-NOT:     gpu.subgroup_reduce
// SG32-NOT:     gpu.shuffle

// SG8-LABEL:   gpu.func @warp_sum(
// SG8-DAG:       %[[C1:.*]] = arith.constant 1 : i32
// SG8-DAG:       %[[C2:.*]] = arith.constant 2 : i32
// SG8-DAG:       %[[C4:.*]] = arith.constant 4 : i32
// SG8-DAG:       %[[W:.*]] = arith.constant 8 : i32
// SG8:           %[[V:.*]] = memref.load
// SG8-NEXT:      %[[S1:.*]], %{{.*}} = gpu.shuffle xor %[[V]], %[[C1]], %[[W]] : f32
// SG8-NEXT:      %[[A1:.*]] = arith.addf %[[V]], %[[S1]] : f32
// SG8-NEXT:      %[[S2:.*]], %{{.*}} = gpu.shuffle xor %[[A1]], %[[C2]], %[[W]] : f32
// SG8-NEXT:      %[[A2:.*]] = arith.addf %[[A1]], %[[S2]] : f32
// SG8-NEXT:      %[[S4:.*]], %{{.*}} = gpu.shuffle xor %[[A2]], %[[C4]], %[[W]] : f32
// SG8-NEXT:      %[[A4:.*]] = arith.addf %[[A2]], %[[S4]] : f32
// SG8-NEXT:      memref.store %[[A4]]
// SG8-NOT:       gpu.subgroup_reduce
// SG8-NOT:       gpu.shuffle
module attributes {gpu.container_module} {
  gpu.module @hesper_kernels {
    gpu.func @warp_sum(%x: memref<32xf32>) kernel {
      %t = gpu.thread_id x
      %v = memref.load %x[%t] : memref<32xf32>
      %s = gpu.subgroup_reduce add %v : (f32) -> f32
      memref.store %s, %x[%t] : memref<32xf32>
      gpu.return
    }
  }
}

// -----

// The combining op follows the reduction: maxnumf on f32, maxsi and addi
// on i32. Each reduction is counted on its own.

// SG32-LABEL:   gpu.func @kinds(
// SG32:           memref.load
// SG32-COUNT-5:   arith.maxnumf
// SG32-NOT:       arith.maxnumf
// SG32:           memref.store
// SG32:           memref.load
// SG32-COUNT-5:   arith.maxsi
// SG32-NOT:       arith.maxsi
// SG32:           memref.store
// SG32:           memref.load
// SG32-COUNT-5:   arith.addi
// SG32-NOT:       arith.addi
// SG32:           memref.store

// SG8-LABEL:     gpu.func @kinds(
// SG8:             memref.load
// SG8-COUNT-3:     gpu.shuffle xor
// SG8-NOT:         gpu.shuffle
// SG8:             memref.store
// SG8:             memref.load
// SG8-COUNT-3:     gpu.shuffle xor
// SG8-NOT:         gpu.shuffle
// SG8:             memref.store
// SG8:             memref.load
// SG8-COUNT-3:     gpu.shuffle xor
// SG8-NOT:         gpu.shuffle
// SG8:             memref.store
// SG8-NOT:         gpu.subgroup_reduce
module attributes {gpu.container_module} {
  gpu.module @hesper_kernels {
    gpu.func @kinds(%x: memref<32xf32>, %i: memref<32xi32>) kernel {
      %t = gpu.thread_id x
      %a = memref.load %x[%t] : memref<32xf32>
      %m = gpu.subgroup_reduce maxnumf %a : (f32) -> f32
      memref.store %m, %x[%t] : memref<32xf32>
      %b = memref.load %i[%t] : memref<32xi32>
      %mx = gpu.subgroup_reduce maxsi %b : (i32) -> i32
      memref.store %mx, %i[%t] : memref<32xi32>
      %c = memref.load %i[%t] : memref<32xi32>
      %s = gpu.subgroup_reduce add %c : (i32) -> i32
      memref.store %s, %i[%t] : memref<32xi32>
      gpu.return
    }
  }
}

// -----

// f16 values are shuffled as 32-bit words (zero-extended bits).

// SG8-LABEL:   gpu.func @half(
// SG8:           %[[H:.*]] = memref.load
// SG8-NEXT:      %[[B:.*]] = arith.bitcast %[[H]] : f16 to i16
// SG8-NEXT:      %[[E:.*]] = arith.extui %[[B]] : i16 to i32
// SG8-NEXT:      %[[S:.*]], %{{.*}} = gpu.shuffle xor %[[E]], %{{.*}}, %{{.*}} : i32
// SG8-NEXT:      %[[T:.*]] = arith.trunci %[[S]] : i32 to i16
// SG8-NEXT:      %[[O:.*]] = arith.bitcast %[[T]] : i16 to f16
// SG8-NEXT:      arith.addf %[[H]], %[[O]] : f16
// SG8-COUNT-2:   gpu.shuffle xor
// SG8-NOT:       gpu.shuffle
module attributes {gpu.container_module} {
  gpu.module @hesper_kernels {
    gpu.func @half(%h: memref<32xf16>) kernel {
      %t = gpu.thread_id x
      %v = memref.load %h[%t] : memref<32xf16>
      %s = gpu.subgroup_reduce add %v : (f16) -> f16
      memref.store %s, %h[%t] : memref<32xf16>
      gpu.return
    }
  }
}

// -----

// A 64-bit value is not expanded.
module attributes {gpu.container_module} {
  gpu.module @hesper_kernels {
    gpu.func @wide(%x: memref<32xf64>) kernel {
      %t = gpu.thread_id x
      %v = memref.load %x[%t] : memref<32xf64>
      // expected-error @+1 {{'gpu.subgroup_reduce' op could not be expanded into shuffles (only 32-bit values and vectors of them are)}}
      %s = gpu.subgroup_reduce add %v : (f64) -> f64
      memref.store %s, %x[%t] : memref<32xf64>
      gpu.return
    }
  }
}
