// RUN: hesper-opt %s -split-input-file --hesper-fuse | FileCheck %s
// RUN: hesper-run %s --split-input-file --validate-fusion | FileCheck %s --check-prefix=VALID

// What Gemma and BitNet add to the Llama graph goes through the same
// fusion passes (hesper-fuse): GeGLU and ReLU² gates into gated_matmul,
// soft-capping into the LM head's epilogue, ternary matvecs with
// epilogues, gemma4's per-layer embedding gate, and the attention's
// sliding window and soft-cap kept on the fused op. Every case is also
// validated in the reference interpreter against the unfused graph
// (VALID); the negative cases show what must not fuse.

// Gemma 2's final soft-cap: the map lands in the head matmul's epilogue.
// CHECK-LABEL: circuit.graph @softcap_head(
// CHECK:         %[[L:.*]] = circuit.matmul %{{.*}}, %{{.*}} : tensor<64xf32>, tensor<320x64x!circuit.q8_0> -> tensor<320xf32> epilogue {
// CHECK:           exp.tanh
// CHECK:         }
// CHECK-NOT:     circuit.map
// CHECK:         circuit.output %[[L]]
// VALID: graph @softcap_head: 2 -> 1 dispatches, {{[0-9]+}} values compared, max error {{.*}}: ok
circuit.graph @softcap_head(%h: tensor<64xf32>, %w: tensor<320x64x!circuit.q8_0>) -> tensor<320xf32> {
  %l = circuit.matmul %h, %w : tensor<64xf32>, tensor<320x64x!circuit.q8_0> -> tensor<320xf32>
  %c = circuit.map ins(%l : tensor<320xf32>) -> tensor<320xf32> {
  ^bb0(%lane: i32, %v: f32):
    %inv = exp.constant 0.0333333351 : f32
    %s = exp.mul %v, %inv : f32
    %t = exp.tanh %s : f32
    %cap = exp.constant 30.0 : f32
    %r = exp.mul %t, %cap : f32
    circuit.yield %r : f32
  }
  circuit.output %c : tensor<320xf32>
}

// -----

// Negative: the uncapped logits are an output too, so the soft-cap stays a
// map of its own.
// CHECK-LABEL: circuit.graph @softcap_shared(
// CHECK:         %[[L:.*]] = circuit.matmul %{{.*}}, %{{.*}} : tensor<64xf32>, tensor<320x64xf32> -> tensor<320xf32>{{$}}
// CHECK:         %[[C:.*]] = circuit.map ins(%[[L]]
// CHECK:         circuit.output %[[L]], %[[C]]
// VALID: graph @softcap_shared: 2 -> 2 dispatches, {{[0-9]+}} values compared, max error {{.*}}: ok
circuit.graph @softcap_shared(%h: tensor<64xf32>, %w: tensor<320x64xf32>) -> (tensor<320xf32>, tensor<320xf32>) {
  %l = circuit.matmul %h, %w : tensor<64xf32>, tensor<320x64xf32> -> tensor<320xf32>
  %c = circuit.map ins(%l : tensor<320xf32>) -> tensor<320xf32> {
  ^bb0(%lane: i32, %v: f32):
    %t = exp.tanh %v : f32
    circuit.yield %t : f32
  }
  circuit.output %l, %c : tensor<320xf32>, tensor<320xf32>
}

// -----

// BitNet's gate: relu(gate)² · up over ternary weights of two formats.
// CHECK-LABEL: circuit.graph @relu2_ternary(
// CHECK:         circuit.gated_matmul %{{.*}}, %{{.*}}, %{{.*}} : tensor<256xf32>, tensor<512x256x!circuit.tq2_0>, tensor<512x256x!circuit.tq1_0> -> tensor<512xf32> combine {
// CHECK:           exp.max
// CHECK-NOT:     circuit.map
// VALID: graph @relu2_ternary: 3 -> 1 dispatches, {{[0-9]+}} values compared, max error {{.*}}: ok
circuit.graph @relu2_ternary(%x: tensor<256xf32>, %wg: tensor<512x256x!circuit.tq2_0>, %wu: tensor<512x256x!circuit.tq1_0>) -> tensor<512xf32> {
  %g = circuit.matmul %x, %wg : tensor<256xf32>, tensor<512x256x!circuit.tq2_0> -> tensor<512xf32>
  %u = circuit.matmul %x, %wu : tensor<256xf32>, tensor<512x256x!circuit.tq1_0> -> tensor<512xf32>
  %h = circuit.map ins(%g, %u : tensor<512xf32>, tensor<512xf32>) -> tensor<512xf32> {
  ^bb0(%lane: i32, %a: f32, %b: f32):
    %z = exp.constant 0.0 : f32
    %r = exp.max %a, %z : f32
    %r2 = exp.mul %r, %r : f32
    %p = exp.mul %r2, %b : f32
    circuit.yield %p : f32
  }
  circuit.output %h : tensor<512xf32>
}

