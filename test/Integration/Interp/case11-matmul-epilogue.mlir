// Acceptance case 11: a matmul followed by a map over its result (here
// gelu(0.01 * acc) + bias) fuses into one circuit.matmul whose epilogue
// computes the map, one kernel. x is [2, 64] with x[i] = 1 + i/128, the
// weight [8, 64] (stored [N, K]) with w[i] = 1 + i/512, bias[n] = n/4.
// Every element is checked (4 decimals) against the formula computed
// outside the compiler, and the fused graph's output must equal the
// unfused graph's exactly.
//
// RUN: hesper-opt %s --hesper-fuse | FileCheck %s --check-prefix=FUSED
// RUN: hesper-opt %s --hesper-fuse --circuit-count-dispatches -o /dev/null \
// RUN:   | FileCheck %s --check-prefix=COUNT
// RUN: hesper-run %s --backend=interp --input x=linear:0.0078125,1 \
// RUN:   --input w=linear:0.001953125,1 --input b=linear:0.25,0 \
// RUN:   --print-results > %t.unfused.txt
// RUN: FileCheck %s --check-prefix=VALUES < %t.unfused.txt
// RUN: hesper-opt %s --hesper-fuse -o %t.mlir
// RUN: hesper-run %t.mlir --backend=interp --input x=linear:0.0078125,1 \
// RUN:   --input w=linear:0.001953125,1 --input b=linear:0.25,0 \
// RUN:   --print-results > %t.fused.txt
// RUN: FileCheck %s --check-prefix=VALUES < %t.fused.txt
// RUN: diff %t.unfused.txt %t.fused.txt
// RUN: hesper-run %s --validate-fusion | FileCheck %s --check-prefix=VALID

// FUSED-LABEL: circuit.graph @matmul_epilogue(
// FUSED-SAME:    %[[X:[^:]*]]: tensor<2x64xf32> {{[^,]*}}, %[[W:[^:]*]]: tensor<8x64xf32> {{[^,]*}}, %[[B:[^:]*]]: tensor<8xf32>
// FUSED-NOT:     circuit.map
// FUSED:         %[[R:.*]] = circuit.matmul %[[X]], %[[W]] ins(%[[B]] : tensor<8xf32>) : tensor<2x64xf32>, tensor<8x64xf32> -> tensor<2x8xf32> epilogue {
// FUSED-NEXT:    ^bb0(%{{[^:]*}}: i32, %[[ACC:[^:]*]]: f32, %[[BIAS:[^:]*]]: f32):
// FUSED:           %[[S:.*]] = exp.mul %[[ACC]], %{{.*}} : f32
// FUSED-NEXT:      %[[G:.*]] = exp.gelu %[[S]] : f32
// FUSED-NEXT:      %[[O:.*]] = exp.add %[[G]], %[[BIAS]] : f32
// FUSED-NEXT:      circuit.yield %[[O]] : f32
// FUSED-NEXT:    }
// FUSED-NEXT:    circuit.output %[[R]] : tensor<2x8xf32>

// COUNT: graph @matmul_epilogue: 1 dispatches (1 matmul)

// VALUES: result #0 (tensor<2x8xf32>): 0.6817{{[0-9]*}} 1.0369{{[0-9]*}} 1.3948{{[0-9]*}} 1.7548{{[0-9]*}} 2.1162 2.4784 2.8409{{[0-9]*}} 3.2033{{[0-9]*}} 1.0500{{[0-9]*}} 1.4569{{[0-9]*}} 1.8645{{[0-9]*}} 2.2718{{[0-9]*}} 2.6779{{[0-9]*}} 3.0823{{[0-9]*}} 3.4846{{[0-9]*}} 3.8849{{[0-9]*}}{{$}}

// VALID: graph @matmul_epilogue: 2 -> 1 dispatches, {{.*}}, max error 0: ok

circuit.graph @matmul_epilogue(%x: tensor<2x64xf32> {circuit.name = "x"},
                                %w: tensor<8x64xf32> {circuit.name = "w"},
                                %b: tensor<8xf32> {circuit.name = "b"})
    -> tensor<2x8xf32> {
  // y[m, n] = sum_k x[m, k] * w[n, k] (the weight is stored [N, K]).
  %y = circuit.matmul %x, %w : tensor<2x64xf32>, tensor<8x64xf32>
      -> tensor<2x8xf32>
  // gelu(0.01 * y) + b, with the [8] bias broadcast over the rows.
  %z = circuit.map ins(%y, %b : tensor<2x8xf32>, tensor<8xf32>)
      -> tensor<2x8xf32> {
  ^bb0(%lane: i32, %acc: f32, %bias: f32):
    %scale = exp.constant 0.01 : f32
    %s = exp.mul %acc, %scale : f32
    %g = exp.gelu %s : f32
    %o = exp.add %g, %bias : f32
    circuit.yield %o : f32
  }
  circuit.output %z : tensor<2x8xf32>
}
