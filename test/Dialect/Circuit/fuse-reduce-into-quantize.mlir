// RUN: hesper-opt %s -split-input-file -circuit-fuse-reduce-into-quantize | FileCheck %s
// RUN: hesper-run %s --split-input-file --validate-fusion | FileCheck %s --check-prefix=VALID

// circuit-fuse-reduce-into-quantize: quantize(reduce_epilogue(...)) becomes
// a reduce_epilogue with a q8_1 or q8_0 result that quantizes each row as it
// stores it. Every case is also validated in the reference interpreter
// against the hesper-fuse pipeline (VALID).

//===----------------------------------------------------------------------===//
// Fused
//===----------------------------------------------------------------------===//

// Acceptance case 10: RMSNorm over D = 256, then Q8_1, in one kernel. The
// epilogue moves over unchanged and still yields the f32 value.

// CHECK-LABEL: circuit.graph @rmsnorm_q8_1(
// CHECK-SAME:    %[[X:.*]]: tensor<256xf32>, %[[W:.*]]: tensor<256xf32>)
// CHECK-NOT:     circuit.quantize
// CHECK:         %[[Q:.*]] = circuit.reduce_epilogue sum_sq %[[X]], %[[W]] : tensor<256xf32>, tensor<256xf32> -> tensor<256x!circuit.q8_1> epilogue {
// CHECK-NEXT:    ^bb0(%{{.*}}: i32, %[[SS:.*]]: f32, %[[V:.*]]: f32, %[[G:.*]]: f32):
// CHECK:           %[[MEAN:.*]] = exp.div %[[SS]], %{{.*}} : f32
// CHECK-NEXT:      %[[ME:.*]] = exp.add %[[MEAN]], %{{.*}} : f32
// CHECK-NEXT:      %[[RS:.*]] = exp.rsqrt %[[ME]] : f32
// CHECK-NEXT:      %[[N:.*]] = exp.mul %[[V]], %[[RS]] : f32
// CHECK-NEXT:      %[[O:.*]] = exp.mul %[[N]], %[[G]] : f32
// CHECK-NEXT:      circuit.yield %[[O]] : f32
// CHECK-NEXT:    }
// CHECK-NEXT:    circuit.output %[[Q]] : tensor<256x!circuit.q8_1>
// VALID: graph @rmsnorm_q8_1: 2 -> 1 dispatches, {{[0-9]+}} values compared, max error {{.*}}: ok
circuit.graph @rmsnorm_q8_1(%x: tensor<256xf32>, %w: tensor<256xf32>)
    -> tensor<256x!circuit.q8_1> {
  %n = circuit.reduce_epilogue sum_sq %x, %w
      : tensor<256xf32>, tensor<256xf32> -> tensor<256xf32> epilogue {
  ^bb0(%lane: i32, %ss: f32, %v: f32, %g: f32):
    %d = exp.constant 256.0 : f32
    %eps = exp.constant 1.0e-06 : f32
    %m = exp.div %ss, %d : f32
    %me = exp.add %m, %eps : f32
    %r = exp.rsqrt %me : f32
    %nv = exp.mul %v, %r : f32
    %o = exp.mul %nv, %g : f32
    circuit.yield %o : f32
  }
  %q = circuit.quantize %n : tensor<256xf32> -> tensor<256x!circuit.q8_1>
  circuit.output %q : tensor<256x!circuit.q8_1>
}

// -----

// Acceptance case 10 as the model builder emits it: four RMSNorm
// primitives, then Q8_1. This pass alone leaves it (the quantize reads a
// map); the hesper-fuse pipeline takes it from 5 dispatches to 1.

// CHECK-LABEL: circuit.graph @rmsnorm_primitives_q8_1(
// CHECK:         circuit.reduce sum_sq
// CHECK:         %[[Y:.*]] = circuit.map ins(%{{.*}}, %{{.*}}, %{{.*}} : tensor<256xf32>, tensor<1xf32>, tensor<256xf32>)
// CHECK:         circuit.quantize %[[Y]] : tensor<256xf32> -> tensor<256x!circuit.q8_1>
// CHECK-NOT:     circuit.reduce_epilogue
// VALID: graph @rmsnorm_primitives_q8_1: 5 -> 1 dispatches, {{[0-9]+}} values compared, max error {{.*}}: ok
circuit.graph @rmsnorm_primitives_q8_1(%x: tensor<256xf32>, %w: tensor<256xf32>)
    -> tensor<256x!circuit.q8_1> {
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
  %q = circuit.quantize %y : tensor<256xf32> -> tensor<256x!circuit.q8_1>
  circuit.output %q : tensor<256x!circuit.q8_1>
}

