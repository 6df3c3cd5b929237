// RUN: hesper-opt %s -split-input-file -circuit-fuse-pointwise | FileCheck %s
// RUN: hesper-run %s --split-input-file --validate-fusion | FileCheck %s --check-prefix=VALID

// circuit-fuse-pointwise: a map (or a gather) with a single per-lane user is
// computed inside that user's body. The first RUN checks the rewrite of the
// pass alone; the second fuses each graph with the whole hesper-fuse pipeline
// and compares it with its source in the reference interpreter (dispatch
// counts before -> after, and `ok` for equal results).

//===----------------------------------------------------------------------===//
// Fused
//===----------------------------------------------------------------------===//

// Three maps in a chain become one; the last map's own input is kept.

// CHECK-LABEL: circuit.graph @map_chain(
// CHECK-SAME:    %[[X:.*]]: tensor<64xf32>, %[[Y:.*]]: tensor<64xf32>)
// CHECK-NEXT:    %[[R:.*]] = circuit.map ins(%[[X]], %[[Y]] : tensor<64xf32>, tensor<64xf32>) -> tensor<64xf32> {
// CHECK-NEXT:    ^bb0(%{{.*}}: i32, %[[A:.*]]: f32, %[[B:.*]]: f32):
// CHECK-DAG:       %[[TWO:.*]] = exp.constant 2.000000e+00 : f32
// CHECK-DAG:       %[[E:.*]] = exp.exp %[[A]] : f32
// CHECK:           %[[M:.*]] = exp.mul %[[E]], %[[TWO]] : f32
// CHECK-NEXT:      %[[S:.*]] = exp.add %[[M]], %[[B]] : f32
// CHECK-NEXT:      circuit.yield %[[S]] : f32
// CHECK-NEXT:    }
// CHECK-NEXT:    circuit.output %[[R]] : tensor<64xf32>
// VALID: graph @map_chain: 3 -> 1 dispatches, {{[0-9]+}} values compared, max error {{.*}}: ok
circuit.graph @map_chain(%x: tensor<64xf32>, %y: tensor<64xf32>) -> tensor<64xf32> {
  %a = circuit.map ins(%x : tensor<64xf32>) -> tensor<64xf32> {
  ^bb0(%lane: i32, %v: f32):
    %e = exp.exp %v : f32
    circuit.yield %e : f32
  }
  %b = circuit.map ins(%a : tensor<64xf32>) -> tensor<64xf32> {
  ^bb0(%lane: i32, %v: f32):
    %two = exp.constant 2.0 : f32
    %m = exp.mul %v, %two : f32
    circuit.yield %m : f32
  }
  %c = circuit.map ins(%b, %y : tensor<64xf32>, tensor<64xf32>) -> tensor<64xf32> {
  ^bb0(%lane: i32, %v: f32, %w: f32):
    %s = exp.add %v, %w : f32
    circuit.yield %s : f32
  }
  circuit.output %c : tensor<64xf32>
}

// -----

// Writing a map into a slice of a buffer is one scatter: the map's body runs
// in the scatter's, which still writes at lane + 128.

// CHECK-LABEL: circuit.graph @map_into_scatter(
// CHECK-SAME:    %[[X:.*]]: tensor<128xf32>, %[[DST:.*]]: tensor<256xf32>)
// CHECK-NOT:     circuit.map
// CHECK:         %[[R:.*]] = circuit.scatter grid(128) ins(%[[X]] : tensor<128xf32>) into %[[DST]] : tensor<256xf32> {
// CHECK-NEXT:    ^bb0(%[[LANE:.*]]: i32, %[[V:.*]]: f32):
// CHECK-DAG:       %[[C128:.*]] = exp.constant 128 : i32
// CHECK-DAG:       %[[S:.*]] = exp.silu %[[V]] : f32
// CHECK-DAG:       %[[ADDR:.*]] = exp.add %[[LANE]], %[[C128]] : i32
// CHECK:           circuit.yield %[[ADDR]], %[[S]] : i32, f32
// CHECK-NEXT:    }
// CHECK-NEXT:    circuit.output %[[R]] : tensor<256xf32>
// VALID: graph @map_into_scatter: 2 -> 1 dispatches, {{[0-9]+}} values compared, max error {{.*}}: ok
circuit.graph @map_into_scatter(%x: tensor<128xf32>, %dst: tensor<256xf32>) -> tensor<256xf32> {
  %s = circuit.map ins(%x : tensor<128xf32>) -> tensor<128xf32> {
  ^bb0(%lane: i32, %v: f32):
    %r = exp.silu %v : f32
    circuit.yield %r : f32
  }
  %r = circuit.scatter grid(128) ins(%s : tensor<128xf32>)
      into %dst : tensor<256xf32> {
  ^bb0(%lane: i32, %v: f32):
    %c128 = exp.constant 128 : i32
    %a = exp.add %lane, %c128 : i32
    circuit.yield %a, %v : i32, f32
  }
  circuit.output %r : tensor<256xf32>
}

// -----

// A map into a reduction without prologue: the map's body becomes the
// prologue, its inputs the reduction's (the first one sets the iteration
// shape).

