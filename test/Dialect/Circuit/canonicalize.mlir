// RUN: hesper-opt %s -split-input-file -canonicalize | FileCheck %s

// Dead pure primitives are removed; in-place writes into graph arguments are
// kept even when nothing reads them; writes into fresh buffers that nothing
// reads are removed; exp ops inside bodies fold.

// CHECK-LABEL: circuit.graph @dead_map(
// CHECK-SAME:    %[[X:.*]]: tensor<8xf32>)
// CHECK-NOT:     circuit.map
// CHECK:         circuit.output %[[X]] : tensor<8xf32>
circuit.graph @dead_map(%x: tensor<8xf32>) -> tensor<8xf32> {
  %dead = circuit.map ins(%x : tensor<8xf32>) -> tensor<8xf32> {
  ^bb0(%lane: i32, %v: f32):
    %e = exp.exp %v : f32
    circuit.yield %e : f32
  }
  circuit.output %x : tensor<8xf32>
}

// -----

// CHECK-LABEL: circuit.graph @dead_reduce(
// CHECK-NOT:     circuit.reduce
// CHECK:         circuit.output
circuit.graph @dead_reduce(%x: tensor<4x8xf32>, %y: tensor<4x8xf32>) {
  %a = circuit.reduce sum_sq %x : tensor<4x8xf32> -> tensor<4x1xf32>
  %b = circuit.reduce max %x, %y : tensor<4x8xf32>, tensor<4x8xf32>
      -> tensor<4x1xf32> prologue {
  ^bb0(%lane: i32, %p: f32, %q: f32):
    %s = exp.sub %p, %q : f32
    circuit.yield %s : f32
  }
  circuit.output
}

// -----

// CHECK-LABEL: circuit.graph @dead_matmul(
// CHECK-NOT:     circuit.matmul
// CHECK-NOT:     circuit.quantize
// CHECK:         circuit.output
circuit.graph @dead_matmul(%x: tensor<256xf32>, %w: tensor<8x256x!circuit.q4_k>,
                           %b: tensor<8xf32>) {
  %y = circuit.matmul %x, %w ins(%b : tensor<8xf32>)
      : tensor<256xf32>, tensor<8x256x!circuit.q4_k> -> tensor<8xf32> epilogue {
  ^bb0(%lane: i32, %acc: f32, %bias: f32):
    %s = exp.add %acc, %bias : f32
    circuit.yield %s : f32
  }
  %q = circuit.quantize %x : tensor<256xf32> -> tensor<256x!circuit.q8_1>
  %z = circuit.matmul %q, %w
      : tensor<256x!circuit.q8_1>, tensor<8x256x!circuit.q4_k> -> tensor<8xf32>
  circuit.output
}

// -----

// CHECK-LABEL: circuit.graph @dead_gather_and_reduce_epilogue(
// CHECK-NOT:     circuit.gather
// CHECK-NOT:     circuit.reduce_epilogue
// CHECK-NOT:     circuit.zeros
// CHECK:         circuit.output
circuit.graph @dead_gather_and_reduce_epilogue(%x: tensor<16xf32>) {
  %g = circuit.gather %x : tensor<16xf32> -> tensor<16xf32> {
  ^bb0(%lane: i32):
    circuit.yield %lane : i32
  }
  %n = circuit.reduce_epilogue sum %x : tensor<16xf32> -> tensor<16xf32>
      epilogue {
  ^bb0(%lane: i32, %s: f32, %v: f32):
    %q = exp.div %v, %s : f32
    circuit.yield %q : f32
  }
  %z = circuit.zeros : tensor<16xf32>
  circuit.output
}

// -----

// A scatter into a graph argument writes an external buffer: it stays,
// and so does the chain of writes into the same argument.

// CHECK-LABEL: circuit.graph @keep_scatter_into_argument(
// CHECK-SAME:    %[[X:.*]]: tensor<8xf32>, %[[CACHE:.*]]: tensor<16xf32>)
// CHECK:         %[[V1:.*]] = circuit.scatter grid(8) ins(%[[X]] : tensor<8xf32>) into %[[CACHE]] : tensor<16xf32>
// CHECK:         circuit.scatter grid(8) ins(%[[X]] : tensor<8xf32>) into %[[V1]] : tensor<16xf32>
// CHECK:         circuit.output
circuit.graph @keep_scatter_into_argument(%x: tensor<8xf32>,
                                          %cache: tensor<16xf32>) {
  %v1 = circuit.scatter grid(8) ins(%x : tensor<8xf32>)
      into %cache : tensor<16xf32> {
  ^bb0(%lane: i32, %v: f32):
    circuit.yield %lane, %v : i32, f32
  }
  %v2 = circuit.scatter grid(8) ins(%x : tensor<8xf32>)
      into %v1 : tensor<16xf32> {
  ^bb0(%lane: i32, %v: f32):
    %c8 = exp.constant 8 : i32
    %a = exp.add %lane, %c8 : i32
    circuit.yield %a, %v : i32, f32
  }
  circuit.output
}

