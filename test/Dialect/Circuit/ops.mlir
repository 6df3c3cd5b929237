// RUN: hesper-opt %s | hesper-opt | FileCheck %s
// RUN: hesper-opt %s --mlir-print-op-generic | hesper-opt | FileCheck %s

// Round trip of every circuit op and type, in custom and generic form.

//===----------------------------------------------------------------------===//
// Graphs, types, output, zeros
//===----------------------------------------------------------------------===//

// Every element type in a signature, several arguments and results.

// CHECK-LABEL: circuit.graph @signature(
// CHECK-SAME:    %[[A:.*]]: tensor<4x8xf32>, %[[B:.*]]: tensor<16xf16>, %[[C:.*]]: tensor<2x2x2xi32>,
// CHECK-SAME:    %{{.*}}: tensor<64x32x!circuit.q8_0>, %{{.*}}: tensor<8x256x!circuit.q4_k>,
// CHECK-SAME:    %{{.*}}: tensor<8x512x!circuit.q6_k>, %{{.*}}: tensor<4x128x!circuit.i2_s>,
// CHECK-SAME:    %{{.*}}: tensor<4x64x!circuit.q4_0>, %{{.*}}: tensor<2x256x!circuit.q5_k>, %{{.*}}: tensor<3x5xbf16>,
// CHECK-SAME:    %[[Q:.*]]: tensor<2x64x!circuit.q8_1>)
// CHECK-SAME:    -> (tensor<4x8xf32>, tensor<2x64x!circuit.q8_1>, tensor<16xf16>, tensor<2x2x2xi32>)
// CHECK-NEXT:    circuit.output %[[A]], %[[Q]], %[[B]], %[[C]] : tensor<4x8xf32>, tensor<2x64x!circuit.q8_1>, tensor<16xf16>, tensor<2x2x2xi32>
// CHECK-NEXT:  }
circuit.graph @signature(%a: tensor<4x8xf32>, %b: tensor<16xf16>,
                         %c: tensor<2x2x2xi32>,
                         %w0: tensor<64x32x!circuit.q8_0>,
                         %w1: tensor<8x256x!circuit.q4_k>,
                         %w2: tensor<8x512x!circuit.q6_k>,
                         %w3: tensor<4x128x!circuit.i2_s>,
                         %w4: tensor<4x64x!circuit.q4_0>,
                         %w5: tensor<2x256x!circuit.q5_k>,
                         %w6: tensor<3x5xbf16>,
                         %q: tensor<2x64x!circuit.q8_1>)
    -> (tensor<4x8xf32>, tensor<2x64x!circuit.q8_1>, tensor<16xf16>,
        tensor<2x2x2xi32>) {
  circuit.output %a, %q, %b, %c
      : tensor<4x8xf32>, tensor<2x64x!circuit.q8_1>, tensor<16xf16>,
        tensor<2x2x2xi32>
}

// Argument, result and discardable attributes.

// CHECK-LABEL: circuit.graph @attributes(
// CHECK-SAME:    %[[X:.*]]: tensor<4xf32> {hesper.name = "x"})
// CHECK-SAME:    -> (tensor<4xf32> {hesper.name = "y"}) attributes {hesper.tag} {
// CHECK-NEXT:    circuit.output %[[X]] : tensor<4xf32>
circuit.graph @attributes(%x: tensor<4xf32> {hesper.name = "x"})
    -> (tensor<4xf32> {hesper.name = "y"}) attributes {hesper.tag} {
  circuit.output %x : tensor<4xf32>
}

// A graph with neither arguments nor results.

// CHECK-LABEL: circuit.graph @nothing() {
// CHECK-NEXT:    circuit.output
// CHECK-NEXT:  }
circuit.graph @nothing() {
  circuit.output
}

// CHECK-LABEL: circuit.graph @zeros()
// CHECK-SAME:    -> (tensor<256xf32>, tensor<4x4xf16>, tensor<8xi32>)
// CHECK-DAG:     %[[Z0:.*]] = circuit.zeros : tensor<256xf32>
// CHECK-DAG:     %[[Z1:.*]] = circuit.zeros : tensor<4x4xf16>
// CHECK-DAG:     %[[Z2:.*]] = circuit.zeros : tensor<8xi32>
// CHECK:         circuit.output %[[Z0]], %[[Z1]], %[[Z2]] : tensor<256xf32>, tensor<4x4xf16>, tensor<8xi32>
circuit.graph @zeros() -> (tensor<256xf32>, tensor<4x4xf16>, tensor<8xi32>) {
  %z0 = circuit.zeros : tensor<256xf32>
  %z1 = circuit.zeros : tensor<4x4xf16>
  %z2 = circuit.zeros : tensor<8xi32>
  circuit.output %z0, %z1, %z2 : tensor<256xf32>, tensor<4x4xf16>, tensor<8xi32>
}

//===----------------------------------------------------------------------===//
// circuit.map
//===----------------------------------------------------------------------===//

// No inputs: computed from the lane index alone.

// CHECK-LABEL: circuit.graph @map_iota()
// CHECK:         %[[R:.*]] = circuit.map -> tensor<64xf32> {
// CHECK-NEXT:    ^bb0(%[[LANE:.*]]: i32):
// CHECK-NEXT:      %[[F:.*]] = exp.convert %[[LANE]] : i32 to f32
// CHECK-NEXT:      circuit.yield %[[F]] : f32
// CHECK-NEXT:    }
// CHECK-NEXT:    circuit.output %[[R]] : tensor<64xf32>
circuit.graph @map_iota() -> tensor<64xf32> {
  %r = circuit.map -> tensor<64xf32> {
  ^bb0(%lane: i32):
    %f = exp.convert %lane : i32 to f32
    circuit.yield %f : f32
  }
  circuit.output %r : tensor<64xf32>
}

// One input, with a discardable attribute on the op.

// CHECK-LABEL: circuit.graph @map_one(
// CHECK-SAME:    %[[X:.*]]: tensor<128xf16>)
// CHECK:         %[[R:.*]] = circuit.map ins(%[[X]] : tensor<128xf16>) -> tensor<128xf16> attributes {tag = "silu"} {
// CHECK-NEXT:    ^bb0(%{{.*}}: i32, %[[V:.*]]: f16):
// CHECK-NEXT:      %[[S:.*]] = exp.silu %[[V]] : f16
// CHECK-NEXT:      circuit.yield %[[S]] : f16
// CHECK-NEXT:    }
circuit.graph @map_one(%x: tensor<128xf16>) -> tensor<128xf16> {
  %r = circuit.map ins(%x : tensor<128xf16>) -> tensor<128xf16>
      attributes {tag = "silu"} {
  ^bb0(%lane: i32, %v: f16):
    %s = exp.silu %v : f16
    circuit.yield %s : f16
  }
  circuit.output %r : tensor<128xf16>
}

// Several inputs, broadcast over a [4, 8] iteration: the same shape, a [8]
// suffix, a [1] scalar, a [4, 1] row statistic and a flat [32].

