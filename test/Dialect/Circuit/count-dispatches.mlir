// RUN: hesper-opt %s -split-input-file -circuit-count-dispatches -o /dev/null | FileCheck %s
// RUN: hesper-opt %s -split-input-file --hesper-fuse --circuit-count-dispatches -o /dev/null | FileCheck %s --check-prefix=FUSED
// RUN: hesper-run %s --split-input-file --validate-fusion | FileCheck %s --check-prefix=VALID

// circuit-count-dispatches prints `graph @name: N dispatches (...)` for each
// graph, with a breakdown by op in name order. The second RUN counts after
// the hesper-fuse pipeline; the third checks that fusion keeps the results.

// No primitive at all.

// CHECK: graph @nothing: 0 dispatches{{$}}
// FUSED: graph @nothing: 0 dispatches{{$}}
// VALID: graph @nothing: 0 -> 0 dispatches, {{[0-9]+}} values compared, max error {{.*}}: ok
circuit.graph @nothing(%x: tensor<8xf32>) -> tensor<8xf32> {
  circuit.output %x : tensor<8xf32>
}

// -----

// A fresh buffer is an allocation, not a kernel.

// CHECK: graph @zeros_only: 0 dispatches{{$}}
// FUSED: graph @zeros_only: 0 dispatches{{$}}
// VALID: graph @zeros_only: 0 -> 0 dispatches, {{[0-9]+}} values compared, max error {{.*}}: ok
circuit.graph @zeros_only() -> tensor<8xf32> {
  %z = circuit.zeros : tensor<8xf32>
  circuit.output %z : tensor<8xf32>
}

// -----

// One kernel.

// CHECK: graph @one_map: 1 dispatches (1 map){{$}}
// FUSED: graph @one_map: 1 dispatches (1 map){{$}}
// VALID: graph @one_map: 1 -> 1 dispatches, {{[0-9]+}} values compared, max error {{.*}}: ok
circuit.graph @one_map(%x: tensor<8xf32>) -> tensor<8xf32> {
  %y = circuit.map ins(%x : tensor<8xf32>) -> tensor<8xf32> {
  ^bb0(%lane: i32, %v: f32):
    %e = exp.exp %v : f32
    circuit.yield %e : f32
  }
  circuit.output %y : tensor<8xf32>
}

// -----

// Every dispatch-level primitive once (two maps), plus a circuit.zeros that
// is not counted; the breakdown is sorted by op name.

