// Matmuls whose activations are quantized first (circuit.quantize to
// q8_1, as llama.cpp's CPU and MMVQ kernels do): the kernels multiply the
// weight bytes with the activation bytes in integers (exp.dot4_i8 on GPU
// lanes, exp.vector_dot4_i8 -- vpdpbusd with VNNI -- on the CPU target)
// and scale each block's exact integer sum once by d_w d_x (q4_0 on GPU
// lanes: the codes as they are, then 8 times the sum of x's bytes off).
//
// @q8_0_exact: x = -127 everywhere (q8_1 keeps it exactly: d = 1) against
// weights of 63.5 quantized in the graph to q8_0 (d = 0.5, q = 127), so
// every output is 64 * -127 * 63.5 = -516128 exactly (the CPU target's
// block-pair loop; a lane per block on Vulkan).
// The other graphs take random inputs; the CPU and Vulkan acceptance tests
// compare them with the interpreter (which decodes the q8_1 activations and
// multiplies in f32) and check 5 runs bit-identical: q8_0 and q4_0 rows of
// 512 (block pairs, 3 rows of x), of 96 (blocks mid-word, 2 rows), and a
// gated feed-forward with q4_0 gate and q8_0 up weights sharing one
// quantized x; q4_k rows of 512 for 3 rows of x and q5_k rows of 256 for
// 2 (a sub-block of 32 per x block: d sc d_x sum(q x) - dmin m d_x sum(x),
// both sums in integers); q6_k rows of 512 for 3 rows of x (the CPU
// target's super-block pairs) and of 256 for 2 (a lane unit of 16 values
// per scale): sum((q - 32) x) in integers per scale group of 16.
//
// RUN: hesper-run %s --split-input-file --backend=interp \
// RUN:   --input x=const:-127 --input wf=const:63.5 --input w=random:2 \
// RUN:   --input wg=random:3 --input wu=random:4 --print-results \
// RUN:   | FileCheck %s
// CHECK: result #0 (tensor<2x3xf32>): -516128 -516128 -516128 -516128 -516128 -516128{{$}}
//
// RUN: hesper-opt %s --split-input-file --hesper-fuse \
// RUN:   --circuit-count-dispatches -o /dev/null | FileCheck %s --check-prefix=COUNT
// COUNT: graph @q8_0_exact: 3 dispatches (1 matmul, 2 quantize)
// COUNT: graph @q8_0: 2 dispatches (1 matmul, 1 quantize)
// COUNT: graph @q8_0_odd: 2 dispatches (1 matmul, 1 quantize)
// COUNT: graph @q4_0: 2 dispatches (1 matmul, 1 quantize)
// COUNT: graph @q4_0_odd: 2 dispatches (1 matmul, 1 quantize)
// COUNT: graph @gated: 2 dispatches (1 gated_matmul, 1 quantize)
// COUNT: graph @q4_k: 2 dispatches (1 matmul, 1 quantize)
// COUNT: graph @q5_k: 2 dispatches (1 matmul, 1 quantize)
// COUNT: graph @q6_k: 2 dispatches (1 matmul, 1 quantize)
// COUNT: graph @q6_k_one: 2 dispatches (1 matmul, 1 quantize)

circuit.graph @q8_0_exact(%x: tensor<2x64xf32> {circuit.name = "x"},
    %wf: tensor<3x64xf32> {circuit.name = "wf"}) -> tensor<2x3xf32> {
  %q = circuit.quantize %x : tensor<2x64xf32> -> tensor<2x64x!circuit.q8_1>
  %w = circuit.quantize %wf : tensor<3x64xf32> -> tensor<3x64x!circuit.q8_0>
  %y = circuit.matmul %q, %w : tensor<2x64x!circuit.q8_1>,
      tensor<3x64x!circuit.q8_0> -> tensor<2x3xf32>
  circuit.output %y : tensor<2x3xf32>
}

// -----

circuit.graph @q8_0(%x: tensor<3x512xf32> {circuit.name = "x"},
    %w: tensor<40x512x!circuit.q8_0> {circuit.name = "w"}) -> tensor<3x40xf32> {
  %q = circuit.quantize %x : tensor<3x512xf32> -> tensor<3x512x!circuit.q8_1>
  %y = circuit.matmul %q, %w : tensor<3x512x!circuit.q8_1>,
      tensor<40x512x!circuit.q8_0> -> tensor<3x40xf32>
  circuit.output %y : tensor<3x40xf32>
}

// -----

circuit.graph @q8_0_odd(%x: tensor<2x96xf32> {circuit.name = "x"},
    %w: tensor<7x96x!circuit.q8_0> {circuit.name = "w"}) -> tensor<2x7xf32> {
  %q = circuit.quantize %x : tensor<2x96xf32> -> tensor<2x96x!circuit.q8_1>
  %y = circuit.matmul %q, %w : tensor<2x96x!circuit.q8_1>,
      tensor<7x96x!circuit.q8_0> -> tensor<2x7xf32>
  circuit.output %y : tensor<2x7xf32>
}