// CHECK-LABEL: circuit.graph @map_broadcast(
// CHECK-SAME:    %[[X:.*]]: tensor<4x8xf32>, %[[W:.*]]: tensor<8xf32>, %[[S:.*]]: tensor<1xf32>,
// CHECK-SAME:    %[[ROW:.*]]: tensor<4x1xf32>, %[[FLAT:.*]]: tensor<32xf32>)
// CHECK:         %[[R:.*]] = circuit.map ins(%[[X]], %[[W]], %[[S]], %[[ROW]], %[[FLAT]] : tensor<4x8xf32>, tensor<8xf32>, tensor<1xf32>, tensor<4x1xf32>, tensor<32xf32>) -> tensor<4x8xf32> {
// CHECK-NEXT:    ^bb0(%{{.*}}: i32, %[[A:.*]]: f32, %[[B:.*]]: f32, %[[C:.*]]: f32, %[[D:.*]]: f32, %[[E:.*]]: f32):
// CHECK-NEXT:      %[[P:.*]] = exp.mul %[[A]], %[[B]] : f32
// CHECK-NEXT:      %[[Q:.*]] = exp.fma %[[P]], %[[C]], %[[D]] : f32
// CHECK-NEXT:      %[[T:.*]] = exp.add %[[Q]], %[[E]] : f32
// CHECK-NEXT:      circuit.yield %[[T]] : f32
// CHECK-NEXT:    }
// CHECK-NEXT:    circuit.output %[[R]] : tensor<4x8xf32>
circuit.graph @map_broadcast(%x: tensor<4x8xf32>, %w: tensor<8xf32>,
                             %s: tensor<1xf32>, %row: tensor<4x1xf32>,
                             %flat: tensor<32xf32>) -> tensor<4x8xf32> {
  %r = circuit.map ins(%x, %w, %s, %row, %flat
                       : tensor<4x8xf32>, tensor<8xf32>, tensor<1xf32>,
                         tensor<4x1xf32>, tensor<32xf32>) -> tensor<4x8xf32> {
  ^bb0(%lane: i32, %a: f32, %b: f32, %c: f32, %d: f32, %e: f32):
    %p = exp.mul %a, %b : f32
    %q = exp.fma %p, %c, %d : f32
    %t = exp.add %q, %e : f32
    circuit.yield %t : f32
  }
  circuit.output %r : tensor<4x8xf32>
}

// Mixed element types: i32 and f16 inputs, an i32 result.

// CHECK-LABEL: circuit.graph @map_mixed(
// CHECK:         circuit.map ins(%{{.*}}, %{{.*}} : tensor<16xi32>, tensor<16xf16>) -> tensor<16xi32> {
// CHECK-NEXT:    ^bb0(%[[L:.*]]: i32, %[[I:.*]]: i32, %[[H:.*]]: f16):
// CHECK-NEXT:      %[[HI:.*]] = exp.convert %[[H]] : f16 to i32
// CHECK-NEXT:      %[[S:.*]] = exp.add %[[I]], %[[HI]] : i32
// CHECK-NEXT:      %[[T:.*]] = exp.add %[[S]], %[[L]] : i32
// CHECK-NEXT:      circuit.yield %[[T]] : i32
circuit.graph @map_mixed(%i: tensor<16xi32>, %h: tensor<16xf16>)
    -> tensor<16xi32> {
  %r = circuit.map ins(%i, %h : tensor<16xi32>, tensor<16xf16>)
      -> tensor<16xi32> {
  ^bb0(%lane: i32, %a: i32, %b: f16):
    %bi = exp.convert %b : f16 to i32
    %s = exp.add %a, %bi : i32
    %t = exp.add %s, %lane : i32
    circuit.yield %t : i32
  }
  circuit.output %r : tensor<16xi32>
}

//===----------------------------------------------------------------------===//
// circuit.gather
//===----------------------------------------------------------------------===//

// CHECK-LABEL: circuit.graph @gather_reverse(
// CHECK-SAME:    %[[X:.*]]: tensor<8xf32>)
// CHECK:         %[[R:.*]] = circuit.gather %[[X]] : tensor<8xf32> -> tensor<8xf32> {
// CHECK-NEXT:    ^bb0(%[[LANE:.*]]: i32):
// CHECK-NEXT:      %[[C7:.*]] = exp.constant 7 : i32
// CHECK-NEXT:      %[[A:.*]] = exp.sub %[[C7]], %[[LANE]] : i32
// CHECK-NEXT:      circuit.yield %[[A]] : i32
// CHECK-NEXT:    }
circuit.graph @gather_reverse(%x: tensor<8xf32>) -> tensor<8xf32> {
  %r = circuit.gather %x : tensor<8xf32> -> tensor<8xf32> {
  ^bb0(%lane: i32):
    %c7 = exp.constant 7 : i32
    %a = exp.sub %c7, %lane : i32
    circuit.yield %a : i32
  }
  circuit.output %r : tensor<8xf32>
}

// An embedding lookup: the token ids are an extra input, the result has
// another shape than the source.

// CHECK-LABEL: circuit.graph @gather_embedding(
// CHECK-SAME:    %[[TABLE:.*]]: tensor<100x16xf16>, %[[IDS:.*]]: tensor<4x1xi32>)
// CHECK:         %[[R:.*]] = circuit.gather %[[TABLE]] ins(%[[IDS]] : tensor<4x1xi32>) : tensor<100x16xf16> -> tensor<4x16xf16> {
// CHECK-NEXT:    ^bb0(%[[LANE:.*]]: i32, %[[ID:.*]]: i32):
// CHECK:           circuit.yield %{{.*}} : i32
// CHECK-NEXT:    }
// CHECK-NEXT:    circuit.output %[[R]] : tensor<4x16xf16>
circuit.graph @gather_embedding(%table: tensor<100x16xf16>,
                                %ids: tensor<4x1xi32>) -> tensor<4x16xf16> {
  %r = circuit.gather %table ins(%ids : tensor<4x1xi32>)
      : tensor<100x16xf16> -> tensor<4x16xf16> {
  ^bb0(%lane: i32, %id: i32):
    %c16 = exp.constant 16 : i32
    %col = exp.rem %lane, %c16 : i32
    %base = exp.mul %id, %c16 : i32
    %a = exp.add %base, %col : i32
    circuit.yield %a : i32
  }
  circuit.output %r : tensor<4x16xf16>
}

//===----------------------------------------------------------------------===//
// circuit.scatter_add
//===----------------------------------------------------------------------===//

// CHECK-LABEL: circuit.graph @scatter_add(
// CHECK-SAME:    %[[DY:.*]]: tensor<8x64xf32>, %[[T:.*]]: tensor<8xi32>)
// CHECK:         %[[D:.*]] = circuit.scatter_add %[[DY]], %[[T]] : tensor<8x64xf32>, tensor<8xi32> -> tensor<256x64xf32>
// CHECK-NEXT:    circuit.output %[[D]] : tensor<256x64xf32>
circuit.graph @scatter_add(%dy: tensor<8x64xf32>, %t: tensor<8xi32>)
    -> tensor<256x64xf32> {
  %d = circuit.scatter_add %dy, %t
      : tensor<8x64xf32>, tensor<8xi32> -> tensor<256x64xf32>
  circuit.output %d : tensor<256x64xf32>
}

//===----------------------------------------------------------------------===//
// circuit.scatter / circuit.scatter_multi
//===----------------------------------------------------------------------===//

// In place into a graph argument (a cache), its result unused.

// CHECK-LABEL: circuit.graph @scatter_into_argument(
// CHECK-SAME:    %[[X:.*]]: tensor<128xf32>, %[[CACHE:.*]]: tensor<256xf32>)
// CHECK:         %{{.*}} = circuit.scatter grid(128) ins(%[[X]] : tensor<128xf32>) into %[[CACHE]] : tensor<256xf32> {
// CHECK-NEXT:    ^bb0(%[[LANE:.*]]: i32, %[[V:.*]]: f32):
// CHECK-NEXT:      %[[C:.*]] = exp.constant 128 : i32
// CHECK-NEXT:      %[[A:.*]] = exp.add %[[LANE]], %[[C]] : i32
// CHECK-NEXT:      circuit.yield %[[A]], %[[V]] : i32, f32
// CHECK-NEXT:    }
// CHECK-NEXT:    circuit.output
circuit.graph @scatter_into_argument(%x: tensor<128xf32>,
                                     %cache: tensor<256xf32>) {
  %r = circuit.scatter grid(128) ins(%x : tensor<128xf32>)
      into %cache : tensor<256xf32> {
  ^bb0(%lane: i32, %v: f32):
    %c128 = exp.constant 128 : i32
    %a = exp.add %lane, %c128 : i32
    circuit.yield %a, %v : i32, f32
  }
  circuit.output
}