// CHECK: graph @every_primitive: 11 dispatches (1 gather, 2 map, 1 matmul, 1 multi_matmul, 1 quantize, 1 reduce, 1 reduce_epilogue, 1 reduce_scatter_epilogue, 1 scatter, 1 scatter_multi){{$}}
// VALID: graph @every_primitive: 11 -> {{[0-9]+}} dispatches, {{[0-9]+}} values compared, max error {{.*}}: ok
circuit.graph @every_primitive(%x: tensor<256xf32>, %w: tensor<64x256x!circuit.q4_k>, %wh: tensor<32x256xf16>, %k: tensor<64xf32>, %kc: tensor<512xf32>, %vc: tensor<512xf32>, %d: tensor<128xf32>) -> (tensor<256xf32>, tensor<256xf32>, tensor<1xf32>, tensor<256xf32>, tensor<64xf32>, tensor<64xf32>, tensor<32xf32>, tensor<256x!circuit.q8_1>, tensor<512xf32>, tensor<512xf32>, tensor<128xf32>, tensor<512xf32>) {
  %m0 = circuit.map ins(%x : tensor<256xf32>) -> tensor<256xf32> {
  ^bb0(%lane: i32, %v: f32):
    %e = exp.exp %v : f32
    circuit.yield %e : f32
  }
  %m1 = circuit.map ins(%x : tensor<256xf32>) -> tensor<256xf32> {
  ^bb0(%lane: i32, %v: f32):
    %e = exp.neg %v : f32
    circuit.yield %e : f32
  }
  %g = circuit.gather %x : tensor<256xf32> -> tensor<64xf32> {
  ^bb0(%lane: i32):
    circuit.yield %lane : i32
  }
  %s = circuit.reduce sum %x : tensor<256xf32> -> tensor<1xf32>
  %n = circuit.reduce_epilogue sum_sq %x : tensor<256xf32> -> tensor<256xf32> epilogue {
  ^bb0(%lane: i32, %ss: f32, %v: f32):
    %r = exp.rsqrt %ss : f32
    %o = exp.mul %v, %r : f32
    circuit.yield %o : f32
  }
  %y = circuit.matmul %x, %w : tensor<256xf32>, tensor<64x256x!circuit.q4_k> -> tensor<64xf32>
  %p, %q = circuit.multi_matmul %x, %w, %wh : tensor<256xf32>, tensor<64x256x!circuit.q4_k>, tensor<32x256xf16> -> tensor<64xf32>, tensor<32xf32> epilogues {
  }, {
  }
  %xq = circuit.quantize %x : tensor<256xf32> -> tensor<256x!circuit.q8_1>
  %k2, %v2 = circuit.scatter_multi grid(64) ins(%k : tensor<64xf32>) into(%kc, %vc : tensor<512xf32>, tensor<512xf32>) {
  ^bb0(%lane: i32, %a: f32):
    circuit.yield %lane, %a, %lane, %a : i32, f32, i32, f32
  }
  %z = circuit.zeros : tensor<512xf32>
  %zs = circuit.scatter grid(64) ins(%k : tensor<64xf32>) into %z : tensor<512xf32> {
  ^bb0(%lane: i32, %a: f32):
    circuit.yield %lane, %a : i32, f32
  }
  %rs = circuit.reduce_scatter_epilogue sum %k : tensor<64xf32> into %d : tensor<128xf32> epilogue {
  ^bb0(%lane: i32, %t: f32, %v: f32):
    %q2 = exp.div %v, %t : f32
    circuit.yield %lane, %q2 : i32, f32
  }
  circuit.output %m0, %m1, %s, %n, %g, %y, %q, %xq, %k2, %v2, %rs, %zs : tensor<256xf32>, tensor<256xf32>, tensor<1xf32>, tensor<256xf32>, tensor<64xf32>, tensor<64xf32>, tensor<32xf32>, tensor<256x!circuit.q8_1>, tensor<512xf32>, tensor<512xf32>, tensor<128xf32>, tensor<512xf32>
}

// -----

// RMSNorm written as four primitives (reduce sum_sq, map /D, map
// rsqrt(+eps), map x*r*w) is one reduce_epilogue after hesper-fuse.

// CHECK: graph @rmsnorm: 4 dispatches (3 map, 1 reduce){{$}}
// FUSED: graph @rmsnorm: 1 dispatches (1 reduce_epilogue){{$}}
// VALID: graph @rmsnorm: 4 -> 1 dispatches, {{[0-9]+}} values compared, max error {{.*}}: ok
circuit.graph @rmsnorm(%x: tensor<4x64xf32>, %w: tensor<64xf32>) -> tensor<4x64xf32> {
  %ss = circuit.reduce sum_sq %x : tensor<4x64xf32> -> tensor<4x1xf32>
  %ms = circuit.map ins(%ss : tensor<4x1xf32>) -> tensor<4x1xf32> {
  ^bb0(%lane: i32, %s: f32):
    %d = exp.constant 64.0 : f32
    %m = exp.div %s, %d : f32
    circuit.yield %m : f32
  }
  %r = circuit.map ins(%ms : tensor<4x1xf32>) -> tensor<4x1xf32> {
  ^bb0(%lane: i32, %m: f32):
    %eps = exp.constant 1.0e-06 : f32
    %me = exp.add %m, %eps : f32
    %q = exp.rsqrt %me : f32
    circuit.yield %q : f32
  }
  %y = circuit.map ins(%x, %r, %w : tensor<4x64xf32>, tensor<4x1xf32>, tensor<64xf32>) -> tensor<4x64xf32> {
  ^bb0(%lane: i32, %v: f32, %rr: f32, %g: f32):
    %n = exp.mul %v, %rr : f32
    %o = exp.mul %n, %g : f32
    circuit.yield %o : f32
  }
  circuit.output %y : tensor<4x64xf32>
}
