// RUN: hesper-opt %s -split-input-file -circuit-autodiff="wrt=s" -canonicalize | FileCheck %s
// RUN: hesper-opt %s -split-input-file -circuit-autodiff -canonicalize | FileCheck %s --check-prefix=ALL

// circuit-autodiff adds @<graph>_grad after each graph: the forward
// primitives, then each one's vector-Jacobian product in reverse order,
// built from the same primitives. The gradient values themselves are
// checked against finite differences in unittests/Transforms/AutodiffTest;
// here: the signature and the rules' shape; autodiff-invalid.mlir has the
// refusals.

// A map with a broadcast scalar, reduced per row. d s = Σ over all lanes of
// x·dy: the map's cotangent is broadcast from the row cotangent, multiplied
// by x, then summed over every lane that read s (a reduction over [1, 8]).

// CHECK-LABEL: circuit.graph @scale(
// CHECK-LABEL: circuit.graph @scale_grad(
// CHECK-SAME:    %[[X:[^:]*]]: tensor<2x4xf32> {circuit.name = "x"}, %[[S:[^:]*]]: tensor<1xf32> {circuit.name = "s"}, %[[DY:[^:]*]]: tensor<2x1xf32> {circuit.name = "d_result0"}) -> (tensor<2x1xf32>, tensor<1xf32>)
// CHECK:         %[[Y:.*]] = circuit.map ins(%[[X]], %[[S]]
// CHECK:         %[[R:.*]] = circuit.reduce sum %[[Y]]
// CHECK:         %[[DYFULL:.*]] = circuit.map ins(%[[Y]], %[[R]], %[[DY]] : tensor<2x4xf32>, tensor<2x1xf32>, tensor<2x1xf32>) -> tensor<2x4xf32>
// CHECK:           circuit.yield %{{.*}} : f32
// CHECK:         %[[DSFULL:.*]] = circuit.map ins(%[[X]], %[[S]], %[[DYFULL]]
// CHECK:           exp.mul
// CHECK:         %[[DSUM:.*]] = circuit.reduce sum %[[DSFULL]] : tensor<2x4xf32> over [1, 8] -> tensor<1x1xf32> prologue
// CHECK:           circuit.extract
// CHECK:         %[[DS:.*]] = circuit.map ins(%[[DSUM]] : tensor<1x1xf32>) -> tensor<1xf32>
// CHECK:         circuit.output %[[R]], %[[DS]] : tensor<2x1xf32>, tensor<1xf32>
// Without `wrt`, every f32 argument is differentiated.
// ALL-LABEL: circuit.graph @scale_grad(
// ALL-SAME:    -> (tensor<2x1xf32>, tensor<2x4xf32>, tensor<1xf32>)
circuit.graph @scale(%x: tensor<2x4xf32> {circuit.name = "x"}, %s: tensor<1xf32> {circuit.name = "s"}) -> tensor<2x1xf32> {
  %y = circuit.map ins(%x, %s : tensor<2x4xf32>, tensor<1xf32>) -> tensor<2x4xf32> {
  ^bb0(%lane: i32, %a: f32, %b: f32):
    %m = exp.mul %a, %b : f32
    circuit.yield %m : f32
  }
  %r = circuit.reduce sum %y : tensor<2x4xf32> -> tensor<2x1xf32>
  circuit.output %r : tensor<2x1xf32>
}

// -----

// A matvec with respect to its weight: dW = dy ⊗ x, an outer product (the
// cotangent reshaped to a column, times x broadcast along the rows).

// CHECK-LABEL: circuit.graph @matvec_grad(
// CHECK-SAME:    %[[X:[^:]*]]: tensor<8xf32> {circuit.name = "x"}, %[[W:[^:]*]]: tensor<4x8xf32> {circuit.name = "s"}, %[[DY:[^:]*]]: tensor<4xf32> {circuit.name = "d_result0"}) -> (tensor<4xf32>, tensor<4x8xf32>)
// CHECK:         %[[Y:.*]] = circuit.matmul %[[X]], %[[W]]
// CHECK:         %[[COL:.*]] = circuit.map ins(%[[DY]] : tensor<4xf32>) -> tensor<4x1xf32>
// CHECK:         %[[DW:.*]] = circuit.map ins(%[[COL]], %[[X]] : tensor<4x1xf32>, tensor<8xf32>) -> tensor<4x8xf32>
// CHECK:         circuit.output %[[Y]], %[[DW]]
circuit.graph @matvec(%x: tensor<8xf32> {circuit.name = "x"}, %w: tensor<4x8xf32> {circuit.name = "s"}) -> tensor<4xf32> {
  %y = circuit.matmul %x, %w : tensor<8xf32>, tensor<4x8xf32> -> tensor<4xf32>
  circuit.output %y : tensor<4xf32>
}

// -----