// Into a fresh buffer, from an input of another element type.

// CHECK-LABEL: circuit.graph @scatter_into_zeros(
// CHECK-SAME:    %[[IDS:.*]]: tensor<4xf32>)
// CHECK:         %[[Z:.*]] = circuit.zeros : tensor<16xi32>
// CHECK:         %[[R:.*]] = circuit.scatter grid(4) ins(%[[IDS]] : tensor<4xf32>) into %[[Z]] : tensor<16xi32> {
// CHECK-NEXT:    ^bb0(%[[LANE:.*]]: i32, %[[V:.*]]: f32):
// CHECK:           circuit.yield %{{.*}}, %{{.*}} : i32, i32
// CHECK-NEXT:    }
// CHECK-NEXT:    circuit.output %[[R]] : tensor<16xi32>
circuit.graph @scatter_into_zeros(%ids: tensor<4xf32>) -> tensor<16xi32> {
  %z = circuit.zeros : tensor<16xi32>
  %r = circuit.scatter grid(4) ins(%ids : tensor<4xf32>)
      into %z : tensor<16xi32> {
  ^bb0(%lane: i32, %v: f32):
    %c4 = exp.constant 4 : i32
    %a = exp.mul %lane, %c4 : i32
    %vi = exp.convert %v : f32 to i32
    circuit.yield %a, %vi : i32, i32
  }
  circuit.output %r : tensor<16xi32>
}

// A chain of in-place writes: each scatter writes the previous version.

// CHECK-LABEL: circuit.graph @scatter_chain(
// CHECK-SAME:    %[[K:.*]]: tensor<64xf16>, %[[CACHE:.*]]: tensor<512xf16>)
// CHECK:         %[[V1:.*]] = circuit.scatter grid(64) ins(%[[K]] : tensor<64xf16>) into %[[CACHE]] : tensor<512xf16> {
// CHECK:         %[[V2:.*]] = circuit.scatter grid(64) ins(%[[K]] : tensor<64xf16>) into %[[V1]] : tensor<512xf16> {
// CHECK:         %[[Z:.*]] = circuit.zeros : tensor<8xf16>
// CHECK:         %[[Z1:.*]] = circuit.scatter grid(64) ins(%[[K]] : tensor<64xf16>) into %[[Z]] : tensor<8xf16> {
// CHECK:         %[[Z2:.*]] = circuit.scatter grid(64) ins(%[[K]] : tensor<64xf16>) into %[[Z1]] : tensor<8xf16> {
// CHECK:         circuit.output %[[V2]], %[[Z2]] : tensor<512xf16>, tensor<8xf16>
circuit.graph @scatter_chain(%k: tensor<64xf16>, %cache: tensor<512xf16>)
    -> (tensor<512xf16>, tensor<8xf16>) {
  %v1 = circuit.scatter grid(64) ins(%k : tensor<64xf16>)
      into %cache : tensor<512xf16> {
  ^bb0(%lane: i32, %v: f16):
    circuit.yield %lane, %v : i32, f16
  }
  %v2 = circuit.scatter grid(64) ins(%k : tensor<64xf16>)
      into %v1 : tensor<512xf16> {
  ^bb0(%lane: i32, %v: f16):
    %c64 = exp.constant 64 : i32
    %a = exp.add %lane, %c64 : i32
    circuit.yield %a, %v : i32, f16
  }
  %z = circuit.zeros : tensor<8xf16>
  %z1 = circuit.scatter grid(64) ins(%k : tensor<64xf16>)
      into %z : tensor<8xf16> {
  ^bb0(%lane: i32, %v: f16):
    %one = exp.constant 1.0 : f16
    circuit.yield %lane, %one : i32, f16
  }
  %z2 = circuit.scatter grid(64) ins(%k : tensor<64xf16>)
      into %z1 : tensor<8xf16> {
  ^bb0(%lane: i32, %v: f16):
    %none = exp.constant -1 : i32
    %two = exp.constant 2.0 : f16
    circuit.yield %none, %two : i32, f16
  }
  circuit.output %v2, %z2 : tensor<512xf16>, tensor<8xf16>
}

// Two destinations (a graph argument and a fresh buffer), broadcast inputs.

// CHECK-LABEL: circuit.graph @scatter_multi(
// CHECK-SAME:    %[[K:.*]]: tensor<64xf32>, %[[V:.*]]: tensor<1xf32>, %[[KC:.*]]: tensor<512xf32>)
// CHECK:         %[[Z:.*]] = circuit.zeros : tensor<512xf32>
// CHECK:         %[[R:.*]]:2 = circuit.scatter_multi grid(64) ins(%[[K]], %[[V]] : tensor<64xf32>, tensor<1xf32>) into(%[[KC]], %[[Z]] : tensor<512xf32>, tensor<512xf32>) {
// CHECK-NEXT:    ^bb0(%[[LANE:.*]]: i32, %[[A:.*]]: f32, %[[B:.*]]: f32):
// CHECK-NEXT:      circuit.yield %[[LANE]], %[[A]], %[[LANE]], %[[B]] : i32, f32, i32, f32
// CHECK-NEXT:    }
// CHECK-NEXT:    circuit.output %[[R]]#0, %[[R]]#1 : tensor<512xf32>, tensor<512xf32>
circuit.graph @scatter_multi(%k: tensor<64xf32>, %v: tensor<1xf32>,
                             %kc: tensor<512xf32>)
    -> (tensor<512xf32>, tensor<512xf32>) {
  %z = circuit.zeros : tensor<512xf32>
  %k2, %v2 = circuit.scatter_multi grid(64)
      ins(%k, %v : tensor<64xf32>, tensor<1xf32>)
      into(%kc, %z : tensor<512xf32>, tensor<512xf32>) {
  ^bb0(%lane: i32, %a: f32, %b: f32):
    circuit.yield %lane, %a, %lane, %b : i32, f32, i32, f32
  }
  circuit.output %k2, %v2 : tensor<512xf32>, tensor<512xf32>
}

// Mixed element types, without inputs, after a scatter into one of the
// destinations.

// CHECK-LABEL: circuit.graph @scatter_multi_mixed(
// CHECK-SAME:    %[[A:.*]]: tensor<8xi32>, %[[B:.*]]: tensor<8xf16>)
// CHECK:         %[[A1:.*]] = circuit.scatter grid(8) ins(%[[B]] : tensor<8xf16>) into %[[A]] : tensor<8xi32> {
// CHECK:         %{{.*}}:2 = circuit.scatter_multi grid(2) into(%[[A1]], %[[B]] : tensor<8xi32>, tensor<8xf16>) {
// CHECK-NEXT:    ^bb0(%[[L:.*]]: i32):
// CHECK:           circuit.yield %[[L]], %[[L]], %[[L]], %{{.*}} : i32, i32, i32, f16
circuit.graph @scatter_multi_mixed(%a: tensor<8xi32>, %b: tensor<8xf16>) {
  %a1 = circuit.scatter grid(8) ins(%b : tensor<8xf16>)
      into %a : tensor<8xi32> {
  ^bb0(%lane: i32, %h: f16):
    circuit.yield %lane, %lane : i32, i32
  }
  %r:2 = circuit.scatter_multi grid(2)
      into(%a1, %b : tensor<8xi32>, tensor<8xf16>) {
  ^bb0(%lane: i32):
    %h = exp.convert %lane : i32 to f16
    circuit.yield %lane, %lane, %lane, %h : i32, i32, i32, f16
  }
  circuit.output
}

//===----------------------------------------------------------------------===//
// Reductions
//===----------------------------------------------------------------------===//

