// circuit.expert_matmul, the projections of a mixture-of-experts layer:
// each row of `ids` chooses one expert's [N, K] matrix of an [E, N, K]
// weight. Cases: gate and up of two tokens with two experts each (q8_0,
// x shared by a token's slots), fused with the SwiGLU map into one
// expert_matmul of both weights; the down projection (f16, one x row per
// slot); q4_k experts for one token; ids outside [0, E), which are clamped
// into it; and weights whose unchosen expert is NaN, which must not reach
// the result (only the chosen experts' rows are read). The CPU and Vulkan
// acceptance tests run these against the interpreter.
//
// RUN: hesper-opt %s --split-input-file --hesper-fuse \
// RUN:   --circuit-count-dispatches -o /dev/null | FileCheck %s --check-prefix=COUNT
// COUNT: graph @gate_up: 1 dispatches (1 expert_matmul)
// COUNT: graph @down: 1 dispatches (1 expert_matmul)
// COUNT: graph @q4_k: 1 dispatches (1 expert_matmul)
// COUNT: graph @clamped: 1 dispatches (1 expert_matmul)
// COUNT: graph @nan_expert: 2 dispatches (1 expert_matmul, 1 map)
// RUN: hesper-run %s --split-input-file --backend=interp --input x=random:1 \
// RUN:   --input wg=random:2 --input wu=random:3 --input w=random:4 \
// RUN:   --input ids=values:3,1,0,3 --input cid=values:-1,9 --print-results \
// RUN:   | FileCheck %s
// CHECK-COUNT-5: result #0
// The interpreter's values, checked by hand on the smallest case: expert
// 2 (ids -1 and 9 clamp to 0 and 2) of w = iota reshaped [3, 2, 4], x =
// [1, 1, 1, 1]: row sums of expert 0 (0+1+2+3, 4+5+6+7) and expert 2
// (16+..+19, 20+..+23).
// RUN: hesper-run %s --graph=clamped --backend=interp --input x=const:1 \
// RUN:   --input w=iota --input cid=values:-1,9 --print-results \
// RUN:   | FileCheck %s --check-prefix=HAND
// HAND: result #0 (tensor<2x2xf32>): 6 22 70 86{{$}}

circuit.graph @gate_up(%x: tensor<2x256xf32> {circuit.name = "x"},
                       %ids: tensor<2x2xi32> {circuit.name = "ids"},
                       %wg: tensor<4x24x256x!circuit.q8_0> {circuit.name = "wg"},
                       %wu: tensor<4x24x256x!circuit.q8_0> {circuit.name = "wu"})
    -> tensor<2x2x24xf32> {
  %g = circuit.expert_matmul %x, %ids, %wg : tensor<2x256xf32>,
      tensor<2x2xi32>, tensor<4x24x256x!circuit.q8_0> -> tensor<2x2x24xf32>
  %u = circuit.expert_matmul %x, %ids, %wu : tensor<2x256xf32>,
      tensor<2x2xi32>, tensor<4x24x256x!circuit.q8_0> -> tensor<2x2x24xf32>
  %h = circuit.map ins(%g, %u : tensor<2x2x24xf32>, tensor<2x2x24xf32>)
      -> tensor<2x2x24xf32> {
  ^bb0(%lane: i32, %a: f32, %b: f32):
    %s = exp.silu %a : f32
    %p = exp.mul %s, %b : f32
    circuit.yield %p : f32
  }
  circuit.output %h : tensor<2x2x24xf32>
}

// -----

circuit.graph @down(%x: tensor<2x2x64xf32> {circuit.name = "x"},
                    %ids: tensor<2x2xi32> {circuit.name = "ids"},
                    %w: tensor<4x40x64xf16> {circuit.name = "w"})
    -> tensor<2x2x40xf32> {
  %y = circuit.expert_matmul %x, %ids, %w : tensor<2x2x64xf32>,
      tensor<2x2xi32>, tensor<4x40x64xf16> -> tensor<2x2x40xf32>
  circuit.output %y : tensor<2x2x40xf32>
}

// -----

circuit.graph @q4_k(%x: tensor<512xf32> {circuit.name = "x"},
                    %ids: tensor<4xi32> {circuit.name = "ids"},
                    %w: tensor<5x8x512x!circuit.q4_k> {circuit.name = "w"})
    -> tensor<4x8xf32> {
  %y = circuit.expert_matmul %x, %ids, %w : tensor<512xf32>, tensor<4xi32>,
      tensor<5x8x512x!circuit.q4_k> -> tensor<4x8xf32>
  circuit.output %y : tensor<4x8xf32>
}

// -----

circuit.graph @clamped(%x: tensor<4xf32> {circuit.name = "x"},
                       %ids: tensor<2xi32> {circuit.name = "cid"},
                       %w: tensor<3x2x4xf32> {circuit.name = "w"})
    -> tensor<2x2xf32> {
  %y = circuit.expert_matmul %x, %ids, %w : tensor<4xf32>, tensor<2xi32>,
      tensor<3x2x4xf32> -> tensor<2x2xf32>
  circuit.output %y : tensor<2x2xf32>
}

// -----

// Expert 1 of 3 is all NaN (0/0); ids 3,1,0,3 choose experts 0 and 2
// (3 clamps to 2) only.
circuit.graph @nan_expert(%x: tensor<2x2x32xf32> {circuit.name = "x"},
                          %ids: tensor<2x2xi32> {circuit.name = "ids"})
    -> tensor<2x2x16xf32> {
  %w = circuit.map -> tensor<3x16x32xf32> {
  ^bb0(%lane: i32):
    %per = exp.constant 512 : i32
    %e = exp.div %lane, %per : i32
    %one = exp.constant 1 : i32
    %poisoned = exp.cmp eq, %e, %one : i32
    %zero = exp.constant 0.0 : f32
    %nan = exp.div %zero, %zero : f32
    %f = exp.convert %lane : i32 to f32
    %scale = exp.constant 0.001 : f32
    %v = exp.mul %f, %scale : f32
    %s = exp.sin %v : f32
    %w = exp.select %poisoned, %nan, %s : f32
    circuit.yield %w : f32
  }
  %y = circuit.expert_matmul %x, %ids, %w : tensor<2x2x32xf32>,
      tensor<2x2xi32>, tensor<3x16x32xf32> -> tensor<2x2x16xf32>
  circuit.output %y : tensor<2x2x16xf32>
}
