// circuit.attention over f16 caches (llama.cpp's -ctk/-ctv f16): K in f16
// and V in f32 in one graph, K and V both f16 in the other. The values are
// widened to f32 as they are read; the CPU and Vulkan acceptance tests and
// test/Conversion/Pipelines/attention-f16-cache.test (ptxas, spirv-val)
// run them. With every K row equal the softmax is uniform over 0..pos,
// and V = 0.25 * (flat index) is exact in f16 up to 2048: out[h, d] =
// 0.25 * (32 * pos / 2 + d), 28 + 0.25 d at pos = 7.
//
// RUN: hesper-run %s --split-input-file --backend=interp --input q=random:1 \
// RUN:   --input k=const:0.5 --input v=linear:0.25,0 --input pos=values:7 \
// RUN:   --print-results | FileCheck %s
// CHECK: result #0 (tensor<64xf32>): 28 28.25 28.5 {{.*}} 35.75 28 28.25
// CHECK: result #0 (tensor<64xf32>): 28 28.25 28.5 {{.*}} 35.75 28 28.25

circuit.graph @k_f16(%q: tensor<64xf32> {circuit.name = "q"},
                     %k: tensor<512xf16> {circuit.name = "k"},
                     %v: tensor<512xf32> {circuit.name = "v"},
                     %pos: tensor<1xi32> {circuit.name = "pos"})
    -> tensor<64xf32> {
  %o = circuit.attention %q, %k, %v, %pos {heads = 2 : i64, kv_heads = 1 : i64,
      head_dim = 32 : i64, scale = 0.176776695 : f32}
      : tensor<64xf32>, tensor<512xf16>, tensor<512xf32>, tensor<1xi32>
      -> tensor<64xf32>
  circuit.output %o : tensor<64xf32>
}

// -----

circuit.graph @kv_f16(%q: tensor<64xf32> {circuit.name = "q"},
                      %k: tensor<512xf16> {circuit.name = "k"},
                      %v: tensor<512xf16> {circuit.name = "v"},
                      %pos: tensor<1xi32> {circuit.name = "pos"})
    -> tensor<64xf32> {
  %o = circuit.attention %q, %k, %v, %pos {heads = 2 : i64, kv_heads = 1 : i64,
      head_dim = 32 : i64, scale = 0.176776695 : f32}
      : tensor<64xf32>, tensor<512xf16>, tensor<512xf16>, tensor<1xi32>
      -> tensor<64xf32>
  circuit.output %o : tensor<64xf32>
}
