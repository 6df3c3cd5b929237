// Acceptance case 3: a map (x + 1) written into the slice [128, 256) of a
// 256-element graph argument. Fusion inlines the map into the write: one
// circuit.scatter whose address is lane + 128. With x[i] = i and dst
// filled with -7, dst[0..127] stay -7 and dst[128 + i] = i + 1.
//
// RUN: hesper-opt %s --hesper-fuse | FileCheck %s --check-prefix=FUSED
// RUN: hesper-opt %s --hesper-fuse --circuit-count-dispatches -o /dev/null \
// RUN:   | FileCheck %s --check-prefix=COUNT
// RUN: hesper-run %s --backend=interp --input x=iota --input dst=const:-7 --print-results \
// RUN:   | FileCheck %s --check-prefix=VALUES
// RUN: hesper-opt %s --hesper-fuse -o %t.mlir
// RUN: hesper-run %t.mlir --backend=interp --input x=iota --input dst=const:-7 --print-results \
// RUN:   | FileCheck %s --check-prefix=VALUES
// RUN: hesper-run %s --validate-fusion | FileCheck %s --check-prefix=VALID

// FUSED-LABEL: circuit.graph @write_slice(
// FUSED-SAME:    %[[X:[^:]*]]: tensor<128xf32> {{[^,]*}}, %[[DST:[^:]*]]: tensor<256xf32>
// FUSED-NOT:     circuit.map
// FUSED:         circuit.scatter grid(128) ins(%[[X]] : tensor<128xf32>) into %[[DST]] : tensor<256xf32> {
// FUSED-NEXT:    ^bb0(%[[LANE:[^:]*]]: i32, %[[V:[^:]*]]: f32):
// FUSED-DAG:       %[[C128:.*]] = exp.constant 128 : i32
// FUSED-DAG:       %[[ONE:.*]] = exp.constant 1.000000e+00 : f32
// FUSED-DAG:       %[[Y:.*]] = exp.add %[[V]], %[[ONE]] : f32
// FUSED-DAG:       %[[A:.*]] = exp.add %[[LANE]], %[[C128]] : i32
// FUSED:           circuit.yield %[[A]], %[[Y]] : i32, f32
// FUSED-NEXT:    }
// FUSED-NOT:     circuit.map
// FUSED:         circuit.output

// COUNT: graph @write_slice: 1 dispatches (1 scatter)

// VALUES: argument dst (tensor<256xf32>): -7 -7 -7 -7 -7 -7 -7 -7 -7 -7 -7 -7 -7 -7 -7 -7 -7 -7 -7 -7 -7 -7 -7 -7 -7 -7 -7 -7 -7 -7 -7 -7 -7 -7 -7 -7 -7 -7 -7 -7 -7 -7 -7 -7 -7 -7 -7 -7 -7 -7 -7 -7 -7 -7 -7 -7 -7 -7 -7 -7 -7 -7 -7 -7 -7 -7 -7 -7 -7 -7 -7 -7 -7 -7 -7 -7 -7 -7 -7 -7 -7 -7 -7 -7 -7 -7 -7 -7 -7 -7 -7 -7 -7 -7 -7 -7 -7 -7 -7 -7 -7 -7 -7 -7 -7 -7 -7 -7 -7 -7 -7 -7 -7 -7 -7 -7 -7 -7 -7 -7 -7 -7 -7 -7 -7 -7 -7 -7 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31 32 33 34 35 36 37 38 39 40 41 42 43 44 45 46 47 48 49 50 51 52 53 54 55 56 57 58 59 60 61 62 63 64 65 66 67 68 69 70 71 72 73 74 75 76 77 78 79 80 81 82 83 84 85 86 87 88 89 90 91 92 93 94 95 96 97 98 99 100 101 102 103 104 105 106 107 108 109 110 111 112 113 114 115 116 117 118 119 120 121 122 123 124 125 126 127 128{{$}}

// VALID: graph @write_slice: 2 -> 1 dispatches, {{.*}}: ok

circuit.graph @write_slice(%x: tensor<128xf32> {circuit.name = "x"},
                            %dst: tensor<256xf32> {circuit.name = "dst"}) {
  %y = circuit.map ins(%x : tensor<128xf32>) -> tensor<128xf32> {
  ^bb0(%lane: i32, %v: f32):
    %one = exp.constant 1.0 : f32
    %r = exp.add %v, %one : f32
    circuit.yield %r : f32
  }
  // writeSlice(dst, y, 128): dst[128 + i] = y[i], in place.
  %w = circuit.scatter grid(128) ins(%y : tensor<128xf32>)
      into %dst : tensor<256xf32> {
  ^bb0(%lane: i32, %v: f32):
    %c128 = exp.constant 128 : i32
    %a = exp.add %lane, %c128 : i32
    circuit.yield %a, %v : i32, f32
  }
  circuit.output
}
