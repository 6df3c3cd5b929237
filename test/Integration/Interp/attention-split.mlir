// circuit.attention over caches of 2048 positions, which GPU targets split
// into ranges of 2 tiles (128 positions), scored in parallel and combined
// by a second kernel (flash-decoding; the CPU target's single-lane kernel
// walks the tiles in one workgroup). The Vulkan and CPU acceptance tests
// run these graphs against the interpreter at positions 0, 31, 32, 33,
// 127, 128, 511, 512 and 2047 (one range, a tile boundary, a range
// boundary, every range), with GQA (4 query heads over 2 KV heads) and a
// sliding window of 300 positions (the first ranges hold nothing to add),
// five runs bit-identical. @sequences: a batch step's caches of 3
// sequences of 768 positions (seq_len), rows at global positions 700 and
// 1500: each row's ranges start at its sequence's start (6 per row).
//
// @uniform: every K row is equal, so the softmax is uniform over 0..pos,
// and V[t, d] = 0.01 * (32 t + d) (one KV head of 32): out[h, d] =
// 0.01 * (32 * pos / 2 + d), 327.52 + 0.01 d at pos = 2047. In
// @sequences, row 0 (position 700) averages positions 0..700 (112 +
// 0.01 d), row 1 (1500) its sequence's 768..1500 (mean 1134: 362.88 +
// 0.01 d), never the other sequences'.
//
// RUN: hesper-run %s --split-input-file --backend=interp --input q=random:1 \
// RUN:   --input k=const:0.5 --input v=linear:0.01,0 --input pos=values:2047 \
// RUN:   --input rowpos=values:700,1500 \
// RUN:   --print-results | FileCheck %s
// RUN: hesper-opt %s --split-input-file --hesper-fuse \
// RUN:   --circuit-count-dispatches -o /dev/null | FileCheck %s --check-prefix=COUNT
// RUN: hesper-opt %s --split-input-file --convert-circuit-to-shaderm \
// RUN:   | FileCheck %s --check-prefix=KERNELS
// CHECK: result #0 (tensor<64xf32>): 327.52 327.53 327.54 {{.*}} 327.83 327.52
// CHECK: result #0 (tensor<128xf32>): 112 112.01 {{.*}} 112.31 112 {{.*}} 112.31 362.88 362.89 {{.*}} 363.19 362.88 {{.*}} 363.19{{$}}
// COUNT: graph @uniform: 1 dispatches (1 attention)
// COUNT: graph @gqa: 1 dispatches (1 attention)
// COUNT: graph @window: 1 dispatches (1 attention)
// COUNT: graph @sequences: 1 dispatches (1 attention)
// Two kernels per attention on a GPU target: the ranges (grid z: 2048 / 128)
// and the combination.
// KERNELS-LABEL: shaderm.schedule @uniform
// KERNELS: shaderm.launch @uniform_k0_attention grid [2, 1, 16]
// KERNELS: shaderm.launch @uniform_k1_attention grid [2, 1, 1]
// KERNELS-LABEL: shaderm.schedule @sequences
// KERNELS: shaderm.launch @sequences_k0_attention grid [2, 2, 6]
// KERNELS: shaderm.launch @sequences_k1_attention grid [2, 2, 1]

circuit.graph @uniform(%q: tensor<64xf32> {circuit.name = "q"},
                       %k: tensor<65536xf32> {circuit.name = "k"},
                       %v: tensor<65536xf32> {circuit.name = "v"},
                       %pos: tensor<1xi32> {circuit.name = "pos"})
    -> tensor<64xf32> {
  %o = circuit.attention %q, %k, %v, %pos {heads = 2 : i64, kv_heads = 1 : i64,
      head_dim = 32 : i64, scale = 0.176776695 : f32}
      : tensor<64xf32>, tensor<65536xf32>, tensor<65536xf32>, tensor<1xi32>
      -> tensor<64xf32>
  circuit.output %o : tensor<64xf32>
}

// -----

circuit.graph @gqa(%q: tensor<128xf32> {circuit.name = "q"},
                   %k: tensor<131072xf32> {circuit.name = "k"},
                   %v: tensor<131072xf32> {circuit.name = "v"},
                   %pos: tensor<1xi32> {circuit.name = "pos"})
    -> tensor<128xf32> {
  %o = circuit.attention %q, %k, %v, %pos {heads = 4 : i64, kv_heads = 2 : i64,
      head_dim = 32 : i64, scale = 0.176776695 : f32}
      : tensor<128xf32>, tensor<131072xf32>, tensor<131072xf32>, tensor<1xi32>
      -> tensor<128xf32>
  circuit.output %o : tensor<128xf32>
}

// -----

circuit.graph @window(%q: tensor<128xf32> {circuit.name = "q"},
                      %k: tensor<131072xf32> {circuit.name = "k"},
                      %v: tensor<131072xf32> {circuit.name = "v"},
                      %pos: tensor<1xi32> {circuit.name = "pos"})
    -> tensor<128xf32> {
  %o = circuit.attention %q, %k, %v, %pos {heads = 4 : i64, kv_heads = 2 : i64,
      head_dim = 32 : i64, scale = 0.176776695 : f32, window = 300 : i64}
      : tensor<128xf32>, tensor<131072xf32>, tensor<131072xf32>, tensor<1xi32>
      -> tensor<128xf32>
  circuit.output %o : tensor<128xf32>
}

// -----

circuit.graph @sequences(%q: tensor<128xf32> {circuit.name = "q"},
                         %k: tensor<73728xf32> {circuit.name = "k"},
                         %v: tensor<73728xf32> {circuit.name = "v"},
                         %pos: tensor<2xi32> {circuit.name = "rowpos"})
    -> tensor<128xf32> {
  %o = circuit.attention %q, %k, %v, %pos {heads = 2 : i64, kv_heads = 1 : i64,
      head_dim = 32 : i64, scale = 0.176776695 : f32, seq_len = 768 : i64}
      : tensor<128xf32>, tensor<73728xf32>, tensor<73728xf32>, tensor<2xi32>
      -> tensor<128xf32>
  circuit.output %o : tensor<128xf32>
}
