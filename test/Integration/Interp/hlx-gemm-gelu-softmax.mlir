// Scalar vectors from the HLX and KernelForgeML documents:
// - 2x2 GEMM [[1, 2], [3, 4]] . [[5, 6], [7, 8]] = [[19, 22], [43, 50]],
//   with the right operand stored [N, K], that is transposed: bt = [5, 7,
//   6, 8];
// - GELU(1) = 0.8413 within 2e-4: exp.gelu is the tanh form, which gives
//   0.84119 (checked to 4 decimals, with GELU(2) and GELU(3));
// - softmax([1, 2, 3]) = [0.0900, 0.2447, 0.6652].
// Fusion leaves the matmul and the GELU map alone and folds softmax's four
// ops into two circuit.reduce_epilogue (max then exp, sum then divide).
//
// RUN: hesper-opt %s --hesper-fuse | FileCheck %s --check-prefix=FUSED
// RUN: hesper-opt %s --hesper-fuse --circuit-count-dispatches -o /dev/null \
// RUN:   | FileCheck %s --check-prefix=COUNT
// RUN: hesper-run %s --backend=interp --input a=values:1,2,3,4 --input bt=values:5,7,6,8 \
// RUN:   --input x=values:1,2,3 --print-results \
// RUN:   | FileCheck %s --check-prefix=VALUES
// RUN: hesper-opt %s --hesper-fuse -o %t.mlir
// RUN: hesper-run %t.mlir --backend=interp --input a=values:1,2,3,4 --input bt=values:5,7,6,8 \
// RUN:   --input x=values:1,2,3 --print-results \
// RUN:   | FileCheck %s --check-prefix=VALUES
// RUN: hesper-run %s --validate-fusion | FileCheck %s --check-prefix=VALID

// FUSED-LABEL: circuit.graph @hlx(
// FUSED-SAME:    %[[A:[^:]*]]: tensor<2x2xf32> {{[^,]*}}, %[[BT:[^:]*]]: tensor<2x2xf32> {{[^,]*}}, %[[X:[^:]*]]: tensor<3xf32>
// FUSED:         %[[GEMM:.*]] = circuit.matmul %[[A]], %[[BT]] : tensor<2x2xf32>, tensor<2x2xf32> -> tensor<2x2xf32>
// FUSED:         %[[GELU:.*]] = circuit.map ins(%[[X]] : tensor<3xf32>) -> tensor<3xf32> {
// FUSED:           exp.gelu
// FUSED-NOT:     circuit.{{(map|reduce) }}
// FUSED:         %[[E:.*]] = circuit.reduce_epilogue max %[[X]]{{.*}} -> tensor<3xf32> epilogue {
// FUSED:           exp.sub
// FUSED:           exp.exp
// FUSED-NOT:     circuit.{{(map|reduce) }}
// FUSED:         %[[SM:.*]] = circuit.reduce_epilogue sum %[[E]]{{.*}} -> tensor<3xf32> epilogue {
// FUSED:           exp.div
// FUSED-NOT:     circuit.{{(map|reduce) }}
// FUSED:         circuit.output %[[GEMM]], %[[GELU]], %[[SM]]

// COUNT: graph @hlx: 4 dispatches (1 map, 1 matmul, 2 reduce_epilogue)

// VALUES: result #0 (tensor<2x2xf32>): 19 22 43 50{{$}}
// VALUES: result #1 (tensor<3xf32>): 0.8411{{[0-9]*}} 1.9546 2.9963{{[0-9]*}}{{$}}
// VALUES: result #2 (tensor<3xf32>): 0.0900{{[0-9]*}} 0.2447{{[0-9]*}} 0.6652{{[0-9]*}}{{$}}

// VALID: graph @hlx: 6 -> 4 dispatches, {{.*}}: ok

circuit.graph @hlx(%a: tensor<2x2xf32> {circuit.name = "a"},
                    %bt: tensor<2x2xf32> {circuit.name = "bt"},
                    %x: tensor<3xf32> {circuit.name = "x"})
    -> (tensor<2x2xf32>, tensor<3xf32>, tensor<3xf32>) {
  // a . b with b = [[5, 6], [7, 8]] stored transposed ([N, K]) as bt.
  %gemm = circuit.matmul %a, %bt : tensor<2x2xf32>, tensor<2x2xf32>
      -> tensor<2x2xf32>
  %gelu = circuit.map ins(%x : tensor<3xf32>) -> tensor<3xf32> {
  ^bb0(%lane: i32, %v: f32):
    %g = exp.gelu %v : f32
    circuit.yield %g : f32
  }
  // softmax(x) as GraphBuilder::softmax builds it: max, exp(x - max), sum,
  // divide.
  %max = circuit.reduce max %x : tensor<3xf32> -> tensor<1xf32>
  %e = circuit.map ins(%x, %max : tensor<3xf32>, tensor<1xf32>)
      -> tensor<3xf32> {
  ^bb0(%lane: i32, %v: f32, %m: f32):
    %d = exp.sub %v, %m : f32
    %r = exp.exp %d : f32
    circuit.yield %r : f32
  }
  %sum = circuit.reduce sum %e : tensor<3xf32> -> tensor<1xf32>
  %sm = circuit.map ins(%e, %sum : tensor<3xf32>, tensor<1xf32>)
      -> tensor<3xf32> {
  ^bb0(%lane: i32, %v: f32, %s: f32):
    %r = exp.div %v, %s : f32
    circuit.yield %r : f32
  }
  circuit.output %gemm, %gelu, %sm
      : tensor<2x2xf32>, tensor<3xf32>, tensor<3xf32>
}
