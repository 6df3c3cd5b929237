// RUN: hesper-opt %s -split-input-file --convert-circuit-to-shaderm | FileCheck %s
// RUN: hesper-opt %s -split-input-file --convert-circuit-to-shaderm="wide-loads=false" | FileCheck %s --check-prefix=NARROW

// convert-circuit-to-shaderm, one case per op kind: the kernel it builds
// (workgroup size, ids, guards, loads and stores, the workgroup reductions) and
// the schedule (allocations, launches and their grids, results).

//===----------------------------------------------------------------------===//
// circuit.map
//===----------------------------------------------------------------------===//

// One lane per element, 256 lanes per workgroup, a bounds guard around the
// body; the body's lane argument is the global id as i32. The schedule
// allocates the result, launches ceil(1000 / 256) = 4 workgroups and keeps
// the graph's argument and result attributes.

// CHECK-LABEL: shaderm.kernel @scale_k0_map(
// CHECK-SAME:    %[[X:.*]]: !shaderm.buffer<1000xf32, read_only>, %[[Y:.*]]: !shaderm.buffer<1000xf32>) workgroup_size(256, 1, 1) {
// CHECK-NEXT:    %[[GID:.*]] = shaderm.global_id x
// CHECK-NEXT:    %[[N:.*]] = arith.constant 1000 : index
// CHECK-NEXT:    %[[IN:.*]] = arith.cmpi ult, %[[GID]], %[[N]] : index
// CHECK-NEXT:    scf.if %[[IN]] {
// CHECK-NEXT:      %[[LANE:.*]] = arith.index_cast %[[GID]] : index to i32
// CHECK-NEXT:      %[[V:.*]] = shaderm.load %[[X]][%[[GID]]] : !shaderm.buffer<1000xf32, read_only> -> f32
// CHECK-NEXT:      %[[F:.*]] = exp.convert %[[LANE]] : i32 to f32
// CHECK-NEXT:      %[[R:.*]] = exp.add %[[V]], %[[F]] : f32
// CHECK-NEXT:      shaderm.store %[[R]], %[[Y]][%[[GID]]] : f32, !shaderm.buffer<1000xf32>
// CHECK-NEXT:    }
// CHECK-NEXT:    shaderm.return
// CHECK-NEXT:  }
// CHECK-LABEL: shaderm.schedule @scale(
// CHECK-SAME:    %[[A:.*]]: !shaderm.buffer<1000xf32> {circuit.name = "x"}) -> (!shaderm.buffer<1000xf32> {circuit.name = "y"}) {
// CHECK-NEXT:    %[[B:.*]] = shaderm.alloc : !shaderm.buffer<1000xf32>
// CHECK-NEXT:    shaderm.launch @scale_k0_map grid [4, 1, 1](%[[A]], %[[B]]) {traffic = array<i64: 4000, 4000, 0, 0, 0>} : !shaderm.buffer<1000xf32>, !shaderm.buffer<1000xf32>
// CHECK-NEXT:    shaderm.output %[[B]] : !shaderm.buffer<1000xf32>
// CHECK-NEXT:  }
// CHECK-NOT:   circuit.
circuit.graph @scale(%x: tensor<1000xf32> {circuit.name = "x"})
    -> (tensor<1000xf32> {circuit.name = "y"}) {
  %y = circuit.map ins(%x : tensor<1000xf32>) -> tensor<1000xf32> {
  ^bb0(%lane: i32, %v: f32):
    %f = exp.convert %lane : i32 to f32
    %r = exp.add %v, %f : f32
    circuit.yield %r : f32
  }
  circuit.output %y : tensor<1000xf32>
}

// -----

// Small maps still get 32 lanes (one subgroup) and one workgroup.

// CHECK-LABEL: shaderm.kernel @small_k0_map(
// CHECK-SAME:    !shaderm.buffer<10xi32, read_only>, %{{.*}}: !shaderm.buffer<10xi32>) workgroup_size(32, 1, 1) {
// CHECK:         %[[N:.*]] = arith.constant 10 : index
// CHECK-LABEL: shaderm.schedule @small(
// CHECK:         shaderm.launch @small_k0_map grid [1, 1, 1](
circuit.graph @small(%x: tensor<10xi32>) -> tensor<10xi32> {
  %y = circuit.map ins(%x : tensor<10xi32>) -> tensor<10xi32> {
  ^bb0(%lane: i32, %v: i32):
    %r = exp.add %v, %lane : i32
    circuit.yield %r : i32
  }
  circuit.output %y : tensor<10xi32>
}

// -----

// The largest map one grid dimension holds: 65535 workgroups of 256 lanes.

// CHECK-LABEL: shaderm.schedule @largest(
// CHECK:         shaderm.launch @largest_k0_map grid [65535, 1, 1](
circuit.graph @largest(%x: tensor<16776960xf32>) -> tensor<16776960xf32> {
  %y = circuit.map ins(%x : tensor<16776960xf32>) -> tensor<16776960xf32> {
  ^bb0(%lane: i32, %v: f32):
    circuit.yield %v : f32
  }
  circuit.output %y : tensor<16776960xf32>
}

// -----

// A [1] input is read at index 0 by every lane.

// CHECK-LABEL: shaderm.kernel @broadcast_scalar_k0_map(
// CHECK-SAME:    %[[X:.*]]: !shaderm.buffer<64xf32, read_only>, %[[S:.*]]: !shaderm.buffer<1xf32, read_only>, %[[Y:.*]]: !shaderm.buffer<64xf32>) workgroup_size(64, 1, 1) {
// CHECK:         %[[GID:.*]] = shaderm.global_id x
// CHECK:         scf.if
// CHECK:           %[[V:.*]] = shaderm.load %[[X]][%[[GID]]] : !shaderm.buffer<64xf32, read_only> -> f32
// CHECK-NEXT:      %[[C0:.*]] = arith.constant 0 : index
// CHECK-NEXT:      %[[K:.*]] = shaderm.load %[[S]][%[[C0]]] : !shaderm.buffer<1xf32, read_only> -> f32
// CHECK-NEXT:      %[[R:.*]] = exp.mul %[[V]], %[[K]] : f32
// CHECK-NEXT:      shaderm.store %[[R]], %[[Y]][%[[GID]]]
// CHECK-LABEL: shaderm.schedule @broadcast_scalar(
// CHECK-SAME:    %[[A:.*]]: !shaderm.buffer<64xf32>, %[[B:.*]]: !shaderm.buffer<1xf32>)
// CHECK:         shaderm.launch @broadcast_scalar_k0_map grid [1, 1, 1](%[[A]], %[[B]], %{{.*}}) {traffic = array<i64: 260, 256, 0, 0, 0>}
circuit.graph @broadcast_scalar(%x: tensor<64xf32>, %s: tensor<1xf32>)
    -> tensor<64xf32> {
  %y = circuit.map ins(%x, %s : tensor<64xf32>, tensor<1xf32>)
      -> tensor<64xf32> {
  ^bb0(%lane: i32, %a: f32, %b: f32):
    %r = exp.mul %a, %b : f32
    circuit.yield %r : f32
  }
  circuit.output %y : tensor<64xf32>
}

// -----

// A [4, 1] row statistic over a [4, 8] iteration: lane / 8 (the row), mod 4;
// a [8] suffix: lane mod 8 (the column).

// CHECK-LABEL: shaderm.kernel @broadcast_rows_k0_map(
// CHECK-SAME:    %[[X:.*]]: !shaderm.buffer<32xf32, read_only>, %[[ROW:.*]]: !shaderm.buffer<4xf32, read_only>, %[[COL:.*]]: !shaderm.buffer<8xf32, read_only>, %[[Y:.*]]: !shaderm.buffer<32xf32>)
// CHECK:         %[[GID:.*]] = shaderm.global_id x
// CHECK:         shaderm.load %[[X]][%[[GID]]]
// CHECK:         %[[C8:.*]] = arith.constant 8 : index
// CHECK-NEXT:    %[[Q:.*]] = arith.divui %[[GID]], %[[C8]] : index
// CHECK-NEXT:    %[[C4:.*]] = arith.constant 4 : index
// CHECK-NEXT:    %[[R:.*]] = arith.remui %[[Q]], %[[C4]] : index
// CHECK:         %[[RI:.*]] = arith.addi %{{.*}}, %{{.*}} : index
// CHECK-NEXT:    shaderm.load %[[ROW]][%[[RI]]] : !shaderm.buffer<4xf32, read_only> -> f32
// CHECK-NOT:     arith.divui
// CHECK:         arith.remui %[[GID]], %{{.*}} : index
// CHECK:         %[[CI:.*]] = arith.addi %{{.*}}, %{{.*}} : index
// CHECK-NEXT:    shaderm.load %[[COL]][%[[CI]]] : !shaderm.buffer<8xf32, read_only> -> f32
// CHECK:         shaderm.store %{{.*}}, %[[Y]][%[[GID]]]
circuit.graph @broadcast_rows(%x: tensor<4x8xf32>, %r: tensor<4x1xf32>,
                              %c: tensor<8xf32>) -> tensor<4x8xf32> {
  %y = circuit.map ins(%x, %r, %c : tensor<4x8xf32>, tensor<4x1xf32>, tensor<8xf32>)
      -> tensor<4x8xf32> {
  ^bb0(%lane: i32, %v: f32, %k: f32, %w: f32):
    %o = exp.mul %v, %k : f32
    %p = exp.add %o, %w : f32
    circuit.yield %p : f32
  }
  circuit.output %y : tensor<4x8xf32>
}

// -----

// A subgroup operation in the body: every lane runs the body (reading at a
// lane clamped into range), only the store is guarded. 96 lanes: whole
// subgroups (a multiple of 32), fewer than the 128 lanes of the workgroup.

// CHECK-LABEL: shaderm.kernel @warp_k0_map(
// CHECK-SAME:    %[[X:.*]]: !shaderm.buffer<96xf32, read_only>, %[[Y:.*]]: !shaderm.buffer<96xf32>) workgroup_size(128, 1, 1) {
// CHECK-NEXT:    %[[GID:.*]] = shaderm.global_id x
// CHECK-NEXT:    %[[N:.*]] = arith.constant 96 : index
// CHECK-NEXT:    %[[IN:.*]] = arith.cmpi ult, %[[GID]], %[[N]] : index
// CHECK-NEXT:    %[[C0:.*]] = arith.constant 0 : index
// CHECK-NEXT:    %[[L:.*]] = arith.select %[[IN]], %[[GID]], %[[C0]] : index
// CHECK-NOT:     scf.if
// CHECK:         %[[V:.*]] = shaderm.load %[[X]][%[[L]]] : !shaderm.buffer<96xf32, read_only> -> f32
// CHECK-NEXT:    %[[S:.*]] = exp.subgroup_reduce sum %[[V]] : f32
// CHECK-NEXT:    scf.if %[[IN]] {
// CHECK-NEXT:      shaderm.store %[[S]], %[[Y]][%[[GID]]] : f32, !shaderm.buffer<96xf32>
// CHECK-NEXT:    }
// CHECK-NEXT:    shaderm.return
circuit.graph @warp(%x: tensor<96xf32>) -> tensor<96xf32> {
  %y = circuit.map ins(%x : tensor<96xf32>) -> tensor<96xf32> {
  ^bb0(%lane: i32, %v: f32):
    %s = exp.subgroup_reduce sum %v : f32
    circuit.yield %s : f32
  }
  circuit.output %y : tensor<96xf32>
}