// CHECK-LABEL: circuit.graph @reduce(
// CHECK-SAME:    %[[X:.*]]: tensor<256xf32>, %[[M:.*]]: tensor<4x64xf32>, %[[H:.*]]: tensor<2x3x8xf16>)
// CHECK:         %[[S:.*]] = circuit.reduce sum %[[X]] : tensor<256xf32> -> tensor<1xf32>
// CHECK:         %[[SS:.*]] = circuit.reduce sum_sq %[[M]] : tensor<4x64xf32> -> tensor<4x1xf32>
// CHECK:         %[[MX:.*]] = circuit.reduce max %[[H]] : tensor<2x3x8xf16> -> tensor<2x3x1xf32>
// CHECK:         circuit.output %[[S]], %[[SS]], %[[MX]] : tensor<1xf32>, tensor<4x1xf32>, tensor<2x3x1xf32>
circuit.graph @reduce(%x: tensor<256xf32>, %m: tensor<4x64xf32>,
                      %h: tensor<2x3x8xf16>)
    -> (tensor<1xf32>, tensor<4x1xf32>, tensor<2x3x1xf32>) {
  %s = circuit.reduce sum %x : tensor<256xf32> -> tensor<1xf32>
  %ss = circuit.reduce sum_sq %m : tensor<4x64xf32> -> tensor<4x1xf32>
  %mx = circuit.reduce max %h : tensor<2x3x8xf16> -> tensor<2x3x1xf32>
  circuit.output %s, %ss, %mx : tensor<1xf32>, tensor<4x1xf32>, tensor<2x3x1xf32>
}

// A prologue computes the reduced value from several inputs: a dot product
// (rank 1), a masked row max over i32 scores (rank 2, broadcast [1]), and a
// single-input prologue.

// CHECK-LABEL: circuit.graph @reduce_prologue(
// CHECK-SAME:    %[[A:.*]]: tensor<64xf32>, %[[B:.*]]: tensor<64xf32>, %[[SC:.*]]: tensor<4x16xi32>, %[[T:.*]]: tensor<1xf32>)
// CHECK:         %[[DOT:.*]] = circuit.reduce sum %[[A]], %[[B]] : tensor<64xf32>, tensor<64xf32> -> tensor<1xf32> prologue {
// CHECK-NEXT:    ^bb0(%{{.*}}: i32, %[[P:.*]]: f32, %[[Q:.*]]: f32):
// CHECK-NEXT:      %[[PQ:.*]] = exp.mul %[[P]], %[[Q]] : f32
// CHECK-NEXT:      circuit.yield %[[PQ]] : f32
// CHECK-NEXT:    }
// CHECK:         %[[MAX:.*]] = circuit.reduce max %[[SC]], %[[T]] : tensor<4x16xi32>, tensor<1xf32> -> tensor<4x1xf32> prologue {
// CHECK-NEXT:    ^bb0(%{{.*}}: i32, %[[I:.*]]: i32, %[[TT:.*]]: f32):
// CHECK:           circuit.yield %{{.*}} : f32
// CHECK-NEXT:    }
// CHECK:         %[[ABS:.*]] = circuit.reduce sum %[[A]] : tensor<64xf32> -> tensor<1xf32> prologue {
// CHECK-NEXT:    ^bb0(%{{.*}}: i32, %[[V:.*]]: f32):
// CHECK-NEXT:      %[[AV:.*]] = exp.abs %[[V]] : f32
// CHECK-NEXT:      circuit.yield %[[AV]] : f32
// CHECK-NEXT:    }
// CHECK:         circuit.output %[[DOT]], %[[MAX]], %[[ABS]] : tensor<1xf32>, tensor<4x1xf32>, tensor<1xf32>
circuit.graph @reduce_prologue(%a: tensor<64xf32>, %b: tensor<64xf32>,
                               %scores: tensor<4x16xi32>, %t: tensor<1xf32>)
    -> (tensor<1xf32>, tensor<4x1xf32>, tensor<1xf32>) {
  %dot = circuit.reduce sum %a, %b : tensor<64xf32>, tensor<64xf32>
      -> tensor<1xf32> prologue {
  ^bb0(%lane: i32, %p: f32, %q: f32):
    %m = exp.mul %p, %q : f32
    circuit.yield %m : f32
  }
  %max = circuit.reduce max %scores, %t : tensor<4x16xi32>, tensor<1xf32>
      -> tensor<4x1xf32> prologue {
  ^bb0(%lane: i32, %s: i32, %tt: f32):
    %f = exp.convert %s : i32 to f32
    %y = exp.mul %f, %tt : f32
    circuit.yield %y : f32
  }
  %abs = circuit.reduce sum %a : tensor<64xf32> -> tensor<1xf32> prologue {
  ^bb0(%lane: i32, %v: f32):
    %av = exp.abs %v : f32
    circuit.yield %av : f32
  }
  circuit.output %dot, %max, %abs : tensor<1xf32>, tensor<4x1xf32>, tensor<1xf32>
}

// RMSNorm as a reduce_epilogue without prologue, and a softmax-style
// normalisation with a prologue (rank 2, f16 result).

// CHECK-LABEL: circuit.graph @reduce_epilogue(
// CHECK-SAME:    %[[X:.*]]: tensor<256xf32>, %[[G:.*]]: tensor<256xf32>, %[[S:.*]]: tensor<4x32xf16>)
// CHECK:         %[[N:.*]] = circuit.reduce_epilogue sum_sq %[[X]], %[[G]] : tensor<256xf32>, tensor<256xf32> -> tensor<256xf32> epilogue {
// CHECK-NEXT:    ^bb0(%{{.*}}: i32, %[[SS:.*]]: f32, %[[V:.*]]: f32, %[[W:.*]]: f32):
// CHECK:           %[[R:.*]] = exp.rsqrt %{{.*}} : f32
// CHECK:           circuit.yield %{{.*}} : f32
// CHECK-NEXT:    }
// CHECK:         %[[E:.*]] = circuit.reduce_epilogue sum %[[S]] : tensor<4x32xf16> -> tensor<4x32xf16> prologue {
// CHECK-NEXT:    ^bb0(%{{.*}}: i32, %[[H:.*]]: f16):
// CHECK-NEXT:      %[[HF:.*]] = exp.convert %[[H]] : f16 to f32
// CHECK-NEXT:      %[[EX:.*]] = exp.exp %[[HF]] : f32
// CHECK-NEXT:      circuit.yield %[[EX]] : f32
// CHECK-NEXT:    } epilogue {
// CHECK-NEXT:    ^bb0(%{{.*}}: i32, %[[SUM:.*]]: f32, %[[H2:.*]]: f16):
// CHECK:           circuit.yield %{{.*}} : f16
// CHECK-NEXT:    }
// CHECK:         circuit.output %[[N]], %[[E]] : tensor<256xf32>, tensor<4x32xf16>
circuit.graph @reduce_epilogue(%x: tensor<256xf32>, %g: tensor<256xf32>,
                               %s: tensor<4x32xf16>)
    -> (tensor<256xf32>, tensor<4x32xf16>) {
  %n = circuit.reduce_epilogue sum_sq %x, %g
      : tensor<256xf32>, tensor<256xf32> -> tensor<256xf32> epilogue {
  ^bb0(%lane: i32, %ss: f32, %v: f32, %w: f32):
    %d = exp.constant 256.0 : f32
    %eps = exp.constant 1.0e-06 : f32
    %m = exp.div %ss, %d : f32
    %me = exp.add %m, %eps : f32
    %r = exp.rsqrt %me : f32
    %nv = exp.mul %v, %r : f32
    %o = exp.mul %nv, %w : f32
    circuit.yield %o : f32
  }
  %e = circuit.reduce_epilogue sum %s : tensor<4x32xf16> -> tensor<4x32xf16>
      prologue {
  ^bb0(%lane: i32, %h: f16):
    %hf = exp.convert %h : f16 to f32
    %ex = exp.exp %hf : f32
    circuit.yield %ex : f32
  } epilogue {
  ^bb0(%lane: i32, %sum: f32, %h: f16):
    %hf = exp.convert %h : f16 to f32
    %ex = exp.exp %hf : f32
    %q = exp.div %ex, %sum : f32
    %qh = exp.convert %q : f32 to f16
    circuit.yield %qh : f16
  }
  circuit.output %n, %e : tensor<256xf32>, tensor<4x32xf16>
}

