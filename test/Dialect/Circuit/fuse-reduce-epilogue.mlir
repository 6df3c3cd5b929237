// RUN: hesper-opt %s -split-input-file -circuit-fuse-reduce-epilogue | FileCheck %s
// RUN: hesper-opt %s -split-input-file -circuit-fuse-pointwise -circuit-fuse-reduce-epilogue | FileCheck %s --check-prefix=PIPE
// RUN: hesper-opt %s -split-input-file -circuit-count-dispatches -circuit-fuse-pointwise -circuit-fuse-reduce-epilogue -circuit-count-dispatches -o /dev/null | FileCheck %s --check-prefix=COUNT
// RUN: hesper-run %s --split-input-file --validate-fusion | FileCheck %s --check-prefix=VALID

// circuit-fuse-reduce-epilogue: reduce -> (one per-row scalar map) -> a
// full-shape map reading the per-row value becomes one reduce_epilogue.
// Every case is also validated in the reference interpreter against the
// hesper-fuse pipeline (VALID).

//===----------------------------------------------------------------------===//
// Fused
//===----------------------------------------------------------------------===//

// Softmax's first half: the row max, then exp(x - max) over the full shape.
// The map's own read of x becomes a second input of the fused op.

// CHECK-LABEL: circuit.graph @softmax_max_exp(
// CHECK-SAME:    %[[X:.*]]: tensor<4x32xf32>)
// CHECK-NOT:     circuit.reduce max
// CHECK-NOT:     circuit.map
// The map reads the reduction's own input: both share one operand.
// CHECK:         %[[E:.*]] = circuit.reduce_epilogue max %[[X]] : tensor<4x32xf32> -> tensor<4x32xf32> epilogue {
// CHECK-NEXT:    ^bb0(%{{.*}}: i32, %[[M:.*]]: f32, %[[V:.*]]: f32):
// CHECK-NEXT:      %[[D:.*]] = exp.sub %[[V]], %[[M]] : f32
// CHECK-NEXT:      %[[R:.*]] = exp.exp %[[D]] : f32
// CHECK-NEXT:      circuit.yield %[[R]] : f32
// CHECK-NEXT:    }
// CHECK-NEXT:    circuit.output %[[E]] : tensor<4x32xf32>
// VALID: graph @softmax_max_exp: 2 -> 1 dispatches, {{[0-9]+}} values compared, max error {{.*}}: ok
circuit.graph @softmax_max_exp(%x: tensor<4x32xf32>) -> tensor<4x32xf32> {
  %m = circuit.reduce max %x : tensor<4x32xf32> -> tensor<4x1xf32>
  %e = circuit.map ins(%x, %m : tensor<4x32xf32>, tensor<4x1xf32>)
      -> tensor<4x32xf32> {
  ^bb0(%lane: i32, %v: f32, %mx: f32):
    %d = exp.sub %v, %mx : f32
    %r = exp.exp %d : f32
    circuit.yield %r : f32
  }
  circuit.output %e : tensor<4x32xf32>
}

// -----

// RMSNorm after its two scalar maps were merged: reduce, one per-row scalar
// map (mean, + eps, rsqrt), the full map x * r * w. The scalar map's body
// runs in the epilogue on the accumulator.

