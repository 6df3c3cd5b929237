// circuit.write_rows: rows stored at positions of a cache in its type
// (llama.cpp's -ctk/-ctv), and circuit.attention reading a q8_0 cache.
// The CPU and Vulkan acceptance tests run these graphs against the
// interpreter with random inputs; test/Conversion/Pipelines/write-rows.test
// takes them through ptxas and spirv-val.
//
// @rows_f16: four rows of 32 into an f16 cache of 8 positions, at
// positions 5, 1, 9 and -1 (one per row): rows 0 and 1 land at positions
// 5 and 1, rows 2 and 3 are outside the cache and store nothing; the
// other positions keep the cache's zeros. Row r holds 32r .. 32r + 31.
//
// RUN: hesper-run %s --split-input-file --backend=interp \
// RUN:   --input x=linear:1,0 --input c=const:0 --input p=values:5,1,9,-1 \
// RUN:   --input q=const:0 --input k=linear:0.01,0 --input v=linear:1,-127 \
// RUN:   --input kc=random:3 --input vc=random:4 --input pos=values:0 \
// RUN:   --input pos2=values:1,6 \
// RUN:   --print-results | FileCheck %s
// CHECK: result #0 (tensor<256xf16>): 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 32 33 34 35 36 37 38 39 40 41 42 43 44 45 46 47 48 49 50 51 52 53 54 55 56 57 58 59 60 61 62 63 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0{{$}}
//
// @attend_q8_0: two rows of K and V (64 values: two heads of 32) written
// into q8_0 caches at positions 0 and 1, then attention of two query rows
// over them. With q = 0 the softmax is uniform, so query row 0 (position
// 0, which sees position 0 only) returns V's row 0 as the cache holds it.
// Its first block is -127 .. -96: max |v| is 127, d = 1, and q8_0 keeps
// every value exactly.
// CHECK: result #0 (tensor<128xf32>): -127 -126 -125 -124 -123 -122 -121 -120 -119 -118 -117 -116 -115 -114 -113 -112 -111 -110 -109 -108 -107 -106 -105 -104 -103 -102 -101 -100 -99 -98 -97 -96 {{.*}}
//
// @attend_q8_0_k: the K cache in q8_0, the V cache in f32, rows written
// at per-row positions: a batch step of two sequences of 4 positions, row
// 0 at position 1 of the first, row 1 at position 6 (the second's 2).
// CHECK: result #0 (tensor<128xf32>):

circuit.graph @rows_f16(%x: tensor<4x32xf32> {circuit.name = "x"},
                        %c: tensor<256xf16> {circuit.name = "c"},
                        %p: tensor<4xi32> {circuit.name = "p"})
    -> tensor<256xf16> {
  %w = circuit.write_rows %x at %p into %c
      : tensor<4x32xf32>, tensor<4xi32> into tensor<256xf16>
  circuit.output %w : tensor<256xf16>
}

// -----

circuit.graph @attend_q8_0(%q: tensor<128xf32> {circuit.name = "q"},
                           %k: tensor<2x64xf32> {circuit.name = "k"},
                           %v: tensor<2x64xf32> {circuit.name = "v"},
                           %kc: tensor<512x!circuit.q8_0> {circuit.name = "kc"},
                           %vc: tensor<512x!circuit.q8_0> {circuit.name = "vc"},
                           %pos: tensor<1xi32> {circuit.name = "pos"})
    -> tensor<128xf32> {
  %kc2 = circuit.write_rows %k at %pos into %kc
      : tensor<2x64xf32>, tensor<1xi32> into tensor<512x!circuit.q8_0>
  %vc2 = circuit.write_rows %v at %pos into %vc
      : tensor<2x64xf32>, tensor<1xi32> into tensor<512x!circuit.q8_0>
  %o = circuit.attention %q, %kc2, %vc2, %pos {heads = 2 : i64,
      kv_heads = 2 : i64, head_dim = 32 : i64, scale = 0.176776695 : f32}
      : tensor<128xf32>, tensor<512x!circuit.q8_0>,
        tensor<512x!circuit.q8_0>, tensor<1xi32> -> tensor<128xf32>
  circuit.output %o : tensor<128xf32>
}

// -----

circuit.graph @attend_q8_0_k(%q: tensor<128xf32> {circuit.name = "q"},
                             %k: tensor<2x64xf32> {circuit.name = "k"},
                             %v: tensor<2x64xf32> {circuit.name = "v"},
                             %kc: tensor<512x!circuit.q8_0> {circuit.name = "kc"},
                             %vc: tensor<512xf32> {circuit.name = "vc"},
                             %p2: tensor<2xi32> {circuit.name = "pos2"})
    -> tensor<128xf32> {
  %kc2 = circuit.write_rows %k at %p2 into %kc
      : tensor<2x64xf32>, tensor<2xi32> into tensor<512x!circuit.q8_0>
  %vc2 = circuit.write_rows %v at %p2 into %vc
      : tensor<2x64xf32>, tensor<2xi32> into tensor<512xf32>
  %o = circuit.attention %q, %kc2, %vc2, %p2 {heads = 2 : i64,
      kv_heads = 2 : i64, head_dim = 32 : i64, scale = 0.176776695 : f32,
      seq_len = 4 : i64}
      : tensor<128xf32>, tensor<512x!circuit.q8_0>, tensor<512xf32>,
        tensor<2xi32> -> tensor<128xf32>
  circuit.output %o : tensor<128xf32>
}