// Reduce then scatter: into a graph argument without prologue, and into a
// fresh buffer with a prologue.

// CHECK-LABEL: circuit.graph @reduce_scatter_epilogue(
// CHECK-SAME:    %[[X:.*]]: tensor<64xf32>, %[[DST:.*]]: tensor<256xf32>)
// CHECK:         %[[R:.*]] = circuit.reduce_scatter_epilogue sum %[[X]] : tensor<64xf32> into %[[DST]] : tensor<256xf32> epilogue {
// CHECK-NEXT:    ^bb0(%[[LANE:.*]]: i32, %[[S:.*]]: f32, %[[V:.*]]: f32):
// CHECK:           circuit.yield %{{.*}}, %{{.*}} : i32, f32
// CHECK-NEXT:    }
// CHECK:         %[[Z:.*]] = circuit.zeros : tensor<2x64xi32>
// CHECK:         %[[R2:.*]] = circuit.reduce_scatter_epilogue max %[[X]] : tensor<64xf32> into %[[Z]] : tensor<2x64xi32> prologue {
// CHECK-NEXT:    ^bb0(%{{.*}}: i32, %[[P:.*]]: f32):
// CHECK-NEXT:      %[[NEG:.*]] = exp.neg %[[P]] : f32
// CHECK-NEXT:      circuit.yield %[[NEG]] : f32
// CHECK-NEXT:    } epilogue {
// CHECK-NEXT:    ^bb0(%[[L2:.*]]: i32, %{{.*}}: f32, %{{.*}}: f32):
// CHECK:           circuit.yield %[[L2]], %{{.*}} : i32, i32
// CHECK-NEXT:    }
// CHECK:         circuit.output %[[R]], %[[R2]] : tensor<256xf32>, tensor<2x64xi32>
circuit.graph @reduce_scatter_epilogue(%x: tensor<64xf32>,
                                       %dst: tensor<256xf32>)
    -> (tensor<256xf32>, tensor<2x64xi32>) {
  %r = circuit.reduce_scatter_epilogue sum %x : tensor<64xf32>
      into %dst : tensor<256xf32> epilogue {
  ^bb0(%lane: i32, %s: f32, %v: f32):
    %c64 = exp.constant 64 : i32
    %a = exp.add %lane, %c64 : i32
    %q = exp.div %v, %s : f32
    %h = exp.constant 100.0 : f32
    %o = exp.mul %q, %h : f32
    circuit.yield %a, %o : i32, f32
  }
  %z = circuit.zeros : tensor<2x64xi32>
  %r2 = circuit.reduce_scatter_epilogue max %x : tensor<64xf32>
      into %z : tensor<2x64xi32> prologue {
  ^bb0(%lane: i32, %p: f32):
    %n = exp.neg %p : f32
    circuit.yield %n : f32
  } epilogue {
  ^bb0(%lane: i32, %m: f32, %v: f32):
    %eq = exp.cmp eq, %v, %m : f32
    %i = exp.convert %eq : i1 to i32
    circuit.yield %lane, %i : i32, i32
  }
  circuit.output %r, %r2 : tensor<256xf32>, tensor<2x64xi32>
}

//===----------------------------------------------------------------------===//
// circuit.matmul / circuit.quantize
//===----------------------------------------------------------------------===//

// Matvecs (rank-1 x) over every weight format, without epilogue.

// CHECK-LABEL: circuit.graph @matvec(
// CHECK-SAME:    %[[X:.*]]: tensor<256xf32>, %[[XH:.*]]: tensor<256xf16>,
// CHECK-SAME:    %[[WF:.*]]: tensor<64x256xf32>, %[[WH:.*]]: tensor<64x256xf16>, %[[W8:.*]]: tensor<64x256x!circuit.q8_0>,
// CHECK-SAME:    %[[W4:.*]]: tensor<64x256x!circuit.q4_k>, %[[W6:.*]]: tensor<64x256x!circuit.q6_k>, %[[W2:.*]]: tensor<64x256x!circuit.i2_s>)
// CHECK:         %[[Y0:.*]] = circuit.matmul %[[X]], %[[WF]] : tensor<256xf32>, tensor<64x256xf32> -> tensor<64xf32>
// CHECK:         %[[Y1:.*]] = circuit.matmul %[[XH]], %[[WH]] : tensor<256xf16>, tensor<64x256xf16> -> tensor<64xf16>
// CHECK:         %[[Y2:.*]] = circuit.matmul %[[X]], %[[W8]] : tensor<256xf32>, tensor<64x256x!circuit.q8_0> -> tensor<64xf32>
// CHECK:         %[[Y3:.*]] = circuit.matmul %[[X]], %[[W4]] : tensor<256xf32>, tensor<64x256x!circuit.q4_k> -> tensor<64xf32>
// CHECK:         %[[Y4:.*]] = circuit.matmul %[[XH]], %[[W6]] : tensor<256xf16>, tensor<64x256x!circuit.q6_k> -> tensor<64xf32>
// CHECK:         %[[Y5:.*]] = circuit.matmul %[[X]], %[[W2]] : tensor<256xf32>, tensor<64x256x!circuit.i2_s> -> tensor<64xf32>
// CHECK:         circuit.output %[[Y0]], %[[Y1]], %[[Y2]], %[[Y3]], %[[Y4]], %[[Y5]] :
circuit.graph @matvec(%x: tensor<256xf32>, %xh: tensor<256xf16>,
                      %wf: tensor<64x256xf32>, %wh: tensor<64x256xf16>,
                      %w8: tensor<64x256x!circuit.q8_0>,
                      %w4: tensor<64x256x!circuit.q4_k>,
                      %w6: tensor<64x256x!circuit.q6_k>,
                      %w2: tensor<64x256x!circuit.i2_s>)
    -> (tensor<64xf32>, tensor<64xf16>, tensor<64xf32>, tensor<64xf32>,
        tensor<64xf32>, tensor<64xf32>) {
  %y0 = circuit.matmul %x, %wf : tensor<256xf32>, tensor<64x256xf32> -> tensor<64xf32>
  %y1 = circuit.matmul %xh, %wh : tensor<256xf16>, tensor<64x256xf16> -> tensor<64xf16>
  %y2 = circuit.matmul %x, %w8 : tensor<256xf32>, tensor<64x256x!circuit.q8_0> -> tensor<64xf32>
  %y3 = circuit.matmul %x, %w4 : tensor<256xf32>, tensor<64x256x!circuit.q4_k> -> tensor<64xf32>
  %y4 = circuit.matmul %xh, %w6 : tensor<256xf16>, tensor<64x256x!circuit.q6_k> -> tensor<64xf32>
  %y5 = circuit.matmul %x, %w2 : tensor<256xf32>, tensor<64x256x!circuit.i2_s> -> tensor<64xf32>
  circuit.output %y0, %y1, %y2, %y3, %y4, %y5
      : tensor<64xf32>, tensor<64xf16>, tensor<64xf32>, tensor<64xf32>,
        tensor<64xf32>, tensor<64xf32>
}

// Rank-2 activations ([M, K] x [N, K] -> [M, N]), quantized activations, and
// epilogues with and without extra inputs.