// -----

// Q8_0, rank-2 rows of two blocks each.

// CHECK-LABEL: circuit.graph @rows_q8_0(
// CHECK-SAME:    %[[X:.*]]: tensor<4x64xf32>)
// CHECK-NOT:     circuit.quantize
// CHECK:         %[[Q:.*]] = circuit.reduce_epilogue max %[[X]] : tensor<4x64xf32> -> tensor<4x64x!circuit.q8_0> epilogue {
// CHECK-NEXT:    ^bb0(%{{.*}}: i32, %[[M:.*]]: f32, %[[V:.*]]: f32):
// CHECK-NEXT:      %[[D:.*]] = exp.sub %[[V]], %[[M]] : f32
// CHECK-NEXT:      %[[E:.*]] = exp.exp %[[D]] : f32
// CHECK-NEXT:      circuit.yield %[[E]] : f32
// CHECK-NEXT:    }
// CHECK-NEXT:    circuit.output %[[Q]] : tensor<4x64x!circuit.q8_0>
// VALID: graph @rows_q8_0: 2 -> 1 dispatches, {{[0-9]+}} values compared, max error {{.*}}: ok
circuit.graph @rows_q8_0(%x: tensor<4x64xf32>) -> tensor<4x64x!circuit.q8_0> {
  %n = circuit.reduce_epilogue max %x : tensor<4x64xf32> -> tensor<4x64xf32>
      epilogue {
  ^bb0(%lane: i32, %m: f32, %v: f32):
    %d = exp.sub %v, %m : f32
    %e = exp.exp %d : f32
    circuit.yield %e : f32
  }
  %q = circuit.quantize %n : tensor<4x64xf32> -> tensor<4x64x!circuit.q8_0>
  circuit.output %q : tensor<4x64x!circuit.q8_0>
}

// -----

// An f16 reduce_epilogue: the value quantized is the f16 one it stored, so
// the epilogue yields it widened back to f32 (exp.convert f16 to f32).

// CHECK-LABEL: circuit.graph @f16_q8_1(
// CHECK-SAME:    %[[X:.*]]: tensor<2x64xf16>)
// CHECK-NOT:     circuit.quantize
// CHECK:         %[[Q:.*]] = circuit.reduce_epilogue sum_sq %[[X]] : tensor<2x64xf16> -> tensor<2x64x!circuit.q8_1> epilogue {
// CHECK-NEXT:    ^bb0(%{{.*}}: i32, %[[SS:.*]]: f32, %[[V:.*]]: f16):
// CHECK-NEXT:      %[[R:.*]] = exp.rsqrt %[[SS]] : f32
// CHECK-NEXT:      %[[VF:.*]] = exp.convert %[[V]] : f16 to f32
// CHECK-NEXT:      %[[O:.*]] = exp.mul %[[VF]], %[[R]] : f32
// CHECK-NEXT:      %[[H:.*]] = exp.convert %[[O]] : f32 to f16
// CHECK-NEXT:      %[[W:.*]] = exp.convert %[[H]] : f16 to f32
// CHECK-NEXT:      circuit.yield %[[W]] : f32
// CHECK-NEXT:    }
// CHECK-NEXT:    circuit.output %[[Q]] : tensor<2x64x!circuit.q8_1>
// VALID: graph @f16_q8_1: 2 -> 1 dispatches, {{[0-9]+}} values compared, max error {{.*}}: ok
circuit.graph @f16_q8_1(%x: tensor<2x64xf16>) -> tensor<2x64x!circuit.q8_1> {
  %n = circuit.reduce_epilogue sum_sq %x : tensor<2x64xf16> -> tensor<2x64xf16>
      epilogue {
  ^bb0(%lane: i32, %ss: f32, %v: f16):
    %r = exp.rsqrt %ss : f32
    %w = exp.convert %v : f16 to f32
    %o = exp.mul %w, %r : f32
    %h = exp.convert %o : f32 to f16
    circuit.yield %h : f16
  }
  %q = circuit.quantize %n : tensor<2x64xf16> -> tensor<2x64x!circuit.q8_1>
  circuit.output %q : tensor<2x64x!circuit.q8_1>
}

