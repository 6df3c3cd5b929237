// Matmuls with ternary weights (BitNet b1.58): tq2_0, tq1_0 and i2_s rows
// of 512 values, for one token and for a chunk of 3 (GEMM-shaped; the i2_s
// tensor's own scale after its blocks, and a residual added in the
// epilogue), and an embedding row gathered from a tq1_0 table.
// The CPU and Vulkan acceptance tests compare the kernels with the
// interpreter on random inputs; the interpreter's decoding is checked
// against the NumPy reference by test/Models/bitnet-*.test.
//
// RUN: hesper-opt %s --split-input-file --hesper-fuse \
// RUN:   --circuit-count-dispatches -o /dev/null | FileCheck %s --check-prefix=COUNT
// COUNT: graph @tq2: 1 dispatches (1 matmul)
// COUNT: graph @tq1: 1 dispatches (1 matmul)
// COUNT: graph @i2s: 1 dispatches (1 matmul)
// COUNT: graph @gather_tq1: 1 dispatches (1 gather)
// RUN: hesper-run %s --split-input-file --backend=interp --input x=random:1 \
// RUN:   --input w=random:2 --input s=random:3 --input id=values:3 \
// RUN:   --print-results | FileCheck %s
// CHECK-COUNT-4: result #0

circuit.graph @tq2(%x: tensor<3x512xf32> {circuit.name = "x"},
                   %w: tensor<40x512x!circuit.tq2_0> {circuit.name = "w"})
    -> tensor<3x40xf32> {
  %y = circuit.matmul %x, %w : tensor<3x512xf32>, tensor<40x512x!circuit.tq2_0>
      -> tensor<3x40xf32>
  circuit.output %y : tensor<3x40xf32>
}

// -----

circuit.graph @tq1(%x: tensor<512xf32> {circuit.name = "x"},
                   %w: tensor<40x512x!circuit.tq1_0> {circuit.name = "w"})
    -> tensor<40xf32> {
  %y = circuit.matmul %x, %w : tensor<512xf32>, tensor<40x512x!circuit.tq1_0>
      -> tensor<40xf32>
  circuit.output %y : tensor<40xf32>
}

// -----

circuit.graph @i2s(%x: tensor<3x512xf32> {circuit.name = "x"},
                   %w: tensor<40x512x!circuit.i2_s> {circuit.name = "w"},
                   %res: tensor<3x40xf32> {circuit.name = "s"})
    -> tensor<3x40xf32> {
  %y = circuit.matmul %x, %w ins(%res : tensor<3x40xf32>)
      : tensor<3x512xf32>, tensor<40x512x!circuit.i2_s> -> tensor<3x40xf32>
      epilogue {
  ^bb0(%lane: i32, %acc: f32, %r: f32):
    %sum = exp.add %acc, %r : f32
    circuit.yield %sum : f32
  }
  circuit.output %y : tensor<3x40xf32>
}

// -----

circuit.graph @gather_tq1(%w: tensor<8x512x!circuit.tq1_0> {circuit.name = "w"},
                          %id: tensor<1xi32> {circuit.name = "id"})
    -> tensor<512xf32> {
  %g = circuit.gather %w ins(%id : tensor<1xi32>) : tensor<8x512x!circuit.tq1_0>
      -> tensor<512xf32> {
  ^bb0(%lane: i32, %row: i32):
    %c = exp.constant 512 : i32
    %base = exp.mul %row, %c : i32
    %i = exp.add %base, %lane : i32
    circuit.yield %i : i32
  }
  circuit.output %g : tensor<512xf32>
}
