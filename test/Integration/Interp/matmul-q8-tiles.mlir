// Matmuls of q8_1 activations with q4_0, q8_0 or q4_k weights: on the CPU
// target every weight matrix here takes the integer register tile
// (emitByteTileDot: 16 weight rows, four per 512-bit vector, by 4 x rows;
// emitQ4_KByteTileDot: by 2; vpdpbusd with AVX512-VNNI), other targets
// their per-row kernels. The
// CPU and Vulkan acceptance tests compare them with the interpreter (which
// decodes the q8_1 activations and multiplies in f32) on random inputs and
// check 5 runs bit-identical: 7 x rows by 48 weight rows of 512 values
// (three tiles of weight rows, a partial block of x rows) for each format,
// gated feed-forwards of 33 rows (both weights q4_0, or both q8_0), and
// three projections of one x (a multi_matmul of 32, 16 and 16 rows of 192
// values: three pairs of blocks), and one-token matvecs (x of one row:
// the tile of 1 x 16) of each format; q4_k rows of two super-blocks for 7
// rows of x and for one.
//
// @exact: x = -63.5 everywhere (q8_1 keeps it exactly: d = 0.5, bytes
// -127) against weights of 63.5 quantized in the graph to q8_0 (d = 0.5,
// q = 127), so every output is 128 * -63.5 * 63.5 = -516128 exactly (the
// acceptance tests run it with these inputs on their targets too: EXACT).
//
// RUN: hesper-run %s --split-input-file --backend=interp \
// RUN:   --input x=const:-63.5 --input wf=const:63.5 --input w=random:2 \
// RUN:   --input wg=random:3 --input wu=random:4 --input wq=random:5 \
// RUN:   --input wk=random:6 --input wv=random:7 --print-results \
// RUN:   | FileCheck %s --check-prefixes=CHECK,EXACT
// EXACT: result #0 (tensor<5x16xf32>):{{( -516128){80}$}}
// CHECK: result #0 (tensor<7x48xf32>):
// CHECK: result #0 (tensor<7x48xf32>):
// CHECK: result #0 (tensor<33x32xf32>):
// CHECK: result #0 (tensor<33x32xf32>):
// CHECK: result #2 (tensor<9x16xf32>):
// CHECK: result #0 (tensor<32xf32>):
// CHECK: result #0 (tensor<32xf32>):
// CHECK: result #0 (tensor<7x48xf32>):
// CHECK: result #0 (tensor<32xf32>):
//
// RUN: hesper-opt %s --split-input-file --hesper-fuse \
// RUN:   --circuit-count-dispatches -o /dev/null | FileCheck %s --check-prefix=COUNT
// COUNT: graph @exact: 3 dispatches (1 matmul, 2 quantize)
// COUNT: graph @rows: 2 dispatches (1 matmul, 1 quantize)
// COUNT: graph @rows_q8_0: 2 dispatches (1 matmul, 1 quantize)
// COUNT: graph @gated: 2 dispatches (1 gated_matmul, 1 quantize)
// COUNT: graph @gated_q8_0: 2 dispatches (1 gated_matmul, 1 quantize)
// COUNT: graph @projections: 2 dispatches (1 multi_matmul, 1 quantize)
// COUNT: graph @one_row: 2 dispatches (1 matmul, 1 quantize)
// COUNT: graph @one_row_q8_0: 2 dispatches (1 matmul, 1 quantize)
// COUNT: graph @rows_q4_k: 2 dispatches (1 matmul, 1 quantize)
// COUNT: graph @one_row_q4_k: 2 dispatches (1 matmul, 1 quantize)

circuit.graph @exact(%x: tensor<5x128xf32> {circuit.name = "x"},
    %wf: tensor<16x128xf32> {circuit.name = "wf"}) -> tensor<5x16xf32> {
  %q = circuit.quantize %x : tensor<5x128xf32> -> tensor<5x128x!circuit.q8_1>
  %w = circuit.quantize %wf : tensor<16x128xf32> -> tensor<16x128x!circuit.q8_0>
  %y = circuit.matmul %q, %w : tensor<5x128x!circuit.q8_1>,
      tensor<16x128x!circuit.q8_0> -> tensor<5x16xf32>
  circuit.output %y : tensor<5x16xf32>
}

// -----

circuit.graph @rows(%x: tensor<7x512xf32> {circuit.name = "x"},
    %w: tensor<48x512x!circuit.q4_0> {circuit.name = "w"}) -> tensor<7x48xf32> {
  %q = circuit.quantize %x : tensor<7x512xf32> -> tensor<7x512x!circuit.q8_1>
  %y = circuit.matmul %q, %w : tensor<7x512x!circuit.q8_1>,
      tensor<48x512x!circuit.q4_0> -> tensor<7x48xf32>
  circuit.output %y : tensor<7x48xf32>
}

// -----

circuit.graph @rows_q8_0(%x: tensor<7x512xf32> {circuit.name = "x"},
    %w: tensor<48x512x!circuit.q8_0> {circuit.name = "w"}) -> tensor<7x48xf32> {
  %q = circuit.quantize %x : tensor<7x512xf32> -> tensor<7x512x!circuit.q8_1>
  %y = circuit.matmul %q, %w : tensor<7x512x!circuit.q8_1>,
      tensor<48x512x!circuit.q8_0> -> tensor<7x48xf32>
  circuit.output %y : tensor<7x48xf32>
}

// -----