// CHECK-LABEL: circuit.graph @rmsnorm_merged(
// CHECK-SAME:    %[[X:.*]]: tensor<256xf32>, %[[W:.*]]: tensor<256xf32>)
// CHECK-NOT:     circuit.reduce sum_sq
// CHECK-NOT:     circuit.map
// CHECK:         %[[Y:.*]] = circuit.reduce_epilogue sum_sq %[[X]], %[[W]] : tensor<256xf32>, tensor<256xf32> -> tensor<256xf32> epilogue {
// CHECK-NEXT:    ^bb0(%{{.*}}: i32, %[[SS:.*]]: f32, %[[V:.*]]: f32, %[[G:.*]]: f32):
// CHECK-DAG:       %[[DIM:.*]] = exp.constant 2.560000e+02 : f32
// CHECK-DAG:       %[[EPS:.*]] = exp.constant 9.99999997E-7 : f32
// CHECK:           %[[MEAN:.*]] = exp.div %[[SS]], %[[DIM]] : f32
// CHECK-NEXT:      %[[ME:.*]] = exp.add %[[MEAN]], %[[EPS]] : f32
// CHECK-NEXT:      %[[RS:.*]] = exp.rsqrt %[[ME]] : f32
// CHECK-NEXT:      %[[N:.*]] = exp.mul %[[V]], %[[RS]] : f32
// CHECK-NEXT:      %[[O:.*]] = exp.mul %[[N]], %[[G]] : f32
// CHECK-NEXT:      circuit.yield %[[O]] : f32
// CHECK-NEXT:    }
// CHECK-NEXT:    circuit.output %[[Y]] : tensor<256xf32>
// VALID: graph @rmsnorm_merged: 3 -> 1 dispatches, {{[0-9]+}} values compared, max error {{.*}}: ok
circuit.graph @rmsnorm_merged(%x: tensor<256xf32>, %w: tensor<256xf32>)
    -> tensor<256xf32> {
  %ss = circuit.reduce sum_sq %x : tensor<256xf32> -> tensor<1xf32>
  %r = circuit.map ins(%ss : tensor<1xf32>) -> tensor<1xf32> {
  ^bb0(%lane: i32, %s: f32):
    %d = exp.constant 256.0 : f32
    %eps = exp.constant 1.0e-06 : f32
    %m = exp.div %s, %d : f32
    %me = exp.add %m, %eps : f32
    %q = exp.rsqrt %me : f32
    circuit.yield %q : f32
  }
  %y = circuit.map ins(%x, %r, %w : tensor<256xf32>, tensor<1xf32>, tensor<256xf32>)
      -> tensor<256xf32> {
  ^bb0(%lane: i32, %v: f32, %rr: f32, %g: f32):
    %n = exp.mul %v, %rr : f32
    %o = exp.mul %n, %g : f32
    circuit.yield %o : f32
  }
  circuit.output %y : tensor<256xf32>
}

// -----

// Rank-2 rows [4, 64] with a [64] weight. The scalar map iterates over the
// rows ([4, 1]) and reads a per-row epsilon whole at its lane; in the fused
// epilogue, which iterates over [4, 64], that lane becomes lane div 64.

// CHECK-LABEL: circuit.graph @rmsnorm_rows(
// CHECK-SAME:    %[[X:.*]]: tensor<4x64xf32>, %[[W:.*]]: tensor<64xf32>, %[[EPS:.*]]: tensor<4xf32>)
// CHECK-NOT:     circuit.map
// CHECK:         %[[Y:.*]] = circuit.reduce_epilogue sum_sq %[[X]], %[[EPS]], %[[W]] : tensor<4x64xf32>, tensor<4xf32>, tensor<64xf32> -> tensor<4x64xf32> epilogue {
// CHECK-NEXT:    ^bb0(%[[LANE:.*]]: i32, %[[SS:.*]]: f32, %[[V:.*]]: f32, %[[ALL:.*]]: tensor<4xf32>, %[[G:.*]]: f32):
// CHECK:           %[[ROW:.*]] = exp.div_by_const %[[LANE]], 64 : i32
// CHECK-NEXT:      %[[E:.*]] = circuit.extract %[[ALL]][%[[ROW]]] : tensor<4xf32>
// CHECK-NEXT:      %[[MEAN:.*]] = exp.div %[[SS]], %{{.*}} : f32
// CHECK-NEXT:      %[[ME:.*]] = exp.add %[[MEAN]], %[[E]] : f32
// CHECK-NEXT:      %[[RS:.*]] = exp.rsqrt %[[ME]] : f32
// CHECK-NEXT:      %[[N:.*]] = exp.mul %[[V]], %[[RS]] : f32
// CHECK-NEXT:      %[[O:.*]] = exp.mul %[[N]], %[[G]] : f32
// CHECK-NEXT:      circuit.yield %[[O]] : f32
// CHECK-NEXT:    }
// CHECK-NEXT:    circuit.output %[[Y]] : tensor<4x64xf32>
// VALID: graph @rmsnorm_rows: 3 -> 1 dispatches, {{[0-9]+}} values compared, max error {{.*}}: ok
circuit.graph @rmsnorm_rows(%x: tensor<4x64xf32>, %w: tensor<64xf32>,
                            %eps: tensor<4xf32>) -> tensor<4x64xf32> {
  %ss = circuit.reduce sum_sq %x : tensor<4x64xf32> -> tensor<4x1xf32>
  %r = circuit.map ins(%ss, %eps : tensor<4x1xf32>, tensor<4xf32>)
      -> tensor<4x1xf32> {
  ^bb0(%row: i32, %s: f32, %all: tensor<4xf32>):
    %d = exp.constant 64.0 : f32
    %e = circuit.extract %all[%row] : tensor<4xf32>
    %m = exp.div %s, %d : f32
    %me = exp.add %m, %e : f32
    %q = exp.rsqrt %me : f32
    circuit.yield %q : f32
  }
  %y = circuit.map ins(%x, %r, %w : tensor<4x64xf32>, tensor<4x1xf32>, tensor<64xf32>)
      -> tensor<4x64xf32> {
  ^bb0(%lane: i32, %v: f32, %rr: f32, %g: f32):
    %n = exp.mul %v, %rr : f32
    %o = exp.mul %n, %g : f32
    circuit.yield %o : f32
  }
  circuit.output %y : tensor<4x64xf32>
}

