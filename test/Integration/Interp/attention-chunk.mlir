// circuit.attention over a prompt chunk (several query rows of one
// sequence at positions pos, pos + 1, ...): on GPU targets a workgroup per
// head and tile of up to 16 query rows, which scores each K row against
// every query row of the tile and adds each V row to all of them (flash
// attention over the chunk; the CPU target keeps its single-lane kernels).
// The Vulkan and CPU acceptance tests run these graphs against the
// interpreter, five runs bit-identical, at positions 0, 100 and 479:
// @chunk: 33 rows (tiles of 16, 16 and 1) with GQA (4 query heads over 2
// KV heads) over a cache of 512 positions, split into ranges of 128 and
// combined (ranges past a row's position hold nothing to add); @gqa_f16:
// 7 rows of head dimension 128 over f16 caches; @window: a sliding window
// of 16 (a tile's rows start at different positions, some tiles hold
// nothing for some rows); @q8_cache: q8_0 caches; @odd_dim: 3 heads of 80
// (lanes past the head dimension); @softcap: soft-capped scores; @wide:
// 64 rows of 16 heads, 64 workgroups without ranges, so the 1024-position
// cache is split into 4 ranges of 256 (not 8 of 128): ranges only bring
// the grid to 256 workgroups.
// Rows past the cache's end read up to its last position.
//
// @uniform: every K row equal, so the softmax is uniform over 0..pos + r
// and V[t, d] = 0.01 * (32 t + d) averages to 0.01 * (32 (pos + r) / 2 +
// d): at pos = 10, row 0 gives 1.6 + 0.01 d, row 20 (position 30) 4.8 +
// 0.01 d.
//
// RUN: hesper-run %s --backend=interp --graph uniform \
// RUN:   --input q=random:1 --input k=const:0.5 --input v=linear:0.01,0 \
// RUN:   --input pos=values:10 --print-results | FileCheck %s
// CHECK: result #0 (tensor<1344xf32>): 1.6 1.61 1.62 {{.*}} 1.91 1.6 {{.*}} 4.8 4.81 {{.*}} 5.11{{$}}
// RUN: hesper-opt %s --split-input-file --convert-circuit-to-shaderm \
// RUN:   | FileCheck %s --check-prefix=KERNELS
// Tiles of 16 query rows (grid y) by ranges of 128 positions (grid z).
// KERNELS-LABEL: shaderm.schedule @chunk
// KERNELS: shaderm.launch @chunk_k0_attention grid [4, 3, 4]
// KERNELS: shaderm.launch @chunk_k1_attention grid [4, 33, 1]
// KERNELS-LABEL: shaderm.schedule @gqa_f16
// KERNELS: shaderm.launch @gqa_f16_k0_attention grid [4, 1, 1]
// KERNELS-NOT: shaderm.launch @gqa_f16_k1
// KERNELS-LABEL: shaderm.schedule @wide
// KERNELS: shaderm.launch @wide_k0_attention grid [16, 4, 4]
// KERNELS: shaderm.launch @wide_k1_attention grid [16, 64, 1]

circuit.graph @uniform(%q: tensor<1344xf32> {circuit.name = "q"},
    %k: tensor<2048xf32> {circuit.name = "k"},
    %v: tensor<2048xf32> {circuit.name = "v"},
    %pos: tensor<1xi32> {circuit.name = "pos"}) -> tensor<1344xf32> {
  %o = circuit.attention %q, %k, %v, %pos {heads = 2 : i64,
      kv_heads = 1 : i64, head_dim = 32 : i64, scale = 0.176776695 : f32}
      : tensor<1344xf32>, tensor<2048xf32>, tensor<2048xf32>, tensor<1xi32>
      -> tensor<1344xf32>
  circuit.output %o : tensor<1344xf32>
}

// -----

circuit.graph @chunk(%q: tensor<4224xf32> {circuit.name = "q"},
    %k: tensor<32768xf32> {circuit.name = "k"},
    %v: tensor<32768xf32> {circuit.name = "v"},
    %pos: tensor<1xi32> {circuit.name = "pos"}) -> tensor<4224xf32> {
  %o = circuit.attention %q, %k, %v, %pos {heads = 4 : i64,
      kv_heads = 2 : i64, head_dim = 32 : i64,
      scale = 0.176776695 : f32}
      : tensor<4224xf32>, tensor<32768xf32>, tensor<32768xf32>, tensor<1xi32>
      -> tensor<4224xf32>
  circuit.output %o : tensor<4224xf32>
}

// -----

