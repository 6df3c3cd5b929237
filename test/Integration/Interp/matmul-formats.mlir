// Matmuls with q4_0, iq4_nl, iq4_xs, q4_1, q5_0, q5_1, q5_k and bf16
// weights, and embedding rows gathered from tables in those formats. Shapes
// chosen to reach every kernel path: q4_0 and iq4_nl rows of 512 (block
// pairs, word-aligned rows: the CPU target's vector loop) and of 96 (3
// blocks: rows and blocks that start mid-word); q4_1, q5_0 and q5_1 for a
// chunk of 3 tokens over rows of 512 and a matvec over rows of 96 (q5_0's
// 22-byte blocks start mid-word in both); q2_k and q3_k for a chunk of 3
// tokens over rows of 512 and a matvec over rows of 768 (q3_k's 110-byte
// super-blocks start mid-word every other one);
// q5_k for a chunk of 3 tokens with a residual in the epilogue; bf16 rows
// of 512 (the vector loop, 4 values per GPU lane), of 40 (not a multiple
// of 32) and of 30 (rows starting mid-word, one value per lane).
// The CPU and Vulkan acceptance tests compare the kernels with the
// interpreter on random inputs; the interpreter's decoding is checked
// against hand-built blocks (unittests/Interpreter) and the NumPy
// reference (test/Models/logits-*.test).
//
// RUN: hesper-opt %s --split-input-file --hesper-fuse \
// RUN:   --circuit-count-dispatches -o /dev/null | FileCheck %s --check-prefix=COUNT
// COUNT: graph @q4_0: 1 dispatches (1 matmul)
// COUNT: graph @q4_0_odd: 1 dispatches (1 matmul)
// COUNT: graph @q5_k: 1 dispatches (1 matmul)
// COUNT: graph @bf16: 1 dispatches (1 matmul)
// COUNT: graph @bf16_k40: 1 dispatches (1 matmul)
// COUNT: graph @bf16_k30: 1 dispatches (1 matmul)
// COUNT: graph @gather_q4_0: 1 dispatches (1 gather)
// COUNT: graph @gather_q5_k: 1 dispatches (1 gather)
// COUNT: graph @gather_bf16: 1 dispatches (1 gather)
// COUNT: graph @iq4_nl: 1 dispatches (1 matmul)
// COUNT: graph @iq4_nl_odd: 1 dispatches (1 matmul)
// COUNT: graph @gather_iq4_nl: 1 dispatches (1 gather)
// COUNT: graph @iq4_xs: 1 dispatches (1 matmul)
// COUNT: graph @gather_iq4_xs: 1 dispatches (1 gather)
// COUNT: graph @q4_1: 1 dispatches (1 matmul)
// COUNT: graph @q4_1_odd: 1 dispatches (1 matmul)
// COUNT: graph @gather_q4_1: 1 dispatches (1 gather)
// COUNT: graph @q5_0: 1 dispatches (1 matmul)
// COUNT: graph @q5_0_odd: 1 dispatches (1 matmul)
// COUNT: graph @gather_q5_0: 1 dispatches (1 gather)
// COUNT: graph @q5_1: 1 dispatches (1 matmul)
// COUNT: graph @q5_1_odd: 1 dispatches (1 matmul)
// COUNT: graph @gather_q5_1: 1 dispatches (1 gather)
// COUNT: graph @q2_k: 1 dispatches (1 matmul)
// COUNT: graph @q2_k_matvec: 1 dispatches (1 matmul)
// COUNT: graph @gather_q2_k: 1 dispatches (1 gather)
// COUNT: graph @q3_k: 1 dispatches (1 matmul)
// COUNT: graph @q3_k_matvec: 1 dispatches (1 matmul)
// COUNT: graph @gather_q3_k: 1 dispatches (1 gather)
// RUN: hesper-run %s --split-input-file --backend=interp --input x=random:1 \
// RUN:   --input w=random:2 --input s=random:3 --input id=values:3 \
// RUN:   --print-results | FileCheck %s
// CHECK-COUNT-29: result #0

circuit.graph @q4_0(%x: tensor<3x512xf32> {circuit.name = "x"},
                    %w: tensor<40x512x!circuit.q4_0> {circuit.name = "w"})
    -> tensor<3x40xf32> {
  %y = circuit.matmul %x, %w : tensor<3x512xf32>, tensor<40x512x!circuit.q4_0>
      -> tensor<3x40xf32>
  circuit.output %y : tensor<3x40xf32>
}

// -----

circuit.graph @q4_0_odd(%x: tensor<96xf32> {circuit.name = "x"},
                        %w: tensor<37x96x!circuit.q4_0> {circuit.name = "w"})
    -> tensor<37xf32> {
  %y = circuit.matmul %x, %w : tensor<96xf32>, tensor<37x96x!circuit.q4_0>
      -> tensor<37xf32>
  circuit.output %y : tensor<37xf32>
}