// CHECK-LABEL: circuit.graph @map_into_reduce(
// CHECK-SAME:    %[[X:.*]]: tensor<4x64xf32>, %[[Y:.*]]: tensor<4x64xf32>)
// CHECK-NEXT:    %[[R:.*]] = circuit.reduce sum %[[X]], %[[Y]] : tensor<4x64xf32>, tensor<4x64xf32> -> tensor<4x1xf32> prologue {
// CHECK-NEXT:    ^bb0(%{{.*}}: i32, %[[A:.*]]: f32, %[[B:.*]]: f32):
// CHECK-NEXT:      %[[M:.*]] = exp.mul %[[A]], %[[B]] : f32
// CHECK-NEXT:      circuit.yield %[[M]] : f32
// CHECK-NEXT:    }
// CHECK-NEXT:    circuit.output %[[R]] : tensor<4x1xf32>
// VALID: graph @map_into_reduce: 2 -> 1 dispatches, {{[0-9]+}} values compared, max error {{.*}}: ok
circuit.graph @map_into_reduce(%x: tensor<4x64xf32>, %y: tensor<4x64xf32>) -> tensor<4x1xf32> {
  %p = circuit.map ins(%x, %y : tensor<4x64xf32>, tensor<4x64xf32>) -> tensor<4x64xf32> {
  ^bb0(%lane: i32, %a: f32, %b: f32):
    %m = exp.mul %a, %b : f32
    circuit.yield %m : f32
  }
  %s = circuit.reduce sum %p : tensor<4x64xf32> -> tensor<4x1xf32>
  circuit.output %s : tensor<4x1xf32>
}

// -----

// A map into a reduce_epilogue's first input: it is computed in the new
// prologue (the reduced value) and in the epilogue (the element of the row).

// CHECK-LABEL: circuit.graph @map_into_reduce_epilogue(
// CHECK-SAME:    %[[X:.*]]: tensor<256xf32>, %[[G:.*]]: tensor<256xf32>)
// CHECK-NEXT:    %[[R:.*]] = circuit.reduce_epilogue sum_sq %[[X]], %[[G]] : tensor<256xf32>, tensor<256xf32> -> tensor<256xf32> prologue {
// CHECK-NEXT:    ^bb0(%{{.*}}: i32, %[[P:.*]]: f32, %{{.*}}: f32):
// CHECK-NEXT:      %[[HALF:.*]] = exp.constant 5.000000e-01 : f32
// CHECK-NEXT:      %[[PH:.*]] = exp.mul %[[P]], %[[HALF]] : f32
// CHECK-NEXT:      circuit.yield %[[PH]] : f32
// CHECK-NEXT:    } epilogue {
// CHECK-NEXT:    ^bb0(%{{.*}}: i32, %[[SS:.*]]: f32, %[[V:.*]]: f32, %[[W:.*]]: f32):
// CHECK-DAG:       %[[HALF2:.*]] = exp.constant 5.000000e-01 : f32
// CHECK-DAG:       %[[VH:.*]] = exp.mul %[[V]], %[[HALF2]] : f32
// CHECK-DAG:       %[[RS:.*]] = exp.rsqrt %{{.*}} : f32
// CHECK:           %[[N:.*]] = exp.mul %[[VH]], %[[RS]] : f32
// CHECK-NEXT:      %[[O:.*]] = exp.mul %[[N]], %[[W]] : f32
// CHECK-NEXT:      circuit.yield %[[O]] : f32
// CHECK-NEXT:    }
// CHECK-NEXT:    circuit.output %[[R]] : tensor<256xf32>
// VALID: graph @map_into_reduce_epilogue: 2 -> 1 dispatches, {{[0-9]+}} values compared, max error {{.*}}: ok
circuit.graph @map_into_reduce_epilogue(%x: tensor<256xf32>, %g: tensor<256xf32>) -> tensor<256xf32> {
  %h = circuit.map ins(%x : tensor<256xf32>) -> tensor<256xf32> {
  ^bb0(%lane: i32, %v: f32):
    %half = exp.constant 0.5 : f32
    %m = exp.mul %v, %half : f32
    circuit.yield %m : f32
  }
  %n = circuit.reduce_epilogue sum_sq %h, %g
      : tensor<256xf32>, tensor<256xf32> -> tensor<256xf32> epilogue {
  ^bb0(%lane: i32, %ss: f32, %v: f32, %w: f32):
    %d = exp.constant 256.0 : f32
    %eps = exp.constant 1.0e-06 : f32
    %m = exp.div %ss, %d : f32
    %me = exp.add %m, %eps : f32
    %r = exp.rsqrt %me : f32
    %nv = exp.mul %v, %r : f32
    %o = exp.mul %nv, %w : f32
    circuit.yield %o : f32
  }
  circuit.output %n : tensor<256xf32>
}

// -----

// A map computing a matmul epilogue's extra input runs in the epilogue.

// CHECK-LABEL: circuit.graph @map_into_matmul_epilogue_input(
// CHECK-SAME:    %[[X:.*]]: tensor<256xf32>, %[[W:.*]]: tensor<32x256xf32>, %[[B:.*]]: tensor<32xf32>)
// CHECK-NEXT:    %[[Y:.*]] = circuit.matmul %[[X]], %[[W]] ins(%[[B]] : tensor<32xf32>) : tensor<256xf32>, tensor<32x256xf32> -> tensor<32xf32> epilogue {
// CHECK-NEXT:    ^bb0(%{{.*}}: i32, %[[ACC:.*]]: f32, %[[BIAS:.*]]: f32):
// CHECK-NEXT:      %[[T:.*]] = exp.tanh %[[BIAS]] : f32
// CHECK-NEXT:      %[[S:.*]] = exp.add %[[ACC]], %[[T]] : f32
// CHECK-NEXT:      circuit.yield %[[S]] : f32
// CHECK-NEXT:    }
// CHECK-NEXT:    circuit.output %[[Y]] : tensor<32xf32>
// VALID: graph @map_into_matmul_epilogue_input: 2 -> 1 dispatches, {{[0-9]+}} values compared, max error {{.*}}: ok
circuit.graph @map_into_matmul_epilogue_input(%x: tensor<256xf32>, %w: tensor<32x256xf32>, %b: tensor<32xf32>) -> tensor<32xf32> {
  %b2 = circuit.map ins(%b : tensor<32xf32>) -> tensor<32xf32> {
  ^bb0(%lane: i32, %v: f32):
    %t = exp.tanh %v : f32
    circuit.yield %t : f32
  }
  %y = circuit.matmul %x, %w ins(%b2 : tensor<32xf32>)
      : tensor<256xf32>, tensor<32x256xf32> -> tensor<32xf32> epilogue {
  ^bb0(%lane: i32, %acc: f32, %bias: f32):
    %s = exp.add %acc, %bias : f32
    circuit.yield %s : f32
  }
  circuit.output %y : tensor<32xf32>
}