circuit.graph @gqa_f16(%q: tensor<3584xf32> {circuit.name = "q"},
    %k: tensor<8192xf16> {circuit.name = "k"},
    %v: tensor<8192xf16> {circuit.name = "v"},
    %pos: tensor<1xi32> {circuit.name = "pos"}) -> tensor<3584xf32> {
  %o = circuit.attention %q, %k, %v, %pos {heads = 4 : i64,
      kv_heads = 1 : i64, head_dim = 128 : i64,
      scale = 0.088388348 : f32}
      : tensor<3584xf32>, tensor<8192xf16>, tensor<8192xf16>, tensor<1xi32>
      -> tensor<3584xf32>
  circuit.output %o : tensor<3584xf32>
}

// -----

circuit.graph @window(%q: tensor<2560xf32> {circuit.name = "q"},
    %k: tensor<32768xf32> {circuit.name = "k"},
    %v: tensor<32768xf32> {circuit.name = "v"},
    %pos: tensor<1xi32> {circuit.name = "pos"}) -> tensor<2560xf32> {
  %o = circuit.attention %q, %k, %v, %pos {heads = 2 : i64,
      kv_heads = 2 : i64, head_dim = 64 : i64,
      scale = 0.125000000 : f32, window = 16 : i64}
      : tensor<2560xf32>, tensor<32768xf32>, tensor<32768xf32>, tensor<1xi32>
      -> tensor<2560xf32>
  circuit.output %o : tensor<2560xf32>
}

// -----

circuit.graph @q8_cache(%q: tensor<1088xf32> {circuit.name = "q"},
    %k: tensor<4096x!circuit.q8_0> {circuit.name = "k"},
    %v: tensor<4096x!circuit.q8_0> {circuit.name = "v"},
    %pos: tensor<1xi32> {circuit.name = "pos"}) -> tensor<1088xf32> {
  %o = circuit.attention %q, %k, %v, %pos {heads = 2 : i64,
      kv_heads = 1 : i64, head_dim = 32 : i64,
      scale = 0.176776695 : f32}
      : tensor<1088xf32>, tensor<4096x!circuit.q8_0>, tensor<4096x!circuit.q8_0>, tensor<1xi32>
      -> tensor<1088xf32>
  circuit.output %o : tensor<1088xf32>
}

// -----

circuit.graph @odd_dim(%q: tensor<1200xf32> {circuit.name = "q"},
    %k: tensor<7680xf32> {circuit.name = "k"},
    %v: tensor<7680xf32> {circuit.name = "v"},
    %pos: tensor<1xi32> {circuit.name = "pos"}) -> tensor<1200xf32> {
  %o = circuit.attention %q, %k, %v, %pos {heads = 3 : i64,
      kv_heads = 1 : i64, head_dim = 80 : i64,
      scale = 0.111803399 : f32}
      : tensor<1200xf32>, tensor<7680xf32>, tensor<7680xf32>, tensor<1xi32>
      -> tensor<1200xf32>
  circuit.output %o : tensor<1200xf32>
}

// -----

circuit.graph @softcap(%q: tensor<1152xf32> {circuit.name = "q"},
    %k: tensor<4096xf32> {circuit.name = "k"},
    %v: tensor<4096xf32> {circuit.name = "v"},
    %pos: tensor<1xi32> {circuit.name = "pos"}) -> tensor<1152xf32> {
  %o = circuit.attention %q, %k, %v, %pos {heads = 2 : i64,
      kv_heads = 1 : i64, head_dim = 64 : i64,
      scale = 0.125000000 : f32, softcap = 2.0 : f32}
      : tensor<1152xf32>, tensor<4096xf32>, tensor<4096xf32>, tensor<1xi32>
      -> tensor<1152xf32>
  circuit.output %o : tensor<1152xf32>
}

// -----

circuit.graph @wide(%q: tensor<32768xf32> {circuit.name = "q"},
    %k: tensor<131072xf32> {circuit.name = "k"},
    %v: tensor<131072xf32> {circuit.name = "v"},
    %pos: tensor<1xi32> {circuit.name = "pos"}) -> tensor<32768xf32> {
  %o = circuit.attention %q, %k, %v, %pos {heads = 16 : i64,
      kv_heads = 4 : i64, head_dim = 32 : i64,
      scale = 0.176776695 : f32}
      : tensor<32768xf32>, tensor<131072xf32>, tensor<131072xf32>, tensor<1xi32>
      -> tensor<32768xf32>
  circuit.output %o : tensor<32768xf32>
}
