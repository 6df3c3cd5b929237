// Acceptance case 6: a V-cache write at a dynamic position. 4 heads,
// 8 positions, head dim 16; pos = 3 comes from a [1] i32 buffer; src[i] =
// 100 + i is written at addr = (i div 16) * 128 + pos * 16 + (i mod 16).
// The cache starts at -1: exactly the 64 cells of row 3 of each head
// change, every other cell stays -1 (the whole cache is checked).
// There is nothing to fuse: one circuit.scatter into the argument.
//
// RUN: hesper-opt %s --hesper-fuse | FileCheck %s --check-prefix=FUSED
// RUN: hesper-opt %s --hesper-fuse --circuit-count-dispatches -o /dev/null \
// RUN:   | FileCheck %s --check-prefix=COUNT
// RUN: hesper-run %s --backend=interp --input src=linear:1,100 --input pos=values:3 --input cache=const:-1 \
// RUN:   --print-results | FileCheck %s --check-prefix=VALUES
// RUN: hesper-opt %s --hesper-fuse -o %t.mlir
// RUN: hesper-run %t.mlir --backend=interp --input src=linear:1,100 --input pos=values:3 --input cache=const:-1 \
// RUN:   --print-results | FileCheck %s --check-prefix=VALUES
// RUN: hesper-run %s --validate-fusion | FileCheck %s --check-prefix=VALID

// FUSED-LABEL: circuit.graph @vcache_write(
// FUSED-SAME:    %[[SRC:[^:]*]]: tensor<4x16xf32> {{[^,]*}}, %[[POS:[^:]*]]: tensor<1xi32> {{[^,]*}}, %[[CACHE:[^:]*]]: tensor<4x8x16xf32>
// FUSED-NEXT:    circuit.scatter grid(64) ins(%[[SRC]], %[[POS]] : tensor<4x16xf32>, tensor<1xi32>) into %[[CACHE]] : tensor<4x8x16xf32> {
// FUSED-NEXT:    ^bb0(%[[LANE:[^:]*]]: i32, %[[V:[^:]*]]: f32, %[[P:[^:]*]]: i32):
// FUSED-DAG:       %[[C16:.*]] = exp.constant 16 : i32
// FUSED-DAG:       %[[C128:.*]] = exp.constant 128 : i32
// FUSED-DAG:       %[[H:.*]] = exp.div_by_const %[[LANE]], 16 : i32
// FUSED-DAG:       %[[D:.*]] = exp.rem_by_const %[[LANE]], 16 : i32
// FUSED-DAG:       %[[HB:.*]] = exp.mul %[[H]], %[[C128]] : i32
// FUSED-DAG:       %[[ROW:.*]] = exp.mul %[[P]], %[[C16]] : i32
// FUSED-DAG:       %[[A0:.*]] = exp.add %[[HB]], %[[ROW]] : i32
// FUSED-DAG:       %[[A:.*]] = exp.add %[[A0]], %[[D]] : i32
// FUSED:           circuit.yield %[[A]], %[[V]] : i32, f32
// FUSED-NEXT:    }
// FUSED-NEXT:    circuit.output

// COUNT: graph @vcache_write: 1 dispatches (1 scatter)

// VALUES: argument cache (tensor<4x8x16xf32>): -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 100 101 102 103 104 105 106 107 108 109 110 111 112 113 114 115 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 116 117 118 119 120 121 122 123 124 125 126 127 128 129 130 131 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 132 133 134 135 136 137 138 139 140 141 142 143 144 145 146 147 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 148 149 150 151 152 153 154 155 156 157 158 159 160 161 162 163 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1{{$}}

// VALID: graph @vcache_write: 1 -> 1 dispatches, {{.*}}: ok

circuit.graph @vcache_write(%src: tensor<4x16xf32> {circuit.name = "src"},
                             %pos: tensor<1xi32> {circuit.name = "pos"},
                             %cache: tensor<4x8x16xf32> {circuit.name = "cache"}) {
  // Row pos of every head: cache[h, pos, d] = src[h, d], that is
  // addr = (i div 16) * 128 + pos * 16 + (i mod 16).
  %w = circuit.scatter grid(64) ins(%src, %pos : tensor<4x16xf32>, tensor<1xi32>)
      into %cache : tensor<4x8x16xf32> {
  ^bb0(%lane: i32, %v: f32, %p: i32):
    %head = exp.div_by_const %lane, 16 : i32
    %d = exp.rem_by_const %lane, 16 : i32
    %c128 = exp.constant 128 : i32
    %c16 = exp.constant 16 : i32
    %hbase = exp.mul %head, %c128 : i32
    %row = exp.mul %p, %c16 : i32
    %a0 = exp.add %hbase, %row : i32
    %a = exp.add %a0, %d : i32
    circuit.yield %a, %v : i32, f32
  }
  circuit.output
}