// -----

circuit.graph @q5_k(%x: tensor<3x512xf32> {circuit.name = "x"},
                    %w: tensor<40x512x!circuit.q5_k> {circuit.name = "w"},
                    %res: tensor<3x40xf32> {circuit.name = "s"})
    -> tensor<3x40xf32> {
  %y = circuit.matmul %x, %w ins(%res : tensor<3x40xf32>)
      : tensor<3x512xf32>, tensor<40x512x!circuit.q5_k> -> tensor<3x40xf32>
      epilogue {
  ^bb0(%lane: i32, %acc: f32, %r: f32):
    %sum = exp.add %acc, %r : f32
    circuit.yield %sum : f32
  }
  circuit.output %y : tensor<3x40xf32>
}

// -----

circuit.graph @bf16(%x: tensor<2x512xf32> {circuit.name = "x"},
                    %w: tensor<40x512xbf16> {circuit.name = "w"})
    -> tensor<2x40xf32> {
  %y = circuit.matmul %x, %w : tensor<2x512xf32>, tensor<40x512xbf16>
      -> tensor<2x40xf32>
  circuit.output %y : tensor<2x40xf32>
}

// -----

circuit.graph @bf16_k40(%x: tensor<40xf32> {circuit.name = "x"},
                        %w: tensor<9x40xbf16> {circuit.name = "w"})
    -> tensor<9xf32> {
  %y = circuit.matmul %x, %w : tensor<40xf32>, tensor<9x40xbf16>
      -> tensor<9xf32>
  circuit.output %y : tensor<9xf32>
}

// -----

circuit.graph @bf16_k30(%x: tensor<30xf32> {circuit.name = "x"},
                        %w: tensor<7x30xbf16> {circuit.name = "w"})
    -> tensor<7xf32> {
  %y = circuit.matmul %x, %w : tensor<30xf32>, tensor<7x30xbf16>
      -> tensor<7xf32>
  circuit.output %y : tensor<7xf32>
}

// -----

circuit.graph @gather_q4_0(%w: tensor<8x96x!circuit.q4_0> {circuit.name = "w"},
                           %id: tensor<1xi32> {circuit.name = "id"})
    -> tensor<96xf32> {
  %g = circuit.gather %w ins(%id : tensor<1xi32>) : tensor<8x96x!circuit.q4_0>
      -> tensor<96xf32> {
  ^bb0(%lane: i32, %row: i32):
    %c = exp.constant 96 : i32
    %base = exp.mul %row, %c : i32
    %i = exp.add %base, %lane : i32
    circuit.yield %i : i32
  }
  circuit.output %g : tensor<96xf32>
}

// -----

circuit.graph @gather_q5_k(%w: tensor<8x256x!circuit.q5_k> {circuit.name = "w"},
                           %id: tensor<1xi32> {circuit.name = "id"})
    -> tensor<256xf32> {
  %g = circuit.gather %w ins(%id : tensor<1xi32>) : tensor<8x256x!circuit.q5_k>
      -> tensor<256xf32> {
  ^bb0(%lane: i32, %row: i32):
    %c = exp.constant 256 : i32
    %base = exp.mul %row, %c : i32
    %i = exp.add %base, %lane : i32
    circuit.yield %i : i32
  }
  circuit.output %g : tensor<256xf32>
}

// -----

circuit.graph @gather_bf16(%w: tensor<8x30xbf16> {circuit.name = "w"},
                           %id: tensor<1xi32> {circuit.name = "id"})
    -> tensor<30xf32> {
  %g = circuit.gather %w ins(%id : tensor<1xi32>) : tensor<8x30xbf16>
      -> tensor<30xf32> {
  ^bb0(%lane: i32, %row: i32):
    %c = exp.constant 30 : i32
    %base = exp.mul %row, %c : i32
    %i = exp.add %base, %lane : i32
    circuit.yield %i : i32
  }
  circuit.output %g : tensor<30xf32>
}

// -----

circuit.graph @iq4_nl(%x: tensor<3x512xf32> {circuit.name = "x"},
                      %w: tensor<40x512x!circuit.iq4_nl> {circuit.name = "w"})
    -> tensor<3x40xf32> {
  %y = circuit.matmul %x, %w : tensor<3x512xf32>, tensor<40x512x!circuit.iq4_nl>
      -> tensor<3x40xf32>
  circuit.output %y : tensor<3x40xf32>
}

// -----

circuit.graph @iq4_nl_odd(%x: tensor<96xf32> {circuit.name = "x"},
                          %w: tensor<37x96x!circuit.iq4_nl> {circuit.name = "w"})
    -> tensor<37xf32> {
  %y = circuit.matmul %x, %w : tensor<96xf32>, tensor<37x96x!circuit.iq4_nl>
      -> tensor<37xf32>
  circuit.output %y : tensor<37xf32>
}