// -----

// A reduction with a prologue (a row-wise dot product): the fused op keeps
// the prologue, which takes every fused input and reads its own two.

// CHECK-LABEL: circuit.graph @reduce_with_prologue(
// CHECK-SAME:    %[[A:.*]]: tensor<2x64xf32>, %[[B:.*]]: tensor<2x64xf32>)
// CHECK-NOT:     circuit.map
// CHECK:         %[[Y:.*]] = circuit.reduce_epilogue sum %[[A]], %[[B]] : tensor<2x64xf32>, tensor<2x64xf32> -> tensor<2x64xf32> prologue {
// CHECK-NEXT:    ^bb0(%{{.*}}: i32, %[[P:.*]]: f32, %[[Q:.*]]: f32):
// CHECK-NEXT:      %[[PQ:.*]] = exp.mul %[[P]], %[[Q]] : f32
// CHECK-NEXT:      circuit.yield %[[PQ]] : f32
// CHECK-NEXT:    } epilogue {
// CHECK-NEXT:    ^bb0(%{{.*}}: i32, %[[DOT:.*]]: f32, %[[V:.*]]: f32, %{{.*}}: f32):
// CHECK-NEXT:      %[[O:.*]] = exp.mul %[[V]], %[[DOT]] : f32
// CHECK-NEXT:      circuit.yield %[[O]] : f32
// CHECK-NEXT:    }
// CHECK-NEXT:    circuit.output %[[Y]] : tensor<2x64xf32>
// VALID: graph @reduce_with_prologue: 2 -> 1 dispatches, {{[0-9]+}} values compared, max error {{.*}}: ok
circuit.graph @reduce_with_prologue(%a: tensor<2x64xf32>, %b: tensor<2x64xf32>)
    -> tensor<2x64xf32> {
  %dot = circuit.reduce sum %a, %b : tensor<2x64xf32>, tensor<2x64xf32>
      -> tensor<2x1xf32> prologue {
  ^bb0(%lane: i32, %p: f32, %q: f32):
    %m = exp.mul %p, %q : f32
    circuit.yield %m : f32
  }
  %y = circuit.map ins(%a, %dot : tensor<2x64xf32>, tensor<2x1xf32>)
      -> tensor<2x64xf32> {
  ^bb0(%lane: i32, %v: f32, %s: f32):
    %o = exp.mul %v, %s : f32
    circuit.yield %o : f32
  }
  circuit.output %y : tensor<2x64xf32>
}

// -----

// RMSNorm as four primitives: reduce, map(/D), map(rsqrt(+eps)),
// map(x * r * w). This pass alone does not fold it (the full map reads a
// map of a map of the reduction); after -circuit-fuse-pointwise merges the
// scalar maps, it does: 4 -> 1.

