// RUN: hesper-opt %s -split-input-file --hesper-fuse | hesper-opt -split-input-file | FileCheck %s
// RUN: hesper-run %s --split-input-file --validate-fusion | FileCheck %s --check-prefix=VALID

// Regressions found by the fusion test authors: each once crashed, produced
// invalid IR, fused illegally or refused a legal fusion.

// A body that reads the map whole (and another element-wise) keeps the map.
// CHECK-LABEL: circuit.graph @mixed_whole(
// CHECK: circuit.map
// CHECK: circuit.reduce_epilogue
// VALID: graph @mixed_whole: 2 -> 2 dispatches, {{.*}}: ok
circuit.graph @mixed_whole(%x: tensor<8xf32>, %y: tensor<8xf32>) -> tensor<8xf32> {
  %m = circuit.map ins(%y : tensor<8xf32>) -> tensor<8xf32> {
  ^bb0(%lane: i32, %v: f32):
    %e = exp.exp %v : f32
    circuit.yield %e : f32
  }
  %n = circuit.reduce_epilogue sum %x, %m : tensor<8xf32>, tensor<8xf32> -> tensor<8xf32> prologue {
  ^bb0(%lane: i32, %a: f32, %b: f32):
    %p = exp.mul %a, %b : f32
    circuit.yield %p : f32
  } epilogue {
  ^bb0(%lane: i32, %s: f32, %a: f32, %all: tensor<8xf32>):
    %c7 = exp.constant 7 : i32
    %i = exp.sub %c7, %lane : i32
    %e = circuit.extract %all[%i] : tensor<8xf32>
    %q = exp.mul %e, %s : f32
    circuit.yield %q : f32
  }
  circuit.output %n : tensor<8xf32>
}

// -----

// An f16 matmul result without an epilogue: the fused epilogue rounds the
// accumulator to f16 first, as the unfused store did.
// CHECK-LABEL: circuit.graph @matmul_f16_result(
// CHECK: circuit.matmul {{.*}} epilogue {
// CHECK: exp.convert %{{.*}} : f32 to f16
// VALID: graph @matmul_f16_result: 2 -> 1 dispatches, {{.*}}: ok
circuit.graph @matmul_f16_result(%x: tensor<256xf16>, %w: tensor<32x256xf16>, %b: tensor<32xf16>) -> tensor<32xf16> {
  %y = circuit.matmul %x, %w : tensor<256xf16>, tensor<32x256xf16> -> tensor<32xf16>
  %r = circuit.map ins(%y, %b : tensor<32xf16>, tensor<32xf16>) -> tensor<32xf16> {
  ^bb0(%lane: i32, %a: f16, %c: f16):
    %s = exp.add %a, %c : f16
    circuit.yield %s : f16
  }
  circuit.output %r : tensor<32xf16>
}

// -----

// The matmul's epilogue input is written in place before the map: the
// matmul's reads must not move past the write.
// CHECK-LABEL: circuit.graph @matmul_extra_hazard(
// CHECK: circuit.matmul
// CHECK: circuit.scatter
// CHECK: circuit.map
// VALID: graph @matmul_extra_hazard: 3 -> 3 dispatches, {{.*}}: ok
circuit.graph @matmul_extra_hazard(%x: tensor<64xf32>, %w: tensor<16x64xf32>, %buf: tensor<16xf32>, %z: tensor<16xf32>) -> tensor<16xf32> {
  %y = circuit.matmul %x, %w ins(%buf : tensor<16xf32>) : tensor<64xf32>, tensor<16x64xf32> -> tensor<16xf32> epilogue {
  ^bb0(%lane: i32, %acc: f32, %b: f32):
    %s = exp.add %acc, %b : f32
    circuit.yield %s : f32
  }
  %b1 = circuit.scatter grid(16) ins(%z : tensor<16xf32>) into %buf : tensor<16xf32> {
  ^bb0(%lane: i32, %v: f32):
    circuit.yield %lane, %v : i32, f32
  }
  %r = circuit.map ins(%y : tensor<16xf32>) -> tensor<16xf32> {
  ^bb0(%lane: i32, %a: f32):
    %g = exp.gelu %a : f32
    circuit.yield %g : f32
  }
  circuit.output %r : tensor<16xf32>
}

