// circuit.attention over several KV-cache sequences (seq_len: continuous
// batching), against stated expected values (the CPU and Vulkan acceptance
// tests run the same graphs against the interpreter). Three sequences of
// 100 positions; every K row is equal, so the softmax is uniform over the
// positions a row sees; V[t, d] = 0.01 * (80 t + d) with t the global
// position (one KV head of 80 dimensions), so out[h, d] = 0.01 * (80 *
// mean(t) + d).
//
// @rows: row 0 at global position 150 sees its sequence's 100..150 (mean
// 125: 100 + 0.01 d), row 1 at 30 sees 0..30 (mean 15: 12 + 0.01 d), never
// the other sequence's positions.
// RUN: hesper-run %s --graph rows --backend=interp --input q=random:1 \
// RUN:   --input k=const:0.5 --input v=linear:0.01,0 --input pos=values:150,30 \
// RUN:   --print-results 2>&1 | FileCheck %s --check-prefix=ROWS
// ROWS: result #0 (tensor<320xf32>): 100 100.01 100.02 {{.*}} 12.77 12.78 12.79
//
// @window: a window of 40 keeps 111..150 for row 0 (mean 130.5: 104.4 +
// 0.01 d); row 1 at 110 would reach back to 71 but stops at its sequence's
// start, 100 (mean 105: 84 + 0.01 d).
// RUN: hesper-run %s --graph window --backend=interp --input q=random:1 \
// RUN:   --input k=const:0.5 --input v=linear:0.01,0 --input pos=values:150,110 \
// RUN:   --print-results 2>&1 | FileCheck %s --check-prefix=WINDOW
// WINDOW: result #0 (tensor<320xf32>): 104.4 104.41 104.42 {{.*}} 84.77 84.78 84.79
//
// RUN: hesper-opt %s --hesper-fuse --circuit-count-dispatches -o /dev/null \
// RUN:   | FileCheck %s --check-prefix=COUNT
// COUNT: graph @rows: 1 dispatches (1 attention)

circuit.graph @rows(%q: tensor<320xf32> {circuit.name = "q"},
                    %k: tensor<24000xf32> {circuit.name = "k"},
                    %v: tensor<24000xf32> {circuit.name = "v"},
                    %pos: tensor<2xi32> {circuit.name = "pos"})
    -> tensor<320xf32> {
  %o = circuit.attention %q, %k, %v, %pos {heads = 2 : i64, kv_heads = 1 : i64,
      head_dim = 80 : i64, scale = 0.111803398 : f32, seq_len = 100 : i64}
      : tensor<320xf32>, tensor<24000xf32>, tensor<24000xf32>, tensor<2xi32>
      -> tensor<320xf32>
  circuit.output %o : tensor<320xf32>
}

circuit.graph @window(%q: tensor<320xf32> {circuit.name = "q"},
                      %k: tensor<24000xf32> {circuit.name = "k"},
                      %v: tensor<24000xf32> {circuit.name = "v"},
                      %pos: tensor<2xi32> {circuit.name = "pos"})
    -> tensor<320xf32> {
  %o = circuit.attention %q, %k, %v, %pos {heads = 2 : i64, kv_heads = 1 : i64,
      head_dim = 80 : i64, scale = 0.111803398 : f32, window = 40 : i64,
      seq_len = 100 : i64}
      : tensor<320xf32>, tensor<24000xf32>, tensor<24000xf32>, tensor<2xi32>
      -> tensor<320xf32>
  circuit.output %o : tensor<320xf32>
}