// CHECK-LABEL: circuit.graph @rmsnorm_four(
// CHECK:         circuit.reduce sum_sq
// CHECK:         circuit.map
// CHECK:         circuit.map
// CHECK:         circuit.map
// CHECK-NOT:     circuit.reduce_epilogue

// PIPE-LABEL: circuit.graph @rmsnorm_four(
// PIPE-SAME:    %[[X:.*]]: tensor<256xf32>, %[[W:.*]]: tensor<256xf32>)
// PIPE-NOT:     circuit.map
// PIPE:         %[[Y:.*]] = circuit.reduce_epilogue sum_sq %[[X]], %[[W]] : tensor<256xf32>, tensor<256xf32> -> tensor<256xf32> epilogue {
// PIPE-NEXT:    ^bb0(%{{.*}}: i32, %[[SS:.*]]: f32, %[[V:.*]]: f32, %[[G:.*]]: f32):
// PIPE:           %[[MEAN:.*]] = exp.div %[[SS]], %{{.*}} : f32
// PIPE-NEXT:      %[[ME:.*]] = exp.add %[[MEAN]], %{{.*}} : f32
// PIPE-NEXT:      %[[RS:.*]] = exp.rsqrt %[[ME]] : f32
// PIPE-NEXT:      %[[N:.*]] = exp.mul %[[V]], %[[RS]] : f32
// PIPE-NEXT:      %[[O:.*]] = exp.mul %[[N]], %[[G]] : f32
// PIPE-NEXT:      circuit.yield %[[O]] : f32
// PIPE-NEXT:    }
// PIPE-NEXT:    circuit.output %[[Y]] : tensor<256xf32>

// COUNT: graph @rmsnorm_four: 4 dispatches (3 map, 1 reduce)
// COUNT-NEXT: graph @rmsnorm_four: 1 dispatches (1 reduce_epilogue)

// VALID: graph @rmsnorm_four: 4 -> 1 dispatches, {{[0-9]+}} values compared, max error {{.*}}: ok
circuit.graph @rmsnorm_four(%x: tensor<256xf32>, %w: tensor<256xf32>)
    -> tensor<256xf32> {
  %ss = circuit.reduce sum_sq %x : tensor<256xf32> -> tensor<1xf32>
  %mean = circuit.map ins(%ss : tensor<1xf32>) -> tensor<1xf32> {
  ^bb0(%lane: i32, %s: f32):
    %d = exp.constant 256.0 : f32
    %m = exp.div %s, %d : f32
    circuit.yield %m : f32
  }
  %r = circuit.map ins(%mean : tensor<1xf32>) -> tensor<1xf32> {
  ^bb0(%lane: i32, %m: f32):
    %eps = exp.constant 1.0e-06 : f32
    %me = exp.add %m, %eps : f32
    %q = exp.rsqrt %me : f32
    circuit.yield %q : f32
  }
  %y = circuit.map ins(%x, %r, %w : tensor<256xf32>, tensor<1xf32>, tensor<256xf32>)
      -> tensor<256xf32> {
  ^bb0(%lane: i32, %v: f32, %rr: f32, %g: f32):
    %n = exp.mul %v, %rr : f32
    %o = exp.mul %n, %g : f32
    circuit.yield %o : f32
  }
  circuit.output %y : tensor<256xf32>
}

// -----

//===----------------------------------------------------------------------===//
// Not fused
//===----------------------------------------------------------------------===//

// The reduction has two users (two full maps).