// -----

// A whole-tensor input is bound as a buffer; circuit.extract loads from it
// at the body's index, clamped into the buffer, and yields 0 for an index
// out of range (unsigned comparison: negative indices too).

// CHECK-LABEL: shaderm.kernel @whole_k0_map(
// CHECK-SAME:    %[[X:.*]]: !shaderm.buffer<64xf32, read_only>, %[[C:.*]]: !shaderm.buffer<512xf32, read_only>, %[[Y:.*]]: !shaderm.buffer<64xf32>)
// CHECK:         %[[LANE:.*]] = arith.index_cast %{{.*}} : index to i32
// CHECK:         %[[I:.*]] = exp.mul %[[LANE]], %{{.*}} : i32
// CHECK-NEXT:    %[[II:.*]] = arith.index_cast %[[I]] : i32 to index
// CHECK-NEXT:    %[[N:.*]] = arith.constant 512 : index
// CHECK-NEXT:    %[[OK:.*]] = arith.cmpi ult, %[[II]], %[[N]] : index
// CHECK-NEXT:    %[[Z:.*]] = arith.constant 0 : index
// CHECK-NEXT:    %[[SAFE:.*]] = arith.select %[[OK]], %[[II]], %[[Z]] : index
// CHECK-NEXT:    %[[L:.*]] = shaderm.load %[[C]][%[[SAFE]]] : !shaderm.buffer<512xf32, read_only> -> f32
// CHECK-NEXT:    %[[F0:.*]] = exp.constant 0.000000e+00 : f32
// CHECK-NEXT:    %[[E:.*]] = arith.select %[[OK]], %[[L]], %[[F0]] : f32
// CHECK-NEXT:    exp.add %{{.*}}, %[[E]] : f32
// CHECK-NOT:     circuit.extract
circuit.graph @whole(%x: tensor<64xf32>, %cache: tensor<512xf32>) -> tensor<64xf32> {
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

// -----

// Two ops: one kernel each, launched in graph order, each result
// allocated by the schedule before its producer's launch and bound
// read-write to its producer, read-only to its consumer.

// CHECK-LABEL: shaderm.kernel @chain_k0_map(
// CHECK-SAME:    !shaderm.buffer<128xf32, read_only>, %{{.*}}: !shaderm.buffer<128xf32>)
// CHECK-LABEL: shaderm.kernel @chain_k1_map(
// CHECK-SAME:    !shaderm.buffer<128xf32, read_only>, %{{.*}}: !shaderm.buffer<128xf32>)
// CHECK-LABEL: shaderm.schedule @chain(
// CHECK-SAME:    %[[X:.*]]: !shaderm.buffer<128xf32>)
// CHECK-NEXT:    %[[A:.*]] = shaderm.alloc : !shaderm.buffer<128xf32>
// CHECK-NEXT:    shaderm.launch @chain_k0_map grid [1, 1, 1](%[[X]], %[[A]]) {traffic = array<i64: 512, 512, 0, 0, 0>}
// CHECK-NEXT:    %[[B:.*]] = shaderm.alloc : !shaderm.buffer<128xf32>
// CHECK-NEXT:    shaderm.launch @chain_k1_map grid [1, 1, 1](%[[A]], %[[B]]) {traffic = array<i64: 512, 512, 0, 0, 0>}
// CHECK-NEXT:    shaderm.output %[[B]] : !shaderm.buffer<128xf32>
circuit.graph @chain(%x: tensor<128xf32>) -> tensor<128xf32> {
  %a = circuit.map ins(%x : tensor<128xf32>) -> tensor<128xf32> {
  ^bb0(%lane: i32, %v: f32):
    %r = exp.mul %v, %v : f32
    circuit.yield %r : f32
  }
  %b = circuit.map ins(%a : tensor<128xf32>) -> tensor<128xf32> {
  ^bb0(%lane: i32, %v: f32):
    %r = exp.neg %v : f32
    circuit.yield %r : f32
  }
  circuit.output %b : tensor<128xf32>
}

//===----------------------------------------------------------------------===//
// circuit.zeros
//===----------------------------------------------------------------------===//

// -----

// A fill kernel over 300 f16 elements: 256 lanes, 2 workgroups.

// CHECK-LABEL: shaderm.kernel @zeros_k0_zeros(
// CHECK-SAME:    %[[Z:.*]]: !shaderm.buffer<300xf16>) workgroup_size(256, 1, 1) {
// CHECK-NEXT:    %[[GID:.*]] = shaderm.global_id x
// CHECK-NEXT:    %[[N:.*]] = arith.constant 300 : index
// CHECK-NEXT:    %[[IN:.*]] = arith.cmpi ult, %[[GID]], %[[N]] : index
// CHECK-NEXT:    scf.if %[[IN]] {
// CHECK-NEXT:      %[[ZERO:.*]] = exp.constant 0.000000e+00 : f16
// CHECK-NEXT:      shaderm.store %[[ZERO]], %[[Z]][%[[GID]]] : f16, !shaderm.buffer<300xf16>
// CHECK-NEXT:    }
// CHECK-NEXT:    shaderm.return
// CHECK-LABEL: shaderm.schedule @zeros() -> !shaderm.buffer<300xf16> {
// CHECK-NEXT:    %[[B:.*]] = shaderm.alloc : !shaderm.buffer<300xf16>
// CHECK-NEXT:    shaderm.launch @zeros_k0_zeros grid [2, 1, 1](%[[B]]) {traffic = array<i64: 0, 600, 0, 0, 0>} : !shaderm.buffer<300xf16>
// CHECK-NEXT:    shaderm.output %[[B]] : !shaderm.buffer<300xf16>
circuit.graph @zeros() -> tensor<300xf16> {
  %z = circuit.zeros : tensor<300xf16>
  circuit.output %z : tensor<300xf16>
}

// -----

// Integer zeros.

// CHECK-LABEL: shaderm.kernel @zeros_i32_k0_zeros(
// CHECK-SAME:    %[[Z:.*]]: !shaderm.buffer<8xi32>)
// CHECK:         %[[ZERO:.*]] = exp.constant 0 : i32
// CHECK-NEXT:    shaderm.store %[[ZERO]], %[[Z]][%{{.*}}] : i32, !shaderm.buffer<8xi32>
circuit.graph @zeros_i32() -> tensor<8xi32> {
  %z = circuit.zeros : tensor<8xi32>
  circuit.output %z : tensor<8xi32>
}

//===----------------------------------------------------------------------===//
// circuit.gather
//===----------------------------------------------------------------------===//

// -----

// out[i] = source[addr], or zero when addr is outside the source: the load
// reads at a clamped address, a select picks zero.

// CHECK-LABEL: shaderm.kernel @gather_k0_gather(
// CHECK-SAME:    %[[SRC:.*]]: !shaderm.buffer<8xf32, read_only>, %[[OUT:.*]]: !shaderm.buffer<8xf32>) workgroup_size(32, 1, 1) {
// CHECK:         %[[GID:.*]] = shaderm.global_id x
// CHECK:         scf.if
// CHECK:           %[[LANE:.*]] = arith.index_cast %[[GID]] : index to i32
// CHECK:           %[[A:.*]] = exp.sub %{{.*}}, %[[LANE]] : i32
// CHECK-NEXT:      %[[ADDR:.*]] = arith.index_cast %[[A]] : i32 to index
// CHECK-NEXT:      %[[SIZE:.*]] = arith.constant 8 : index
// CHECK-NEXT:      %[[OK:.*]] = arith.cmpi ult, %[[ADDR]], %[[SIZE]] : index
// CHECK-NEXT:      %[[C0:.*]] = arith.constant 0 : index
// CHECK-NEXT:      %[[SAFE:.*]] = arith.select %[[OK]], %[[ADDR]], %[[C0]] : index
// CHECK-NEXT:      %[[V:.*]] = shaderm.load %[[SRC]][%[[SAFE]]] : !shaderm.buffer<8xf32, read_only> -> f32
// CHECK-NEXT:      %[[ZERO:.*]] = exp.constant 0.000000e+00 : f32
// CHECK-NEXT:      %[[R:.*]] = arith.select %[[OK]], %[[V]], %[[ZERO]] : f32
// CHECK-NEXT:      shaderm.store %[[R]], %[[OUT]][%[[GID]]] : f32, !shaderm.buffer<8xf32>
// CHECK-LABEL: shaderm.schedule @gather(
// CHECK-SAME:    %[[X:.*]]: !shaderm.buffer<8xf32>)
// CHECK-NEXT:    %[[B:.*]] = shaderm.alloc : !shaderm.buffer<8xf32>
// CHECK-NEXT:    shaderm.launch @gather_k0_gather grid [1, 1, 1](%[[X]], %[[B]]) {traffic = array<i64: 32, 32, 0, 0, 0>}
circuit.graph @gather(%x: tensor<8xf32>) -> tensor<8xf32> {
  %r = circuit.gather %x : tensor<8xf32> -> tensor<8xf32> {
  ^bb0(%lane: i32):
    %c7 = exp.constant 7 : i32
    %a = exp.sub %c7, %lane : i32
    circuit.yield %a : i32
  }
  circuit.output %r : tensor<8xf32>
}

// -----

// An embedding lookup: the ids are an input (broadcast [4, 1] over the
// [4, 16] result), bound before the source.

// CHECK-LABEL: shaderm.kernel @embedding_k0_gather(
// CHECK-SAME:    %[[IDS:.*]]: !shaderm.buffer<4xi32, read_only>, %[[TABLE:.*]]: !shaderm.buffer<1600xf16, read_only>, %[[OUT:.*]]: !shaderm.buffer<64xf16>) workgroup_size(64, 1, 1)
// CHECK:         %[[ID:.*]] = shaderm.load %[[IDS]][%{{.*}}] : !shaderm.buffer<4xi32, read_only> -> i32
// CHECK:         %[[SIZE:.*]] = arith.constant 1600 : index
// CHECK:         %[[V:.*]] = shaderm.load %[[TABLE]][%{{.*}}] : !shaderm.buffer<1600xf16, read_only> -> f16
// CHECK:         %[[ZERO:.*]] = exp.constant 0.000000e+00 : f16
// CHECK:         arith.select %{{.*}}, %[[V]], %[[ZERO]] : f16
circuit.graph @embedding(%table: tensor<100x16xf16>, %ids: tensor<4x1xi32>)
    -> tensor<4x16xf16> {
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
// circuit.scatter / circuit.scatter_multi
//===----------------------------------------------------------------------===//

// -----

// In place into a graph argument: no allocation, the launch binds the
// argument itself, read-write; each store is guarded by the destination's
// size.

// CHECK-LABEL: shaderm.kernel @scatter_k0_scatter(
// CHECK-SAME:    %[[X:.*]]: !shaderm.buffer<128xf32, read_only>, %[[DST:.*]]: !shaderm.buffer<256xf32>) workgroup_size(128, 1, 1) {
// CHECK:         %[[GID:.*]] = shaderm.global_id x
// CHECK:         scf.if
// CHECK:           %[[LANE:.*]] = arith.index_cast %[[GID]] : index to i32
// CHECK-NEXT:      %[[V:.*]] = shaderm.load %[[X]][%[[GID]]]
// CHECK:           %[[A:.*]] = exp.add %[[LANE]], %{{.*}} : i32
// CHECK-NEXT:      %[[ADDR:.*]] = arith.index_cast %[[A]] : i32 to index
// CHECK-NEXT:      %[[SIZE:.*]] = arith.constant 256 : index
// CHECK-NEXT:      %[[OK:.*]] = arith.cmpi ult, %[[ADDR]], %[[SIZE]] : index
// CHECK-NEXT:      scf.if %[[OK]] {
// CHECK-NEXT:        shaderm.store %[[V]], %[[DST]][%[[ADDR]]] : f32, !shaderm.buffer<256xf32>
// CHECK-NEXT:      }
// CHECK-LABEL: shaderm.schedule @scatter(
// CHECK-SAME:    %[[SX:.*]]: !shaderm.buffer<128xf32>, %[[CACHE:.*]]: !shaderm.buffer<256xf32>) {
// CHECK-NOT:     shaderm.alloc
// CHECK-NEXT:    shaderm.launch @scatter_k0_scatter grid [1, 1, 1](%[[SX]], %[[CACHE]]) {traffic = array<i64: 512, 512, 0, 0, 0>} : !shaderm.buffer<128xf32>, !shaderm.buffer<256xf32>
// CHECK-NEXT:    shaderm.output{{$}}
circuit.graph @scatter(%x: tensor<128xf32>, %cache: tensor<256xf32>) {
  %r = circuit.scatter grid(128) ins(%x : tensor<128xf32>)
      into %cache : tensor<256xf32> {
  ^bb0(%lane: i32, %v: f32):
    %c128 = exp.constant 128 : i32
    %a = exp.add %lane, %c128 : i32
    circuit.yield %a, %v : i32, f32
  }
  circuit.output
}

// -----

// A scatter's result is its destination's buffer: returned from the
// schedule, and written again in place by a second scatter.

// CHECK-LABEL: shaderm.schedule @scatter_chain(
// CHECK-SAME:    %[[K:.*]]: !shaderm.buffer<64xf16>, %[[CACHE:.*]]: !shaderm.buffer<512xf16>) -> !shaderm.buffer<512xf16> {
// CHECK-NOT:     shaderm.alloc
// CHECK-NEXT:    shaderm.launch @scatter_chain_k0_scatter grid [1, 1, 1](%[[K]], %[[CACHE]]) {traffic = array<i64: 128, 128, 0, 0, 0>}
// CHECK-NEXT:    shaderm.launch @scatter_chain_k1_scatter grid [1, 1, 1](%[[K]], %[[CACHE]]) {traffic = array<i64: 128, 128, 0, 0, 0>}
// CHECK-NEXT:    shaderm.output %[[CACHE]] : !shaderm.buffer<512xf16>
circuit.graph @scatter_chain(%k: tensor<64xf16>, %cache: tensor<512xf16>)
    -> tensor<512xf16> {
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
  circuit.output %v2 : tensor<512xf16>
}

// -----

// Two destinations, a graph argument and a fresh zeros buffer: the zeros
// kernel runs first, then one kernel writes both, each store guarded by its
// destination's size.

// CHECK-LABEL: shaderm.kernel @scatter_multi_k0_zeros(
// CHECK-LABEL: shaderm.kernel @scatter_multi_k1_scatter_multi(
// CHECK-SAME:    %[[K:.*]]: !shaderm.buffer<64xf32, read_only>, %[[V:.*]]: !shaderm.buffer<1xf32, read_only>, %[[KC:.*]]: !shaderm.buffer<512xf32>, %[[VC:.*]]: !shaderm.buffer<256xf32>) workgroup_size(64, 1, 1) {
// CHECK:         %[[A:.*]] = shaderm.load %[[K]][%{{.*}}]
// CHECK:         %[[B:.*]] = shaderm.load %[[V]][%{{.*}}]
// CHECK:         %[[ADDR0:.*]] = arith.index_cast %{{.*}} : i32 to index
// CHECK-NEXT:    %[[N0:.*]] = arith.constant 512 : index
// CHECK-NEXT:    %[[OK0:.*]] = arith.cmpi ult, %[[ADDR0]], %[[N0]] : index
// CHECK-NEXT:    scf.if %[[OK0]] {
// CHECK-NEXT:      shaderm.store %[[A]], %[[KC]][%[[ADDR0]]] : f32, !shaderm.buffer<512xf32>
// CHECK-NEXT:    }
// CHECK-NEXT:    %[[ADDR1:.*]] = arith.index_cast %{{.*}} : i32 to index
// CHECK-NEXT:    %[[N1:.*]] = arith.constant 256 : index
// CHECK-NEXT:    %[[OK1:.*]] = arith.cmpi ult, %[[ADDR1]], %[[N1]] : index
// CHECK-NEXT:    scf.if %[[OK1]] {
// CHECK-NEXT:      shaderm.store %[[B]], %[[VC]][%[[ADDR1]]] : f32, !shaderm.buffer<256xf32>
// CHECK-NEXT:    }
// CHECK-LABEL: shaderm.schedule @scatter_multi(
// CHECK-SAME:    %[[SK:.*]]: !shaderm.buffer<64xf32>, %[[SV:.*]]: !shaderm.buffer<1xf32>, %[[SKC:.*]]: !shaderm.buffer<512xf32>)
// CHECK-NEXT:    %[[Z:.*]] = shaderm.alloc : !shaderm.buffer<256xf32>
// CHECK-NEXT:    shaderm.launch @scatter_multi_k0_zeros grid [1, 1, 1](%[[Z]]) {traffic = array<i64: 0, 1024, 0, 0, 0>}
// CHECK-NEXT:    shaderm.launch @scatter_multi_k1_scatter_multi grid [1, 1, 1](%[[SK]], %[[SV]], %[[SKC]], %[[Z]]) {traffic = array<i64: 260, 512, 0, 0, 0>}
// CHECK-NEXT:    shaderm.output %[[SKC]], %[[Z]] : !shaderm.buffer<512xf32>, !shaderm.buffer<256xf32>
circuit.graph @scatter_multi(%k: tensor<64xf32>, %v: tensor<1xf32>,
                             %kc: tensor<512xf32>)
    -> (tensor<512xf32>, tensor<256xf32>) {
  %z = circuit.zeros : tensor<256xf32>
  %k2, %v2 = circuit.scatter_multi grid(64)
      ins(%k, %v : tensor<64xf32>, tensor<1xf32>)
      into(%kc, %z : tensor<512xf32>, tensor<256xf32>) {
  ^bb0(%lane: i32, %a: f32, %b: f32):
    %c2 = exp.constant 2 : i32
    %at = exp.mul %lane, %c2 : i32
    circuit.yield %lane, %a, %at, %b : i32, f32, i32, f32
  }
  circuit.output %k2, %v2 : tensor<512xf32>, tensor<256xf32>
}

//===----------------------------------------------------------------------===//
// Reductions
//===----------------------------------------------------------------------===//

// -----

// One workgroup per row (grid = 4 rows), 128 lanes (the power of two at or
// above the row length 100): each lane sums a strided slice; each subgroup
// reduces its lanes' sums, its first lane writes the total to the slot of
// its subgroup id; after one barrier every lane adds the slots in order;
// lane 0 stores the row's result. sum_sq squares each element.

// CHECK-LABEL: shaderm.kernel @reduce_k0_reduce(
// CHECK-SAME:    %[[X:.*]]: !shaderm.buffer<400xf32, read_only>, %[[OUT:.*]]: !shaderm.buffer<4xf32>) workgroup_size(128, 1, 1) {
// CHECK-NEXT:    %[[TID:.*]] = shaderm.local_id x
// CHECK-NEXT:    %[[ROW:.*]] = shaderm.workgroup_id x
// CHECK-NEXT:    %[[LEN:.*]] = arith.constant 100 : index
// CHECK-NEXT:    %[[BASE:.*]] = arith.muli %[[ROW]], %[[LEN]] : index
// CHECK-NEXT:    %[[INIT:.*]] = exp.constant 0.000000e+00 : f32
// CHECK-NEXT:    %[[STEP:.*]] = arith.constant 128 : index
// CHECK-NEXT:    %[[END:.*]] = arith.constant 100 : index
// CHECK-NEXT:    %[[RUNS458:.*]] = arith.cmpi ult, %{{.*}}, %[[END]] : index
// CHECK-NEXT:    %[[ACC:.*]] = scf.if %[[RUNS458]] -> (f32) {
// CHECK-NEXT:      %[[LOOP:.*]] = scf.for %[[K:.*]] = %[[TID]] to %[[END]] step %[[STEP]] iter_args(%[[A:.*]] = %[[INIT]]) -> (f32) {
// CHECK-NEXT:      %[[I:.*]] = arith.addi %[[BASE]], %[[K]] : index
// CHECK-NEXT:      %[[V:.*]] = shaderm.load %[[X]][%[[I]]] : !shaderm.buffer<400xf32, read_only> -> f32
// CHECK-NEXT:      %[[SQ:.*]] = exp.mul %[[V]], %[[V]] : f32
// CHECK-NEXT:      %[[NEXT:.*]] = exp.add %[[A]], %[[SQ]] : f32
// CHECK-NEXT:      scf.yield %[[NEXT]] : f32
// CHECK-NEXT:    }
// CHECK-NEXT:    scf.yield %[[LOOP]] : f32
// CHECK-NEXT:    } else {
// CHECK-NEXT:    scf.yield %[[INIT]] : f32
// CHECK-NEXT:    }
// CHECK-NEXT:    %[[TILE:.*]] = shaderm.shared_alloc : !shaderm.shared<128xf32>
// CHECK-NEXT:    %[[PART:.*]] = exp.subgroup_reduce sum %[[ACC]] : f32
// CHECK-NEXT:    %[[LANE:.*]] = exp.lane_id : i32
// CHECK-NEXT:    %[[Z:.*]] = arith.constant 0 : i32
// CHECK-NEXT:    %[[LEAD:.*]] = arith.cmpi eq, %[[LANE]], %[[Z]] : i32
// CHECK-NEXT:    scf.if %[[LEAD]] {
// CHECK-NEXT:      %[[SG:.*]] = shaderm.subgroup_id
// CHECK-NEXT:      shaderm.store %[[PART]], %[[TILE]][%[[SG]]] : f32, !shaderm.shared<128xf32>
// CHECK-NEXT:    }
// CHECK-NEXT:    shaderm.barrier
// CHECK-NEXT:    %[[SIZE:.*]] = exp.subgroup_size : i32
// CHECK-NEXT:    %[[SIZEI:.*]] = arith.index_cast %[[SIZE]] : i32 to index
// CHECK-NEXT:    %[[L128:.*]] = arith.constant 128 : index
// CHECK-NEXT:    %[[NSG:.*]] = arith.divui %[[L128]], %[[SIZEI]] : index
// CHECK-NEXT:    %[[C0:.*]] = arith.constant 0 : index
// CHECK-NEXT:    %[[FIRSTSLOT:.*]] = shaderm.load %[[TILE]][%[[C0]]] : !shaderm.shared<128xf32> -> f32
// CHECK:         scf.if
// CHECK-NEXT:      %[[SLOTS:.*]] = scf.for %[[J:.*]] = %{{.*}} to %[[NSG]] step %{{.*}} iter_args(%[[T:.*]] = %[[FIRSTSLOT]]) -> (f32) {
// CHECK-NEXT:        %[[SLOT:.*]] = shaderm.load %[[TILE]][%[[J]]] : !shaderm.shared<128xf32> -> f32
// CHECK-NEXT:        %[[ADD:.*]] = exp.add %[[T]], %[[SLOT]] : f32
// CHECK-NEXT:        scf.yield %[[ADD]] : f32
// CHECK-NEXT:      }
// CHECK-NEXT:      scf.yield %[[SLOTS]] : f32
// CHECK-NEXT:    } else {
// CHECK-NEXT:      scf.yield %[[FIRSTSLOT]] : f32
// CHECK-NEXT:    }
// CHECK-NEXT:    %[[ONE:.*]] = arith.constant 1 : index
// CHECK-NEXT:    %[[FIRST:.*]] = arith.cmpi ult, %[[TID]], %[[ONE]] : index
// CHECK-NEXT:    scf.if %[[FIRST]] {
// CHECK-NEXT:      shaderm.store %{{.*}}, %[[OUT]][%[[ROW]]] : f32, !shaderm.buffer<4xf32>
// CHECK-NEXT:    }
// CHECK-NEXT:    shaderm.return
// CHECK-LABEL: shaderm.schedule @reduce(
// CHECK-SAME:    %[[M:.*]]: !shaderm.buffer<400xf32>) -> !shaderm.buffer<4xf32> {
// CHECK-NEXT:    %[[R:.*]] = shaderm.alloc : !shaderm.buffer<4xf32>
// CHECK-NEXT:    shaderm.launch @reduce_k0_reduce grid [4, 1, 1](%[[M]], %[[R]]) {traffic = array<i64: 1600, 16, 0, 0, 0>}
// CHECK-NEXT:    shaderm.output %[[R]] : !shaderm.buffer<4xf32>
circuit.graph @reduce(%m: tensor<4x100xf32>) -> tensor<4x1xf32> {
  %ss = circuit.reduce sum_sq %m : tensor<4x100xf32> -> tensor<4x1xf32>
  circuit.output %ss : tensor<4x1xf32>
}

// -----

// Below 64 lanes (rows of 32 get 32), a shared-memory tree: six barriers
// (one after the stores, one per step), none after the result is read, no
// subgroup operation. At 64 lanes, the subgroup path: one barrier.

// CHECK-LABEL: shaderm.kernel @reduce_barriers_k0_reduce(
// CHECK-SAME:    workgroup_size(32, 1, 1)
// CHECK-NOT:     exp.subgroup_reduce
// CHECK-COUNT-6: shaderm.barrier
// CHECK-NOT:     shaderm.barrier
// CHECK-NOT:     exp.subgroup_reduce
// CHECK:         shaderm.return
// CHECK-LABEL: shaderm.kernel @reduce_barriers_k1_reduce(
// CHECK-SAME:    workgroup_size(64, 1, 1)
// CHECK:         exp.subgroup_reduce sum
// CHECK:         shaderm.barrier
// CHECK-NOT:     shaderm.barrier
// CHECK:         shaderm.return
circuit.graph @reduce_barriers(%x: tensor<32xf32>, %y: tensor<64xf32>)
    -> (tensor<1xf32>, tensor<1xf32>) {
  %s = circuit.reduce sum %x : tensor<32xf32> -> tensor<1xf32>
  %t = circuit.reduce sum %y : tensor<64xf32> -> tensor<1xf32>
  circuit.output %s, %t : tensor<1xf32>, tensor<1xf32>
}

// -----

// Rows longer than 256 lanes: 256 lanes, each striding over the row.

// CHECK-LABEL: shaderm.kernel @reduce_long_k0_reduce(
// CHECK-SAME:    workgroup_size(256, 1, 1)
// CHECK:         %[[STEP:.*]] = arith.constant 256 : index
// CHECK-NEXT:    %[[END:.*]] = arith.constant 1000 : index
// CHECK-NEXT:    %[[RUNS533:.*]] = arith.cmpi ult, %{{.*}}, %[[END]] : index
// CHECK-NEXT:    %{{.*}} = scf.if %[[RUNS533]] -> (f32) {
// CHECK-NEXT:      scf.for %{{.*}} = %{{.*}} to %[[END]] step %[[STEP]]
// CHECK:         shaderm.shared_alloc : !shaderm.shared<256xf32>
// CHECK-LABEL: shaderm.schedule @reduce_long(
// CHECK:         shaderm.launch @reduce_long_k0_reduce grid [2, 1, 1](
circuit.graph @reduce_long(%x: tensor<2x1000xf32>) -> tensor<2x1xf32> {
  %s = circuit.reduce sum %x : tensor<2x1000xf32> -> tensor<2x1xf32>
  circuit.output %s : tensor<2x1xf32>
}

// -----

// max: the identity is -inf, the combining op exp.max (in the lanes and in
// the reduction); an f16 input is converted to f32 before it is combined.

// CHECK-LABEL: shaderm.kernel @reduce_max_k0_reduce(
// CHECK-SAME:    %[[X:.*]]: !shaderm.buffer<32xf16, read_only>, %[[OUT:.*]]: !shaderm.buffer<2xf32>) workgroup_size(32, 1, 1) {
// CHECK:         %[[NEGINF:.*]] = exp.constant 0xFF800000 : f32
// CHECK:         scf.for %{{.*}} = %{{.*}} to %{{.*}} step %{{.*}} iter_args(%[[A:.*]] = %[[NEGINF]]) -> (f32) {
// CHECK:           %[[H:.*]] = shaderm.load %[[X]][%{{.*}}] : !shaderm.buffer<32xf16, read_only> -> f16
// CHECK-NEXT:      %[[F:.*]] = exp.convert %[[H]] : f16 to f32
// CHECK-NEXT:      %[[M:.*]] = exp.max %[[A]], %[[F]] : f32
// CHECK-NEXT:      scf.yield %[[M]] : f32
// CHECK:         shaderm.barrier
// CHECK:         scf.if
// CHECK:           exp.max %{{.*}}, %{{.*}} : f32
// CHECK-NOT:       exp.add
// CHECK-LABEL: shaderm.schedule @reduce_max(
// CHECK:         shaderm.launch @reduce_max_k0_reduce grid [2, 1, 1](
circuit.graph @reduce_max(%m: tensor<2x16xf16>) -> tensor<2x1xf32> {
  %mx = circuit.reduce max %m : tensor<2x16xf16> -> tensor<2x1xf32>
  circuit.output %mx : tensor<2x1xf32>
}

// -----

// A prologue computes each reduced element from several inputs.

// CHECK-LABEL: shaderm.kernel @reduce_dot_k0_reduce(
// CHECK-SAME:    %[[A:.*]]: !shaderm.buffer<64xf32, read_only>, %[[B:.*]]: !shaderm.buffer<64xf32, read_only>, %[[OUT:.*]]: !shaderm.buffer<1xf32>)
// CHECK:         scf.for %[[K:.*]] = %{{.*}} to %{{.*}} step %{{.*}} iter_args(%[[ACC:.*]] = %{{.*}}) -> (f32) {
// CHECK-NEXT:      %[[I:.*]] = arith.addi %{{.*}}, %[[K]] : index
// CHECK-NEXT:      arith.index_cast %[[I]] : index to i32
// CHECK-NEXT:      %[[P:.*]] = shaderm.load %[[A]][%[[I]]]
// CHECK-NEXT:      %[[Q:.*]] = shaderm.load %[[B]][%[[I]]]
// CHECK-NEXT:      %[[PQ:.*]] = exp.mul %[[P]], %[[Q]] : f32
// CHECK-NEXT:      %[[NEXT:.*]] = exp.add %[[ACC]], %[[PQ]] : f32
// CHECK-NEXT:      scf.yield %[[NEXT]] : f32
circuit.graph @reduce_dot(%a: tensor<64xf32>, %b: tensor<64xf32>) -> tensor<1xf32> {
  %dot = circuit.reduce sum %a, %b : tensor<64xf32>, tensor<64xf32>
      -> tensor<1xf32> prologue {
  ^bb0(%lane: i32, %p: f32, %q: f32):
    %m = exp.mul %p, %q : f32
    circuit.yield %m : f32
  }
  circuit.output %dot : tensor<1xf32>
}

// -----

// RMSNorm as a reduce_epilogue: the reduction as above, then a second loop
// over the row runs the epilogue with the reduced value and stores every
// element (no lane-0 guard).

// CHECK-LABEL: shaderm.kernel @rmsnorm_k0_reduce_epilogue(
// CHECK-SAME:    %[[X:.*]]: !shaderm.buffer<1024xf32, read_only>, %[[G:.*]]: !shaderm.buffer<256xf32, read_only>, %[[OUT:.*]]: !shaderm.buffer<1024xf32>) workgroup_size(256, 1, 1) {
// CHECK:         %[[TID:.*]] = shaderm.local_id x
// CHECK:         %[[ROW:.*]] = shaderm.workgroup_id x
// CHECK:         %[[BASE:.*]] = arith.muli %[[ROW]], %{{.*}} : index
// CHECK:         %[[TILE:.*]] = shaderm.shared_alloc : !shaderm.shared<256xf32>
// CHECK:         exp.subgroup_reduce
// CHECK:         shaderm.barrier
// CHECK-NOT:     shaderm.barrier
// CHECK:         %[[SS:.*]] = scf.if %{{.*}} -> (f32) {
// CHECK:         } else {
// CHECK-NEXT:      scf.yield
// CHECK-NEXT:    }
// CHECK-NEXT:    %[[STEP:.*]] = arith.constant 256 : index
// CHECK-NEXT:    %[[END:.*]] = arith.constant 256 : index
// CHECK-NEXT:    scf.for %[[K:.*]] = %[[TID]] to %[[END]] step %[[STEP]] {
// CHECK-NEXT:      %[[I:.*]] = arith.addi %[[BASE]], %[[K]] : index
// CHECK-NEXT:      arith.index_cast %[[I]] : index to i32
// CHECK-NEXT:      %[[V:.*]] = shaderm.load %[[X]][%[[I]]] : !shaderm.buffer<1024xf32, read_only> -> f32
// CHECK:           %[[W:.*]] = shaderm.load %[[G]][%{{.*}}] : !shaderm.buffer<256xf32, read_only> -> f32
// CHECK:           %[[MEAN:.*]] = exp.div %[[SS]], %{{.*}} : f32
// CHECK:           %[[R:.*]] = exp.rsqrt %{{.*}} : f32
// CHECK-NEXT:      %[[N:.*]] = exp.mul %[[V]], %[[R]] : f32
// CHECK-NEXT:      %[[O:.*]] = exp.mul %[[N]], %[[W]] : f32
// CHECK-NEXT:      shaderm.store %[[O]], %[[OUT]][%[[I]]] : f32, !shaderm.buffer<1024xf32>
// CHECK-NEXT:    }
// CHECK-NEXT:    shaderm.return
// CHECK-LABEL: shaderm.schedule @rmsnorm(
// CHECK-SAME:    %[[SX:.*]]: !shaderm.buffer<1024xf32>, %[[SG:.*]]: !shaderm.buffer<256xf32>) -> !shaderm.buffer<1024xf32> {
// CHECK-NEXT:    %[[Y:.*]] = shaderm.alloc : !shaderm.buffer<1024xf32>
// CHECK-NEXT:    shaderm.launch @rmsnorm_k0_reduce_epilogue grid [4, 1, 1](%[[SX]], %[[SG]], %[[Y]]) {traffic = array<i64: 5120, 4096, 0, 0, 0>}
// CHECK-NEXT:    shaderm.output %[[Y]] : !shaderm.buffer<1024xf32>
circuit.graph @rmsnorm(%x: tensor<4x256xf32>, %g: tensor<256xf32>)
    -> tensor<4x256xf32> {
  %n = circuit.reduce_epilogue sum_sq %x, %g
      : tensor<4x256xf32>, tensor<256xf32> -> tensor<4x256xf32> epilogue {
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
  circuit.output %n : tensor<4x256xf32>
}

// -----

// reduce_scatter_epilogue: the epilogue yields (address, value) pairs
// written in place into a graph argument, each guarded by its size.

// CHECK-LABEL: shaderm.kernel @reduce_scatter_k0_reduce_scatter_epilogue(
// CHECK-SAME:    %[[X:.*]]: !shaderm.buffer<64xf32, read_only>, %[[DST:.*]]: !shaderm.buffer<256xf32>) workgroup_size(64, 1, 1) {
// CHECK:         exp.subgroup_reduce
// CHECK:         shaderm.barrier
// CHECK-NOT:     shaderm.barrier
// CHECK:         %[[S:.*]] = scf.if %{{.*}} -> (f32) {
// CHECK:         } else {
// CHECK-NEXT:      scf.yield
// CHECK-NEXT:    }
// CHECK:         scf.for
// CHECK:           %[[LANE:.*]] = arith.index_cast %{{.*}} : index to i32
// CHECK-NEXT:      %[[V:.*]] = shaderm.load %[[X]][%{{.*}}]
// CHECK:           %[[A:.*]] = exp.add %[[LANE]], %{{.*}} : i32
// CHECK-NEXT:      %[[Q:.*]] = exp.div %[[V]], %[[S]] : f32
// CHECK-NEXT:      %[[ADDR:.*]] = arith.index_cast %[[A]] : i32 to index
// CHECK-NEXT:      %[[SIZE:.*]] = arith.constant 256 : index
// CHECK-NEXT:      %[[OK:.*]] = arith.cmpi ult, %[[ADDR]], %[[SIZE]] : index
// CHECK-NEXT:      scf.if %[[OK]] {
// CHECK-NEXT:        shaderm.store %[[Q]], %[[DST]][%[[ADDR]]] : f32, !shaderm.buffer<256xf32>
// CHECK-NEXT:      }
// CHECK-LABEL: shaderm.schedule @reduce_scatter(
// CHECK-SAME:    %[[SX:.*]]: !shaderm.buffer<64xf32>, %[[SD:.*]]: !shaderm.buffer<256xf32>) -> !shaderm.buffer<256xf32> {
// CHECK-NOT:     shaderm.alloc
// CHECK-NEXT:    shaderm.launch @reduce_scatter_k0_reduce_scatter_epilogue grid [1, 1, 1](%[[SX]], %[[SD]]) {traffic = array<i64: 256, 256, 0, 0, 0>}
// CHECK-NEXT:    shaderm.output %[[SD]] : !shaderm.buffer<256xf32>
circuit.graph @reduce_scatter(%x: tensor<64xf32>, %dst: tensor<256xf32>)
    -> tensor<256xf32> {
  %r = circuit.reduce_scatter_epilogue sum %x : tensor<64xf32>
      into %dst : tensor<256xf32> epilogue {
  ^bb0(%lane: i32, %s: f32, %v: f32):
    %c64 = exp.constant 64 : i32
    %a = exp.add %lane, %c64 : i32
    %q = exp.div %v, %s : f32
    circuit.yield %a, %q : i32, f32
  }
  circuit.output %r : tensor<256xf32>
}

//===----------------------------------------------------------------------===//
// Quantized results
//===----------------------------------------------------------------------===//

// -----

// circuit.quantize to q8_0: one workgroup per row (grid = 2 rows); the row
// is staged in shared memory, then per block the scale d = amax / 127 (and
// d * sum(q)), then one lane per 32-bit word of the row's 2 x 34 bytes
// (17 words) assembles four bytes: the f16 scale (bytes 0-1 of a block),
// or q = clamp(round(v / d), -127, 127). The result buffer holds the words
// of both rows: 2 x 17 = 34.

// CHECK-LABEL: shaderm.kernel @quantize_k0_quantize(
// CHECK-SAME:    %[[X:.*]]: !shaderm.buffer<128xf32, read_only>, %[[Q:.*]]: !shaderm.buffer<34xi32>) workgroup_size(32, 1, 1) {
// CHECK-NEXT:    %[[TID:.*]] = shaderm.local_id x
// CHECK-NEXT:    %[[ROW:.*]] = shaderm.workgroup_id x
// CHECK-NEXT:    %[[STAGED:.*]] = shaderm.shared_alloc : !shaderm.shared<64xf32>
// CHECK:         scf.for %[[K:.*]] = %[[TID]] to %{{.*}} step %{{.*}} {
// CHECK:           %[[V:.*]] = shaderm.load %[[X]][%{{.*}}] : !shaderm.buffer<128xf32, read_only> -> f32
// CHECK-NEXT:      shaderm.store %[[V]], %[[STAGED]][%[[K]]] : f32, !shaderm.shared<64xf32>
// CHECK:         shaderm.barrier
// CHECK-NEXT:    %[[SCALES:.*]] = shaderm.shared_alloc : !shaderm.shared<2xf32>
// CHECK-NEXT:    %[[SUMS:.*]] = shaderm.shared_alloc : !shaderm.shared<2xf32>
// CHECK:         scf.for %[[BLK:.*]] = %[[TID]] to %{{.*}} step %{{.*}} {
// CHECK:           %[[AMAX:.*]] = scf.for
// CHECK:             exp.abs
// CHECK:             exp.max
// CHECK:           %[[C127:.*]] = exp.constant 1.270000e+02 : f32
// CHECK-NEXT:      %[[D:.*]] = exp.div %[[AMAX]], %[[C127]] : f32
// CHECK:           exp.round
// CHECK:           exp.clamp
// CHECK:           shaderm.store %[[D]], %[[SCALES]][%[[BLK]]] : f32, !shaderm.shared<2xf32>
// CHECK-NEXT:      shaderm.store %{{.*}}, %[[SUMS]][%[[BLK]]] : f32, !shaderm.shared<2xf32>
// CHECK:         shaderm.barrier
// CHECK:         %[[WORDS:.*]] = arith.constant 17 : index
// CHECK-NEXT:    scf.for %[[W:.*]] = %[[TID]] to %[[WORDS]] step %{{.*}} {
// CHECK:           %[[C34:.*]] = arith.constant 34 : index
// CHECK-NEXT:      %[[B0:.*]] = arith.divui %{{.*}}, %[[C34]] : index
// CHECK:           %[[D0:.*]] = shaderm.load %[[SCALES]][%[[B0]]] : !shaderm.shared<2xf32> -> f32
// CHECK:           %[[Z:.*]] = exp.constant 0.000000e+00 : f32
// CHECK-NEXT:      exp.pack_f16x2 %[[D0]], %[[Z]] : f32
// CHECK-NEXT:      %[[HB:.*]] = arith.constant 2 : index
// CHECK-NEXT:      arith.cmpi ult, %{{.*}}, %[[HB]] : index
// CHECK-COUNT-4:   arith.ori
// CHECK:           %[[RW:.*]] = arith.constant 17 : index
// CHECK-NEXT:      %[[RB:.*]] = arith.muli %[[ROW]], %[[RW]] : index
// CHECK-NEXT:      %[[WI:.*]] = arith.addi %[[RB]], %[[W]] : index
// CHECK-NEXT:      shaderm.store %{{.*}}, %[[Q]][%[[WI]]] : i32, !shaderm.buffer<34xi32>
// CHECK-NEXT:    }
// CHECK-NEXT:    shaderm.return
// CHECK-LABEL: shaderm.schedule @quantize(
// CHECK-SAME:    %[[SX:.*]]: !shaderm.buffer<128xf32>) -> !shaderm.buffer<34xi32> {
// CHECK-NEXT:    %[[R:.*]] = shaderm.alloc : !shaderm.buffer<34xi32>
// CHECK-NEXT:    shaderm.launch @quantize_k0_quantize grid [2, 1, 1](%[[SX]], %[[R]]) {traffic = array<i64: 512, 136, 0, 0, 0>}
// CHECK-NEXT:    shaderm.output %[[R]] : !shaderm.buffer<34xi32>
circuit.graph @quantize(%x: tensor<2x64xf32>) -> tensor<2x64x!circuit.q8_0> {
  %q = circuit.quantize %x : tensor<2x64xf32> -> tensor<2x64x!circuit.q8_0>
  circuit.output %q : tensor<2x64x!circuit.q8_0>
}

// -----

// A q8_1 reduce_epilogue result (normalize, then quantize): the epilogue's
// values are staged in shared memory after the reduction, then quantized
// into blocks of 36 bytes whose 4-byte header packs d and d * sum(q)
// (2 blocks = 18 words).

// CHECK-LABEL: shaderm.kernel @norm_q8_1_k0_reduce_epilogue(
// CHECK-SAME:    %[[X:.*]]: !shaderm.buffer<64xf32, read_only>, %[[Q:.*]]: !shaderm.buffer<18xi32>) workgroup_size(64, 1, 1) {
// CHECK:         exp.subgroup_reduce
// CHECK:         shaderm.barrier
// CHECK-NOT:     shaderm.barrier
// CHECK:         %[[SS:.*]] = scf.if %{{.*}} -> (f32) {
// CHECK:         } else {
// CHECK-NEXT:      scf.yield
// CHECK-NEXT:    }
// CHECK-NEXT:    %[[STAGED:.*]] = shaderm.shared_alloc : !shaderm.shared<64xf32>
// CHECK:         scf.for %[[K:.*]] = %{{.*}} to %{{.*}} step %{{.*}} {
// CHECK:           %[[R:.*]] = exp.rsqrt %[[SS]] : f32
// CHECK-NEXT:      %[[N:.*]] = exp.mul %{{.*}}, %[[R]] : f32
// CHECK-NEXT:      shaderm.store %[[N]], %[[STAGED]][%[[K]]] : f32, !shaderm.shared<64xf32>
// CHECK-NEXT:    }
// CHECK-NEXT:    shaderm.barrier
// CHECK-NEXT:    %[[SCALES:.*]] = shaderm.shared_alloc : !shaderm.shared<2xf32>
// CHECK-NEXT:    %[[SUMS:.*]] = shaderm.shared_alloc : !shaderm.shared<2xf32>
// CHECK:         shaderm.barrier
// CHECK:         %[[WORDS:.*]] = arith.constant 18 : index
// CHECK-NEXT:    scf.for %{{.*}} = %{{.*}} to %[[WORDS]] step %{{.*}} {
// CHECK:           %[[C36:.*]] = arith.constant 36 : index
// CHECK-NEXT:      %[[B0:.*]] = arith.divui %{{.*}}, %[[C36]] : index
// CHECK:           %[[D0:.*]] = shaderm.load %[[SCALES]][%[[B0]]] : !shaderm.shared<2xf32> -> f32
// CHECK-NEXT:      %[[S0:.*]] = shaderm.load %[[SUMS]][%[[B0]]] : !shaderm.shared<2xf32> -> f32
// CHECK-NEXT:      exp.pack_f16x2 %[[D0]], %[[S0]] : f32
// CHECK-NEXT:      %[[HB:.*]] = arith.constant 4 : index
// CHECK-NEXT:      arith.cmpi ult, %{{.*}}, %[[HB]] : index
// CHECK:           shaderm.store %{{.*}}, %[[Q]][%{{.*}}] : i32, !shaderm.buffer<18xi32>
// CHECK-LABEL: shaderm.schedule @norm_q8_1(
// CHECK-SAME:    %[[SX:.*]]: !shaderm.buffer<64xf32>) -> !shaderm.buffer<18xi32> {
// CHECK-NEXT:    %[[RQ:.*]] = shaderm.alloc : !shaderm.buffer<18xi32>
// CHECK-NEXT:    shaderm.launch @norm_q8_1_k0_reduce_epilogue grid [1, 1, 1](%[[SX]], %[[RQ]]) {traffic = array<i64: 256, 72, 0, 0, 0>}
circuit.graph @norm_q8_1(%x: tensor<64xf32>) -> tensor<64x!circuit.q8_1> {
  %y = circuit.reduce_epilogue sum_sq %x : tensor<64xf32>
      -> tensor<64x!circuit.q8_1> epilogue {
  ^bb0(%lane: i32, %ss: f32, %v: f32):
    %r = exp.rsqrt %ss : f32
    %n = exp.mul %v, %r : f32
    circuit.yield %n : f32
  }
  circuit.output %y : tensor<64x!circuit.q8_1>
}

//===----------------------------------------------------------------------===//
// Matrix products
//===----------------------------------------------------------------------===//

// -----

// f32 matvec: one workgroup of 64 lanes per weight row (grid [96, 1, 1]);
// lanes stride over K four elements at a time (a vector load of x and of
// w, four fmas in order), then the subgroup and workgroup reduction; lane
// 0 stores.

// CHECK-LABEL: shaderm.kernel @matvec_k0_matmul(
// CHECK-SAME:    %[[X:.*]]: !shaderm.buffer<256xf32, read_only>, %[[W:.*]]: !shaderm.buffer<24576xf32, read_only>, %[[Y:.*]]: !shaderm.buffer<96xf32>) workgroup_size(64, 1, 1) {
// CHECK-NEXT:    %[[TID:.*]] = shaderm.local_id x
// CHECK-NEXT:    %[[N:.*]] = shaderm.workgroup_id x
// CHECK-NEXT:    %[[M:.*]] = shaderm.workgroup_id y
// CHECK-NEXT:    %[[K1:.*]] = arith.constant 256 : index
// CHECK-NEXT:    %[[XROW:.*]] = arith.muli %[[M]], %[[K1]] : index
// CHECK-NEXT:    %[[K2:.*]] = arith.constant 256 : index
// CHECK-NEXT:    %[[WROW:.*]] = arith.muli %[[N]], %[[K2]] : index
// CHECK-NEXT:    %[[ZERO:.*]] = exp.constant 0.000000e+00 : f32
// CHECK-NEXT:    %[[STEP:.*]] = arith.constant 64 : index
// CHECK-NEXT:    %[[END:.*]] = arith.constant 64 : index
// CHECK-NEXT:    %[[RUNS809:.*]] = arith.cmpi ult, %{{.*}}, %[[END]] : index
// CHECK-NEXT:    %[[DOT:.*]] = scf.if %[[RUNS809]] -> (f32) {
// CHECK-NEXT:      %[[LOOP:.*]] = scf.for %[[C:.*]] = %[[TID]] to %[[END]] step %[[STEP]] iter_args(%[[ACC:.*]] = %[[ZERO]]) -> (f32) {
// CHECK-NEXT:      %[[FOUR:.*]] = arith.constant 4 : index
// CHECK-NEXT:      %[[I:.*]] = arith.muli %[[C]], %[[FOUR]] : index
// CHECK-NEXT:      %[[XI:.*]] = arith.addi %[[XROW]], %[[I]] : index
// CHECK-NEXT:      %[[XV:.*]] = shaderm.load %[[X]][%[[XI]]] : !shaderm.buffer<256xf32, read_only> -> vector<4xf32>
// CHECK-NEXT:      %[[WI:.*]] = arith.addi %[[WROW]], %[[I]] : index
// CHECK-NEXT:      %[[WV:.*]] = shaderm.load %[[W]][%[[WI]]] : !shaderm.buffer<24576xf32, read_only> -> vector<4xf32>
// CHECK-NEXT:      %[[X0:.*]] = vector.extract %[[XV]][0] : f32 from vector<4xf32>
// CHECK-NEXT:      %[[W0:.*]] = vector.extract %[[WV]][0] : f32 from vector<4xf32>
// CHECK-NEXT:      %[[F0:.*]] = exp.fma %[[X0]], %[[W0]], %[[ACC]] : f32
// CHECK-COUNT-3:   exp.fma
// CHECK-NEXT:      scf.yield %{{.*}} : f32
// CHECK-NEXT:    }
// CHECK-NEXT:    scf.yield %[[LOOP]] : f32
// CHECK-NEXT:    } else {
// CHECK-NEXT:    scf.yield %[[ZERO]] : f32
// CHECK-NEXT:    }
// CHECK-NEXT:    %[[TILE:.*]] = shaderm.shared_alloc : !shaderm.shared<64xf32>
// CHECK-NEXT:    %[[PART:.*]] = exp.subgroup_reduce sum %[[DOT]] : f32
// CHECK:         shaderm.store %[[PART]], %[[TILE]][%{{.*}}]
// CHECK:         shaderm.barrier
// CHECK-NOT:     shaderm.barrier
// CHECK:         %[[SUM:.*]] = scf.if %{{.*}} -> (f32) {
// CHECK:         } else {
// CHECK-NEXT:      scf.yield
// CHECK-NEXT:    }
// CHECK-NEXT:    %[[ONE:.*]] = arith.constant 1 : index
// CHECK-NEXT:    %[[FIRST:.*]] = arith.cmpi ult, %[[TID]], %[[ONE]] : index
// CHECK-NEXT:    scf.if %[[FIRST]] {
// CHECK-NEXT:      %[[NN:.*]] = arith.constant 96 : index
// CHECK-NEXT:      %[[RB:.*]] = arith.muli %[[M]], %[[NN]] : index
// CHECK-NEXT:      %[[OI:.*]] = arith.addi %[[RB]], %[[N]] : index
// CHECK-NEXT:      shaderm.store %[[SUM]], %[[Y]][%[[OI]]] : f32, !shaderm.buffer<96xf32>
// CHECK-NEXT:    }
// CHECK-NEXT:    shaderm.return
// CHECK-LABEL: shaderm.schedule @matvec(
// CHECK-SAME:    %[[SX:.*]]: !shaderm.buffer<256xf32>, %[[SW:.*]]: !shaderm.buffer<24576xf32>) -> !shaderm.buffer<96xf32> {
// CHECK-NEXT:    %[[R:.*]] = shaderm.alloc : !shaderm.buffer<96xf32>
// CHECK-NEXT:    shaderm.launch @matvec_k0_matmul grid [96, 1, 1](%[[SX]], %[[SW]], %[[R]]) {traffic = array<i64: 99328, 384, 0, 0, 0>}
// CHECK-NEXT:    shaderm.output %[[R]] : !shaderm.buffer<96xf32>
circuit.graph @matvec(%x: tensor<256xf32>, %w: tensor<96x256xf32>)
    -> tensor<96xf32> {
  %y = circuit.matmul %x, %w : tensor<256xf32>, tensor<96x256xf32>
      -> tensor<96xf32>
  circuit.output %y : tensor<96xf32>
}

// -----

// [M, K] x [N, K] with an f16 weight and an epilogue reading a [N] bias:
// grid [N, M, 1]; the epilogue runs on lane 0 with the bias broadcast over
// the rows (index mod 8). f16 weights are read 8 per load (16 bytes), 4
// without wide loads (SPIR-V).

// NARROW-LABEL: shaderm.kernel @matmul_bias_k0_matmul(
// NARROW:         shaderm.load {{.*}} : !shaderm.buffer<512xf16, read_only> -> vector<4xf16>
// CHECK-LABEL: shaderm.kernel @matmul_bias_k0_matmul(
// CHECK-SAME:    %[[X:.*]]: !shaderm.buffer<128xf32, read_only>, %[[W:.*]]: !shaderm.buffer<512xf16, read_only>, %[[B:.*]]: !shaderm.buffer<8xf32, read_only>, %[[Y:.*]]: !shaderm.buffer<16xf32>) workgroup_size(64, 1, 1) {
// CHECK:         scf.for
// CHECK:           %[[WH:.*]] = shaderm.load %[[W]][%{{.*}}] : !shaderm.buffer<512xf16, read_only> -> vector<8xf16>
// CHECK:           %[[W0:.*]] = vector.extract %[[WH]][0] : f16 from vector<8xf16>
// CHECK-NEXT:      %[[WF:.*]] = exp.convert %[[W0]] : f16 to f32
// CHECK-NEXT:      exp.fma %{{.*}}, %[[WF]], %{{.*}} : f32
// CHECK:         exp.subgroup_reduce
// CHECK:         shaderm.barrier
// CHECK-NOT:     shaderm.barrier
// CHECK:         %[[DOT:.*]] = scf.if %{{.*}} -> (f32) {
// CHECK:         } else {
// CHECK-NEXT:      scf.yield
// CHECK-NEXT:    }
// CHECK:         scf.if
// CHECK:           %[[OI:.*]] = arith.addi %{{.*}}, %{{.*}} : index
// CHECK-NEXT:      arith.index_cast %[[OI]] : index to i32
// CHECK:           %[[C8:.*]] = arith.constant 8 : index
// CHECK-NEXT:      arith.remui %[[OI]], %[[C8]] : index
// CHECK:           %[[BI:.*]] = arith.addi %{{.*}}, %{{.*}} : index
// CHECK-NEXT:      %[[BV:.*]] = shaderm.load %[[B]][%[[BI]]] : !shaderm.buffer<8xf32, read_only> -> f32
// CHECK-NEXT:      %[[O:.*]] = exp.add %[[DOT]], %[[BV]] : f32
// CHECK-NEXT:      shaderm.store %[[O]], %[[Y]][%[[OI]]] : f32, !shaderm.buffer<16xf32>
// CHECK-LABEL: shaderm.schedule @matmul_bias(
// CHECK-SAME:    %[[SX:.*]]: !shaderm.buffer<128xf32>, %[[SW:.*]]: !shaderm.buffer<512xf16>, %[[SB:.*]]: !shaderm.buffer<8xf32>)
// CHECK-NEXT:    %[[R:.*]] = shaderm.alloc : !shaderm.buffer<16xf32>
// CHECK-NEXT:    shaderm.launch @matmul_bias_k0_matmul grid [8, 2, 1](%[[SX]], %[[SW]], %[[SB]], %[[R]]) {traffic = array<i64: 1568, 64, 0, 0, 0>}
circuit.graph @matmul_bias(%x: tensor<2x64xf32>, %w: tensor<8x64xf16>,
                           %b: tensor<8xf32>) -> tensor<2x8xf32> {
  %y = circuit.matmul %x, %w ins(%b : tensor<8xf32>)
      : tensor<2x64xf32>, tensor<8x64xf16> -> tensor<2x8xf32> epilogue {
  ^bb0(%lane: i32, %acc: f32, %bias: f32):
    %o = exp.add %acc, %bias : f32
    circuit.yield %o : f32
  }
  circuit.output %y : tensor<2x8xf32>
}

// -----

// An f16 result: the f32 dot product is converted before the store.

// CHECK-LABEL: shaderm.kernel @matvec_f16_k0_matmul(
// CHECK-SAME:    %[[Y:[^:]*]]: !shaderm.buffer<16xf16>)
// CHECK:         scf.if
// CHECK:           %[[H:.*]] = exp.convert %{{.*}} : f32 to f16
// CHECK-NEXT:      shaderm.store %[[H]], %[[Y]][%{{.*}}] : f16, !shaderm.buffer<16xf16>
circuit.graph @matvec_f16(%x: tensor<64xf16>, %w: tensor<16x64xf16>)
    -> tensor<16xf16> {
  %y = circuit.matmul %x, %w : tensor<64xf16>, tensor<16x64xf16>
      -> tensor<16xf16>
  circuit.output %y : tensor<16xf16>
}

// -----

// q8_0 weights: a buffer of the blocks' 32-bit words (16 rows x 4 blocks x
// 34 bytes = 2176 bytes = 544 words). Lanes stride over units of two value
// words (block_words): four lanes share a block, unit u is block u / 4,
// words 2 (u % 4) and the next. A block's f16 scale is bytes 0-1, its 32
// signed values bytes 2-33, read as 8 words: when they are not word-aligned
// (every other block) a word is assembled from the two aligned words
// around it (the second clamped into the buffer); each byte is
// sign-extended by a shift up and an arithmetic shift down. A unit's sum
// is scaled by its block's d.

// CHECK-LABEL: shaderm.kernel @matvec_q8_0_k0_matmul(
// CHECK-SAME:    %[[X:.*]]: !shaderm.buffer<128xf32, read_only>, %[[W:.*]]: !shaderm.buffer<544xi32, read_only>, %[[Y:.*]]: !shaderm.buffer<16xf32>) workgroup_size(64, 1, 1) {
// CHECK:         %[[N:.*]] = shaderm.workgroup_id x
// CHECK:         %[[BPR:.*]] = arith.constant 4 : index
// CHECK-NEXT:    %[[RB:.*]] = arith.muli %[[N]], %[[BPR]] : index
// CHECK:         scf.for %[[UNIT:.*]] = %{{.*}} to %c16 step %c64 iter_args(%[[ACC:.*]] = %{{.*}}) -> (f32) {
// CHECK:           %[[BLK:.*]] = arith.divui %[[UNIT]], %{{.*}} : index
// CHECK:           %[[PART:.*]] = arith.remui %[[UNIT]], %{{.*}} : index
// CHECK-NEXT:      %[[B:.*]] = arith.addi %[[RB]], %[[BLK]] : index
// CHECK-NEXT:      %[[C34:.*]] = arith.constant 34 : index
// CHECK-NEXT:      %[[BASE:.*]] = arith.muli %[[B]], %[[C34]] : index
// CHECK:           %[[SCALE:.*]] = exp.unpack_f16x2 %{{.*}}[0] : f32
// CHECK:           %[[VALUES:.*]] = arith.addi %[[BASE]], %{{.*}} : index
// CHECK:           %[[MIS:.*]] = arith.cmpi ne, %{{.*}}, %{{.*}} : index
// CHECK:           %[[FIRST:.*]] = arith.muli %[[PART]], %c2{{.*}} : index
// CHECK:           %[[INNER:.*]] = scf.for %[[WI:.*]] = %{{.*}} to %c2{{.*}} step %{{.*}} iter_args(%[[IACC:.*]] = %{{.*}}) -> (f32) {
// CHECK-NEXT:        %[[WORDI:.*]] = arith.addi %[[FIRST]], %[[WI]] : index
// CHECK:             %[[W0:.*]] = shaderm.load %[[W]][%{{.*}}] : !shaderm.buffer<544xi32, read_only> -> i32
// CHECK:             %[[NEXT:.*]] = arith.minui %{{.*}}, %c543 : index
// CHECK-NEXT:        %[[W1:.*]] = shaderm.load %[[W]][%[[NEXT]]] : !shaderm.buffer<544xi32, read_only> -> i32
// CHECK:             %[[WORD:.*]] = arith.select %[[MIS]], %{{.*}}, %[[W0]] : i32
// CHECK:             %[[XV:.*]] = shaderm.load %[[X]][%{{.*}}] : !shaderm.buffer<128xf32, read_only> -> vector<4xf32>
// CHECK-COUNT-4:     arith.shrsi
// CHECK:             scf.yield %{{.*}} : f32
// CHECK-NEXT:      }
// CHECK-NEXT:      %[[NEXTACC:.*]] = exp.fma %[[SCALE]], %[[INNER]], %[[ACC]] : f32
// CHECK-NEXT:      scf.yield %[[NEXTACC]] : f32
// CHECK-NEXT:    }
// CHECK-LABEL: shaderm.schedule @matvec_q8_0(
// CHECK-SAME:    %[[SX:.*]]: !shaderm.buffer<128xf32>, %[[SW:.*]]: !shaderm.buffer<544xi32>) -> !shaderm.buffer<16xf32> {
// CHECK-NEXT:    %[[R:.*]] = shaderm.alloc : !shaderm.buffer<16xf32>
// CHECK-NEXT:    shaderm.launch @matvec_q8_0_k0_matmul grid [16, 1, 1](%[[SX]], %[[SW]], %[[R]]) {traffic = array<i64: 2688, 64, 0, 0, 0>}
circuit.graph @matvec_q8_0(%x: tensor<128xf32>, %w: tensor<16x128x!circuit.q8_0>)
    -> tensor<16xf32> {
  %y = circuit.matmul %x, %w : tensor<128xf32>, tensor<16x128x!circuit.q8_0>
      -> tensor<16xf32>
  circuit.output %y : tensor<16xf32>
}

// -----

// multi_matmul: one kernel over the concatenated rows (grid 16 + 8 = 24);
// workgroups [0, 16) compute the first weight's rows, [16, 24) the
// second's, each with its own reduction and epilogue.

// CHECK-LABEL: shaderm.kernel @multi_k0_multi_matmul(
// CHECK-SAME:    %[[X:.*]]: !shaderm.buffer<64xf32, read_only>, %[[A:.*]]: !shaderm.buffer<1024xf32, read_only>, %[[B:.*]]: !shaderm.buffer<512xf16, read_only>, %[[P:.*]]: !shaderm.buffer<16xf32>, %[[Q:.*]]: !shaderm.buffer<8xf32>) workgroup_size(64, 1, 1) {
// CHECK:         %[[G:.*]] = shaderm.workgroup_id x
// CHECK:         %[[LO0:.*]] = arith.constant 0 : index
// CHECK-NEXT:    %[[GE0:.*]] = arith.cmpi uge, %[[G]], %[[LO0]] : index
// CHECK-NEXT:    %[[HI0:.*]] = arith.constant 16 : index
// CHECK-NEXT:    %[[LT0:.*]] = arith.cmpi ult, %[[G]], %[[HI0]] : index
// CHECK-NEXT:    %[[IN0:.*]] = arith.andi %[[GE0]], %[[LT0]] : i1
// CHECK-NEXT:    scf.if %[[IN0]] {
// CHECK:           shaderm.load %[[A]]
// CHECK:           shaderm.shared_alloc : !shaderm.shared<64xf32>
// CHECK:           shaderm.store %{{.*}}, %[[P]][%{{.*}}] : f32, !shaderm.buffer<16xf32>
// CHECK:         %[[LO1:.*]] = arith.constant 16 : index
// CHECK-NEXT:    %[[GE1:.*]] = arith.cmpi uge, %[[G]], %[[LO1]] : index
// CHECK-NEXT:    %[[HI1:.*]] = arith.constant 24 : index
// CHECK-NEXT:    %[[LT1:.*]] = arith.cmpi ult, %[[G]], %[[HI1]] : index
// CHECK-NEXT:    %[[IN1:.*]] = arith.andi %[[GE1]], %[[LT1]] : i1
// CHECK-NEXT:    scf.if %[[IN1]] {
// CHECK-NEXT:      %[[OFF:.*]] = arith.constant 16 : index
// CHECK-NEXT:      %[[MINE:.*]] = arith.subi %[[G]], %[[OFF]] : index
// CHECK:           shaderm.load %[[B]]
// CHECK:           shaderm.shared_alloc : !shaderm.shared<64xf32>
// CHECK:           %[[S:.*]] = exp.silu %{{.*}} : f32
// CHECK-NEXT:      shaderm.store %[[S]], %[[Q]][%{{.*}}] : f32, !shaderm.buffer<8xf32>
// CHECK-LABEL: shaderm.schedule @multi(
// CHECK-SAME:    %[[SX:.*]]: !shaderm.buffer<64xf32>, %[[SA:.*]]: !shaderm.buffer<1024xf32>, %[[SB:.*]]: !shaderm.buffer<512xf16>) -> (!shaderm.buffer<16xf32>, !shaderm.buffer<8xf32>) {
// CHECK-NEXT:    %[[RP:.*]] = shaderm.alloc : !shaderm.buffer<16xf32>
// CHECK-NEXT:    %[[RQ:.*]] = shaderm.alloc : !shaderm.buffer<8xf32>
// CHECK-NEXT:    shaderm.launch @multi_k0_multi_matmul grid [24, 1, 1](%[[SX]], %[[SA]], %[[SB]], %[[RP]], %[[RQ]]) {traffic = array<i64: 5376, 96, 0, 0, 0>}
// CHECK-NEXT:    shaderm.output %[[RP]], %[[RQ]] : !shaderm.buffer<16xf32>, !shaderm.buffer<8xf32>
// CHECK-NOT:     shaderm.launch
circuit.graph @multi(%x: tensor<64xf32>, %a: tensor<16x64xf32>, %b: tensor<8x64xf16>)
    -> (tensor<16xf32>, tensor<8xf32>) {
  %p, %q = circuit.multi_matmul %x, %a, %b
      : tensor<64xf32>, tensor<16x64xf32>, tensor<8x64xf16>
      -> tensor<16xf32>, tensor<8xf32> epilogues {
  }, {
  ^bb0(%lane: i32, %acc: f32):
    %s = exp.silu %acc : f32
    circuit.yield %s : f32
  }
  circuit.output %p, %q : tensor<16xf32>, tensor<8xf32>
}

//===----------------------------------------------------------------------===//
// Graphs without dispatches
//===----------------------------------------------------------------------===//

// -----

// An argument handed straight back: no kernel, no launch.

// CHECK-LABEL: shaderm.schedule @identity(
// CHECK-SAME:    %[[X:.*]]: !shaderm.buffer<4xf32>) -> !shaderm.buffer<4xf32> {
// CHECK-NEXT:    shaderm.output %[[X]] : !shaderm.buffer<4xf32>
// CHECK-NOT:     shaderm.kernel
circuit.graph @identity(%x: tensor<4xf32>) -> tensor<4xf32> {
  circuit.output %x : tensor<4xf32>
}

// -----

// No graphs: the module is left alone.

// CHECK-LABEL: func.func @host
// CHECK-NOT:   shaderm.
func.func @host() {
  return
}

// -----

// q4_k weights: 144-byte (36-word) super-blocks; lanes stride over units
// of half a quarter super-block (block_words 4: 8 units a block, 16 a row
// of 512), read the block's first 4 words in one vector load (the f16 d
// and dmin, the 12 scale bytes), the 6-bit scale and min of two
// sub-blocks, then 4 of the quarter's 8 quant words in another (x read 4
// values per vector load), in straight-line code that carries 4 sums (two
// dot products, two sums of x). The sums of x times d*min are subtracted
// once per unit.
// CHECK-LABEL: shaderm.kernel @matvec_q4_k_k0_matmul(
// CHECK-SAME:    %[[X:.*]]: !shaderm.buffer<512xf32, read_only>, %[[W:.*]]: !shaderm.buffer<576xi32, read_only>, %{{.*}}: !shaderm.buffer<8xf32>) workgroup_size(64, 1, 1)
// CHECK:         %[[UNITS:.*]] = arith.constant 16 : index
// CHECK:         scf.for %[[U:.*]] = %{{.*}} to %[[UNITS]] step %{{.*}} iter_args(%[[ACC:.*]] = %{{.*}}) -> (f32) {
// CHECK:           %[[C36:.*]] = arith.constant 36 : index
// CHECK:           %[[BW:.*]] = arith.muli %{{.*}}, %[[C36]] : index
// CHECK-NEXT:      %[[HEADS:.*]] = shaderm.load %[[W]][%[[BW]]] : !shaderm.buffer<576xi32, read_only> -> vector<4xi32>
// CHECK-NEXT:      %[[HEAD:.*]] = vector.extract %[[HEADS]][0] : i32 from vector<4xi32>
// CHECK-COUNT-3:   vector.extract %[[HEADS]]
// CHECK-NEXT:      %[[D:.*]] = exp.unpack_f16x2 %[[HEAD]][0] : f32
// CHECK-NEXT:      %[[DMIN:.*]] = exp.unpack_f16x2 %[[HEAD]][1] : f32
// CHECK-COUNT-2:   arith.constant 63 : i32
// CHECK:           %[[DLO:.*]] = exp.mul %[[D]], %{{.*}} : f32
// CHECK:           %[[MLO:.*]] = exp.mul %[[DMIN]], %{{.*}} : f32
// CHECK:           %[[DHI:.*]] = exp.mul %[[D]], %{{.*}} : f32
// CHECK:           %[[MHI:.*]] = exp.mul %[[DMIN]], %{{.*}} : f32
// CHECK:           shaderm.load %[[W]][%{{.*}}] : !shaderm.buffer<576xi32, read_only> -> vector<4xi32>
// CHECK-NOT:       scf.for
// CHECK-COUNT-8:   shaderm.load %[[X]][%{{.*}}] : !shaderm.buffer<512xf32, read_only> -> vector<4xf32>
// CHECK-NOT:       shaderm.load
// CHECK:           %[[HI:.*]] = exp.fma %[[DHI]], %{{.*}}, %[[ACC]] : f32
// CHECK-NEXT:      %[[LO:.*]] = exp.fma %[[DLO]], %{{.*}}, %[[HI]] : f32
// CHECK-NEXT:      %[[MH:.*]] = exp.fma %[[MHI]], %{{.*}}, %{{.*}} : f32
// CHECK-NEXT:      %[[ML:.*]] = exp.fma %[[MLO]], %{{.*}}, %[[MH]] : f32
// CHECK-NEXT:      %[[NEXT:.*]] = exp.sub %[[LO]], %[[ML]] : f32
// CHECK-NEXT:      scf.yield %[[NEXT]] : f32
circuit.graph @matvec_q4_k(%x: tensor<512xf32>, %w: tensor<8x512x!circuit.q4_k>)
    -> tensor<8xf32> {
  %y = circuit.matmul %x, %w : tensor<512xf32>, tensor<8x512x!circuit.q4_k>
      -> tensor<8xf32>
  circuit.output %y : tensor<8xf32>
}

// -----

// q6_k weights: 210-byte super-blocks; lanes stride over 16-value units
// (16 per block) sharing one int8 scale (sign-extended) times the f16 d;
// a unit reads 4 words of low bits and 4 of high bits (each from the two
// aligned words around it, blocks start at even bytes) and centers the
// 6-bit values at 32.
// CHECK-LABEL: shaderm.kernel @matvec_q6_k_k0_matmul(
// CHECK-SAME:    %[[X:.*]]: !shaderm.buffer<256xf32, read_only>, %[[W:.*]]: !shaderm.buffer<420xi32, read_only>, %{{.*}}: !shaderm.buffer<8xf32>) workgroup_size(64, 1, 1)
// CHECK:         %[[UNITS:.*]] = arith.constant 16 : index
// CHECK:         scf.for %[[U:.*]] = %{{.*}} to %[[UNITS]] step %{{.*}} iter_args(%[[ACC:.*]] = %{{.*}}) -> (f32) {
// CHECK:           %[[C210:.*]] = arith.constant 210 : index
// CHECK:           arith.muli %{{.*}}, %[[C210]] : index
// CHECK:           %[[SC:.*]] = arith.shrsi
// CHECK-DAG:       %[[D:.*]] = exp.unpack_f16x2 %{{.*}}[0] : f32
// CHECK-DAG:       %[[SCF:.*]] = exp.convert %[[SC]] : i32 to f32
// CHECK:           %[[SCALE:.*]] = exp.mul %[[D]], %[[SCF]] : f32
// CHECK:           %[[WORDS:.*]] = scf.for {{.*}} -> (f32) {
// CHECK-COUNT-4:     shaderm.load %[[W]]
// CHECK:             shaderm.load %[[X]][%{{.*}}] : !shaderm.buffer<256xf32, read_only> -> vector<4xf32>
// CHECK-COUNT-4:     arith.subi %{{.*}}, %{{.*}} : i32
// CHECK:             scf.yield
// CHECK-NEXT:      }
// CHECK-NEXT:      %[[NEXT:.*]] = exp.fma %[[SCALE]], %[[WORDS]], %[[ACC]] : f32
// CHECK-NEXT:      scf.yield %[[NEXT]] : f32
circuit.graph @matvec_q6_k(%x: tensor<256xf32>, %w: tensor<8x256x!circuit.q6_k>)
    -> tensor<8xf32> {
  %y = circuit.matmul %x, %w : tensor<256xf32>, tensor<8x256x!circuit.q6_k>
      -> tensor<8xf32>
  circuit.output %y : tensor<8xf32>
}

// -----

// K not a multiple of 4: scalar loads, one element per step.
// CHECK-LABEL: shaderm.kernel @matvec_odd_k0_matmul(
// CHECK:         scf.for %[[I:.*]] = %{{.*}} to %{{.*}} step %{{.*}} iter_args
// CHECK-NOT:       vector
// CHECK:           shaderm.load %{{.*}}[%{{.*}}] : !shaderm.buffer<30xf32, read_only> -> f32
// CHECK:           shaderm.load %{{.*}}[%{{.*}}] : !shaderm.buffer<60xf32, read_only> -> f32
// CHECK-NEXT:      exp.fma
circuit.graph @matvec_odd(%x: tensor<30xf32>, %w: tensor<2x30xf32>)
    -> tensor<2xf32> {
  %y = circuit.matmul %x, %w : tensor<30xf32>, tensor<2x30xf32> -> tensor<2xf32>
  circuit.output %y : tensor<2xf32>
}

// -----

// circuit.attention: one kernel of 64 lanes per query head; a shared tile
// of 64 scores between two barriers per tile of positions; pos clamped to
// the cache (100 positions); each lane scores its position reading the f32
// K row 4 values per load (20 loads for head dim 80, 4 a turn), q likewise, where
// the target keeps vector loads (wide-loads); two output dimensions per lane, the second stored only below 80.
// CHECK-LABEL: shaderm.kernel @attend_k0_attention(
// CHECK-SAME:    workgroup_size(64, 1, 1)
// CHECK:         %[[TILE:.*]] = shaderm.shared_alloc : !shaderm.shared<64xf32>
// CHECK:         arith.maxsi
// CHECK:         arith.minsi %{{.*}}, %c99_i32 : i32
// CHECK:         scf.for {{.*}} step %c64
// CHECK:           scf.for {{.*}} to %c5
// CHECK-COUNT-8:     shaderm.load {{.*}} -> vector<4xf32>
// Without wide loads (SPIR-V), one value of K and of q at a time.
// NARROW-LABEL: shaderm.kernel @attend_k0_attention(
// NARROW:         scf.for {{.*}} step %c64
// NARROW-NOT:     vector<4xf32>
// NARROW:           scf.for {{.*}} to %c80
// CHECK:           shaderm.store %{{.*}}, %[[TILE]][%{{.*}}] : f32, !shaderm.shared<64xf32>
// CHECK-NEXT:      shaderm.barrier
// CHECK:           exp.exp
// CHECK:           exp.exp
// CHECK:           shaderm.barrier
// CHECK:         shaderm.store
// CHECK:         shaderm.store
// CHECK-NOT:     shaderm.store
// CHECK:       shaderm.schedule @attend
// CHECK:         shaderm.launch @attend_k0_attention grid [2, 1, 1]
circuit.graph @attend(%q: tensor<160xf32>, %k: tensor<8000xf32>,
                      %v: tensor<8000xf32>, %pos: tensor<1xi32>)
    -> tensor<160xf32> {
  %o = circuit.attention %q, %k, %v, %pos {heads = 2 : i64, kv_heads = 1 : i64,
      head_dim = 80 : i64, scale = 0.125 : f32}
      : tensor<160xf32>, tensor<8000xf32>, tensor<8000xf32>, tensor<1xi32>
      -> tensor<160xf32>
  circuit.output %o : tensor<160xf32>
}

// -----

// A zeros buffer that a scatter_multi then writes in full (grid covers it,
// address = lane) needs no clearing kernel: one kernel, not two.
// CHECK-LABEL: shaderm.kernel @full_k0_scatter_multi(
// CHECK-NOT:   shaderm.kernel
// CHECK:       shaderm.schedule @full
// CHECK-NEXT:    %[[B:.*]] = shaderm.alloc : !shaderm.buffer<8xf32>
// CHECK-NEXT:    shaderm.launch @full_k0_scatter_multi
// CHECK-NOT:     shaderm.launch
circuit.graph @full(%x: tensor<8xf32>, %c: tensor<4xf32>) -> tensor<8xf32> {
  %z = circuit.zeros : tensor<8xf32>
  %r:2 = circuit.scatter_multi grid(8) ins(%x : tensor<8xf32>) into(%z, %c : tensor<8xf32>, tensor<4xf32>) {
  ^bb0(%lane: i32, %v: f32):
    circuit.yield %lane, %v, %lane, %v : i32, f32, i32, f32
  }
  circuit.output %r#0 : tensor<8xf32>
}

// -----

// Not elided: the address is not the lane (cells may stay zero), or the
// grid does not cover the buffer.
// CHECK-LABEL: shaderm.kernel @partial_k0_zeros(
// CHECK:       shaderm.kernel @partial_k1_scatter(
// CHECK:       shaderm.kernel @partial_k2_zeros(
// CHECK:       shaderm.kernel @partial_k3_scatter(
circuit.graph @partial(%x: tensor<8xf32>) -> (tensor<8xf32>, tensor<16xf32>) {
  %z = circuit.zeros : tensor<8xf32>
  %r = circuit.scatter grid(8) ins(%x : tensor<8xf32>) into %z : tensor<8xf32> {
  ^bb0(%lane: i32, %v: f32):
    %c7 = exp.constant 7 : i32
    %a = exp.sub %c7, %lane : i32
    circuit.yield %a, %v : i32, f32
  }
  %z2 = circuit.zeros : tensor<16xf32>
  %r2 = circuit.scatter grid(8) ins(%x : tensor<8xf32>) into %z2 : tensor<16xf32> {
  ^bb0(%lane: i32, %v: f32):
    circuit.yield %lane, %v : i32, f32
  }
  circuit.output %r, %r2 : tensor<8xf32>, tensor<16xf32>
}