// -----

// Gemma's GeGLU over i2_s weights (their scale is part of the tensor, so
// nothing stands between the matmuls and the gate).
// CHECK-LABEL: circuit.graph @geglu_i2s(
// CHECK:         circuit.gated_matmul {{.*}} combine {
// CHECK:           exp.gelu
// VALID: graph @geglu_i2s: 3 -> 1 dispatches, {{[0-9]+}} values compared, max error {{.*}}: ok
circuit.graph @geglu_i2s(%x: tensor<256xf32>, %wg: tensor<384x256x!circuit.i2_s>, %wu: tensor<384x256x!circuit.i2_s>) -> tensor<384xf32> {
  %g = circuit.matmul %x, %wg : tensor<256xf32>, tensor<384x256x!circuit.i2_s> -> tensor<384xf32>
  %u = circuit.matmul %x, %wu : tensor<256xf32>, tensor<384x256x!circuit.i2_s> -> tensor<384xf32>
  %h = circuit.map ins(%g, %u : tensor<384xf32>, tensor<384xf32>) -> tensor<384xf32> {
  ^bb0(%lane: i32, %a: f32, %b: f32):
    %s = exp.gelu %a : f32
    %p = exp.mul %s, %b : f32
    circuit.yield %p : f32
  }
  circuit.output %h : tensor<384xf32>
}

// -----

// A ternary matvec with a projection's .scale tensor in its epilogue, then
// the residual add: one matmul whose epilogue does both.
// CHECK-LABEL: circuit.graph @ternary_scale_residual(
// CHECK:         %[[Y:.*]] = circuit.matmul %{{.*}}, %{{.*}} ins(%{{.*}}, %{{.*}} : tensor<1xf32>, tensor<64xf32>) : tensor<256xf32>, tensor<64x256x!circuit.tq2_0> -> tensor<64xf32> epilogue {
// CHECK:           exp.mul
// CHECK:           exp.add
// CHECK-NOT:     circuit.map
// CHECK:         circuit.output %[[Y]]
// VALID: graph @ternary_scale_residual: 2 -> 1 dispatches, {{[0-9]+}} values compared, max error {{.*}}: ok
circuit.graph @ternary_scale_residual(%x: tensor<256xf32>, %w: tensor<64x256x!circuit.tq2_0>, %s: tensor<1xf32>, %res: tensor<64xf32>) -> tensor<64xf32> {
  %y = circuit.matmul %x, %w ins(%s : tensor<1xf32>) : tensor<256xf32>, tensor<64x256x!circuit.tq2_0> -> tensor<64xf32> epilogue {
  ^bb0(%lane: i32, %acc: f32, %scale: f32):
    %r = exp.mul %acc, %scale : f32
    circuit.yield %r : f32
  }
  %z = circuit.map ins(%res, %y : tensor<64xf32>, tensor<64xf32>) -> tensor<64xf32> {
  ^bb0(%lane: i32, %a: f32, %b: f32):
    %r = exp.add %a, %b : f32
    circuit.yield %r : f32
  }
  circuit.output %z : tensor<64xf32>
}

// -----