// CHECK-LABEL: circuit.graph @reduce_two_users(
// CHECK:         %[[M:.*]] = circuit.reduce max
// CHECK:         circuit.map ins(%{{.*}}, %[[M]] : tensor<4x32xf32>, tensor<4x1xf32>)
// CHECK:         circuit.map ins(%{{.*}}, %[[M]] : tensor<4x32xf32>, tensor<4x1xf32>)
// CHECK-NOT:     circuit.reduce_epilogue
// VALID: graph @reduce_two_users: 3 -> 3 dispatches, {{[0-9]+}} values compared, max error {{.*}}: ok
circuit.graph @reduce_two_users(%x: tensor<4x32xf32>)
    -> (tensor<4x32xf32>, tensor<4x32xf32>) {
  %m = circuit.reduce max %x : tensor<4x32xf32> -> tensor<4x1xf32>
  %e = circuit.map ins(%x, %m : tensor<4x32xf32>, tensor<4x1xf32>)
      -> tensor<4x32xf32> {
  ^bb0(%lane: i32, %v: f32, %mx: f32):
    %d = exp.sub %v, %mx : f32
    %r = exp.exp %d : f32
    circuit.yield %r : f32
  }
  %f = circuit.map ins(%x, %m : tensor<4x32xf32>, tensor<4x1xf32>)
      -> tensor<4x32xf32> {
  ^bb0(%lane: i32, %v: f32, %mx: f32):
    %d = exp.div %v, %mx : f32
    circuit.yield %d : f32
  }
  circuit.output %e, %f : tensor<4x32xf32>, tensor<4x32xf32>
}

// -----

// The reduction is also a graph result.

// CHECK-LABEL: circuit.graph @reduce_is_result(
// CHECK:         %[[M:.*]] = circuit.reduce max
// CHECK:         %[[E:.*]] = circuit.map ins(%{{.*}}, %[[M]] : tensor<4x32xf32>, tensor<4x1xf32>)
// CHECK-NOT:     circuit.reduce_epilogue
// CHECK:         circuit.output %[[E]], %[[M]]
// VALID: graph @reduce_is_result: 2 -> 2 dispatches, {{[0-9]+}} values compared, max error {{.*}}: ok
circuit.graph @reduce_is_result(%x: tensor<4x32xf32>)
    -> (tensor<4x32xf32>, tensor<4x1xf32>) {
  %m = circuit.reduce max %x : tensor<4x32xf32> -> tensor<4x1xf32>
  %e = circuit.map ins(%x, %m : tensor<4x32xf32>, tensor<4x1xf32>)
      -> tensor<4x32xf32> {
  ^bb0(%lane: i32, %v: f32, %mx: f32):
    %d = exp.sub %v, %mx : f32
    %r = exp.exp %d : f32
    circuit.yield %r : f32
  }
  circuit.output %e, %m : tensor<4x32xf32>, tensor<4x1xf32>
}

// -----

// The per-row scalar map has two users (the full map and the graph's
// output).

// CHECK-LABEL: circuit.graph @scalar_two_users(
// CHECK:         %[[SS:.*]] = circuit.reduce sum_sq
// CHECK:         %[[R:.*]] = circuit.map ins(%[[SS]] : tensor<1xf32>) -> tensor<1xf32>
// CHECK:         %[[Y:.*]] = circuit.map ins(%{{.*}}, %[[R]], %{{.*}} : tensor<256xf32>, tensor<1xf32>, tensor<256xf32>)
// CHECK-NOT:     circuit.reduce_epilogue
// CHECK:         circuit.output %[[Y]], %[[R]]
// VALID: graph @scalar_two_users: 3 -> 3 dispatches, {{[0-9]+}} values compared, max error {{.*}}: ok
circuit.graph @scalar_two_users(%x: tensor<256xf32>, %w: tensor<256xf32>)
    -> (tensor<256xf32>, tensor<1xf32>) {
  %ss = circuit.reduce sum_sq %x : tensor<256xf32> -> tensor<1xf32>
  %r = circuit.map ins(%ss : tensor<1xf32>) -> tensor<1xf32> {
  ^bb0(%lane: i32, %s: f32):
    %d = exp.constant 256.0 : f32
    %m = exp.div %s, %d : f32
    %q = exp.rsqrt %m : f32
    circuit.yield %q : f32
  }
  %y = circuit.map ins(%x, %r, %w : tensor<256xf32>, tensor<1xf32>, tensor<256xf32>)
      -> tensor<256xf32> {
  ^bb0(%lane: i32, %v: f32, %rr: f32, %g: f32):
    %n = exp.mul %v, %rr : f32
    %o = exp.mul %n, %g : f32
    circuit.yield %o : f32
  }
  circuit.output %y, %r : tensor<256xf32>, tensor<1xf32>
}