// -----

circuit.graph @gather_iq4_nl(%w: tensor<8x96x!circuit.iq4_nl> {circuit.name = "w"},
                             %id: tensor<1xi32> {circuit.name = "id"})
    -> tensor<96xf32> {
  %g = circuit.gather %w ins(%id : tensor<1xi32>) : tensor<8x96x!circuit.iq4_nl>
      -> tensor<96xf32> {
  ^bb0(%lane: i32, %row: i32):
    %c = exp.constant 96 : i32
    %base = exp.mul %row, %c : i32
    %i = exp.add %base, %lane : i32
    circuit.yield %i : i32
  }
  circuit.output %g : tensor<96xf32>
}

// -----

circuit.graph @iq4_xs(%x: tensor<3x512xf32> {circuit.name = "x"},
                      %w: tensor<40x512x!circuit.iq4_xs> {circuit.name = "w"})
    -> tensor<3x40xf32> {
  %y = circuit.matmul %x, %w : tensor<3x512xf32>, tensor<40x512x!circuit.iq4_xs>
      -> tensor<3x40xf32>
  circuit.output %y : tensor<3x40xf32>
}

// -----

circuit.graph @gather_iq4_xs(%w: tensor<8x256x!circuit.iq4_xs> {circuit.name = "w"},
                             %id: tensor<1xi32> {circuit.name = "id"})
    -> tensor<256xf32> {
  %g = circuit.gather %w ins(%id : tensor<1xi32>) : tensor<8x256x!circuit.iq4_xs>
      -> tensor<256xf32> {
  ^bb0(%lane: i32, %row: i32):
    %c = exp.constant 256 : i32
    %base = exp.mul %row, %c : i32
    %i = exp.add %base, %lane : i32
    circuit.yield %i : i32
  }
  circuit.output %g : tensor<256xf32>
}

// -----

circuit.graph @q4_1(%x: tensor<3x512xf32> {circuit.name = "x"},
                    %w: tensor<40x512x!circuit.q4_1> {circuit.name = "w"})
    -> tensor<3x40xf32> {
  %y = circuit.matmul %x, %w : tensor<3x512xf32>, tensor<40x512x!circuit.q4_1>
      -> tensor<3x40xf32>
  circuit.output %y : tensor<3x40xf32>
}

// -----

circuit.graph @q4_1_odd(%x: tensor<96xf32> {circuit.name = "x"},
                        %w: tensor<37x96x!circuit.q4_1> {circuit.name = "w"})
    -> tensor<37xf32> {
  %y = circuit.matmul %x, %w : tensor<96xf32>, tensor<37x96x!circuit.q4_1>
      -> tensor<37xf32>
  circuit.output %y : tensor<37xf32>
}

// -----

circuit.graph @gather_q4_1(%w: tensor<8x96x!circuit.q4_1> {circuit.name = "w"},
                           %id: tensor<1xi32> {circuit.name = "id"})
    -> tensor<96xf32> {
  %g = circuit.gather %w ins(%id : tensor<1xi32>) : tensor<8x96x!circuit.q4_1>
      -> tensor<96xf32> {
  ^bb0(%lane: i32, %row: i32):
    %c = exp.constant 96 : i32
    %base = exp.mul %row, %c : i32
    %i = exp.add %base, %lane : i32
    circuit.yield %i : i32
  }
  circuit.output %g : tensor<96xf32>
}

// -----

circuit.graph @q5_0(%x: tensor<3x512xf32> {circuit.name = "x"},
                    %w: tensor<40x512x!circuit.q5_0> {circuit.name = "w"})
    -> tensor<3x40xf32> {
  %y = circuit.matmul %x, %w : tensor<3x512xf32>, tensor<40x512x!circuit.q5_0>
      -> tensor<3x40xf32>
  circuit.output %y : tensor<3x40xf32>
}

// -----

circuit.graph @q5_0_odd(%x: tensor<96xf32> {circuit.name = "x"},
                        %w: tensor<37x96x!circuit.q5_0> {circuit.name = "w"})
    -> tensor<37xf32> {
  %y = circuit.matmul %x, %w : tensor<96xf32>, tensor<37x96x!circuit.q5_0>
      -> tensor<37xf32>
  circuit.output %y : tensor<37xf32>
}

// -----

circuit.graph @gather_q5_0(%w: tensor<8x96x!circuit.q5_0> {circuit.name = "w"},
                           %id: tensor<1xi32> {circuit.name = "id"})
    -> tensor<96xf32> {
  %g = circuit.gather %w ins(%id : tensor<1xi32>) : tensor<8x96x!circuit.q5_0>
      -> tensor<96xf32> {
  ^bb0(%lane: i32, %row: i32):
    %c = exp.constant 96 : i32
    %base = exp.mul %row, %c : i32
    %i = exp.add %base, %lane : i32
    circuit.yield %i : i32
  }
  circuit.output %g : tensor<96xf32>
}

