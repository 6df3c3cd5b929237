// circuit.attention with soft-capped scores, against stated expected
// values (the CPU and Vulkan acceptance tests run the same graphs against
// the interpreter): one head of one dimension, q = 1, K = (0, 10),
// V = (0, 1), scale 1, softcap 1. The scores become tanh(0) = 0 and
// tanh(10) ~ 1, so out = e / (1 + e) = 0.731059 (uncapped it would be
// 0.999955). With a window of 1 as well, position 1 is seen alone:
// out = V[1] = 1.
//
// RUN: hesper-run %s --split-input-file --backend=interp --input q=values:1 \
// RUN:   --input k=values:0,10 --input v=values:0,1 --input pos=values:1 \
// RUN:   --print-results | FileCheck %s
// CHECK: result #0 (tensor<1xf32>): 0.731059{{$}}
// CHECK: result #0 (tensor<1xf32>): 1{{$}}
//
// RUN: hesper-opt %s --split-input-file --hesper-fuse \
// RUN:   --circuit-count-dispatches -o /dev/null | FileCheck %s --check-prefix=COUNT
// COUNT: graph @capped: 1 dispatches (1 attention)
// COUNT: graph @capped_window: 1 dispatches (1 attention)

circuit.graph @capped(%q: tensor<1xf32> {circuit.name = "q"},
                      %k: tensor<2xf32> {circuit.name = "k"},
                      %v: tensor<2xf32> {circuit.name = "v"},
                      %pos: tensor<1xi32> {circuit.name = "pos"})
    -> tensor<1xf32> {
  %o = circuit.attention %q, %k, %v, %pos {heads = 1 : i64, kv_heads = 1 : i64,
      head_dim = 1 : i64, scale = 1.0 : f32, softcap = 1.0 : f32}
      : tensor<1xf32>, tensor<2xf32>, tensor<2xf32>, tensor<1xi32>
      -> tensor<1xf32>
  circuit.output %o : tensor<1xf32>
}

// -----

circuit.graph @capped_window(%q: tensor<1xf32> {circuit.name = "q"},
                             %k: tensor<2xf32> {circuit.name = "k"},
                             %v: tensor<2xf32> {circuit.name = "v"},
                             %pos: tensor<1xi32> {circuit.name = "pos"})
    -> tensor<1xf32> {
  %o = circuit.attention %q, %k, %v, %pos {heads = 1 : i64, kv_heads = 1 : i64,
      head_dim = 1 : i64, scale = 1.0 : f32, softcap = 1.0 : f32,
      window = 1 : i64}
      : tensor<1xf32>, tensor<2xf32>, tensor<2xf32>, tensor<1xi32>
      -> tensor<1xf32>
  circuit.output %o : tensor<1xf32>
}