// -----

// CHECK-LABEL: circuit.graph @keep_scatter_multi_into_argument(
// CHECK-SAME:    %[[X:.*]]: tensor<8xf32>, %[[KC:.*]]: tensor<16xf32>)
// CHECK:         %[[Z:.*]] = circuit.zeros : tensor<16xf32>
// CHECK:         circuit.scatter_multi grid(8) ins(%[[X]] : tensor<8xf32>) into(%[[Z]], %[[KC]] : tensor<16xf32>, tensor<16xf32>)
// CHECK:         circuit.output
circuit.graph @keep_scatter_multi_into_argument(%x: tensor<8xf32>,
                                                %kc: tensor<16xf32>) {
  %z = circuit.zeros : tensor<16xf32>
  %r:2 = circuit.scatter_multi grid(8) ins(%x : tensor<8xf32>)
      into(%z, %kc : tensor<16xf32>, tensor<16xf32>) {
  ^bb0(%lane: i32, %v: f32):
    circuit.yield %lane, %v, %lane, %v : i32, f32, i32, f32
  }
  circuit.output
}

// -----

// CHECK-LABEL: circuit.graph @keep_reduce_scatter_into_argument(
// CHECK-SAME:    %[[X:.*]]: tensor<8xf32>, %[[DST:.*]]: tensor<16xf32>)
// CHECK:         circuit.reduce_scatter_epilogue sum %[[X]] : tensor<8xf32> into %[[DST]] : tensor<16xf32>
// CHECK:         circuit.output
circuit.graph @keep_reduce_scatter_into_argument(%x: tensor<8xf32>,
                                                 %dst: tensor<16xf32>) {
  %r = circuit.reduce_scatter_epilogue sum %x : tensor<8xf32>
      into %dst : tensor<16xf32> epilogue {
  ^bb0(%lane: i32, %s: f32, %v: f32):
    circuit.yield %lane, %s : i32, f32
  }
  circuit.output
}

// -----

// Writes into a fresh buffer that nothing reads are removed, with the
// buffer: a single scatter, a chain of them, a scatter_multi and a
// reduce_scatter_epilogue.

// CHECK-LABEL: circuit.graph @drop_scatter_into_zeros(
// CHECK-NOT:     circuit.zeros
// CHECK-NOT:     circuit.scatter
// CHECK-NOT:     circuit.reduce_scatter_epilogue
// CHECK:         circuit.output
circuit.graph @drop_scatter_into_zeros(%x: tensor<8xf32>) {
  %z = circuit.zeros : tensor<16xf32>
  %a = circuit.scatter grid(8) ins(%x : tensor<8xf32>)
      into %z : tensor<16xf32> {
  ^bb0(%lane: i32, %v: f32):
    circuit.yield %lane, %v : i32, f32
  }
  %z1 = circuit.zeros : tensor<16xf32>
  %b1 = circuit.scatter grid(8) ins(%x : tensor<8xf32>)
      into %z1 : tensor<16xf32> {
  ^bb0(%lane: i32, %v: f32):
    circuit.yield %lane, %v : i32, f32
  }
  %b2 = circuit.scatter grid(8) ins(%x : tensor<8xf32>)
      into %b1 : tensor<16xf32> {
  ^bb0(%lane: i32, %v: f32):
    %c8 = exp.constant 8 : i32
    %ad = exp.add %lane, %c8 : i32
    circuit.yield %ad, %v : i32, f32
  }
  %z2 = circuit.zeros : tensor<16xf32>
  %z3 = circuit.zeros : tensor<8xi32>
  %m:2 = circuit.scatter_multi grid(8) ins(%x : tensor<8xf32>)
      into(%z2, %z3 : tensor<16xf32>, tensor<8xi32>) {
  ^bb0(%lane: i32, %v: f32):
    circuit.yield %lane, %v, %lane, %lane : i32, f32, i32, i32
  }
  %z4 = circuit.zeros : tensor<16xf32>
  %r = circuit.reduce_scatter_epilogue max %x : tensor<8xf32>
      into %z4 : tensor<16xf32> epilogue {
  ^bb0(%lane: i32, %s: f32, %v: f32):
    circuit.yield %lane, %s : i32, f32
  }
  circuit.output
}

// -----

// A write into a fresh buffer that is read stays.

// CHECK-LABEL: circuit.graph @keep_used_scatter_into_zeros(
// CHECK:         %[[Z:.*]] = circuit.zeros : tensor<16xf32>
// CHECK:         %[[R:.*]] = circuit.scatter grid(8) ins(%{{.*}} : tensor<8xf32>) into %[[Z]] : tensor<16xf32>
// CHECK:         circuit.output %[[R]] : tensor<16xf32>
circuit.graph @keep_used_scatter_into_zeros(%x: tensor<8xf32>)
    -> tensor<16xf32> {
  %z = circuit.zeros : tensor<16xf32>
  %r = circuit.scatter grid(8) ins(%x : tensor<8xf32>)
      into %z : tensor<16xf32> {
  ^bb0(%lane: i32, %v: f32):
    circuit.yield %lane, %v : i32, f32
  }
  circuit.output %r : tensor<16xf32>
}