// CHECK-LABEL: circuit.graph @matmul(
// CHECK-SAME:    %[[X:.*]]: tensor<4x256xf32>, %[[W:.*]]: tensor<32x256x!circuit.q4_k>, %[[B:.*]]: tensor<32xf32>,
// CHECK-SAME:    %[[RES:.*]]: tensor<4x32xf32>, %[[XQ:.*]]: tensor<4x256x!circuit.q8_1>, %[[W8:.*]]: tensor<32x256x!circuit.q8_0>)
// CHECK:         %[[Y0:.*]] = circuit.matmul %[[X]], %[[W]] : tensor<4x256xf32>, tensor<32x256x!circuit.q4_k> -> tensor<4x32xf32>
// CHECK:         %[[Y1:.*]] = circuit.matmul %[[X]], %[[W]] ins(%[[B]], %[[RES]] : tensor<32xf32>, tensor<4x32xf32>) : tensor<4x256xf32>, tensor<32x256x!circuit.q4_k> -> tensor<4x32xf32> epilogue {
// CHECK-NEXT:    ^bb0(%{{.*}}: i32, %[[ACC:.*]]: f32, %[[BIAS:.*]]: f32, %[[R:.*]]: f32):
// CHECK-NEXT:      %[[S:.*]] = exp.add %[[ACC]], %[[BIAS]] : f32
// CHECK-NEXT:      %[[G:.*]] = exp.gelu %[[S]] : f32
// CHECK-NEXT:      %[[O:.*]] = exp.add %[[G]], %[[R]] : f32
// CHECK-NEXT:      circuit.yield %[[O]] : f32
// CHECK-NEXT:    }
// CHECK:         %[[Y2:.*]] = circuit.matmul %[[XQ]], %[[W8]] : tensor<4x256x!circuit.q8_1>, tensor<32x256x!circuit.q8_0> -> tensor<4x32xf32> epilogue {
// CHECK-NEXT:    ^bb0(%{{.*}}: i32, %[[ACC2:.*]]: f32):
// CHECK-NEXT:      %[[SC:.*]] = exp.constant 5.000000e-01 : f32
// CHECK-NEXT:      %[[M:.*]] = exp.mul %[[ACC2]], %[[SC]] : f32
// CHECK-NEXT:      circuit.yield %[[M]] : f32
// CHECK-NEXT:    }
// CHECK:         %[[Y3:.*]] = circuit.matmul %[[XQ]], %[[W]] : tensor<4x256x!circuit.q8_1>, tensor<32x256x!circuit.q4_k> -> tensor<4x32xf16>
// CHECK:         circuit.output %[[Y0]], %[[Y1]], %[[Y2]], %[[Y3]] : tensor<4x32xf32>, tensor<4x32xf32>, tensor<4x32xf32>, tensor<4x32xf16>
circuit.graph @matmul(%x: tensor<4x256xf32>, %w: tensor<32x256x!circuit.q4_k>,
                      %b: tensor<32xf32>, %res: tensor<4x32xf32>,
                      %xq: tensor<4x256x!circuit.q8_1>,
                      %w8: tensor<32x256x!circuit.q8_0>)
    -> (tensor<4x32xf32>, tensor<4x32xf32>, tensor<4x32xf32>, tensor<4x32xf16>) {
  %y0 = circuit.matmul %x, %w
      : tensor<4x256xf32>, tensor<32x256x!circuit.q4_k> -> tensor<4x32xf32>
  %y1 = circuit.matmul %x, %w ins(%b, %res : tensor<32xf32>, tensor<4x32xf32>)
      : tensor<4x256xf32>, tensor<32x256x!circuit.q4_k> -> tensor<4x32xf32>
      epilogue {
  ^bb0(%lane: i32, %acc: f32, %bias: f32, %r: f32):
    %s = exp.add %acc, %bias : f32
    %g = exp.gelu %s : f32
    %o = exp.add %g, %r : f32
    circuit.yield %o : f32
  }
  %y2 = circuit.matmul %xq, %w8
      : tensor<4x256x!circuit.q8_1>, tensor<32x256x!circuit.q8_0>
      -> tensor<4x32xf32> epilogue {
  ^bb0(%lane: i32, %acc: f32):
    %half = exp.constant 0.5 : f32
    %m = exp.mul %acc, %half : f32
    circuit.yield %m : f32
  }
  %y3 = circuit.matmul %xq, %w
      : tensor<4x256x!circuit.q8_1>, tensor<32x256x!circuit.q4_k>
      -> tensor<4x32xf16>
  circuit.output %y0, %y1, %y2, %y3
      : tensor<4x32xf32>, tensor<4x32xf32>, tensor<4x32xf32>, tensor<4x32xf16>
}

// An f16 result computed by an epilogue from the f32 accumulator, with a
// broadcast [1] input.

// CHECK-LABEL: circuit.graph @matvec_f16_epilogue(
// CHECK:         circuit.matmul %{{.*}}, %{{.*}} ins(%{{.*}} : tensor<1xf32>) : tensor<128xf16>, tensor<16x128x!circuit.i2_s> -> tensor<16xf16> epilogue {
// CHECK-NEXT:    ^bb0(%{{.*}}: i32, %[[ACC:.*]]: f32, %[[SCALE:.*]]: f32):
// CHECK-NEXT:      %[[M:.*]] = exp.mul %[[ACC]], %[[SCALE]] : f32
// CHECK-NEXT:      %[[H:.*]] = exp.convert %[[M]] : f32 to f16
// CHECK-NEXT:      circuit.yield %[[H]] : f16
circuit.graph @matvec_f16_epilogue(%x: tensor<128xf16>,
                                   %w: tensor<16x128x!circuit.i2_s>,
                                   %scale: tensor<1xf32>) -> tensor<16xf16> {
  %y = circuit.matmul %x, %w ins(%scale : tensor<1xf32>)
      : tensor<128xf16>, tensor<16x128x!circuit.i2_s> -> tensor<16xf16>
      epilogue {
  ^bb0(%lane: i32, %acc: f32, %s: f32):
    %m = exp.mul %acc, %s : f32
    %h = exp.convert %m : f32 to f16
    circuit.yield %h : f16
  }
  circuit.output %y : tensor<16xf16>
}

// CHECK-LABEL: circuit.graph @quantize(
// CHECK-SAME:    %[[X:.*]]: tensor<256xf32>, %[[H:.*]]: tensor<4x64xf16>, %[[W:.*]]: tensor<8x256x!circuit.q8_0>)
// CHECK:         %[[Q:.*]] = circuit.quantize %[[X]] : tensor<256xf32> -> tensor<256x!circuit.q8_1>
// CHECK:         %[[Q0:.*]] = circuit.quantize %[[H]] : tensor<4x64xf16> -> tensor<4x64x!circuit.q8_0>
// CHECK:         %[[Y:.*]] = circuit.matmul %[[Q]], %[[W]] : tensor<256x!circuit.q8_1>, tensor<8x256x!circuit.q8_0> -> tensor<8xf32>
// CHECK:         circuit.output %[[Y]], %[[Q0]] : tensor<8xf32>, tensor<4x64x!circuit.q8_0>
circuit.graph @quantize(%x: tensor<256xf32>, %h: tensor<4x64xf16>,
                        %w: tensor<8x256x!circuit.q8_0>)
    -> (tensor<8xf32>, tensor<4x64x!circuit.q8_0>) {
  %q = circuit.quantize %x : tensor<256xf32> -> tensor<256x!circuit.q8_1>
  %q0 = circuit.quantize %h : tensor<4x64xf16> -> tensor<4x64x!circuit.q8_0>
  %y = circuit.matmul %q, %w
      : tensor<256x!circuit.q8_1>, tensor<8x256x!circuit.q8_0> -> tensor<8xf32>
  circuit.output %y, %q0 : tensor<8xf32>, tensor<4x64x!circuit.q8_0>
}