// -----

// A map into one input of a scatter_multi; the other input is untouched.

// CHECK-LABEL: circuit.graph @map_into_scatter_multi(
// CHECK-SAME:    %[[K:.*]]: tensor<64xf32>, %[[V:.*]]: tensor<64xf32>, %[[KC:.*]]: tensor<512xf32>, %[[VC:.*]]: tensor<512xf32>)
// CHECK-NOT:     circuit.map
// CHECK:         %[[R:.*]]:2 = circuit.scatter_multi grid(64) ins(%[[K]], %[[V]] : tensor<64xf32>, tensor<64xf32>) into(%[[KC]], %[[VC]] : tensor<512xf32>, tensor<512xf32>) {
// CHECK-NEXT:    ^bb0(%[[LANE:.*]]: i32, %[[A:.*]]: f32, %[[B:.*]]: f32):
// CHECK-DAG:       %[[C64:.*]] = exp.constant 64 : i32
// CHECK-DAG:       %[[SC:.*]] = exp.constant 1.250000e-01 : f32
// CHECK-DAG:       %[[AS:.*]] = exp.mul %[[A]], %[[SC]] : f32
// CHECK-DAG:       %[[ADDR:.*]] = exp.add %[[LANE]], %[[C64]] : i32
// CHECK:           circuit.yield %[[ADDR]], %[[AS]], %[[ADDR]], %[[B]] : i32, f32, i32, f32
// CHECK-NEXT:    }
// CHECK-NEXT:    circuit.output %[[R]]#0, %[[R]]#1 : tensor<512xf32>, tensor<512xf32>
// VALID: graph @map_into_scatter_multi: 2 -> 1 dispatches, {{[0-9]+}} values compared, max error {{.*}}: ok
circuit.graph @map_into_scatter_multi(%k: tensor<64xf32>, %v: tensor<64xf32>, %kc: tensor<512xf32>, %vc: tensor<512xf32>) -> (tensor<512xf32>, tensor<512xf32>) {
  %ks = circuit.map ins(%k : tensor<64xf32>) -> tensor<64xf32> {
  ^bb0(%lane: i32, %a: f32):
    %s = exp.constant 0.125 : f32
    %m = exp.mul %a, %s : f32
    circuit.yield %m : f32
  }
  %k2, %v2 = circuit.scatter_multi grid(64)
      ins(%ks, %v : tensor<64xf32>, tensor<64xf32>)
      into(%kc, %vc : tensor<512xf32>, tensor<512xf32>) {
  ^bb0(%lane: i32, %a: f32, %b: f32):
    %c64 = exp.constant 64 : i32
    %addr = exp.add %lane, %c64 : i32
    circuit.yield %addr, %a, %addr, %b : i32, f32, i32, f32
  }
  circuit.output %k2, %v2 : tensor<512xf32>, tensor<512xf32>
}

// -----

// A gather into a map: the source becomes a whole-tensor input of the map,
// read with circuit.extract at the gather's address.