// -----

// exp folds inside a map body: x * 1.0 is x, -(-x) is x, i * 1 + 0 is i.

// CHECK-LABEL: circuit.graph @fold_map_body(
// CHECK:         circuit.map ins(%{{.*}} : tensor<8xf32>) -> tensor<8xf32> {
// CHECK-NEXT:    ^bb0(%[[LANE:.*]]: i32, %[[V:.*]]: f32):
// CHECK-NEXT:      %[[F:.*]] = exp.convert %[[LANE]] : i32 to f32
// CHECK-NEXT:      %[[S:.*]] = exp.add %[[V]], %[[F]] : f32
// CHECK-NEXT:      circuit.yield %[[S]] : f32
// CHECK-NEXT:    }
circuit.graph @fold_map_body(%x: tensor<8xf32>) -> tensor<8xf32> {
  %y = circuit.map ins(%x : tensor<8xf32>) -> tensor<8xf32> {
  ^bb0(%lane: i32, %v: f32):
    %one = exp.constant 1.0 : f32
    %c0 = exp.constant 0 : i32
    %c1 = exp.constant 1 : i32
    %m = exp.mul %v, %one : f32
    %n = exp.neg %m : f32
    %nn = exp.neg %n : f32
    %i = exp.mul %lane, %c1 : i32
    %j = exp.add %i, %c0 : i32
    %f = exp.convert %j : i32 to f32
    %s = exp.add %nn, %f : f32
    circuit.yield %s : f32
  }
  circuit.output %y : tensor<8xf32>
}

// -----

// Constant subexpressions fold to one constant, materialized inside the
// (isolated) body; a fully constant map body yields a constant.

// CHECK-LABEL: circuit.graph @fold_constants(
// CHECK:         circuit.reduce sum %{{.*}} : tensor<8xf32> -> tensor<1xf32> prologue {
// CHECK-NEXT:    ^bb0(%{{.*}}: i32, %[[V:.*]]: f32):
// CHECK-NEXT:      %[[SIX:.*]] = exp.constant 6.000000e+00 : f32
// CHECK-NEXT:      %[[P:.*]] = exp.mul %[[V]], %[[SIX]] : f32
// CHECK-NEXT:      circuit.yield %[[P]] : f32
// CHECK-NEXT:    }
// CHECK:         circuit.map -> tensor<4xi32> {
// CHECK-NEXT:    ^bb0(%{{.*}}: i32):
// CHECK-NEXT:      %[[C:.*]] = exp.constant 42 : i32
// CHECK-NEXT:      circuit.yield %[[C]] : i32
// CHECK-NEXT:    }
circuit.graph @fold_constants(%x: tensor<8xf32>)
    -> (tensor<1xf32>, tensor<4xi32>) {
  %r = circuit.reduce sum %x : tensor<8xf32> -> tensor<1xf32> prologue {
  ^bb0(%lane: i32, %v: f32):
    %two = exp.constant 2.0 : f32
    %three = exp.constant 3.0 : f32
    %six = exp.mul %two, %three : f32
    %p = exp.mul %v, %six : f32
    circuit.yield %p : f32
  }
  %c = circuit.map -> tensor<4xi32> {
  ^bb0(%lane: i32):
    %a = exp.constant 40 : i32
    %b = exp.constant 2 : i32
    %s = exp.add %a, %b : i32
    circuit.yield %s : i32
  }
  circuit.output %r, %c : tensor<1xf32>, tensor<4xi32>
}

// -----

// Folding in a matmul epilogue: acc * 1.0 disappears.

// CHECK-LABEL: circuit.graph @fold_matmul_epilogue(
// CHECK:         circuit.matmul
// CHECK-SAME:    epilogue {
// CHECK-NEXT:    ^bb0(%{{.*}}: i32, %[[ACC:.*]]: f32, %[[B:.*]]: f32):
// CHECK-NEXT:      %[[S:.*]] = exp.add %[[ACC]], %[[B]] : f32
// CHECK-NEXT:      circuit.yield %[[S]] : f32
// CHECK-NEXT:    }
circuit.graph @fold_matmul_epilogue(%x: tensor<8xf32>, %w: tensor<4x8xf32>,
                                    %b: tensor<4xf32>) -> tensor<4xf32> {
  %m = circuit.matmul %x, %w ins(%b : tensor<4xf32>)
      : tensor<8xf32>, tensor<4x8xf32> -> tensor<4xf32> epilogue {
  ^bb0(%lane: i32, %acc: f32, %bias: f32):
    %one = exp.constant 1.0 : f32
    %a = exp.mul %acc, %one : f32
    %s = exp.add %a, %bias : f32
    circuit.yield %s : f32
  }
  circuit.output %m : tensor<4xf32>
}
