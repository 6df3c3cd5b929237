// Acceptance case 9: subgroup (warp) reductions inside maps. The warp sum
// of x = 1..32 is 528 on every lane; the warp dot product of a[i] = i and
// b[i] = i + 1 over n = 32 is 10912 on every lane. With the interpreter's
// subgroup set to 8 (lavapipe's width), each group of 8 lanes reduces its
// own lanes. The product map fuses into the map that reduces it (the
// subgroup_reduce stays in the body, executed by every lane).
//
// RUN: hesper-opt %s --hesper-fuse | FileCheck %s --check-prefix=FUSED
// RUN: hesper-opt %s --hesper-fuse --circuit-count-dispatches -o /dev/null \
// RUN:   | FileCheck %s --check-prefix=COUNT
// RUN: hesper-run %s --backend=interp --input x=linear:1,1 --input a=iota --input b=linear:1,1 \
// RUN:   --print-results | FileCheck %s --check-prefix=VALUES
// RUN: hesper-run %s --backend=interp --input x=linear:1,1 --input a=iota --input b=linear:1,1 \
// RUN:   --subgroup-size=8 --print-results | FileCheck %s --check-prefix=SG8
// RUN: hesper-opt %s --hesper-fuse -o %t.mlir
// RUN: hesper-run %t.mlir --backend=interp --input x=linear:1,1 --input a=iota --input b=linear:1,1 \
// RUN:   --print-results | FileCheck %s --check-prefix=VALUES
// RUN: hesper-run %t.mlir --backend=interp --input x=linear:1,1 --input a=iota --input b=linear:1,1 \
// RUN:   --subgroup-size=8 --print-results | FileCheck %s --check-prefix=SG8
// RUN: hesper-run %s --validate-fusion | FileCheck %s --check-prefix=VALID
// RUN: hesper-run %s --validate-fusion --subgroup-size=8 \
// RUN:   | FileCheck %s --check-prefix=VALID

// FUSED-LABEL: circuit.graph @warp(
// FUSED-SAME:    %[[X:[^:]*]]: tensor<32xf32> {{[^,]*}}, %[[A:[^:]*]]: tensor<32xf32> {{[^,]*}}, %[[B:[^:]*]]: tensor<32xf32>
// FUSED:         %[[SUM:.*]] = circuit.map ins(%[[X]] : tensor<32xf32>) -> tensor<32xf32> {
// FUSED-NEXT:    ^bb0(%{{[^:]*}}: i32, %[[V:[^:]*]]: f32):
// FUSED-NEXT:      %[[S:.*]] = exp.subgroup_reduce sum %[[V]] : f32
// FUSED-NEXT:      circuit.yield %[[S]] : f32
// FUSED-NEXT:    }
// FUSED-NEXT:    %[[DOT:.*]] = circuit.map ins(%[[A]], %[[B]] : tensor<32xf32>, tensor<32xf32>) -> tensor<32xf32> {
// FUSED-NEXT:    ^bb0(%{{[^:]*}}: i32, %[[P:[^:]*]]: f32, %[[Q:[^:]*]]: f32):
// FUSED-NEXT:      %[[M:.*]] = exp.mul %[[P]], %[[Q]] : f32
// FUSED-NEXT:      %[[D:.*]] = exp.subgroup_reduce sum %[[M]] : f32
// FUSED-NEXT:      circuit.yield %[[D]] : f32
// FUSED-NEXT:    }
// FUSED-NEXT:    circuit.output %[[SUM]], %[[DOT]] : tensor<32xf32>, tensor<32xf32>

// COUNT: graph @warp: 2 dispatches (2 map)

// VALUES: result #0 (tensor<32xf32>): 528 528 528 528 528 528 528 528 528 528 528 528 528 528 528 528 528 528 528 528 528 528 528 528 528 528 528 528 528 528 528 528{{$}}
// VALUES: result #1 (tensor<32xf32>): 10912 10912 10912 10912 10912 10912 10912 10912 10912 10912 10912 10912 10912 10912 10912 10912 10912 10912 10912 10912 10912 10912 10912 10912 10912 10912 10912 10912 10912 10912 10912 10912{{$}}

// Groups of 8: 36, 100, 164, 228 and 168, 1192, 3240, 6312.
// SG8: result #0 (tensor<32xf32>): 36 36 36 36 36 36 36 36 100 100 100 100 100 100 100 100 164 164 164 164 164 164 164 164 228 228 228 228 228 228 228 228{{$}}
// SG8: result #1 (tensor<32xf32>): 168 168 168 168 168 168 168 168 1192 1192 1192 1192 1192 1192 1192 1192 3240 3240 3240 3240 3240 3240 3240 3240 6312 6312 6312 6312 6312 6312 6312 6312{{$}}

// VALID: graph @warp: 3 -> 2 dispatches, {{.*}}: ok

circuit.graph @warp(%x: tensor<32xf32> {circuit.name = "x"},
                     %a: tensor<32xf32> {circuit.name = "a"},
                     %b: tensor<32xf32> {circuit.name = "b"})
    -> (tensor<32xf32>, tensor<32xf32>) {
  // Warp sum: every lane gets the sum over its subgroup.
  %sum = circuit.map ins(%x : tensor<32xf32>) -> tensor<32xf32> {
  ^bb0(%lane: i32, %v: f32):
    %s = exp.subgroup_reduce sum %v : f32
    circuit.yield %s : f32
  }
  // Warp dot product: a product map, then a warp sum of it.
  %prod = circuit.map ins(%a, %b : tensor<32xf32>, tensor<32xf32>)
      -> tensor<32xf32> {
  ^bb0(%lane: i32, %p: f32, %q: f32):
    %m = exp.mul %p, %q : f32
    circuit.yield %m : f32
  }
  %dot = circuit.map ins(%prod : tensor<32xf32>) -> tensor<32xf32> {
  ^bb0(%lane: i32, %v: f32):
    %s = exp.subgroup_reduce sum %v : f32
    circuit.yield %s : f32
  }
  circuit.output %sum, %dot : tensor<32xf32>, tensor<32xf32>
}
