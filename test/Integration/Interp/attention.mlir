// circuit.attention with a stated expected value: every K row is equal, so
// the scores of all positions tie and the softmax is uniform over 0..pos;
// V[t, kvh, d] = 0.01 * (80 t + d) (the flat index times 0.01, one KV head
// of 80 dimensions), so out[h, d] = 0.01 * (80 * pos / 2 + d). With pos = 70
// the kernel walks two tiles (64 + 7 positions) and a head dimension of 80
// gives each lane two dimensions (the second only for 16 lanes); pos = 500
// is past the cache of 100 positions and is clamped to 99.
//
// RUN: hesper-run %s --backend=interp --input q=random:1 --input k=const:0.5 \
// RUN:   --input v=linear:0.01,0 --input pos=values:70 --print-results \
// RUN:   | FileCheck %s --check-prefix=POS70
// RUN: hesper-run %s --backend=interp --input q=random:1 --input k=const:0.5 \
// RUN:   --input v=linear:0.01,0 --input pos=values:500 --print-results \
// RUN:   | FileCheck %s --check-prefix=CLAMP
// RUN: hesper-opt %s --hesper-fuse --circuit-count-dispatches -o /dev/null \
// RUN:   | FileCheck %s --check-prefix=COUNT

// out[0] = 28, out[1] = 28.01, ..., out[79] = 28.79, then head 1 again.
// POS70: result #0 (tensor<160xf32>): 28 28.01 28.02 {{.*}} 28.79 28 28.01
// CLAMP: result #0 (tensor<160xf32>): 39.6 39.61 {{.*}} 40.39 39.6
// COUNT: graph @attend: 1 dispatches (1 attention)

circuit.graph @attend(%q: tensor<160xf32> {circuit.name = "q"},
                      %k: tensor<8000xf32> {circuit.name = "k"},
                      %v: tensor<8000xf32> {circuit.name = "v"},
                      %pos: tensor<1xi32> {circuit.name = "pos"})
    -> tensor<160xf32> {
  %o = circuit.attention %q, %k, %v, %pos {heads = 2 : i64, kv_heads = 1 : i64,
      head_dim = 80 : i64, scale = 0.111803398 : f32}
      : tensor<160xf32>, tensor<8000xf32>, tensor<8000xf32>, tensor<1xi32>
      -> tensor<160xf32>
  circuit.output %o : tensor<160xf32>
}