// -----

// A reduce_epilogue with a prologue keeps it.

// CHECK-LABEL: circuit.graph @prologue_q8_0(
// CHECK-SAME:    %[[A:.*]]: tensor<64xf32>, %[[B:.*]]: tensor<64xf32>)
// CHECK-NOT:     circuit.quantize
// CHECK:         %[[Q:.*]] = circuit.reduce_epilogue sum %[[A]], %[[B]] : tensor<64xf32>, tensor<64xf32> -> tensor<64x!circuit.q8_0> prologue {
// CHECK-NEXT:    ^bb0(%{{.*}}: i32, %[[P:.*]]: f32, %[[PB:.*]]: f32):
// CHECK-NEXT:      %[[PQ:.*]] = exp.mul %[[P]], %[[PB]] : f32
// CHECK-NEXT:      circuit.yield %[[PQ]] : f32
// CHECK-NEXT:    } epilogue {
// CHECK-NEXT:    ^bb0(%{{.*}}: i32, %[[S:.*]]: f32, %[[V:.*]]: f32, %{{.*}}: f32):
// CHECK-NEXT:      %[[O:.*]] = exp.mul %[[V]], %[[S]] : f32
// CHECK-NEXT:      circuit.yield %[[O]] : f32
// CHECK-NEXT:    }
// CHECK-NEXT:    circuit.output %[[Q]] : tensor<64x!circuit.q8_0>
// VALID: graph @prologue_q8_0: 2 -> 1 dispatches, {{[0-9]+}} values compared, max error {{.*}}: ok
circuit.graph @prologue_q8_0(%a: tensor<64xf32>, %b: tensor<64xf32>)
    -> tensor<64x!circuit.q8_0> {
  %n = circuit.reduce_epilogue sum %a, %b : tensor<64xf32>, tensor<64xf32>
      -> tensor<64xf32> prologue {
  ^bb0(%lane: i32, %p: f32, %q: f32):
    %m = exp.mul %p, %q : f32
    circuit.yield %m : f32
  } epilogue {
  ^bb0(%lane: i32, %s: f32, %v: f32, %u: f32):
    %o = exp.mul %v, %s : f32
    circuit.yield %o : f32
  }
  %q = circuit.quantize %n : tensor<64xf32> -> tensor<64x!circuit.q8_0>
  circuit.output %q : tensor<64x!circuit.q8_0>
}

// -----

//===----------------------------------------------------------------------===//
// Not fused
//===----------------------------------------------------------------------===//

// The reduce_epilogue result has another user: the graph's output.

// CHECK-LABEL: circuit.graph @other_user_output(
// CHECK:         %[[N:.*]] = circuit.reduce_epilogue sum_sq %{{.*}} : tensor<256xf32> -> tensor<256xf32> epilogue
// CHECK:         %[[Q:.*]] = circuit.quantize %[[N]] : tensor<256xf32> -> tensor<256x!circuit.q8_1>
// CHECK:         circuit.output %[[Q]], %[[N]]
// VALID: graph @other_user_output: 2 -> 2 dispatches, {{[0-9]+}} values compared, max error {{.*}}: ok
circuit.graph @other_user_output(%x: tensor<256xf32>)
    -> (tensor<256x!circuit.q8_1>, tensor<256xf32>) {
  %n = circuit.reduce_epilogue sum_sq %x : tensor<256xf32> -> tensor<256xf32>
      epilogue {
  ^bb0(%lane: i32, %ss: f32, %v: f32):
    %r = exp.rsqrt %ss : f32
    %o = exp.mul %v, %r : f32
    circuit.yield %o : f32
  }
  %q = circuit.quantize %n : tensor<256xf32> -> tensor<256x!circuit.q8_1>
  circuit.output %q, %n : tensor<256x!circuit.q8_1>, tensor<256xf32>
}

// -----

// The reduce_epilogue result has another user: a second quantize (to
// another format).

