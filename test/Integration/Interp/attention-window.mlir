// circuit.attention with a sliding window, against stated expected values
// (the CPU and Vulkan acceptance tests run the same graph against the
// interpreter). Every K row is equal, so the softmax is uniform over the
// positions the window keeps; V[t, d] = 0.01 * (80 t + d) (one KV head of
// 80 dimensions), so out[h, d] = 0.01 * (80 * mean(t) + d). With a window
// of 100 at pos = 150 the row sees 51..150 (mean 100.5: 80.4 + 0.01 d),
// starting mid-tile and walking two tiles; at pos = 30 the window reaches
// past position 0 and the row sees 0..30 (mean 15: 12 + 0.01 d).
//
// RUN: hesper-run %s --backend=interp --input q=random:1 \
// RUN:   --input k=const:0.5 --input v=linear:0.01,0 --input pos=values:150 \
// RUN:   --print-results 2>&1 | FileCheck %s --check-prefix=W150
// RUN: hesper-run %s --backend=interp --input q=random:1 \
// RUN:   --input k=const:0.5 --input v=linear:0.01,0 --input pos=values:30 \
// RUN:   --print-results 2>&1 | FileCheck %s --check-prefix=W30
// W150: result #0 (tensor<160xf32>): 80.4 80.41 80.42 {{.*}} 81.19 80.4 80.41
// W30: result #0 (tensor<160xf32>): 12 12.01 12.02 {{.*}} 12.79 12 12.01
//
// RUN: hesper-opt %s --hesper-fuse --circuit-count-dispatches -o /dev/null \
// RUN:   | FileCheck %s --check-prefix=COUNT
// COUNT: graph @window: 1 dispatches (1 attention)

circuit.graph @window(%q: tensor<160xf32> {circuit.name = "q"},
                      %k: tensor<16000xf32> {circuit.name = "k"},
                      %v: tensor<16000xf32> {circuit.name = "v"},
                      %pos: tensor<1xi32> {circuit.name = "pos"})
    -> tensor<160xf32> {
  %o = circuit.attention %q, %k, %v, %pos {heads = 2 : i64, kv_heads = 1 : i64,
      head_dim = 80 : i64, scale = 0.111803398 : f32, window = 100 : i64}
      : tensor<160xf32>, tensor<16000xf32>, tensor<16000xf32>, tensor<1xi32>
      -> tensor<160xf32>
  circuit.output %o : tensor<160xf32>
}