// CHECK-LABEL: circuit.graph @gather_into_map(
// CHECK-SAME:    %[[X:.*]]: tensor<8xf32>, %[[Y:.*]]: tensor<8xf32>)
// CHECK-NOT:     circuit.gather
// CHECK:         %[[R:.*]] = circuit.map ins(%[[X]], %[[Y]] : tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32> {
// CHECK-NEXT:    ^bb0(%[[LANE:.*]]: i32, %[[ALL:.*]]: tensor<8xf32>, %[[B:.*]]: f32):
// CHECK-NEXT:      %[[C7:.*]] = exp.constant 7 : i32
// CHECK-NEXT:      %[[I:.*]] = exp.sub %[[C7]], %[[LANE]] : i32
// CHECK-NEXT:      %[[E:.*]] = circuit.extract %[[ALL]][%[[I]]] : tensor<8xf32>
// CHECK-NEXT:      %[[M:.*]] = exp.mul %[[E]], %[[B]] : f32
// CHECK-NEXT:      circuit.yield %[[M]] : f32
// CHECK-NEXT:    }
// CHECK-NEXT:    circuit.output %[[R]] : tensor<8xf32>
// VALID: graph @gather_into_map: 2 -> 1 dispatches, {{[0-9]+}} values compared, max error {{.*}}: ok
circuit.graph @gather_into_map(%x: tensor<8xf32>, %y: tensor<8xf32>) -> tensor<8xf32> {
  %r = circuit.gather %x : tensor<8xf32> -> tensor<8xf32> {
  ^bb0(%lane: i32):
    %c7 = exp.constant 7 : i32
    %a = exp.sub %c7, %lane : i32
    circuit.yield %a : i32
  }
  %s = circuit.map ins(%r, %y : tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32> {
  ^bb0(%lane: i32, %a: f32, %b: f32):
    %m = exp.mul %a, %b : f32
    circuit.yield %m : f32
  }
  circuit.output %s : tensor<8xf32>
}

// -----

// A [1] map whose inputs are all [1], broadcast into a [4, 16] map: fused,
// with the producer's lane index pinned to 0 (its convert folds to 0.0), so
// every lane computes the one element the user reads.

// CHECK-LABEL: circuit.graph @scalar_broadcast(
// CHECK-SAME:    %[[X:.*]]: tensor<4x16xf32>, %[[S:.*]]: tensor<1xf32>, %[[T:.*]]: tensor<1xf32>)
// CHECK-NEXT:    %[[R:.*]] = circuit.map ins(%[[X]], %[[S]], %[[T]] : tensor<4x16xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<4x16xf32> {
// CHECK-NEXT:    ^bb0(%{{.*}}: i32, %[[V:.*]]: f32, %[[A:.*]]: f32, %[[B:.*]]: f32):
// CHECK-NEXT:      %[[ZERO:.*]] = exp.constant 0.000000e+00 : f32
// CHECK-NEXT:      %[[AB:.*]] = exp.mul %[[A]], %[[B]] : f32
// CHECK-NEXT:      %[[K:.*]] = exp.add %[[AB]], %[[ZERO]] : f32
// CHECK-NEXT:      %[[M:.*]] = exp.mul %[[V]], %[[K]] : f32
// CHECK-NEXT:      circuit.yield %[[M]] : f32
// CHECK-NEXT:    }
// CHECK-NEXT:    circuit.output %[[R]] : tensor<4x16xf32>
// VALID: graph @scalar_broadcast: 2 -> 1 dispatches, {{[0-9]+}} values compared, max error {{.*}}: ok
circuit.graph @scalar_broadcast(%x: tensor<4x16xf32>, %s: tensor<1xf32>, %t: tensor<1xf32>) -> tensor<4x16xf32> {
  %k = circuit.map ins(%s, %t : tensor<1xf32>, tensor<1xf32>) -> tensor<1xf32> {
  ^bb0(%lane: i32, %a: f32, %b: f32):
    %m = exp.mul %a, %b : f32
    %l = exp.convert %lane : i32 to f32
    %r = exp.add %m, %l : f32
    circuit.yield %r : f32
  }
  %y = circuit.map ins(%x, %k : tensor<4x16xf32>, tensor<1xf32>) -> tensor<4x16xf32> {
  ^bb0(%lane: i32, %v: f32, %c: f32):
    %m = exp.mul %v, %c : f32
    circuit.yield %m : f32
  }
  circuit.output %y : tensor<4x16xf32>
}

// -----

// A [2, 4] map read lane for lane by a scatter over grid(8): fused, because
// its inputs are read at the same element either way (one of the same size,
// one single element). Compare @producer_input_broadcast below.

// CHECK-LABEL: circuit.graph @flat_read_of_other_shape(
// CHECK-SAME:    %[[X:.*]]: tensor<2x4xf32>, %[[S:.*]]: tensor<1xf32>, %[[DST:.*]]: tensor<16xf32>)
// CHECK-NOT:     circuit.map
// CHECK:         %[[R:.*]] = circuit.scatter grid(8) ins(%[[X]], %[[S]] : tensor<2x4xf32>, tensor<1xf32>) into %[[DST]] : tensor<16xf32> {
// CHECK-NEXT:    ^bb0(%{{.*}}: i32, %[[A:.*]]: f32, %[[B:.*]]: f32):
// CHECK-DAG:       %[[M:.*]] = exp.mul %[[A]], %[[B]] : f32
// CHECK:           circuit.yield %{{.*}}, %[[M]] : i32, f32
// CHECK:         circuit.output %[[R]] : tensor<16xf32>
// VALID: graph @flat_read_of_other_shape: 2 -> 1 dispatches, {{[0-9]+}} values compared, max error {{.*}}: ok
circuit.graph @flat_read_of_other_shape(%x: tensor<2x4xf32>, %s: tensor<1xf32>, %dst: tensor<16xf32>) -> tensor<16xf32> {
  %p = circuit.map ins(%x, %s : tensor<2x4xf32>, tensor<1xf32>) -> tensor<2x4xf32> {
  ^bb0(%lane: i32, %a: f32, %b: f32):
    %m = exp.mul %a, %b : f32
    circuit.yield %m : f32
  }
  %r = circuit.scatter grid(8) ins(%p : tensor<2x4xf32>) into %dst : tensor<16xf32> {
  ^bb0(%lane: i32, %v: f32):
    %c8 = exp.constant 8 : i32
    %a = exp.add %lane, %c8 : i32
    circuit.yield %a, %v : i32, f32
  }
  circuit.output %r : tensor<16xf32>
}

// -----

// A map into a reduction's first input whose own first input is a broadcast
// [64]: it cannot set the [4, 64] iteration shape, so the fused reduction
// states it with `over`.

// CHECK-LABEL: circuit.graph @reduce_first_input_broadcast(
// CHECK-SAME:    %[[W:.*]]: tensor<64xf32>, %[[X:.*]]: tensor<4x64xf32>)
// CHECK-NEXT:    %[[S:.*]] = circuit.reduce sum %[[W]], %[[X]] : tensor<64xf32>, tensor<4x64xf32> over [4, 64] -> tensor<4x1xf32> prologue {
// CHECK-NEXT:    ^bb0(%{{.*}}: i32, %[[A:.*]]: f32, %[[B:.*]]: f32):
// CHECK-NEXT:      %[[M:.*]] = exp.mul %[[A]], %[[B]] : f32
// CHECK-NEXT:      circuit.yield %[[M]] : f32
// CHECK-NEXT:    }
// CHECK-NEXT:    circuit.output %[[S]] : tensor<4x1xf32>
// VALID: graph @reduce_first_input_broadcast: 2 -> 1 dispatches, {{[0-9]+}} values compared, max error {{.*}}: ok
circuit.graph @reduce_first_input_broadcast(%w: tensor<64xf32>, %x: tensor<4x64xf32>) -> tensor<4x1xf32> {
  %p = circuit.map ins(%w, %x : tensor<64xf32>, tensor<4x64xf32>) -> tensor<4x64xf32> {
  ^bb0(%lane: i32, %a: f32, %b: f32):
    %m = exp.mul %a, %b : f32
    circuit.yield %m : f32
  }
  %s = circuit.reduce sum %p : tensor<4x64xf32> -> tensor<4x1xf32>
  circuit.output %s : tensor<4x1xf32>
}

// -----

// A gather into a reduction: its source, taken whole, cannot set the
// iteration shape either; the reduction states it with `over` and reads the
// source with circuit.extract in its new prologue.

// CHECK-LABEL: circuit.graph @gather_into_reduce(
// CHECK-SAME:    %[[X:.*]]: tensor<4x8xf32>)
// CHECK-NEXT:    %[[S:.*]] = circuit.reduce max %[[X]] : tensor<4x8xf32> over [4, 8] -> tensor<4x1xf32> prologue {
// CHECK-NEXT:    ^bb0(%[[LANE:.*]]: i32, %[[ALL:.*]]: tensor<4x8xf32>):
// CHECK-NEXT:      %[[C31:.*]] = exp.constant 31 : i32
// CHECK-NEXT:      %[[I:.*]] = exp.sub %[[C31]], %[[LANE]] : i32
// CHECK-NEXT:      %[[E:.*]] = circuit.extract %[[ALL]][%[[I]]] : tensor<4x8xf32>
// CHECK-NEXT:      circuit.yield %[[E]] : f32
// CHECK-NEXT:    }
// CHECK-NEXT:    circuit.output %[[S]] : tensor<4x1xf32>
// VALID: graph @gather_into_reduce: 2 -> 1 dispatches, {{[0-9]+}} values compared, max error {{.*}}: ok
circuit.graph @gather_into_reduce(%x: tensor<4x8xf32>) -> tensor<4x1xf32> {
  %r = circuit.gather %x : tensor<4x8xf32> -> tensor<4x8xf32> {
  ^bb0(%lane: i32):
    %c31 = exp.constant 31 : i32
    %a = exp.sub %c31, %lane : i32
    circuit.yield %a : i32
  }
  %s = circuit.reduce max %r : tensor<4x8xf32> -> tensor<4x1xf32>
  circuit.output %s : tensor<4x1xf32>
}

// -----

//===----------------------------------------------------------------------===//
// Not fused: one case per legality rule
//===----------------------------------------------------------------------===//

// The map has two users: fusing would compute it twice.

// CHECK-LABEL: circuit.graph @two_users(
// CHECK-SAME:    %[[X:.*]]: tensor<64xf32>)
// CHECK:         %[[A:.*]] = circuit.map ins(%[[X]] : tensor<64xf32>) -> tensor<64xf32> {
// CHECK:           exp.exp
// CHECK:         %[[B:.*]] = circuit.map ins(%[[A]] : tensor<64xf32>) -> tensor<64xf32> {
// CHECK:           exp.neg
// CHECK:         %[[C:.*]] = circuit.map ins(%[[A]] : tensor<64xf32>) -> tensor<64xf32> {
// CHECK:           exp.sqrt
// CHECK:         circuit.output %[[B]], %[[C]] : tensor<64xf32>, tensor<64xf32>
// VALID: graph @two_users: 3 -> 3 dispatches, {{[0-9]+}} values compared, max error {{.*}}: ok
circuit.graph @two_users(%x: tensor<64xf32>) -> (tensor<64xf32>, tensor<64xf32>) {
  %a = circuit.map ins(%x : tensor<64xf32>) -> tensor<64xf32> {
  ^bb0(%lane: i32, %v: f32):
    %e = exp.exp %v : f32
    circuit.yield %e : f32
  }
  %b = circuit.map ins(%a : tensor<64xf32>) -> tensor<64xf32> {
  ^bb0(%lane: i32, %v: f32):
    %n = exp.neg %v : f32
    circuit.yield %n : f32
  }
  %c = circuit.map ins(%a : tensor<64xf32>) -> tensor<64xf32> {
  ^bb0(%lane: i32, %v: f32):
    %s = exp.sqrt %v : f32
    circuit.yield %s : f32
  }
  circuit.output %b, %c : tensor<64xf32>, tensor<64xf32>
}

// -----

// The map is a graph result as well as the input of another map.

// CHECK-LABEL: circuit.graph @graph_result(
// CHECK-SAME:    %[[X:.*]]: tensor<64xf32>)
// CHECK:         %[[A:.*]] = circuit.map ins(%[[X]] : tensor<64xf32>) -> tensor<64xf32> {
// CHECK:           exp.exp
// CHECK:         %[[B:.*]] = circuit.map ins(%[[A]] : tensor<64xf32>) -> tensor<64xf32> {
// CHECK:           exp.neg
// CHECK:         circuit.output %[[A]], %[[B]] : tensor<64xf32>, tensor<64xf32>
// VALID: graph @graph_result: 2 -> 2 dispatches, {{[0-9]+}} values compared, max error {{.*}}: ok
circuit.graph @graph_result(%x: tensor<64xf32>) -> (tensor<64xf32>, tensor<64xf32>) {
  %a = circuit.map ins(%x : tensor<64xf32>) -> tensor<64xf32> {
  ^bb0(%lane: i32, %v: f32):
    %e = exp.exp %v : f32
    circuit.yield %e : f32
  }
  %b = circuit.map ins(%a : tensor<64xf32>) -> tensor<64xf32> {
  ^bb0(%lane: i32, %v: f32):
    %n = exp.neg %v : f32
    circuit.yield %n : f32
  }
  circuit.output %a, %b : tensor<64xf32>, tensor<64xf32>
}

// -----

// A [4, 1] map read through a broadcast by a [4, 8] map: each element is
// read by 8 lanes, not lane for lane.

// CHECK-LABEL: circuit.graph @read_through_broadcast(
// CHECK-SAME:    %[[X:.*]]: tensor<4x8xf32>, %[[ROW:.*]]: tensor<4x1xf32>)
// CHECK:         %[[S:.*]] = circuit.map ins(%[[ROW]] : tensor<4x1xf32>) -> tensor<4x1xf32> {
// CHECK:           exp.rsqrt
// CHECK:         %[[Y:.*]] = circuit.map ins(%[[X]], %[[S]] : tensor<4x8xf32>, tensor<4x1xf32>) -> tensor<4x8xf32> {
// CHECK:         circuit.output %[[Y]] : tensor<4x8xf32>
// VALID: graph @read_through_broadcast: 2 -> 2 dispatches, {{[0-9]+}} values compared, max error {{.*}}: ok
circuit.graph @read_through_broadcast(%x: tensor<4x8xf32>, %r: tensor<4x1xf32>) -> tensor<4x8xf32> {
  %s = circuit.map ins(%r : tensor<4x1xf32>) -> tensor<4x1xf32> {
  ^bb0(%lane: i32, %v: f32):
    %q = exp.rsqrt %v : f32
    circuit.yield %q : f32
  }
  %y = circuit.map ins(%x, %s : tensor<4x8xf32>, tensor<4x1xf32>) -> tensor<4x8xf32> {
  ^bb0(%lane: i32, %v: f32, %w: f32):
    %m = exp.mul %v, %w : f32
    circuit.yield %m : f32
  }
  circuit.output %y : tensor<4x8xf32>
}

// -----

// A [2, 4] map with a [4] input, read by a scatter over grid(8): the [4]
// input broadcasts over the map's [2, 4] shape, which the scatter does not
// iterate over (a [4] input does not even broadcast over [8]).

// CHECK-LABEL: circuit.graph @producer_input_broadcast(
// CHECK-SAME:    %[[X:.*]]: tensor<2x4xf32>, %[[W:.*]]: tensor<4xf32>, %[[DST:.*]]: tensor<16xf32>)
// CHECK:         %[[P:.*]] = circuit.map ins(%[[X]], %[[W]] : tensor<2x4xf32>, tensor<4xf32>) -> tensor<2x4xf32> {
// CHECK:         %[[R:.*]] = circuit.scatter grid(8) ins(%[[P]] : tensor<2x4xf32>) into %[[DST]] : tensor<16xf32> {
// CHECK:         circuit.output %[[R]] : tensor<16xf32>
// VALID: graph @producer_input_broadcast: 2 -> 2 dispatches, {{[0-9]+}} values compared, max error {{.*}}: ok
circuit.graph @producer_input_broadcast(%x: tensor<2x4xf32>, %w: tensor<4xf32>, %dst: tensor<16xf32>) -> tensor<16xf32> {
  %p = circuit.map ins(%x, %w : tensor<2x4xf32>, tensor<4xf32>) -> tensor<2x4xf32> {
  ^bb0(%lane: i32, %a: f32, %b: f32):
    %m = exp.mul %a, %b : f32
    circuit.yield %m : f32
  }
  %r = circuit.scatter grid(8) ins(%p : tensor<2x4xf32>) into %dst : tensor<16xf32> {
  ^bb0(%lane: i32, %v: f32):
    %c8 = exp.constant 8 : i32
    %a = exp.add %lane, %c8 : i32
    circuit.yield %a, %v : i32, f32
  }
  circuit.output %r : tensor<16xf32>
}

// -----

// The user takes the map whole (a tensor-typed block argument) and reads it
// at computed indices.

// CHECK-LABEL: circuit.graph @read_whole(
// CHECK-SAME:    %[[X:.*]]: tensor<8xf32>)
// CHECK:         %[[A:.*]] = circuit.map ins(%[[X]] : tensor<8xf32>) -> tensor<8xf32> {
// CHECK:           exp.exp
// CHECK:         %[[B:.*]] = circuit.map ins(%[[A]] : tensor<8xf32>) -> tensor<8xf32> {
// CHECK-NEXT:    ^bb0(%{{.*}}: i32, %[[ALL:.*]]: tensor<8xf32>):
// CHECK:           circuit.extract %[[ALL]][%{{.*}}] : tensor<8xf32>
// CHECK:         circuit.output %[[B]] : tensor<8xf32>
// VALID: graph @read_whole: 2 -> 2 dispatches, {{[0-9]+}} values compared, max error {{.*}}: ok
circuit.graph @read_whole(%x: tensor<8xf32>) -> tensor<8xf32> {
  %a = circuit.map ins(%x : tensor<8xf32>) -> tensor<8xf32> {
  ^bb0(%lane: i32, %v: f32):
    %e = exp.exp %v : f32
    circuit.yield %e : f32
  }
  %b = circuit.map ins(%a : tensor<8xf32>) -> tensor<8xf32> {
  ^bb0(%lane: i32, %all: tensor<8xf32>):
    %c7 = exp.constant 7 : i32
    %i = exp.sub %c7, %lane : i32
    %v = circuit.extract %all[%i] : tensor<8xf32>
    circuit.yield %v : f32
  }
  circuit.output %b : tensor<8xf32>
}

// -----

// The map reads %buf; a scatter then writes %buf in place before the map's
// user runs. Fused, the read would move past the write and see the new
// values (the interpreter run checks the old ones are used).

// CHECK-LABEL: circuit.graph @write_hazard(
// CHECK-SAME:    %[[BUF:.*]]: tensor<8xf32>, %[[X:.*]]: tensor<8xf32>)
// CHECK:         %[[M:.*]] = circuit.map ins(%[[BUF]] : tensor<8xf32>) -> tensor<8xf32> {
// CHECK:         circuit.scatter grid(8) ins(%[[X]] : tensor<8xf32>) into %[[BUF]] : tensor<8xf32> {
// CHECK:         %[[R:.*]] = circuit.map ins(%[[M]], %[[X]] : tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32> {
// CHECK:         circuit.output %[[R]] : tensor<8xf32>
// VALID: graph @write_hazard: 3 -> 3 dispatches, {{[0-9]+}} values compared, max error {{.*}}: ok
circuit.graph @write_hazard(%buf: tensor<8xf32>, %x: tensor<8xf32>) -> tensor<8xf32> {
  %m = circuit.map ins(%buf : tensor<8xf32>) -> tensor<8xf32> {
  ^bb0(%lane: i32, %v: f32):
    %two = exp.constant 2.0 : f32
    %d = exp.mul %v, %two : f32
    circuit.yield %d : f32
  }
  %b1 = circuit.scatter grid(8) ins(%x : tensor<8xf32>) into %buf : tensor<8xf32> {
  ^bb0(%lane: i32, %v: f32):
    circuit.yield %lane, %v : i32, f32
  }
  %r = circuit.map ins(%m, %x : tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32> {
  ^bb0(%lane: i32, %a: f32, %b: f32):
    %s = exp.add %a, %b : f32
    circuit.yield %s : f32
  }
  circuit.output %r : tensor<8xf32>
}

// -----

// The user itself writes %buf in place (at the reversed address) while the
// map reads it: in one kernel the reads would race with the writes.

// CHECK-LABEL: circuit.graph @user_writes_buffer_read(
// CHECK-SAME:    %[[BUF:.*]]: tensor<8xf32>)
// CHECK:         %[[M:.*]] = circuit.map ins(%[[BUF]] : tensor<8xf32>) -> tensor<8xf32> {
// CHECK:         circuit.scatter grid(8) ins(%[[M]] : tensor<8xf32>) into %[[BUF]] : tensor<8xf32> {
// VALID: graph @user_writes_buffer_read: 2 -> 2 dispatches, {{[0-9]+}} values compared, max error {{.*}}: ok
circuit.graph @user_writes_buffer_read(%buf: tensor<8xf32>) {
  %m = circuit.map ins(%buf : tensor<8xf32>) -> tensor<8xf32> {
  ^bb0(%lane: i32, %v: f32):
    %two = exp.constant 2.0 : f32
    %d = exp.mul %v, %two : f32
    circuit.yield %d : f32
  }
  %b1 = circuit.scatter grid(8) ins(%m : tensor<8xf32>) into %buf : tensor<8xf32> {
  ^bb0(%lane: i32, %v: f32):
    %c7 = exp.constant 7 : i32
    %a = exp.sub %c7, %lane : i32
    circuit.yield %a, %v : i32, f32
  }
  circuit.output
}

// -----

// Another role than a per-lane input: the map is a matmul's activations.

// CHECK-LABEL: circuit.graph @matmul_operand(
// CHECK-SAME:    %[[X:.*]]: tensor<256xf32>, %[[W:.*]]: tensor<32x256xf32>, %[[B:.*]]: tensor<32xf32>)
// CHECK:         %[[XS:.*]] = circuit.map ins(%[[X]] : tensor<256xf32>) -> tensor<256xf32> {
// CHECK:           exp.silu
// CHECK:         %[[Y:.*]] = circuit.matmul %[[XS]], %[[W]] ins(%[[B]] : tensor<32xf32>) : tensor<256xf32>, tensor<32x256xf32> -> tensor<32xf32> epilogue {
// CHECK-NOT:       exp.silu
// CHECK:         circuit.output %[[Y]] : tensor<32xf32>
// VALID: graph @matmul_operand: 2 -> 2 dispatches, {{[0-9]+}} values compared, max error {{.*}}: ok
circuit.graph @matmul_operand(%x: tensor<256xf32>, %w: tensor<32x256xf32>, %b: tensor<32xf32>) -> tensor<32xf32> {
  %xs = circuit.map ins(%x : tensor<256xf32>) -> tensor<256xf32> {
  ^bb0(%lane: i32, %v: f32):
    %s = exp.silu %v : f32
    circuit.yield %s : f32
  }
  %y = circuit.matmul %xs, %w ins(%b : tensor<32xf32>)
      : tensor<256xf32>, tensor<32x256xf32> -> tensor<32xf32> epilogue {
  ^bb0(%lane: i32, %acc: f32, %bias: f32):
    %s = exp.add %acc, %bias : f32
    circuit.yield %s : f32
  }
  circuit.output %y : tensor<32xf32>
}

// -----

// Another role than a per-lane input: the map is a gather's source.

// CHECK-LABEL: circuit.graph @gather_source(
// CHECK-SAME:    %[[X:.*]]: tensor<8xf32>, %[[IDS:.*]]: tensor<8xi32>)
// CHECK:         %[[A:.*]] = circuit.map ins(%[[X]] : tensor<8xf32>) -> tensor<8xf32> {
// CHECK:         %[[R:.*]] = circuit.gather %[[A]] ins(%[[IDS]] : tensor<8xi32>) : tensor<8xf32> -> tensor<8xf32> {
// CHECK:         circuit.output %[[R]] : tensor<8xf32>
// VALID: graph @gather_source: 2 -> 2 dispatches, {{[0-9]+}} values compared, max error {{.*}}: ok
circuit.graph @gather_source(%x: tensor<8xf32>, %ids: tensor<8xi32>) -> tensor<8xf32> {
  %a = circuit.map ins(%x : tensor<8xf32>) -> tensor<8xf32> {
  ^bb0(%lane: i32, %v: f32):
    %e = exp.exp %v : f32
    circuit.yield %e : f32
  }
  %r = circuit.gather %a ins(%ids : tensor<8xi32>) : tensor<8xf32> -> tensor<8xf32> {
  ^bb0(%lane: i32, %i: i32):
    circuit.yield %i : i32
  }
  circuit.output %r : tensor<8xf32>
}

// -----

// The user has no per-lane inputs to take the map over: a quantize.

// CHECK-LABEL: circuit.graph @map_into_quantize(
// CHECK-SAME:    %[[X:.*]]: tensor<64xf32>)
// CHECK:         %[[A:.*]] = circuit.map ins(%[[X]] : tensor<64xf32>) -> tensor<64xf32> {
// CHECK:         %[[Q:.*]] = circuit.quantize %[[A]] : tensor<64xf32> -> tensor<64x!circuit.q8_1>
// CHECK:         circuit.output %[[Q]] : tensor<64x!circuit.q8_1>
// VALID: graph @map_into_quantize: 2 -> 2 dispatches, {{[0-9]+}} values compared, max error {{.*}}: ok
circuit.graph @map_into_quantize(%x: tensor<64xf32>) -> tensor<64x!circuit.q8_1> {
  %a = circuit.map ins(%x : tensor<64xf32>) -> tensor<64xf32> {
  ^bb0(%lane: i32, %v: f32):
    %e = exp.silu %v : f32
    circuit.yield %e : f32
  }
  %q = circuit.quantize %a : tensor<64xf32> -> tensor<64x!circuit.q8_1>
  circuit.output %q : tensor<64x!circuit.q8_1>
}

// -----

// A gather with two uses (both inputs of one map) stays.

// CHECK-LABEL: circuit.graph @gather_two_uses(
// CHECK-SAME:    %[[X:.*]]: tensor<8xf32>)
// CHECK:         %[[G:.*]] = circuit.gather %[[X]] : tensor<8xf32> -> tensor<8xf32> {
// CHECK:         %[[S:.*]] = circuit.map ins(%[[G]], %[[G]] : tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32> {
// CHECK-NOT:       circuit.extract
// CHECK:         circuit.output %[[S]] : tensor<8xf32>
// VALID: graph @gather_two_uses: 2 -> 2 dispatches, {{[0-9]+}} values compared, max error {{.*}}: ok
circuit.graph @gather_two_uses(%x: tensor<8xf32>) -> tensor<8xf32> {
  %r = circuit.gather %x : tensor<8xf32> -> tensor<8xf32> {
  ^bb0(%lane: i32):
    %c7 = exp.constant 7 : i32
    %a = exp.sub %c7, %lane : i32
    circuit.yield %a : i32
  }
  %s = circuit.map ins(%r, %r : tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32> {
  ^bb0(%lane: i32, %a: f32, %b: f32):
    %m = exp.mul %a, %b : f32
    circuit.yield %m : f32
  }
  circuit.output %s : tensor<8xf32>
}

// -----

// The gather's source is written in place between the gather and its user.

// CHECK-LABEL: circuit.graph @gather_source_written_between(
// CHECK-SAME:    %[[CACHE:.*]]: tensor<8xf32>, %[[X:.*]]: tensor<8xf32>)
// CHECK:         %[[G:.*]] = circuit.gather %[[CACHE]] : tensor<8xf32> -> tensor<8xf32> {
// CHECK:         circuit.scatter grid(8) ins(%[[X]] : tensor<8xf32>) into %[[CACHE]] : tensor<8xf32> {
// CHECK:         %[[S:.*]] = circuit.map ins(%[[G]] : tensor<8xf32>) -> tensor<8xf32> {
// CHECK:         circuit.output %[[S]] : tensor<8xf32>
// VALID: graph @gather_source_written_between: 3 -> 3 dispatches, {{[0-9]+}} values compared, max error {{.*}}: ok
circuit.graph @gather_source_written_between(%cache: tensor<8xf32>, %x: tensor<8xf32>) -> tensor<8xf32> {
  %r = circuit.gather %cache : tensor<8xf32> -> tensor<8xf32> {
  ^bb0(%lane: i32):
    %c7 = exp.constant 7 : i32
    %a = exp.sub %c7, %lane : i32
    circuit.yield %a : i32
  }
  %c1 = circuit.scatter grid(8) ins(%x : tensor<8xf32>) into %cache : tensor<8xf32> {
  ^bb0(%lane: i32, %v: f32):
    circuit.yield %lane, %v : i32, f32
  }
  %s = circuit.map ins(%r : tensor<8xf32>) -> tensor<8xf32> {
  ^bb0(%lane: i32, %a: f32):
    %e = exp.exp %a : f32
    circuit.yield %e : f32
  }
  circuit.output %s : tensor<8xf32>
}

// -----

// The gather's user writes the gather's source in place: fused, lane i
// would read cache[7 - i] after another lane wrote it.

// CHECK-LABEL: circuit.graph @gather_user_writes_source(
// CHECK-SAME:    %[[CACHE:.*]]: tensor<8xf32>)
// CHECK:         %[[G:.*]] = circuit.gather %[[CACHE]] : tensor<8xf32> -> tensor<8xf32> {
// CHECK:         circuit.scatter grid(8) ins(%[[G]] : tensor<8xf32>) into %[[CACHE]] : tensor<8xf32> {
// VALID: graph @gather_user_writes_source: 2 -> 2 dispatches, {{[0-9]+}} values compared, max error {{.*}}: ok
circuit.graph @gather_user_writes_source(%cache: tensor<8xf32>) {
  %r = circuit.gather %cache : tensor<8xf32> -> tensor<8xf32> {
  ^bb0(%lane: i32):
    %c7 = exp.constant 7 : i32
    %a = exp.sub %c7, %lane : i32
    circuit.yield %a : i32
  }
  %c1 = circuit.scatter grid(8) ins(%r : tensor<8xf32>) into %cache : tensor<8xf32> {
  ^bb0(%lane: i32, %v: f32):
    circuit.yield %lane, %v : i32, f32
  }
  circuit.output
}

// -----

// Not fused: a gather from a quantized table (an embedding lookup) stays
// the kernel that decodes it; circuit.extract cannot read quantized
// tensors.
// CHECK-LABEL: circuit.graph @quantized_gather(
// CHECK:         circuit.gather
// CHECK:         circuit.map
circuit.graph @quantized_gather(%t: tensor<4x256x!circuit.q8_0>, %id: tensor<1xi32>) -> tensor<256xf32> {
  %g = circuit.gather %t ins(%id : tensor<1xi32>) : tensor<4x256x!circuit.q8_0> -> tensor<256xf32> {
  ^bb0(%lane: i32, %i: i32):
    %c256 = exp.constant 256 : i32
    %row = exp.mul %i, %c256 : i32
    %a = exp.add %row, %lane : i32
    circuit.yield %a : i32
  }
  %y = circuit.map ins(%g : tensor<256xf32>) -> tensor<256xf32> {
  ^bb0(%lane: i32, %v: f32):
    %two = exp.constant 2.0 : f32
    %m = exp.mul %v, %two : f32
    circuit.yield %m : f32
  }
  circuit.output %y : tensor<256xf32>
}