// -----

// The map reading the reduction iterates over [128], not over the
// reduction's input shape [256].

// CHECK-LABEL: circuit.graph @map_over_other_shape(
// CHECK:         %[[S:.*]] = circuit.reduce sum
// CHECK:         circuit.map ins(%{{.*}}, %[[S]] : tensor<128xf32>, tensor<1xf32>) -> tensor<128xf32>
// CHECK-NOT:     circuit.reduce_epilogue
// VALID: graph @map_over_other_shape: 2 -> 2 dispatches, {{[0-9]+}} values compared, max error {{.*}}: ok
circuit.graph @map_over_other_shape(%x: tensor<256xf32>, %y: tensor<128xf32>)
    -> tensor<128xf32> {
  %s = circuit.reduce sum %x : tensor<256xf32> -> tensor<1xf32>
  %z = circuit.map ins(%y, %s : tensor<128xf32>, tensor<1xf32>)
      -> tensor<128xf32> {
  ^bb0(%lane: i32, %v: f32, %t: f32):
    %o = exp.mul %v, %t : f32
    circuit.yield %o : f32
  }
  circuit.output %z : tensor<128xf32>
}

// -----

// The scalar map reads a per-row input other than the reduction lane for
// lane: a flat [4], which could not be read lane for lane over the fused
// [4, 64] iteration.

// CHECK-LABEL: circuit.graph @scalar_reads_per_row_input(
// CHECK:         %[[SS:.*]] = circuit.reduce sum_sq
// CHECK:         %[[R:.*]] = circuit.map ins(%[[SS]], %{{.*}} : tensor<4x1xf32>, tensor<4xf32>) -> tensor<4x1xf32>
// CHECK:         circuit.map ins(%{{.*}}, %[[R]] : tensor<4x64xf32>, tensor<4x1xf32>) -> tensor<4x64xf32>
// CHECK-NOT:     circuit.reduce_epilogue
// VALID: graph @scalar_reads_per_row_input: 3 -> 3 dispatches, {{[0-9]+}} values compared, max error {{.*}}: ok
circuit.graph @scalar_reads_per_row_input(%x: tensor<4x64xf32>,
                                          %eps: tensor<4xf32>)
    -> tensor<4x64xf32> {
  %ss = circuit.reduce sum_sq %x : tensor<4x64xf32> -> tensor<4x1xf32>
  %r = circuit.map ins(%ss, %eps : tensor<4x1xf32>, tensor<4xf32>)
      -> tensor<4x1xf32> {
  ^bb0(%row: i32, %s: f32, %e: f32):
    %me = exp.add %s, %e : f32
    %q = exp.rsqrt %me : f32
    circuit.yield %q : f32
  }
  %y = circuit.map ins(%x, %r : tensor<4x64xf32>, tensor<4x1xf32>)
      -> tensor<4x64xf32> {
  ^bb0(%lane: i32, %v: f32, %rr: f32):
    %n = exp.mul %v, %rr : f32
    circuit.yield %n : f32
  }
  circuit.output %y : tensor<4x64xf32>
}

// -----

// The scalar map reads the reduction whole (another row's value, at 3 - row):
// in the fused epilogue only the lane's own row is at hand.