// circuit.write_rows: rows into a q8_0 and an f16 cache (written in place,
// so the result is the argument updated).
// CHECK-LABEL: circuit.graph @write_rows(
// CHECK-SAME:    %[[X:.*]]: tensor<2x64xf32>, %[[P:.*]]: tensor<1xi32>, %[[P2:.*]]: tensor<2xi32>, %[[KC:.*]]: tensor<512x!circuit.q8_0>, %[[VC:.*]]: tensor<512xf16>)
// CHECK:         %[[K:.*]] = circuit.write_rows %[[X]] at %[[P]] into %[[KC]] : tensor<2x64xf32>, tensor<1xi32> into tensor<512x!circuit.q8_0>
// CHECK:         %[[V:.*]] = circuit.write_rows %[[X]] at %[[P2]] into %[[VC]] : tensor<2x64xf32>, tensor<2xi32> into tensor<512xf16>
// CHECK:         circuit.output %[[K]], %[[V]]
circuit.graph @write_rows(%x: tensor<2x64xf32>, %p: tensor<1xi32>,
                          %p2: tensor<2xi32>,
                          %kc: tensor<512x!circuit.q8_0>, %vc: tensor<512xf16>)
    -> (tensor<512x!circuit.q8_0>, tensor<512xf16>) {
  %k = circuit.write_rows %x at %p into %kc
      : tensor<2x64xf32>, tensor<1xi32> into tensor<512x!circuit.q8_0>
  %v = circuit.write_rows %x at %p2 into %vc
      : tensor<2x64xf32>, tensor<2xi32> into tensor<512xf16>
  circuit.output %k, %v : tensor<512x!circuit.q8_0>, tensor<512xf16>
}

//===----------------------------------------------------------------------===//
// A decoder step: the primitives composed as a model uses them.
//===----------------------------------------------------------------------===//

// CHECK-LABEL: circuit.graph @decoder_step(
// CHECK-SAME:    %[[X:.*]]: tensor<256xf32>, %[[NORM:.*]]: tensor<256xf32>, %[[WK:.*]]: tensor<64x256x!circuit.q4_k>,
// CHECK-SAME:    %[[WV:.*]]: tensor<64x256x!circuit.q6_k>, %[[KC:.*]]: tensor<4x64xf32>, %[[VC:.*]]: tensor<4x64xf32>, %[[POS:.*]]: tensor<1xi32>)
// CHECK:         %[[N:.*]] = circuit.reduce_epilogue sum_sq %[[X]], %[[NORM]]
// CHECK:         %[[Q:.*]] = circuit.quantize %[[N]] : tensor<256xf32> -> tensor<256x!circuit.q8_1>
// CHECK:         %[[K:.*]] = circuit.matmul %[[Q]], %[[WK]] : tensor<256x!circuit.q8_1>, tensor<64x256x!circuit.q4_k> -> tensor<64xf32>
// CHECK:         %[[V:.*]] = circuit.matmul %[[Q]], %[[WV]] : tensor<256x!circuit.q8_1>, tensor<64x256x!circuit.q6_k> -> tensor<64xf32>
// CHECK:         %{{.*}}:2 = circuit.scatter_multi grid(64) ins(%[[K]], %[[V]], %[[POS]] : tensor<64xf32>, tensor<64xf32>, tensor<1xi32>) into(%[[KC]], %[[VC]] : tensor<4x64xf32>, tensor<4x64xf32>) {
// CHECK:         circuit.output
circuit.graph @decoder_step(%x: tensor<256xf32>, %norm: tensor<256xf32>,
                            %wk: tensor<64x256x!circuit.q4_k>,
                            %wv: tensor<64x256x!circuit.q6_k>,
                            %kc: tensor<4x64xf32>, %vc: tensor<4x64xf32>,
                            %pos: tensor<1xi32>) {
  %n = circuit.reduce_epilogue sum_sq %x, %norm
      : tensor<256xf32>, tensor<256xf32> -> tensor<256xf32> epilogue {
  ^bb0(%lane: i32, %ss: f32, %v: f32, %g: f32):
    %d = exp.constant 256.0 : f32
    %m = exp.div %ss, %d : f32
    %r = exp.rsqrt %m : f32
    %nv = exp.mul %v, %r : f32
    %o = exp.mul %nv, %g : f32
    circuit.yield %o : f32
  }
  %q = circuit.quantize %n : tensor<256xf32> -> tensor<256x!circuit.q8_1>
  %k = circuit.matmul %q, %wk
      : tensor<256x!circuit.q8_1>, tensor<64x256x!circuit.q4_k> -> tensor<64xf32>
  %v = circuit.matmul %q, %wv
      : tensor<256x!circuit.q8_1>, tensor<64x256x!circuit.q6_k> -> tensor<64xf32>
  %k2, %v2 = circuit.scatter_multi grid(64)
      ins(%k, %v, %pos : tensor<64xf32>, tensor<64xf32>, tensor<1xi32>)
      into(%kc, %vc : tensor<4x64xf32>, tensor<4x64xf32>) {
  ^bb0(%lane: i32, %a: f32, %b: f32, %p: i32):
    %c64 = exp.constant 64 : i32
    %row = exp.mul %p, %c64 : i32
    %addr = exp.add %row, %lane : i32
    circuit.yield %addr, %a, %addr, %b : i32, f32, i32, f32
  }
  circuit.output
}

// Scatters and reduce_scatter_epilogue take any number of inputs; the result
// type is the destination's.
// CHECK-LABEL: circuit.graph @scatter_input_counts(
// CHECK:         circuit.scatter grid(4) into %{{.*}} : tensor<16xf32>
// CHECK:         circuit.scatter grid(4) ins(%{{.*}}, %{{.*}} : tensor<4xf32>, tensor<1xi32>) into %{{.*}} : tensor<16xf32>
// CHECK:         circuit.reduce_scatter_epilogue sum %{{.*}}, %{{.*}} : tensor<4xf32>, tensor<4xf32> into %{{.*}} : tensor<16xf32>
circuit.graph @scatter_input_counts(%a: tensor<4xf32>, %b: tensor<4xf32>, %pos: tensor<1xi32>, %d: tensor<16xf32>) -> tensor<16xf32> {
  %z = circuit.zeros : tensor<16xf32>
  %r0 = circuit.scatter grid(4) into %z : tensor<16xf32> {
  ^bb0(%lane: i32):
    %one = exp.constant 1.0 : f32
    circuit.yield %lane, %one : i32, f32
  }
  %r1 = circuit.scatter grid(4) ins(%a, %pos : tensor<4xf32>, tensor<1xi32>) into %r0 : tensor<16xf32> {
  ^bb0(%lane: i32, %v: f32, %p: i32):
    %at = exp.add %lane, %p : i32
    circuit.yield %at, %v : i32, f32
  }
  %r2 = circuit.reduce_scatter_epilogue sum %a, %b : tensor<4xf32>, tensor<4xf32> into %d : tensor<16xf32> epilogue {
  ^bb0(%lane: i32, %s: f32, %x: f32, %y: f32):
    %q = exp.div %x, %s : f32
    circuit.yield %lane, %q : i32, f32
  }
  circuit.output %r1 : tensor<16xf32>
}

// A body may take an input whole and read it with circuit.extract.
// CHECK-LABEL: circuit.graph @whole_inputs(
// CHECK:         circuit.map ins(%{{.*}}, %{{.*}} : tensor<64xf32>, tensor<512xf32>) -> tensor<64xf32>
// CHECK:         ^bb0(%{{.*}}: i32, %{{.*}}: f32, %[[C:.*]]: tensor<512xf32>):
// CHECK:           circuit.extract %[[C]][%{{.*}}] : tensor<512xf32>
circuit.graph @whole_inputs(%x: tensor<64xf32>, %cache: tensor<512xf32>) -> tensor<64xf32> {
  %y = circuit.map ins(%x, %cache : tensor<64xf32>, tensor<512xf32>) -> tensor<64xf32> {
  ^bb0(%lane: i32, %v: f32, %c: tensor<512xf32>):
    %c8 = exp.constant 8 : i32
    %i = exp.mul %lane, %c8 : i32
    %e = circuit.extract %c[%i] : tensor<512xf32>
    %s = exp.add %v, %e : f32
    circuit.yield %s : f32
  }
  circuit.output %y : tensor<64xf32>
}

