// Two gathers whose rows come from two tables split by token (rows 0-2 of
// the first, 3-4 of the second; an index past a table's end reads zeros),
// added by a map. hesper-fuse inlines both gathers into the map as
// circuit.extract, which must yield 0 out of range on every target (it
// read past the buffer on the CPU target before). t0 = 0, 1, ..., t1 =
// 100, 101, ...: token 1 is row 1 of t0 (8..15), token 4 row 1 of t1
// (108..115).
//
// RUN: hesper-run %s --backend=interp --print-results --input tok=values:1 \
// RUN:   --input t0=linear:1,0 --input t1=linear:1,100 | FileCheck %s --check-prefix=TOK1
// RUN: hesper-run %s --backend=interp --print-results --input tok=values:4 \
// RUN:   --input t0=linear:1,0 --input t1=linear:1,100 | FileCheck %s --check-prefix=TOK4
// RUN: hesper-opt %s --hesper-fuse | FileCheck %s --check-prefix=FUSED
// TOK1: result #0 (tensor<8xf32>): 8 9 10 11 12 13 14 15{{$}}
// TOK4: result #0 (tensor<8xf32>): 108 109 110 111 112 113 114 115{{$}}
// FUSED: circuit.map
// FUSED-COUNT-2: circuit.extract
// FUSED-NOT: circuit.gather

circuit.graph @chunks(%tok: tensor<1xi32> {circuit.name = "tok"},
                      %t0: tensor<3x8xf32> {circuit.name = "t0"},
                      %t1: tensor<2x8xf32> {circuit.name = "t1"}) -> tensor<8xf32> {
  %a = circuit.gather %t0 ins(%tok : tensor<1xi32>) : tensor<3x8xf32> -> tensor<8xf32> {
  ^bb0(%lane: i32, %t: i32):
    %first = exp.constant 0 : i32
    %row = exp.sub %t, %first : i32
    %cnt = exp.constant 3 : i32
    %in = exp.cmp ult, %row, %cnt : i32
    %w = exp.constant 8 : i32
    %base = exp.mul %row, %w : i32
    %i = exp.add %base, %lane : i32
    %past = exp.constant 24 : i32
    %r = exp.select %in, %i, %past : i32
    circuit.yield %r : i32
  }
  %b = circuit.gather %t1 ins(%tok : tensor<1xi32>) : tensor<2x8xf32> -> tensor<8xf32> {
  ^bb0(%lane: i32, %t: i32):
    %first = exp.constant 3 : i32
    %row = exp.sub %t, %first : i32
    %cnt = exp.constant 2 : i32
    %in = exp.cmp ult, %row, %cnt : i32
    %w = exp.constant 8 : i32
    %base = exp.mul %row, %w : i32
    %i = exp.add %base, %lane : i32
    %past = exp.constant 16 : i32
    %r = exp.select %in, %i, %past : i32
    circuit.yield %r : i32
  }
  %s = circuit.map ins(%a, %b : tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32> {
  ^bb0(%lane: i32, %x: f32, %y: f32):
    %r = exp.add %x, %y : f32
    circuit.yield %r : f32
  }
  circuit.output %s : tensor<8xf32>
}