// -----

circuit.graph @q5_1(%x: tensor<3x512xf32> {circuit.name = "x"},
                    %w: tensor<40x512x!circuit.q5_1> {circuit.name = "w"})
    -> tensor<3x40xf32> {
  %y = circuit.matmul %x, %w : tensor<3x512xf32>, tensor<40x512x!circuit.q5_1>
      -> tensor<3x40xf32>
  circuit.output %y : tensor<3x40xf32>
}

// -----

circuit.graph @q5_1_odd(%x: tensor<96xf32> {circuit.name = "x"},
                        %w: tensor<37x96x!circuit.q5_1> {circuit.name = "w"})
    -> tensor<37xf32> {
  %y = circuit.matmul %x, %w : tensor<96xf32>, tensor<37x96x!circuit.q5_1>
      -> tensor<37xf32>
  circuit.output %y : tensor<37xf32>
}

// -----

circuit.graph @gather_q5_1(%w: tensor<8x96x!circuit.q5_1> {circuit.name = "w"},
                           %id: tensor<1xi32> {circuit.name = "id"})
    -> tensor<96xf32> {
  %g = circuit.gather %w ins(%id : tensor<1xi32>) : tensor<8x96x!circuit.q5_1>
      -> tensor<96xf32> {
  ^bb0(%lane: i32, %row: i32):
    %c = exp.constant 96 : i32
    %base = exp.mul %row, %c : i32
    %i = exp.add %base, %lane : i32
    circuit.yield %i : i32
  }
  circuit.output %g : tensor<96xf32>
}

// -----

circuit.graph @q2_k(%x: tensor<3x512xf32> {circuit.name = "x"},
                    %w: tensor<40x512x!circuit.q2_k> {circuit.name = "w"})
    -> tensor<3x40xf32> {
  %y = circuit.matmul %x, %w : tensor<3x512xf32>, tensor<40x512x!circuit.q2_k>
      -> tensor<3x40xf32>
  circuit.output %y : tensor<3x40xf32>
}

// -----

circuit.graph @q2_k_matvec(%x: tensor<768xf32> {circuit.name = "x"},
                           %w: tensor<37x768x!circuit.q2_k> {circuit.name = "w"})
    -> tensor<37xf32> {
  %y = circuit.matmul %x, %w : tensor<768xf32>, tensor<37x768x!circuit.q2_k>
      -> tensor<37xf32>
  circuit.output %y : tensor<37xf32>
}

// -----

circuit.graph @gather_q2_k(%w: tensor<8x256x!circuit.q2_k> {circuit.name = "w"},
                           %id: tensor<1xi32> {circuit.name = "id"})
    -> tensor<256xf32> {
  %g = circuit.gather %w ins(%id : tensor<1xi32>) : tensor<8x256x!circuit.q2_k>
      -> tensor<256xf32> {
  ^bb0(%lane: i32, %row: i32):
    %c = exp.constant 256 : i32
    %base = exp.mul %row, %c : i32
    %i = exp.add %base, %lane : i32
    circuit.yield %i : i32
  }
  circuit.output %g : tensor<256xf32>
}

// -----

circuit.graph @q3_k(%x: tensor<3x512xf32> {circuit.name = "x"},
                    %w: tensor<40x512x!circuit.q3_k> {circuit.name = "w"})
    -> tensor<3x40xf32> {
  %y = circuit.matmul %x, %w : tensor<3x512xf32>, tensor<40x512x!circuit.q3_k>
      -> tensor<3x40xf32>
  circuit.output %y : tensor<3x40xf32>
}

// -----

circuit.graph @q3_k_matvec(%x: tensor<768xf32> {circuit.name = "x"},
                           %w: tensor<37x768x!circuit.q3_k> {circuit.name = "w"})
    -> tensor<37xf32> {
  %y = circuit.matmul %x, %w : tensor<768xf32>, tensor<37x768x!circuit.q3_k>
      -> tensor<37xf32>
  circuit.output %y : tensor<37xf32>
}

// -----

circuit.graph @gather_q3_k(%w: tensor<8x256x!circuit.q3_k> {circuit.name = "w"},
                           %id: tensor<1xi32> {circuit.name = "id"})
    -> tensor<256xf32> {
  %g = circuit.gather %w ins(%id : tensor<1xi32>) : tensor<8x256x!circuit.q3_k>
      -> tensor<256xf32> {
  ^bb0(%lane: i32, %row: i32):
    %c = exp.constant 256 : i32
    %base = exp.mul %row, %c : i32
    %i = exp.add %base, %lane : i32
    circuit.yield %i : i32
  }
  circuit.output %g : tensor<256xf32>
}