// CHECK-LABEL: circuit.graph @multi_matmul(
// CHECK:         circuit.multi_matmul %{{.*}}, %{{.*}}, %{{.*}} : tensor<256xf32>, tensor<64x256x!circuit.q4_k>, tensor<32x256xf16> -> tensor<64xf32>, tensor<32xf32> epilogues {
// CHECK:         exp.silu
circuit.graph @multi_matmul(%x: tensor<256xf32>, %a: tensor<64x256x!circuit.q4_k>, %b: tensor<32x256xf16>) -> (tensor<64xf32>, tensor<32xf32>) {
  %p, %q = circuit.multi_matmul %x, %a, %b : tensor<256xf32>, tensor<64x256x!circuit.q4_k>, tensor<32x256xf16> -> tensor<64xf32>, tensor<32xf32> epilogues {
  }, {
  ^bb0(%lane: i32, %acc: f32):
    %s = exp.silu %acc : f32
    circuit.yield %s : f32
  }
  circuit.output %p, %q : tensor<64xf32>, tensor<32xf32>
}

// Normalize and quantize in one op.
// CHECK-LABEL: circuit.graph @quantized_reduce_epilogue(
// CHECK:         circuit.reduce_epilogue sum_sq %{{.*}} : tensor<64xf32> -> tensor<64x!circuit.q8_1> epilogue
circuit.graph @quantized_reduce_epilogue(%x: tensor<64xf32>) -> tensor<64x!circuit.q8_1> {
  %y = circuit.reduce_epilogue sum_sq %x : tensor<64xf32> -> tensor<64x!circuit.q8_1> epilogue {
  ^bb0(%lane: i32, %ss: f32, %v: f32):
    %r = exp.rsqrt %ss : f32
    %n = exp.mul %v, %r : f32
    circuit.yield %n : f32
  }
  circuit.output %y : tensor<64x!circuit.q8_1>
}

// CHECK-LABEL: circuit.graph @attention
// CHECK: circuit.attention %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} {head_dim = 16 : i64, heads = 4 : i64, kv_heads = 2 : i64, scale = 2.500000e-01 : f32} : tensor<64xf32>, tensor<1024xf32>, tensor<1024xf32>, tensor<1xi32> -> tensor<64xf32>
circuit.graph @attention(%q: tensor<64xf32>, %k: tensor<1024xf32>, %v: tensor<1024xf32>, %pos: tensor<1xi32>) -> tensor<64xf32> {
  %o = circuit.attention %q, %k, %v, %pos {heads = 4 : i64, kv_heads = 2 : i64, head_dim = 16 : i64, scale = 0.25 : f32} : tensor<64xf32>, tensor<1024xf32>, tensor<1024xf32>, tensor<1xi32> -> tensor<64xf32>
  circuit.output %o : tensor<64xf32>
}

// CHECK-LABEL: circuit.graph @attention_sequences
// CHECK: circuit.attention %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} {head_dim = 16 : i64, heads = 4 : i64, kv_heads = 2 : i64, scale = 2.500000e-01 : f32, seq_len = 16 : i64} : tensor<128xf32>, tensor<1024xf32>, tensor<1024xf32>, tensor<2xi32> -> tensor<128xf32>
circuit.graph @attention_sequences(%q: tensor<128xf32>, %k: tensor<1024xf32>, %v: tensor<1024xf32>, %pos: tensor<2xi32>) -> tensor<128xf32> {
  %o = circuit.attention %q, %k, %v, %pos {heads = 4 : i64, kv_heads = 2 : i64, head_dim = 16 : i64, scale = 0.25 : f32, seq_len = 16 : i64} : tensor<128xf32>, tensor<1024xf32>, tensor<1024xf32>, tensor<2xi32> -> tensor<128xf32>
  circuit.output %o : tensor<128xf32>
}

// CHECK-LABEL: circuit.graph @gated_matmul
// CHECK: circuit.gated_matmul %{{.*}}, %{{.*}}, %{{.*}} : tensor<64xf32>, tensor<32x64x!circuit.q8_0>, tensor<32x64xf16> -> tensor<32xf32> combine {
// CHECK: exp.silu
circuit.graph @gated_matmul(%x: tensor<64xf32>, %g: tensor<32x64x!circuit.q8_0>, %u: tensor<32x64xf16>) -> tensor<32xf32> {
  %h = circuit.gated_matmul %x, %g, %u : tensor<64xf32>, tensor<32x64x!circuit.q8_0>, tensor<32x64xf16> -> tensor<32xf32> combine {
  ^bb0(%lane: i32, %a: f32, %b: f32):
    %s = exp.silu %a : f32
    %p = exp.mul %s, %b : f32
    circuit.yield %p : f32
  }
  circuit.output %h : tensor<32xf32>
}

// CHECK-LABEL: circuit.graph @expert_matmul
// CHECK: circuit.expert_matmul %{{.*}}, %{{.*}}, %{{.*}} : tensor<2x64xf32>, tensor<2x2xi32>, tensor<4x32x64x!circuit.q8_0> -> tensor<2x2x32xf32>
// CHECK: circuit.expert_matmul %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} : tensor<2x64xf32>, tensor<2x2xi32>, tensor<4x32x64x!circuit.q8_0>, tensor<4x32x64xf16> -> tensor<2x2x32xf32> combine {
// CHECK: exp.silu
// CHECK: circuit.expert_matmul %{{.*}}, %{{.*}}, %{{.*}} : tensor<2x2x32xf32>, tensor<2x2xi32>, tensor<4x64x32xf32> -> tensor<2x2x64xf32>
circuit.graph @expert_matmul(%x: tensor<2x64xf32>, %ids: tensor<2x2xi32>, %g: tensor<4x32x64x!circuit.q8_0>, %u: tensor<4x32x64xf16>, %d: tensor<4x64x32xf32>) -> tensor<2x2x64xf32> {
  %a = circuit.expert_matmul %x, %ids, %g : tensor<2x64xf32>, tensor<2x2xi32>, tensor<4x32x64x!circuit.q8_0> -> tensor<2x2x32xf32>
  %h = circuit.expert_matmul %x, %ids, %g, %u : tensor<2x64xf32>, tensor<2x2xi32>, tensor<4x32x64x!circuit.q8_0>, tensor<4x32x64xf16> -> tensor<2x2x32xf32> combine {
  ^bb0(%lane: i32, %p: f32, %q: f32):
    %s = exp.silu %p : f32
    %m = exp.mul %s, %q : f32
    circuit.yield %m : f32
  }
  %y = circuit.expert_matmul %h, %ids, %d : tensor<2x2x32xf32>, tensor<2x2xi32>, tensor<4x64x32xf32> -> tensor<2x2x64xf32>
  circuit.output %y : tensor<2x2x64xf32>
}

// Argument roles (ArgRoles.h) round-trip; a row range of a weight names its
// first row and count.
// CHECK-LABEL: circuit.graph @roles
// CHECK-SAME: circuit.role = "tokens"
// CHECK-SAME: circuit.role = "weight", circuit.rows = array<i64: 4096, 4>, circuit.tensor = "token_embd.weight"
// CHECK-SAME: circuit.role = "cache"
circuit.graph @roles(%t: tensor<1xi32> {circuit.name = "tokens", circuit.role = "tokens"},
                     %e: tensor<4x16xf32> {circuit.name = "token_embd.weight@1", circuit.role = "weight", circuit.tensor = "token_embd.weight", circuit.rows = array<i64: 4096, 4>},
                     %c: tensor<64xf32> {circuit.name = "cache_k.0", circuit.role = "cache"}) {
  circuit.output
}
