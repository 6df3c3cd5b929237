// Prompt-chunk matmuls (16 rows of x or more) in the shapes and formats
// that reach every part of the GPU targets' tiled GEMM (emitTiledMatmul:
// tiles of 64 rows of x by 64 weight rows over slices of 16 values of K,
// staged in workgroup memory): ragged rows of x and weights, K not a
// multiple of the slice (or of 4), weights decoded from f16, bf16, q8_0, q4_0, q2_k,
// q4_k, q6_k and iq4_xs, an epilogue, a gated feed-forward and a
// multi_matmul. The Vulkan and CPU acceptance tests run them against the
// interpreter.
//
// RUN: hesper-opt %s --split-input-file --hesper-fuse \
// RUN:   --circuit-count-dispatches -o /dev/null | FileCheck %s --check-prefix=COUNT
// COUNT: graph @f32_k100: 1 dispatches (1 matmul)
// COUNT: graph @q8_0_residual: 1 dispatches (1 matmul)
// COUNT: graph @gated: 1 dispatches (1 gated_matmul)
// COUNT: graph @multi: 1 dispatches (1 multi_matmul)
// RUN: hesper-run %s --split-input-file --backend=interp --input x=random:1 \
// RUN:   --input w=random:2 --input s=random:3 --input wg=random:4 \
// RUN:   --input wu=random:5 --input wq=random:6 --input wk=random:7 \
// RUN:   --print-results | FileCheck %s
// CHECK-COUNT-12: result #0

// f32, K = 50 (not a multiple of 4): staged one value at a time, the last
// slice of K past its end after 2 values
circuit.graph @f32_k50(%x: tensor<20x50xf32> {circuit.name = "x"},
    %w: tensor<37x50xf32> {circuit.name = "w"}) -> tensor<20x37xf32> {
  %y = circuit.matmul %x, %w : tensor<20x50xf32>, tensor<37x50xf32>
      -> tensor<20x37xf32>
  circuit.output %y : tensor<20x37xf32>
}

// -----

// f32, K = 100: the last slice of K half past its end
circuit.graph @f32_k100(%x: tensor<33x100xf32> {circuit.name = "x"},
    %w: tensor<70x100xf32> {circuit.name = "w"}) -> tensor<33x70xf32> {
  %y = circuit.matmul %x, %w : tensor<33x100xf32>, tensor<70x100xf32>
      -> tensor<33x70xf32>
  circuit.output %y : tensor<33x70xf32>
}

// -----

// f16, the fewest rows of x the tiled kernel takes
circuit.graph @f16(%x: tensor<16x256xf32> {circuit.name = "x"},
    %w: tensor<100x256xf16> {circuit.name = "w"}) -> tensor<16x100xf32> {
  %y = circuit.matmul %x, %w : tensor<16x256xf32>, tensor<100x256xf16>
      -> tensor<16x100xf32>
  circuit.output %y : tensor<16x100xf32>
}

// -----

// q4_0, one whole tile of weight rows
circuit.graph @q4_0(%x: tensor<33x512xf32> {circuit.name = "x"},
    %w: tensor<64x512x!circuit.q4_0> {circuit.name = "w"}) -> tensor<33x64xf32> {
  %y = circuit.matmul %x, %w : tensor<33x512xf32>, tensor<64x512x!circuit.q4_0>
      -> tensor<33x64xf32>
  circuit.output %y : tensor<33x64xf32>
}

// -----

// q4_k
circuit.graph @q4_k(%x: tensor<33x512xf32> {circuit.name = "x"},
    %w: tensor<40x512x!circuit.q4_k> {circuit.name = "w"}) -> tensor<33x40xf32> {
  %y = circuit.matmul %x, %w : tensor<33x512xf32>, tensor<40x512x!circuit.q4_k>
      -> tensor<33x40xf32>
  circuit.output %y : tensor<33x40xf32>
}

// -----

// q6_k
circuit.graph @q6_k(%x: tensor<20x512xf32> {circuit.name = "x"},
    %w: tensor<40x512x!circuit.q6_k> {circuit.name = "w"}) -> tensor<20x40xf32> {
  %y = circuit.matmul %x, %w : tensor<20x512xf32>, tensor<40x512x!circuit.q6_k>
      -> tensor<20x40xf32>
  circuit.output %y : tensor<20x40xf32>
}

