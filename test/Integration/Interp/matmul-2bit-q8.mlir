// Matmuls of q8_1 activations with 2-bit weights, the ternary i2_s and
// tq2_0 and the k-quant q2_k (16-value sub-blocks with their own scales
// and mins):
// on the CPU target the integer register tile (16 weight rows by 2 rows
// of x; tq2_0 rows of an even number of super-blocks in pairs, of an odd
// number block by block) or, for other row counts, the per-row integer
// kernel;
// on other targets the per-row kernel, a block's words over several
// lanes. The CPU and Vulkan acceptance tests compare them with the
// interpreter (which decodes x and the codes and multiplies in f32) on
// random inputs, 5 runs bit-identical: i2_s for 7 x rows by 48 weight rows
// (three tiles, a partial block of x rows) and for one x row by 40 rows
// (not a multiple of 16: the per-row kernel); tq2_0 for 7 x rows by 32
// rows of 512 values (the tile, every block on a word or every one two
// bytes in), 3 x rows and one by 32 rows of 768 values (an odd number of
// 66-byte super-blocks a row: rows alternate between the two, the tile
// reads each row its own way) and 3 x rows by 17 rows (the per-row
// kernel); q2_k for 7 x rows by 48 rows of 512 values and one x row by 32
// rows of 768 (the tile) and 3 x rows by 17 rows (the per-row kernel).
//
// RUN: hesper-run %s --split-input-file --backend=interp \
// RUN:   --input x=random:1 --input w=random:2 --print-results \
// RUN:   | FileCheck %s
// CHECK: result #0 (tensor<7x48xf32>):
// CHECK: result #0 (tensor<40xf32>):
// CHECK: result #0 (tensor<7x32xf32>):
// CHECK: result #0 (tensor<3x32xf32>):
// CHECK: result #0 (tensor<32xf32>):
// CHECK: result #0 (tensor<3x17xf32>):
// CHECK: result #0 (tensor<7x48xf32>):
// CHECK: result #0 (tensor<32xf32>):
// CHECK: result #0 (tensor<3x17xf32>):
//
// RUN: hesper-opt %s --split-input-file --hesper-fuse \
// RUN:   --circuit-count-dispatches -o /dev/null | FileCheck %s --check-prefix=COUNT
// COUNT-COUNT-9: graph @{{.*}}: 2 dispatches (1 matmul, 1 quantize)

circuit.graph @i2s_rows(%x: tensor<7x256xf32> {circuit.name = "x"},
    %w: tensor<48x256x!circuit.i2_s> {circuit.name = "w"}) -> tensor<7x48xf32> {
  %q = circuit.quantize %x : tensor<7x256xf32> -> tensor<7x256x!circuit.q8_1>
  %y = circuit.matmul %q, %w : tensor<7x256x!circuit.q8_1>,
      tensor<48x256x!circuit.i2_s> -> tensor<7x48xf32>
  circuit.output %y : tensor<7x48xf32>
}
// -----
circuit.graph @i2s_one(%x: tensor<384xf32> {circuit.name = "x"},
    %w: tensor<40x384x!circuit.i2_s> {circuit.name = "w"}) -> tensor<40xf32> {
  %q = circuit.quantize %x : tensor<384xf32> -> tensor<384x!circuit.q8_1>
  %y = circuit.matmul %q, %w : tensor<384x!circuit.q8_1>,
      tensor<40x384x!circuit.i2_s> -> tensor<40xf32>
  circuit.output %y : tensor<40xf32>
}
// -----
circuit.graph @tq2_rows(%x: tensor<7x512xf32> {circuit.name = "x"},
    %w: tensor<32x512x!circuit.tq2_0> {circuit.name = "w"}) -> tensor<7x32xf32> {
  %q = circuit.quantize %x : tensor<7x512xf32> -> tensor<7x512x!circuit.q8_1>
  %y = circuit.matmul %q, %w : tensor<7x512x!circuit.q8_1>,
      tensor<32x512x!circuit.tq2_0> -> tensor<7x32xf32>
  circuit.output %y : tensor<7x32xf32>
}
// -----
circuit.graph @tq2_odd(%x: tensor<3x768xf32> {circuit.name = "x"},
    %w: tensor<32x768x!circuit.tq2_0> {circuit.name = "w"}) -> tensor<3x32xf32> {
  %q = circuit.quantize %x : tensor<3x768xf32> -> tensor<3x768x!circuit.q8_1>
  %y = circuit.matmul %q, %w : tensor<3x768x!circuit.q8_1>,
      tensor<32x768x!circuit.tq2_0> -> tensor<3x32xf32>
  circuit.output %y : tensor<3x32xf32>
}
// -----
circuit.graph @tq2_odd_one(%x: tensor<768xf32> {circuit.name = "x"},
    %w: tensor<32x768x!circuit.tq2_0> {circuit.name = "w"}) -> tensor<32xf32> {
  %q = circuit.quantize %x : tensor<768xf32> -> tensor<768x!circuit.q8_1>
  %y = circuit.matmul %q, %w : tensor<768x!circuit.q8_1>,
      tensor<32x768x!circuit.tq2_0> -> tensor<32xf32>
  circuit.output %y : tensor<32xf32>
}
// -----
circuit.graph @tq2_ragged(%x: tensor<3x768xf32> {circuit.name = "x"},
    %w: tensor<17x768x!circuit.tq2_0> {circuit.name = "w"}) -> tensor<3x17xf32> {
  %q = circuit.quantize %x : tensor<3x768xf32> -> tensor<3x768x!circuit.q8_1>
  %y = circuit.matmul %q, %w : tensor<3x768x!circuit.q8_1>,
      tensor<17x768x!circuit.tq2_0> -> tensor<3x17xf32>
  circuit.output %y : tensor<3x17xf32>
}
// -----
circuit.graph @q2k_rows(%x: tensor<7x512xf32> {circuit.name = "x"},
    %w: tensor<48x512x!circuit.q2_k> {circuit.name = "w"}) -> tensor<7x48xf32> {
  %q = circuit.quantize %x : tensor<7x512xf32> -> tensor<7x512x!circuit.q8_1>
  %y = circuit.matmul %q, %w : tensor<7x512x!circuit.q8_1>,
      tensor<48x512x!circuit.q2_k> -> tensor<7x48xf32>
  circuit.output %y : tensor<7x48xf32>
}
// -----
circuit.graph @q2k_one(%x: tensor<768xf32> {circuit.name = "x"},
    %w: tensor<32x768x!circuit.q2_k> {circuit.name = "w"}) -> tensor<32xf32> {
  %q = circuit.quantize %x : tensor<768xf32> -> tensor<768x!circuit.q8_1>
  %y = circuit.matmul %q, %w : tensor<768x!circuit.q8_1>,
      tensor<32x768x!circuit.q2_k> -> tensor<32xf32>
  circuit.output %y : tensor<32xf32>
}
// -----
circuit.graph @q2k_ragged(%x: tensor<3x256xf32> {circuit.name = "x"},
    %w: tensor<17x256x!circuit.q2_k> {circuit.name = "w"}) -> tensor<3x17xf32> {
  %q = circuit.quantize %x : tensor<3x256xf32> -> tensor<3x256x!circuit.q8_1>
  %y = circuit.matmul %q, %w : tensor<3x256x!circuit.q8_1>,
      tensor<17x256x!circuit.q2_k> -> tensor<3x17xf32>
  circuit.output %y : tensor<3x17xf32>
}