// -----

circuit.graph @q4_0(%x: tensor<3x512xf32> {circuit.name = "x"},
    %w: tensor<40x512x!circuit.q4_0> {circuit.name = "w"}) -> tensor<3x40xf32> {
  %q = circuit.quantize %x : tensor<3x512xf32> -> tensor<3x512x!circuit.q8_1>
  %y = circuit.matmul %q, %w : tensor<3x512x!circuit.q8_1>,
      tensor<40x512x!circuit.q4_0> -> tensor<3x40xf32>
  circuit.output %y : tensor<3x40xf32>
}

// -----

circuit.graph @q4_0_odd(%x: tensor<2x96xf32> {circuit.name = "x"},
    %w: tensor<7x96x!circuit.q4_0> {circuit.name = "w"}) -> tensor<2x7xf32> {
  %q = circuit.quantize %x : tensor<2x96xf32> -> tensor<2x96x!circuit.q8_1>
  %y = circuit.matmul %q, %w : tensor<2x96x!circuit.q8_1>,
      tensor<7x96x!circuit.q4_0> -> tensor<2x7xf32>
  circuit.output %y : tensor<2x7xf32>
}

// -----

circuit.graph @gated(%x: tensor<256xf32> {circuit.name = "x"},
    %wg: tensor<48x256x!circuit.q4_0> {circuit.name = "wg"},
    %wu: tensor<48x256x!circuit.q8_0> {circuit.name = "wu"})
    -> tensor<48xf32> {
  %q = circuit.quantize %x : tensor<256xf32> -> tensor<256x!circuit.q8_1>
  %g = circuit.matmul %q, %wg : tensor<256x!circuit.q8_1>,
      tensor<48x256x!circuit.q4_0> -> tensor<48xf32>
  %u = circuit.matmul %q, %wu : tensor<256x!circuit.q8_1>,
      tensor<48x256x!circuit.q8_0> -> tensor<48xf32>
  %h = circuit.map ins(%g, %u : tensor<48xf32>, tensor<48xf32>)
      -> tensor<48xf32> {
  ^bb0(%lane: i32, %a: f32, %b: f32):
    %s = exp.silu %a : f32
    %m = exp.mul %s, %b : f32
    circuit.yield %m : f32
  }
  circuit.output %h : tensor<48xf32>
}

// -----

circuit.graph @q4_k(%x: tensor<3x512xf32> {circuit.name = "x"},
    %w: tensor<40x512x!circuit.q4_k> {circuit.name = "w"}) -> tensor<3x40xf32> {
  %q = circuit.quantize %x : tensor<3x512xf32> -> tensor<3x512x!circuit.q8_1>
  %y = circuit.matmul %q, %w : tensor<3x512x!circuit.q8_1>,
      tensor<40x512x!circuit.q4_k> -> tensor<3x40xf32>
  circuit.output %y : tensor<3x40xf32>
}

// -----

circuit.graph @q5_k(%x: tensor<2x256xf32> {circuit.name = "x"},
    %w: tensor<24x256x!circuit.q5_k> {circuit.name = "w"}) -> tensor<2x24xf32> {
  %q = circuit.quantize %x : tensor<2x256xf32> -> tensor<2x256x!circuit.q8_1>
  %y = circuit.matmul %q, %w : tensor<2x256x!circuit.q8_1>,
      tensor<24x256x!circuit.q5_k> -> tensor<2x24xf32>
  circuit.output %y : tensor<2x24xf32>
}

// -----

circuit.graph @q6_k(%x: tensor<3x512xf32> {circuit.name = "x"},
    %w: tensor<40x512x!circuit.q6_k> {circuit.name = "w"}) -> tensor<3x40xf32> {
  %q = circuit.quantize %x : tensor<3x512xf32> -> tensor<3x512x!circuit.q8_1>
  %y = circuit.matmul %q, %w : tensor<3x512x!circuit.q8_1>,
      tensor<40x512x!circuit.q6_k> -> tensor<3x40xf32>
  circuit.output %y : tensor<3x40xf32>
}

// -----

circuit.graph @q6_k_one(%x: tensor<2x256xf32> {circuit.name = "x"},
    %w: tensor<24x256x!circuit.q6_k> {circuit.name = "w"}) -> tensor<2x24xf32> {
  %q = circuit.quantize %x : tensor<2x256xf32> -> tensor<2x256x!circuit.q8_1>
  %y = circuit.matmul %q, %w : tensor<2x256x!circuit.q8_1>,
      tensor<24x256x!circuit.q6_k> -> tensor<2x24xf32>
  circuit.output %y : tensor<2x24xf32>
}
