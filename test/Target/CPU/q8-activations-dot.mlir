// The CPU target's dot products of q8_0 and q4_0 weights with q8_1
// activations multiply bytes in integers: with VNNI (the host's ISA, where
// it has AVX512-VNNI or AVX-VNNI) one vpdpbusd per block, after vpabsb and
// vpsignb carry the weights' signs over to the activations; at x86-64-v4,
// which has no VNNI, the bytes are widened to words and multiplied and
// added in pairs (vpmaddwd). Neither converts the bytes to f32 one by one
// (vcvtdq2ps runs once per block, on the sums). q4_k's codes (nibbles,
// 0..15) and the ones that sum x are known to be non-negative bytes, so
// they go into vpdpbusd as they are, with no vpabsb/vpsignb. A q4_0 or
// q8_0 matmul whose weight rows are a multiple of 16 (here: of a prompt
// chunk, 8 rows of x) takes the integer register tile instead: 512-bit
// vpdpbusd of the nibbles, or of the q8_0 bytes plus 128 (a_unsigned), as
// they are (no vpabsb/vpsignb) with AVX512-VNNI, vpmaddwd at x86-64-v4;
// @q4_0's 24 rows keep the per-row kernel. q6_k's codes (0..63, read
// unsigned) and the bytes of 32 that take 32 sum(x) off go in as they are
// too.
// REQUIRES: cpu-target
// RUN: rm -rf %t && mkdir -p %t/v4 %t/native
// RUN: hesper-opt %s --hesper-to-cpu="isa=x86-64-v4 dump-dir=%t/v4" -o /dev/null
// RUN: FileCheck %s --check-prefix=V4 < %t/v4/hesper_kernels.s
// RUN: %if cpu-vnni %{ hesper-opt %s --hesper-to-cpu="isa=native dump-dir=%t/native" -o /dev/null %}
// RUN: %if cpu-vnni %{ FileCheck %s --check-prefix=VNNI < %t/native/hesper_kernels.s %}

// V4: q4_0_k1_matmul:
// V4-NOT: vpdpbusd
// V4: vpmaddwd
// V4-NOT: vpdpbusd
// V4: .size q4_0_k1_matmul
// VNNI: q4_0_k1_matmul:
// VNNI-NOT: vpmaddwd
// VNNI: vpabsb
// VNNI: vpsignb
// VNNI: vpdpbusd
// VNNI-NOT: vpmaddwd
// VNNI: .size q4_0_k1_matmul
// V4: q4_0_tile_k1_matmul:
// V4-NOT: vpdpbusd
// V4: vpmaddwd
// V4-NOT: vpdpbusd
// V4: .size q4_0_tile_k1_matmul
// VNNI: q4_0_tile_k1_matmul:
// VNNI-NOT: {{vpabsb|vpsignb|vpmaddwd}}
// VNNI: vpdpbusd %zmm
// VNNI-NOT: {{vpabsb|vpsignb|vpmaddwd}}
// VNNI: .size q4_0_tile_k1_matmul
// V4: q8_0_tile_k1_matmul:
// V4-NOT: vpdpbusd
// V4: vpmaddwd
// V4-NOT: vpdpbusd
// V4: .size q8_0_tile_k1_matmul
// VNNI: q8_0_tile_k1_matmul:
// VNNI-NOT: {{vpabsb|vpsignb|vpmaddwd}}
// VNNI: vpdpbusd %zmm
// VNNI-NOT: {{vpabsb|vpsignb|vpmaddwd}}
// VNNI: .size q8_0_tile_k1_matmul
// VNNI: q4_k_k1_matmul:
// VNNI-NOT: {{vpabsb|vpsignb}}
// VNNI: vpdpbusd
// VNNI-NOT: {{vpabsb|vpsignb}}
// VNNI: .size q4_k_k1_matmul
// VNNI: q6_k_k1_matmul:
// VNNI-NOT: {{vpabsb|vpsignb}}
// VNNI: vpdpbusd
// VNNI-NOT: {{vpabsb|vpsignb}}
// VNNI: .size q6_k_k1_matmul

circuit.graph @q4_0(%x: tensor<512xf32> {circuit.name = "x"},
    %w: tensor<24x512x!circuit.q4_0> {circuit.name = "w"}) -> tensor<24xf32> {
  %q = circuit.quantize %x : tensor<512xf32> -> tensor<512x!circuit.q8_1>
  %y = circuit.matmul %q, %w : tensor<512x!circuit.q8_1>,
      tensor<24x512x!circuit.q4_0> -> tensor<24xf32>
  circuit.output %y : tensor<24xf32>
}

circuit.graph @q4_0_tile(%x: tensor<8x512xf32> {circuit.name = "x"},
    %w: tensor<32x512x!circuit.q4_0> {circuit.name = "w"}) -> tensor<8x32xf32> {
  %q = circuit.quantize %x : tensor<8x512xf32> -> tensor<8x512x!circuit.q8_1>
  %y = circuit.matmul %q, %w : tensor<8x512x!circuit.q8_1>,
      tensor<32x512x!circuit.q4_0> -> tensor<8x32xf32>
  circuit.output %y : tensor<8x32xf32>
}

circuit.graph @q8_0_tile(%x: tensor<8x512xf32> {circuit.name = "x"},
    %w: tensor<32x512x!circuit.q8_0> {circuit.name = "w"}) -> tensor<8x32xf32> {
  %q = circuit.quantize %x : tensor<8x512xf32> -> tensor<8x512x!circuit.q8_1>
  %y = circuit.matmul %q, %w : tensor<8x512x!circuit.q8_1>,
      tensor<32x512x!circuit.q8_0> -> tensor<8x32xf32>
  circuit.output %y : tensor<8x32xf32>
}

circuit.graph @q4_k(%x: tensor<512xf32> {circuit.name = "x"},
    %w: tensor<16x512x!circuit.q4_k> {circuit.name = "w"}) -> tensor<16xf32> {
  %q = circuit.quantize %x : tensor<512xf32> -> tensor<512x!circuit.q8_1>
  %y = circuit.matmul %q, %w : tensor<512x!circuit.q8_1>,
      tensor<16x512x!circuit.q4_k> -> tensor<16xf32>
  circuit.output %y : tensor<16xf32>
}

circuit.graph @q6_k(%x: tensor<512xf32> {circuit.name = "x"},
    %w: tensor<16x512x!circuit.q6_k> {circuit.name = "w"}) -> tensor<16xf32> {
  %q = circuit.quantize %x : tensor<512xf32> -> tensor<512x!circuit.q8_1>
  %y = circuit.matmul %q, %w : tensor<512x!circuit.q8_1>,
      tensor<16x512x!circuit.q6_k> -> tensor<16xf32>
  circuit.output %y : tensor<16xf32>
}