circuit.graph @gated(%x: tensor<33x128xf32> {circuit.name = "x"},
    %wg: tensor<32x128x!circuit.q4_0> {circuit.name = "wg"},
    %wu: tensor<32x128x!circuit.q4_0> {circuit.name = "wu"})
    -> tensor<33x32xf32> {
  %q = circuit.quantize %x : tensor<33x128xf32> -> tensor<33x128x!circuit.q8_1>
  %g = circuit.matmul %q, %wg : tensor<33x128x!circuit.q8_1>,
      tensor<32x128x!circuit.q4_0> -> tensor<33x32xf32>
  %u = circuit.matmul %q, %wu : tensor<33x128x!circuit.q8_1>,
      tensor<32x128x!circuit.q4_0> -> tensor<33x32xf32>
  %h = circuit.map ins(%g, %u : tensor<33x32xf32>, tensor<33x32xf32>)
      -> tensor<33x32xf32> {
  ^bb0(%lane: i32, %a: f32, %b: f32):
    %s = exp.silu %a : f32
    %m = exp.mul %s, %b : f32
    circuit.yield %m : f32
  }
  circuit.output %h : tensor<33x32xf32>
}

// -----

circuit.graph @gated_q8_0(%x: tensor<33x128xf32> {circuit.name = "x"},
    %wg: tensor<32x128x!circuit.q8_0> {circuit.name = "wg"},
    %wu: tensor<32x128x!circuit.q8_0> {circuit.name = "wu"})
    -> tensor<33x32xf32> {
  %q = circuit.quantize %x : tensor<33x128xf32> -> tensor<33x128x!circuit.q8_1>
  %g = circuit.matmul %q, %wg : tensor<33x128x!circuit.q8_1>,
      tensor<32x128x!circuit.q8_0> -> tensor<33x32xf32>
  %u = circuit.matmul %q, %wu : tensor<33x128x!circuit.q8_1>,
      tensor<32x128x!circuit.q8_0> -> tensor<33x32xf32>
  %h = circuit.map ins(%g, %u : tensor<33x32xf32>, tensor<33x32xf32>)
      -> tensor<33x32xf32> {
  ^bb0(%lane: i32, %a: f32, %b: f32):
    %s = exp.silu %a : f32
    %m = exp.mul %s, %b : f32
    circuit.yield %m : f32
  }
  circuit.output %h : tensor<33x32xf32>
}

// -----

circuit.graph @projections(%x: tensor<9x192xf32> {circuit.name = "x"},
    %wq: tensor<32x192x!circuit.q4_0> {circuit.name = "wq"},
    %wk: tensor<16x192x!circuit.q4_0> {circuit.name = "wk"},
    %wv: tensor<16x192x!circuit.q4_0> {circuit.name = "wv"})
    -> (tensor<9x32xf32>, tensor<9x16xf32>, tensor<9x16xf32>) {
  %q = circuit.quantize %x : tensor<9x192xf32> -> tensor<9x192x!circuit.q8_1>
  %a = circuit.matmul %q, %wq : tensor<9x192x!circuit.q8_1>,
      tensor<32x192x!circuit.q4_0> -> tensor<9x32xf32>
  %b = circuit.matmul %q, %wk : tensor<9x192x!circuit.q8_1>,
      tensor<16x192x!circuit.q4_0> -> tensor<9x16xf32>
  %c = circuit.matmul %q, %wv : tensor<9x192x!circuit.q8_1>,
      tensor<16x192x!circuit.q4_0> -> tensor<9x16xf32>
  circuit.output %a, %b, %c : tensor<9x32xf32>, tensor<9x16xf32>,
      tensor<9x16xf32>
}

// -----

circuit.graph @one_row(%x: tensor<512xf32> {circuit.name = "x"},
    %w: tensor<32x512x!circuit.q4_0> {circuit.name = "w"}) -> tensor<32xf32> {
  %q = circuit.quantize %x : tensor<512xf32> -> tensor<512x!circuit.q8_1>
  %y = circuit.matmul %q, %w : tensor<512x!circuit.q8_1>,
      tensor<32x512x!circuit.q4_0> -> tensor<32xf32>
  circuit.output %y : tensor<32xf32>
}

// -----

circuit.graph @one_row_q8_0(%x: tensor<512xf32> {circuit.name = "x"},
    %w: tensor<32x512x!circuit.q8_0> {circuit.name = "w"}) -> tensor<32xf32> {
  %q = circuit.quantize %x : tensor<512xf32> -> tensor<512x!circuit.q8_1>
  %y = circuit.matmul %q, %w : tensor<512x!circuit.q8_1>,
      tensor<32x512x!circuit.q8_0> -> tensor<32xf32>
  circuit.output %y : tensor<32xf32>
}

// -----

circuit.graph @rows_q4_k(%x: tensor<7x512xf32> {circuit.name = "x"},
    %w: tensor<48x512x!circuit.q4_k> {circuit.name = "w"}) -> tensor<7x48xf32> {
  %q = circuit.quantize %x : tensor<7x512xf32> -> tensor<7x512x!circuit.q8_1>
  %y = circuit.matmul %q, %w : tensor<7x512x!circuit.q8_1>,
      tensor<48x512x!circuit.q4_k> -> tensor<7x48xf32>
  circuit.output %y : tensor<7x48xf32>
}

// -----

circuit.graph @one_row_q4_k(%x: tensor<512xf32> {circuit.name = "x"},
    %w: tensor<32x512x!circuit.q4_k> {circuit.name = "w"}) -> tensor<32xf32> {
  %q = circuit.quantize %x : tensor<512xf32> -> tensor<512x!circuit.q8_1>
  %y = circuit.matmul %q, %w : tensor<512x!circuit.q8_1>,
      tensor<32x512x!circuit.q4_k> -> tensor<32xf32>
  circuit.output %y : tensor<32xf32>
}