// -----

// q2_k
circuit.graph @q2_k(%x: tensor<17x256xf32> {circuit.name = "x"},
    %w: tensor<40x256x!circuit.q2_k> {circuit.name = "w"}) -> tensor<17x40xf32> {
  %y = circuit.matmul %x, %w : tensor<17x256xf32>, tensor<40x256x!circuit.q2_k>
      -> tensor<17x40xf32>
  circuit.output %y : tensor<17x40xf32>
}

// -----

// iq4_xs
circuit.graph @iq4_xs(%x: tensor<20x256xf32> {circuit.name = "x"},
    %w: tensor<40x256x!circuit.iq4_xs> {circuit.name = "w"}) -> tensor<20x40xf32> {
  %y = circuit.matmul %x, %w : tensor<20x256xf32>, tensor<40x256x!circuit.iq4_xs>
      -> tensor<20x40xf32>
  circuit.output %y : tensor<20x40xf32>
}

// -----

// bf16, rows that start mid-word
circuit.graph @bf16(%x: tensor<33x96xf32> {circuit.name = "x"},
    %w: tensor<40x96xbf16> {circuit.name = "w"}) -> tensor<33x40xf32> {
  %y = circuit.matmul %x, %w : tensor<33x96xf32>, tensor<40x96xbf16>
      -> tensor<33x40xf32>
  circuit.output %y : tensor<33x40xf32>
}

// -----

// q8_0 with a residual in the epilogue, three tiles of x rows by three of
// weight rows, both ragged
circuit.graph @q8_0_residual(%x: tensor<130x512xf32> {circuit.name = "x"},
    %w: tensor<130x512x!circuit.q8_0> {circuit.name = "w"},
    %res: tensor<130x130xf32> {circuit.name = "s"}) -> tensor<130x130xf32> {
  %y = circuit.matmul %x, %w ins(%res : tensor<130x130xf32>)
      : tensor<130x512xf32>, tensor<130x512x!circuit.q8_0> -> tensor<130x130xf32>
      epilogue {
  ^bb0(%lane: i32, %acc: f32, %r: f32):
    %sum = exp.add %acc, %r : f32
    circuit.yield %sum : f32
  }
  circuit.output %y : tensor<130x130xf32>
}

// -----

// A gated feed-forward (one gated_matmul): q4_0 gate, q8_0 up, silu(g) u
circuit.graph @gated(%x: tensor<40x256xf32> {circuit.name = "x"},
    %wg: tensor<72x256x!circuit.q4_0> {circuit.name = "wg"},
    %wu: tensor<72x256x!circuit.q8_0> {circuit.name = "wu"})
    -> tensor<40x72xf32> {
  %g = circuit.matmul %x, %wg : tensor<40x256xf32>,
      tensor<72x256x!circuit.q4_0> -> tensor<40x72xf32>
  %u = circuit.matmul %x, %wu : tensor<40x256xf32>,
      tensor<72x256x!circuit.q8_0> -> tensor<40x72xf32>
  %h = circuit.map ins(%g, %u : tensor<40x72xf32>, tensor<40x72xf32>)
      -> tensor<40x72xf32> {
  ^bb0(%lane: i32, %a: f32, %b: f32):
    %s = exp.silu %a : f32
    %m = exp.mul %s, %b : f32
    circuit.yield %m : f32
  }
  circuit.output %h : tensor<40x72xf32>
}

// -----

// Two matmuls of one x (one multi_matmul): each weight owns its groups
circuit.graph @multi(%x: tensor<33x256xf32> {circuit.name = "x"},
    %wq: tensor<96x256xf32> {circuit.name = "wq"},
    %wk: tensor<40x256x!circuit.q8_0> {circuit.name = "wk"})
    -> (tensor<33x96xf32>, tensor<33x40xf32>) {
  %q = circuit.matmul %x, %wq : tensor<33x256xf32>, tensor<96x256xf32>
      -> tensor<33x96xf32>
  %k = circuit.matmul %x, %wk : tensor<33x256xf32>,
      tensor<40x256x!circuit.q8_0> -> tensor<33x40xf32>
  circuit.output %q, %k : tensor<33x96xf32>, tensor<33x40xf32>
}