// CHECK-LABEL: circuit.graph @other_user_quantize(
// CHECK:         %[[N:.*]] = circuit.reduce_epilogue sum_sq %{{.*}} : tensor<256xf32> -> tensor<256xf32> epilogue
// CHECK:         circuit.quantize %[[N]] : tensor<256xf32> -> tensor<256x!circuit.q8_1>
// CHECK:         circuit.quantize %[[N]] : tensor<256xf32> -> tensor<256x!circuit.q8_0>
// VALID: graph @other_user_quantize: 3 -> 3 dispatches, {{[0-9]+}} values compared, max error {{.*}}: ok
circuit.graph @other_user_quantize(%x: tensor<256xf32>)
    -> (tensor<256x!circuit.q8_1>, tensor<256x!circuit.q8_0>) {
  %n = circuit.reduce_epilogue sum_sq %x : tensor<256xf32> -> tensor<256xf32>
      epilogue {
  ^bb0(%lane: i32, %ss: f32, %v: f32):
    %r = exp.rsqrt %ss : f32
    %o = exp.mul %v, %r : f32
    circuit.yield %o : f32
  }
  %q = circuit.quantize %n : tensor<256xf32> -> tensor<256x!circuit.q8_1>
  %q0 = circuit.quantize %n : tensor<256xf32> -> tensor<256x!circuit.q8_0>
  circuit.output %q, %q0 : tensor<256x!circuit.q8_1>, tensor<256x!circuit.q8_0>
}

// -----

// The quantize reads a map, not a reduce_epilogue.

// CHECK-LABEL: circuit.graph @quantize_of_map(
// CHECK:         %[[Y:.*]] = circuit.map
// CHECK:         circuit.quantize %[[Y]] : tensor<256xf32> -> tensor<256x!circuit.q8_1>
// CHECK-NOT:     circuit.reduce_epilogue
// VALID: graph @quantize_of_map: 2 -> 2 dispatches, {{[0-9]+}} values compared, max error {{.*}}: ok
circuit.graph @quantize_of_map(%x: tensor<256xf32>) -> tensor<256x!circuit.q8_1> {
  %y = circuit.map ins(%x : tensor<256xf32>) -> tensor<256xf32> {
  ^bb0(%lane: i32, %v: f32):
    %s = exp.silu %v : f32
    circuit.yield %s : f32
  }
  %q = circuit.quantize %y : tensor<256xf32> -> tensor<256x!circuit.q8_1>
  circuit.output %q : tensor<256x!circuit.q8_1>
}

// -----

// Hazard: between the reduce_epilogue and the quantize, a scatter writes in
// place into the graph argument the reduce_epilogue reads. Fused, the
// normalization would run after that write.

// CHECK-LABEL: circuit.graph @write_between(
// CHECK-SAME:    %[[X:.*]]: tensor<256xf32>, %[[U:.*]]: tensor<32xf32>)
// CHECK:         %[[N:.*]] = circuit.reduce_epilogue sum_sq %[[X]] : tensor<256xf32> -> tensor<256xf32> epilogue
// CHECK:         circuit.scatter grid(32) ins(%[[U]] : tensor<32xf32>) into %[[X]]
// CHECK:         circuit.quantize %[[N]] : tensor<256xf32> -> tensor<256x!circuit.q8_1>
// VALID: graph @write_between: 3 -> 3 dispatches, {{[0-9]+}} values compared, max error {{.*}}: ok
circuit.graph @write_between(%x: tensor<256xf32>, %u: tensor<32xf32>)
    -> tensor<256x!circuit.q8_1> {
  %n = circuit.reduce_epilogue sum_sq %x : tensor<256xf32> -> tensor<256xf32>
      epilogue {
  ^bb0(%lane: i32, %ss: f32, %v: f32):
    %r = exp.rsqrt %ss : f32
    %o = exp.mul %v, %r : f32
    circuit.yield %o : f32
  }
  %x2 = circuit.scatter grid(32) ins(%u : tensor<32xf32>)
      into %x : tensor<256xf32> {
  ^bb0(%lane: i32, %v: f32):
    circuit.yield %lane, %v : i32, f32
  }
  %q = circuit.quantize %n : tensor<256xf32> -> tensor<256x!circuit.q8_1>
  circuit.output %q : tensor<256x!circuit.q8_1>
}