// Negative: gate and up read different activations, so no gated_matmul.
// CHECK-LABEL: circuit.graph @gate_other_x(
// CHECK-NOT:     circuit.gated_matmul
// VALID: graph @gate_other_x: 3 -> 2 dispatches, {{[0-9]+}} values compared, max error {{.*}}: ok
circuit.graph @gate_other_x(%x: tensor<256xf32>, %x2: tensor<256xf32>, %wg: tensor<64x256x!circuit.tq2_0>, %wu: tensor<64x256x!circuit.tq2_0>) -> tensor<64xf32> {
  %g = circuit.matmul %x, %wg : tensor<256xf32>, tensor<64x256x!circuit.tq2_0> -> tensor<64xf32>
  %u = circuit.matmul %x2, %wu : tensor<256xf32>, tensor<64x256x!circuit.tq2_0> -> tensor<64xf32>
  %h = circuit.map ins(%g, %u : tensor<64xf32>, tensor<64xf32>) -> tensor<64xf32> {
  ^bb0(%lane: i32, %a: f32, %b: f32):
    %s = exp.gelu %a : f32
    %p = exp.mul %s, %b : f32
    circuit.yield %p : f32
  }
  circuit.output %h : tensor<64xf32>
}

// -----

// Sliding-window, soft-capped attention: one kernel, attributes kept.
// CHECK-LABEL: circuit.graph @swa_attention(
// CHECK:         circuit.attention {{.*}}softcap = 5.000000e+01 : f32, window = 8 : i64}
// VALID: graph @swa_attention: 1 -> 1 dispatches, {{[0-9]+}} values compared, max error {{.*}}: ok
circuit.graph @swa_attention(%q: tensor<64xf32>, %k: tensor<1024xf32>, %v: tensor<1024xf32>, %pos: tensor<1xi32>) -> tensor<64xf32> {
  %o = circuit.attention %q, %k, %v, %pos {heads = 4 : i64, kv_heads = 2 : i64, head_dim = 16 : i64, scale = 0.25 : f32, softcap = 50.0 : f32, window = 8 : i64} : tensor<64xf32>, tensor<1024xf32>, tensor<1024xf32>, tensor<1xi32> -> tensor<64xf32>
  circuit.output %o : tensor<64xf32>
}

// -----

// gemma4's per-layer embedding gate: gelu(inp_gate · x) times this layer's
// slice of the per-layer inputs (read whole, by index) lands in the gate
// matmul's epilogue; the projection back and its residual add fuse too.
// CHECK-LABEL: circuit.graph @per_layer_embedding(
// CHECK:         %[[G:.*]] = circuit.matmul %{{.*}}, %{{.*}} ins(%{{.*}} : tensor<48xf32>) : tensor<64xf32>, tensor<16x64x!circuit.q8_0> -> tensor<16xf32> epilogue {
// CHECK:           circuit.extract
// CHECK:           exp.gelu
// CHECK:         %[[P:.*]] = circuit.matmul %[[G]], %{{.*}} ins(%{{.*}} : tensor<64xf32>) : tensor<16xf32>, tensor<64x16xf32> -> tensor<64xf32> epilogue {
// CHECK-NOT:     circuit.map
// CHECK:         circuit.output %[[P]]
// VALID: graph @per_layer_embedding: 4 -> 2 dispatches, {{[0-9]+}} values compared, max error {{.*}}: ok
circuit.graph @per_layer_embedding(%x: tensor<64xf32>, %wg: tensor<16x64x!circuit.q8_0>, %pl: tensor<48xf32>, %wp: tensor<64x16xf32>) -> tensor<64xf32> {
  %g = circuit.matmul %x, %wg : tensor<64xf32>, tensor<16x64x!circuit.q8_0> -> tensor<16xf32>
  %h = circuit.map ins(%g, %pl : tensor<16xf32>, tensor<48xf32>) -> tensor<16xf32> {
  ^bb0(%lane: i32, %a: f32, %inputs: tensor<48xf32>):
    %c16 = exp.constant 16 : i32
    %at = exp.add %lane, %c16 : i32
    %v = circuit.extract %inputs[%at] : tensor<48xf32>
    %ge = exp.gelu %a : f32
    %r = exp.mul %ge, %v : f32
    circuit.yield %r : f32
  }
  %p = circuit.matmul %h, %wp : tensor<16xf32>, tensor<64x16xf32> -> tensor<64xf32>
  %y = circuit.map ins(%x, %p : tensor<64xf32>, tensor<64xf32>) -> tensor<64xf32> {
  ^bb0(%lane: i32, %a: f32, %b: f32):
    %r = exp.add %a, %b : f32
    circuit.yield %r : f32
  }
  circuit.output %y : tensor<64xf32>
}