// CHECK-LABEL: circuit.graph @scalar_reads_reduction_whole(
// CHECK:         %[[SS:.*]] = circuit.reduce sum_sq
// CHECK:         %[[R:.*]] = circuit.map ins(%[[SS]] : tensor<4x1xf32>) -> tensor<4x1xf32>
// CHECK:           circuit.extract
// CHECK:         circuit.map ins(%{{.*}}, %[[R]] : tensor<4x64xf32>, tensor<4x1xf32>) -> tensor<4x64xf32>
// CHECK-NOT:     circuit.reduce_epilogue
// VALID: graph @scalar_reads_reduction_whole: 3 -> 3 dispatches, {{[0-9]+}} values compared, max error {{.*}}: ok
circuit.graph @scalar_reads_reduction_whole(%x: tensor<4x64xf32>)
    -> tensor<4x64xf32> {
  %ss = circuit.reduce sum_sq %x : tensor<4x64xf32> -> tensor<4x1xf32>
  %r = circuit.map ins(%ss : tensor<4x1xf32>) -> tensor<4x1xf32> {
  ^bb0(%row: i32, %all: tensor<4x1xf32>):
    %c3 = exp.constant 3 : i32
    %other = exp.sub %c3, %row : i32
    %s = circuit.extract %all[%other] : tensor<4x1xf32>
    %q = exp.rsqrt %s : f32
    circuit.yield %q : f32
  }
  %y = circuit.map ins(%x, %r : tensor<4x64xf32>, tensor<4x1xf32>)
      -> tensor<4x64xf32> {
  ^bb0(%lane: i32, %v: f32, %rr: f32):
    %n = exp.mul %v, %rr : f32
    circuit.yield %n : f32
  }
  circuit.output %y : tensor<4x64xf32>
}

// -----

// Hazard: between the reduction and the map, a scatter writes in place into
// the graph argument the reduction reads. Fused, the reduction would run
// after that write and see the new values.

// CHECK-LABEL: circuit.graph @write_between_into_reduced(
// CHECK-SAME:    %[[X:.*]]: tensor<256xf32>, %[[U:.*]]: tensor<64xf32>)
// CHECK:         %[[S:.*]] = circuit.reduce sum_sq %[[X]]
// CHECK:         %[[X2:.*]] = circuit.scatter grid(64) ins(%[[U]] : tensor<64xf32>) into %[[X]]
// CHECK:         circuit.map ins(%[[X2]], %[[S]] : tensor<256xf32>, tensor<1xf32>)
// CHECK-NOT:     circuit.reduce_epilogue
// VALID: graph @write_between_into_reduced: 3 -> 3 dispatches, {{[0-9]+}} values compared, max error {{.*}}: ok
circuit.graph @write_between_into_reduced(%x: tensor<256xf32>,
                                          %u: tensor<64xf32>)
    -> tensor<256xf32> {
  %s = circuit.reduce sum_sq %x : tensor<256xf32> -> tensor<1xf32>
  %x2 = circuit.scatter grid(64) ins(%u : tensor<64xf32>)
      into %x : tensor<256xf32> {
  ^bb0(%lane: i32, %v: f32):
    circuit.yield %lane, %v : i32, f32
  }
  %y = circuit.map ins(%x2, %s : tensor<256xf32>, tensor<1xf32>)
      -> tensor<256xf32> {
  ^bb0(%lane: i32, %v: f32, %t: f32):
    %o = exp.mul %v, %t : f32
    circuit.yield %o : f32
  }
  circuit.output %y : tensor<256xf32>
}

// -----

// Hazard: between the scalar map and the full map, a scatter writes in
// place into the graph argument the scalar map reads (whole).

// CHECK-LABEL: circuit.graph @write_between_into_scalar_input(
// CHECK-SAME:    %[[X:.*]]: tensor<4x64xf32>, %[[EPS:.*]]: tensor<4xf32>, %[[U:.*]]: tensor<4xf32>)
// CHECK:         %[[SS:.*]] = circuit.reduce sum_sq %[[X]]
// CHECK:         %[[R:.*]] = circuit.map ins(%[[SS]], %[[EPS]] : tensor<4x1xf32>, tensor<4xf32>)
// CHECK:         circuit.scatter grid(4) ins(%[[U]] : tensor<4xf32>) into %[[EPS]]
// CHECK:         circuit.map ins(%[[X]], %[[R]] : tensor<4x64xf32>, tensor<4x1xf32>)
// CHECK-NOT:     circuit.reduce_epilogue
// VALID: graph @write_between_into_scalar_input: 4 -> 4 dispatches, {{[0-9]+}} values compared, max error {{.*}}: ok
circuit.graph @write_between_into_scalar_input(%x: tensor<4x64xf32>,
                                               %eps: tensor<4xf32>,
                                               %u: tensor<4xf32>)
    -> tensor<4x64xf32> {
  %ss = circuit.reduce sum_sq %x : tensor<4x64xf32> -> tensor<4x1xf32>
  %r = circuit.map ins(%ss, %eps : tensor<4x1xf32>, tensor<4xf32>)
      -> tensor<4x1xf32> {
  ^bb0(%row: i32, %s: f32, %all: tensor<4xf32>):
    %e = circuit.extract %all[%row] : tensor<4xf32>
    %me = exp.add %s, %e : f32
    %q = exp.rsqrt %me : f32
    circuit.yield %q : f32
  }
  %eps2 = circuit.scatter grid(4) ins(%u : tensor<4xf32>)
      into %eps : tensor<4xf32> {
  ^bb0(%lane: i32, %v: f32):
    circuit.yield %lane, %v : i32, f32
  }
  %y = circuit.map ins(%x, %r : tensor<4x64xf32>, tensor<4x1xf32>)
      -> tensor<4x64xf32> {
  ^bb0(%lane: i32, %v: f32, %rr: f32):
    %n = exp.mul %v, %rr : f32
    circuit.yield %n : f32
  }
  circuit.output %y : tensor<4x64xf32>
}