// -----

// A map used as a matmul's activations (the matmul has no epilogue inputs).
// CHECK-LABEL: circuit.graph @matmul_operand_no_ins(
// CHECK: circuit.map
// CHECK: circuit.matmul
// VALID: graph @matmul_operand_no_ins: 2 -> 2 dispatches, {{.*}}: ok
circuit.graph @matmul_operand_no_ins(%x: tensor<256xf32>, %w: tensor<32x256xf32>) -> tensor<32xf32> {
  %xs = circuit.map ins(%x : tensor<256xf32>) -> tensor<256xf32> {
  ^bb0(%lane: i32, %v: f32):
    %s = exp.silu %v : f32
    circuit.yield %s : f32
  }
  %y = circuit.matmul %xs, %w : tensor<256xf32>, tensor<32x256xf32> -> tensor<32xf32> epilogue {
  ^bb0(%lane: i32, %acc: f32):
    %s = exp.tanh %acc : f32
    circuit.yield %s : f32
  }
  circuit.output %y : tensor<32xf32>
}

// -----

// A map used as a gather's source (the gather has no extra inputs).
// CHECK-LABEL: circuit.graph @gather_source_no_ins(
// CHECK: circuit.map
// CHECK: circuit.gather
// VALID: graph @gather_source_no_ins: 2 -> 2 dispatches, {{.*}}: ok
circuit.graph @gather_source_no_ins(%x: tensor<8xf32>) -> tensor<8xf32> {
  %a = circuit.map ins(%x : tensor<8xf32>) -> tensor<8xf32> {
  ^bb0(%lane: i32, %v: f32):
    %e = exp.exp %v : f32
    circuit.yield %e : f32
  }
  %r = circuit.gather %a : tensor<8xf32> -> tensor<8xf32> {
  ^bb0(%lane: i32):
    %c7 = exp.constant 7 : i32
    %i = exp.sub %c7, %lane : i32
    circuit.yield %i : i32
  }
  circuit.output %r : tensor<8xf32>
}

// -----

// A reduction left with no inputs states its iteration shape, and prints in
// a form that parses back.
// CHECK-LABEL: circuit.graph @reduce_iota(
// CHECK: circuit.reduce sum over [4, 64] -> tensor<4x1xf32> prologue
// VALID: graph @reduce_iota: 2 -> 1 dispatches, {{.*}}: ok
circuit.graph @reduce_iota(%x: tensor<4x64xf32>) -> tensor<4x1xf32> {
  %p = circuit.map -> tensor<4x64xf32> {
  ^bb0(%lane: i32):
    %f = exp.convert %lane : i32 to f32
    circuit.yield %f : f32
  }
  %s = circuit.reduce sum %p : tensor<4x64xf32> -> tensor<4x1xf32>
  circuit.output %s : tensor<4x1xf32>
}

// -----

// The map reads a buffer written after the matmul: the fused op takes the
// map's place, so the map's reads do not move and the fusion is legal.
// CHECK-LABEL: circuit.graph @map_reads_written_buffer(
// CHECK: circuit.scatter
// CHECK: circuit.matmul {{.*}} epilogue
// VALID: graph @map_reads_written_buffer: 3 -> 2 dispatches, {{.*}}: ok
circuit.graph @map_reads_written_buffer(%x: tensor<64xf32>, %w: tensor<16x64xf32>, %buf: tensor<16xf32>, %z: tensor<16xf32>) -> tensor<16xf32> {
  %y = circuit.matmul %x, %w : tensor<64xf32>, tensor<16x64xf32> -> tensor<16xf32>
  %b1 = circuit.scatter grid(16) ins(%z : tensor<16xf32>) into %buf : tensor<16xf32> {
  ^bb0(%lane: i32, %v: f32):
    circuit.yield %lane, %v : i32, f32
  }
  %r = circuit.map ins(%y, %b1 : tensor<16xf32>, tensor<16xf32>) -> tensor<16xf32> {
  ^bb0(%lane: i32, %a: f32, %b: f32):
    %g = exp.add %a, %b : f32
    circuit.yield %g : f32
  }
  circuit.output %r : tensor<16xf32>
}
