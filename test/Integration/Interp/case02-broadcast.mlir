// Acceptance case 2: broadcasting. x[i] = i times a [1] input s = 3.5
// (read at 0 by every lane), then times 1, gives out[i] = 3.5 i. The two
// maps fuse into one map that still reads s as a [1] input.
//
// RUN: hesper-opt %s --hesper-fuse | FileCheck %s --check-prefix=FUSED
// RUN: hesper-opt %s --hesper-fuse --circuit-count-dispatches -o /dev/null \
// RUN:   | FileCheck %s --check-prefix=COUNT
// RUN: hesper-run %s --backend=interp --input x=iota --input s=const:3.5 --print-results \
// RUN:   | FileCheck %s --check-prefix=VALUES
// RUN: hesper-opt %s --hesper-fuse -o %t.mlir
// RUN: hesper-run %t.mlir --backend=interp --input x=iota --input s=const:3.5 --print-results \
// RUN:   | FileCheck %s --check-prefix=VALUES
// RUN: hesper-run %s --validate-fusion | FileCheck %s --check-prefix=VALID

// FUSED-LABEL: circuit.graph @broadcast(
// FUSED-SAME:    %[[X:[^:]*]]: tensor<64xf32> {{[^,]*}}, %[[S:[^:]*]]: tensor<1xf32>
// FUSED-NOT:     circuit.map
// FUSED:         %[[R:.*]] = circuit.map ins(%[[X]], %[[S]] : tensor<64xf32>, tensor<1xf32>) -> tensor<64xf32> {
// FUSED-NEXT:    ^bb0(%{{.*}}: i32, %[[A:.*]]: f32, %[[B:.*]]: f32):
// FUSED:           exp.mul %[[A]], %[[B]] : f32
// FUSED:           circuit.yield
// FUSED-NEXT:    }
// FUSED-NEXT:    circuit.output %[[R]] : tensor<64xf32>

// COUNT: graph @broadcast: 1 dispatches (1 map)

// VALUES: result #0 (tensor<64xf32>): 0 3.5 7 10.5 14 17.5 21 24.5 28 31.5 35 38.5 42 45.5 49 52.5 56 59.5 63 66.5 70 73.5 77 80.5 84 87.5 91 94.5 98 101.5 105 108.5 112 115.5 119 122.5 126 129.5 133 136.5 140 143.5 147 150.5 154 157.5 161 164.5 168 171.5 175 178.5 182 185.5 189 192.5 196 199.5 203 206.5 210 213.5 217 220.5{{$}}

// VALID: graph @broadcast: 2 -> 1 dispatches, {{.*}}: ok

circuit.graph @broadcast(%x: tensor<64xf32> {circuit.name = "x"},
                          %s: tensor<1xf32> {circuit.name = "s"})
    -> tensor<64xf32> {
  // The [1] input is read at 0 by every lane.
  %y = circuit.map ins(%x, %s : tensor<64xf32>, tensor<1xf32>)
      -> tensor<64xf32> {
  ^bb0(%lane: i32, %a: f32, %b: f32):
    %r = exp.mul %a, %b : f32
    circuit.yield %r : f32
  }
  %z = circuit.map ins(%y : tensor<64xf32>) -> tensor<64xf32> {
  ^bb0(%lane: i32, %v: f32):
    %one = exp.constant 1.0 : f32
    %r = exp.mul %v, %one : f32
    circuit.yield %r : f32
  }
  circuit.output %z : tensor<64xf32>
}