// -----

// A single-row reduction whose value a scatter over the same grid reads:
// one reduce_scatter_epilogue.
// CHECK-LABEL: circuit.graph @reduce_into_scatter(
// CHECK-NOT:     circuit.reduce sum
// CHECK:         circuit.reduce_scatter_epilogue sum %{{[^,]*}} : tensor<64xf32> into %{{.*}} : tensor<256xf32> epilogue {
// CHECK:           exp.div
// CHECK-NOT:     circuit.scatter
// VALID: graph @reduce_into_scatter: 2 -> 1 dispatches, {{[0-9]+}} values compared, max error {{.*}}: ok
circuit.graph @reduce_into_scatter(%x: tensor<64xf32>, %dst: tensor<256xf32>) {
  %s = circuit.reduce sum %x : tensor<64xf32> -> tensor<1xf32>
  %r = circuit.scatter grid(64) ins(%x, %s : tensor<64xf32>, tensor<1xf32>) into %dst : tensor<256xf32> {
  ^bb0(%lane: i32, %v: f32, %sum: f32):
    %c64 = exp.constant 64 : i32
    %a = exp.add %lane, %c64 : i32
    %q = exp.div %v, %sum : f32
    circuit.yield %a, %q : i32, f32
  }
  circuit.output
}

// -----

// The scatter's grid is not the reduction's row.
// CHECK-LABEL: circuit.graph @reduce_into_other_grid(
// CHECK:         circuit.reduce sum
// CHECK:         circuit.scatter grid(32)
// VALID: graph @reduce_into_other_grid: 2 -> 2 dispatches, {{[0-9]+}} values compared, max error {{.*}}: ok
circuit.graph @reduce_into_other_grid(%x: tensor<64xf32>, %dst: tensor<256xf32>) {
  %s = circuit.reduce sum %x : tensor<64xf32> -> tensor<1xf32>
  %r = circuit.scatter grid(32) ins(%s : tensor<1xf32>) into %dst : tensor<256xf32> {
  ^bb0(%lane: i32, %sum: f32):
    circuit.yield %lane, %sum : i32, f32
  }
  circuit.output
}

// -----

// The scatter writes the buffer the reduction reads: in one kernel the
// reads would race with the writes.
// CHECK-LABEL: circuit.graph @reduce_into_scatter_of_its_input(
// CHECK:         circuit.reduce sum
// CHECK:         circuit.scatter grid(64)
// VALID: graph @reduce_into_scatter_of_its_input: 2 -> 2 dispatches, {{[0-9]+}} values compared, max error {{.*}}: ok
circuit.graph @reduce_into_scatter_of_its_input(%x: tensor<64xf32>) {
  %s = circuit.reduce sum %x : tensor<64xf32> -> tensor<1xf32>
  %r = circuit.scatter grid(64) ins(%s : tensor<1xf32>) into %x : tensor<64xf32> {
  ^bb0(%lane: i32, %sum: f32):
    circuit.yield %lane, %sum : i32, f32
  }
  circuit.output
}