// A graph whose result does not depend on the argument: its gradient is a
// fresh zero buffer.

// CHECK-LABEL: circuit.graph @constant_grad(
// CHECK:         %[[Z:.*]] = circuit.zeros : tensor<4xf32>
// CHECK:         circuit.output %{{.*}}, %[[Z]] : tensor<4xf32>, tensor<4xf32>
circuit.graph @constant(%s: tensor<4xf32> {circuit.name = "s"}) -> tensor<4xf32> {
  %y = circuit.map -> tensor<4xf32> {
  ^bb0(%lane: i32):
    %v = exp.convert %lane : i32 to f32
    circuit.yield %v : f32
  }
  circuit.output %y : tensor<4xf32>
}


// -----

// An embedding lookup (GraphBuilder::gatherRows' body): its transpose adds
// the rows of dY into the rows of the tokens, a circuit.scatter_add, not a
// reduction over table × tokens.

// CHECK-LABEL: circuit.graph @embed_grad(
// CHECK-SAME:    %[[T:[^:]*]]: tensor<16x4xf32> {circuit.name = "s"}, %[[TOK:[^:]*]]: tensor<3xi32> {circuit.name = "tok"}, %[[DY:[^:]*]]: tensor<3x4xf32> {circuit.name = "d_result0"}) -> (tensor<3x4xf32>, tensor<16x4xf32>)
// CHECK:         %[[D:.*]] = circuit.scatter_add %[[DY]], %[[TOK]] : tensor<3x4xf32>, tensor<3xi32> -> tensor<16x4xf32>
// CHECK-NEXT:    circuit.output %{{.*}}, %[[D]]
// CHECK-NOT:     circuit.reduce
circuit.graph @embed(%table: tensor<16x4xf32> {circuit.name = "s"}, %tok: tensor<3xi32> {circuit.name = "tok"}) -> tensor<3x4xf32> {
  %e = circuit.gather %table ins(%tok : tensor<3xi32>) : tensor<16x4xf32> -> tensor<3x4xf32> {
  ^bb0(%lane: i32, %all: tensor<3xi32>):
    %s = exp.div_by_const %lane, 4 : i32
    %r = circuit.extract %all[%s] : tensor<3xi32>
    %w = exp.constant 4 : i32
    %base = exp.mul %w, %r : i32
    %d = exp.rem_by_const %lane, 4 : i32
    %a = exp.add %d, %base : i32
    circuit.yield %a : i32
  }
  circuit.output %e : tensor<3x4xf32>
}

// -----

// The same body with a different row length (5 is not the table's 4) is not
// a row gather: the general rule, a reduction over [table, lanes].

// CHECK-LABEL: circuit.graph @not_rows_grad(
// CHECK-NOT:     circuit.scatter_add
// CHECK:         circuit.reduce sum {{.*}} over [64, 12]
circuit.graph @not_rows(%table: tensor<16x4xf32> {circuit.name = "s"}, %tok: tensor<3xi32> {circuit.name = "tok"}) -> tensor<3x4xf32> {
  %e = circuit.gather %table ins(%tok : tensor<3xi32>) : tensor<16x4xf32> -> tensor<3x4xf32> {
  ^bb0(%lane: i32, %all: tensor<3xi32>):
    %s = exp.div_by_const %lane, 4 : i32
    %r = circuit.extract %all[%s] : tensor<3xi32>
    %w = exp.constant 5 : i32
    %base = exp.mul %r, %w : i32
    %d = exp.rem_by_const %lane, 4 : i32
    %a = exp.add %base, %d : i32
    circuit.yield %a : i32
  }
  circuit.output %e : tensor<3x4xf32>
}

// -----

// circuit.scatter_add's own transpose: row s of dSource is row tokens[s] of
// dY, a row gather.

// CHECK-LABEL: circuit.graph @sum_rows_grad(
// CHECK-SAME:    %[[X:[^:]*]]: tensor<3x4xf32> {circuit.name = "s"}, %[[TOK:[^:]*]]: tensor<3xi32> {circuit.name = "tok"}, %[[DY:[^:]*]]: tensor<8x4xf32> {circuit.name = "d_result0"})
// CHECK:         %[[DX:.*]] = circuit.gather %[[DY]] ins(%[[TOK]] : tensor<3xi32>) : tensor<8x4xf32> -> tensor<3x4xf32>
// CHECK:           circuit.extract
// CHECK:         circuit.output %{{.*}}, %[[DX]]
circuit.graph @sum_rows(%x: tensor<3x4xf32> {circuit.name = "s"}, %tok: tensor<3xi32> {circuit.name = "tok"}) -> tensor<8x4xf32> {
  %d = circuit.scatter_add %x, %tok : tensor<3x4xf32>, tensor<3xi32> -> tensor<8x4xf32>
  circuit.output %d : tensor<8x4xf32>
}
