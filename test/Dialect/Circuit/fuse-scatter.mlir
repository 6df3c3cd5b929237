// RUN: hesper-opt %s -split-input-file -circuit-fuse-scatter | FileCheck %s
// RUN: hesper-run %s --split-input-file --validate-fusion | FileCheck %s --check-prefix=VALID

// circuit-fuse-scatter: two scatters (or scatter_multis) over the same grid
// become one scatter_multi at the later one's position. Every case is also
// validated in the reference interpreter against the hesper-fuse pipeline
// (VALID), which compares the graph arguments written in place too.

//===----------------------------------------------------------------------===//
// Fused
//===----------------------------------------------------------------------===//

// K and V written into their caches at a dynamic position: one kernel, both
// address/value pairs, the earlier scatter's first.

// CHECK-LABEL: circuit.graph @kv_cache_write(
// CHECK-SAME:    %[[K:.*]]: tensor<64xf32>, %[[V:.*]]: tensor<64xf32>, %[[POS:.*]]: tensor<1xi32>,
// CHECK-SAME:    %[[KC:.*]]: tensor<16x64xf32>, %[[VC:.*]]: tensor<16x64xf32>)
// CHECK-NOT:     circuit.scatter grid
// CHECK:         %{{.*}}:2 = circuit.scatter_multi grid(64) ins(%[[K]], %[[POS]], %[[V]], %[[POS]] : tensor<64xf32>, tensor<1xi32>, tensor<64xf32>, tensor<1xi32>) into(%[[KC]], %[[VC]] : tensor<16x64xf32>, tensor<16x64xf32>) {
// CHECK-NEXT:    ^bb0(%[[LANE:.*]]: i32, %[[A:.*]]: f32, %[[PA:.*]]: i32, %[[B:.*]]: f32, %[[PB:.*]]: i32):
// CHECK-DAG:       %[[C64:.*]] = exp.constant 64 : i32
// CHECK-DAG:       %[[ROWA:.*]] = exp.mul %[[PA]], %[[C64]] : i32
// CHECK-DAG:       %[[ADDRA:.*]] = exp.add %[[ROWA]], %[[LANE]] : i32
// CHECK-DAG:       %[[ROWB:.*]] = exp.mul %[[PB]], %[[C64]] : i32
// CHECK-DAG:       %[[ADDRB:.*]] = exp.add %[[ROWB]], %[[LANE]] : i32
// CHECK:           circuit.yield %[[ADDRA]], %[[A]], %[[ADDRB]], %[[B]] : i32, f32, i32, f32
// CHECK-NEXT:    }
// CHECK-NOT:     circuit.scatter grid
// CHECK:         circuit.output
// VALID: graph @kv_cache_write: 2 -> 1 dispatches, {{[0-9]+}} values compared, max error {{.*}}: ok
circuit.graph @kv_cache_write(%k: tensor<64xf32>, %v: tensor<64xf32>,
                              %pos: tensor<1xi32>, %kc: tensor<16x64xf32>,
                              %vc: tensor<16x64xf32>) {
  %kc2 = circuit.scatter grid(64) ins(%k, %pos : tensor<64xf32>, tensor<1xi32>)
      into %kc : tensor<16x64xf32> {
  ^bb0(%lane: i32, %a: f32, %p: i32):
    %c64 = exp.constant 64 : i32
    %row = exp.mul %p, %c64 : i32
    %addr = exp.add %row, %lane : i32
    circuit.yield %addr, %a : i32, f32
  }
  %vc2 = circuit.scatter grid(64) ins(%v, %pos : tensor<64xf32>, tensor<1xi32>)
      into %vc : tensor<16x64xf32> {
  ^bb0(%lane: i32, %b: f32, %p: i32):
    %c64 = exp.constant 64 : i32
    %row = exp.mul %p, %c64 : i32
    %addr = exp.add %row, %lane : i32
    circuit.yield %addr, %b : i32, f32
  }
  circuit.output
}

// -----

// A scatter followed by a scatter_multi over the same grid: three
// destinations in one scatter_multi, the scatter's pair first.

// CHECK-LABEL: circuit.graph @scatter_then_multi(
// CHECK-SAME:    %[[Q:.*]]: tensor<64xf32>, %[[K:.*]]: tensor<64xf32>, %[[V:.*]]: tensor<64xf32>, %[[POS:.*]]: tensor<1xi32>,
// CHECK-SAME:    %[[QC:.*]]: tensor<16x64xf32>, %[[KC:.*]]: tensor<16x64xf32>, %[[VC:.*]]: tensor<16x64xf32>)
// CHECK-NOT:     circuit.scatter grid
// CHECK:         %{{.*}}:3 = circuit.scatter_multi grid(64) ins(%[[Q]], %[[POS]], %[[K]], %[[V]], %[[POS]] : tensor<64xf32>, tensor<1xi32>, tensor<64xf32>, tensor<64xf32>, tensor<1xi32>) into(%[[QC]], %[[KC]], %[[VC]] : tensor<16x64xf32>, tensor<16x64xf32>, tensor<16x64xf32>) {
// CHECK-NEXT:    ^bb0(%[[LANE:.*]]: i32, %[[A:.*]]: f32, %[[PA:.*]]: i32, %[[B:.*]]: f32, %[[C:.*]]: f32, %[[PB:.*]]: i32):
// CHECK-DAG:       %[[ROWA:.*]] = exp.mul %[[PA]], %{{.*}} : i32
// CHECK-DAG:       %[[ADDRA:.*]] = exp.add %[[ROWA]], %[[LANE]] : i32
// CHECK-DAG:       %[[ROWB:.*]] = exp.mul %[[PB]], %{{.*}} : i32
// CHECK-DAG:       %[[ADDRB:.*]] = exp.add %[[ROWB]], %[[LANE]] : i32
// CHECK:           circuit.yield %[[ADDRA]], %[[A]], %[[ADDRB]], %[[B]], %[[ADDRB]], %[[C]] : i32, f32, i32, f32, i32, f32
// CHECK-NEXT:    }
// CHECK-NEXT:    circuit.output
// VALID: graph @scatter_then_multi: 2 -> 1 dispatches, {{[0-9]+}} values compared, max error {{.*}}: ok
circuit.graph @scatter_then_multi(%q: tensor<64xf32>, %k: tensor<64xf32>,
                                  %v: tensor<64xf32>, %pos: tensor<1xi32>,
                                  %qc: tensor<16x64xf32>,
                                  %kc: tensor<16x64xf32>,
                                  %vc: tensor<16x64xf32>) {
  %qc2 = circuit.scatter grid(64) ins(%q, %pos : tensor<64xf32>, tensor<1xi32>)
      into %qc : tensor<16x64xf32> {
  ^bb0(%lane: i32, %a: f32, %p: i32):
    %c64 = exp.constant 64 : i32
    %row = exp.mul %p, %c64 : i32
    %addr = exp.add %row, %lane : i32
    circuit.yield %addr, %a : i32, f32
  }
  %kc2, %vc2 = circuit.scatter_multi grid(64)
      ins(%k, %v, %pos : tensor<64xf32>, tensor<64xf32>, tensor<1xi32>)
      into(%kc, %vc : tensor<16x64xf32>, tensor<16x64xf32>) {
  ^bb0(%lane: i32, %a: f32, %b: f32, %p: i32):
    %c64 = exp.constant 64 : i32
    %row = exp.mul %p, %c64 : i32
    %addr = exp.add %row, %lane : i32
    circuit.yield %addr, %a, %addr, %b : i32, f32, i32, f32
  }
  circuit.output
}

// -----

// Scatters into fresh buffers (circuit.zeros) of different element types;
// the merged op's results replace both.

// CHECK-LABEL: circuit.graph @into_zeros(
// CHECK-SAME:    %[[A:.*]]: tensor<32xf32>, %[[B:.*]]: tensor<32xi32>)
// CHECK-DAG:     %[[Z0:.*]] = circuit.zeros : tensor<64xf32>
// CHECK-DAG:     %[[Z1:.*]] = circuit.zeros : tensor<32xi32>
// CHECK-NOT:     circuit.scatter grid
// CHECK:         %[[R:.*]]:2 = circuit.scatter_multi grid(32) ins(%[[A]], %[[B]] : tensor<32xf32>, tensor<32xi32>) into(%[[Z0]], %[[Z1]] : tensor<64xf32>, tensor<32xi32>) {
// CHECK-NEXT:    ^bb0(%[[LANE:.*]]: i32, %[[VA:.*]]: f32, %[[VB:.*]]: i32):
// CHECK-DAG:       %[[IA:.*]] = exp.mul %[[LANE]], %{{.*}} : i32
// CHECK-DAG:       %[[IB:.*]] = exp.sub %{{.*}}, %[[LANE]] : i32
// CHECK:           circuit.yield %[[IA]], %[[VA]], %[[IB]], %[[VB]] : i32, f32, i32, i32
// CHECK-NEXT:    }
// CHECK-NEXT:    circuit.output %[[R]]#0, %[[R]]#1 : tensor<64xf32>, tensor<32xi32>
// VALID: graph @into_zeros: 2 -> 1 dispatches, {{[0-9]+}} values compared, max error {{.*}}: ok
circuit.graph @into_zeros(%a: tensor<32xf32>, %b: tensor<32xi32>)
    -> (tensor<64xf32>, tensor<32xi32>) {
  %z0 = circuit.zeros : tensor<64xf32>
  %r0 = circuit.scatter grid(32) ins(%a : tensor<32xf32>)
      into %z0 : tensor<64xf32> {
  ^bb0(%lane: i32, %v: f32):
    %c2 = exp.constant 2 : i32
    %i = exp.mul %lane, %c2 : i32
    circuit.yield %i, %v : i32, f32
  }
  %z1 = circuit.zeros : tensor<32xi32>
  %r1 = circuit.scatter grid(32) ins(%b : tensor<32xi32>)
      into %z1 : tensor<32xi32> {
  ^bb0(%lane: i32, %v: i32):
    %c31 = exp.constant 31 : i32
    %i = exp.sub %c31, %lane : i32
    circuit.yield %i, %v : i32, i32
  }
  circuit.output %r0, %r1 : tensor<64xf32>, tensor<32xi32>
}

// -----

// Three scatters over one grid merge pairwise into one scatter_multi.

// CHECK-LABEL: circuit.graph @three_scatters(
// CHECK-SAME:    %[[A:.*]]: tensor<8xf32>, %[[X:.*]]: tensor<8xf32>, %[[Y:.*]]: tensor<8xf32>, %[[Z:.*]]: tensor<8xf32>)
// CHECK-NOT:     circuit.scatter grid
// CHECK:         %{{.*}}:3 = circuit.scatter_multi grid(8) ins(%[[A]], %[[A]], %[[A]] : tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) into(%[[X]], %[[Y]], %[[Z]] : tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) {
// CHECK-NEXT:    ^bb0(%[[LANE:.*]]: i32, %[[V0:.*]]: f32, %[[V1:.*]]: f32, %[[V2:.*]]: f32):
// CHECK-NEXT:      %[[N:.*]] = exp.neg %[[V1]] : f32
// CHECK-NEXT:      %[[E:.*]] = exp.exp %[[V2]] : f32
// CHECK-NEXT:      circuit.yield %[[LANE]], %[[V0]], %[[LANE]], %[[N]], %[[LANE]], %[[E]] : i32, f32, i32, f32, i32, f32
// CHECK-NEXT:    }
// CHECK-NEXT:    circuit.output
// VALID: graph @three_scatters: 3 -> 1 dispatches, {{[0-9]+}} values compared, max error {{.*}}: ok
circuit.graph @three_scatters(%a: tensor<8xf32>, %x: tensor<8xf32>,
                              %y: tensor<8xf32>, %z: tensor<8xf32>) {
  %x2 = circuit.scatter grid(8) ins(%a : tensor<8xf32>) into %x : tensor<8xf32> {
  ^bb0(%lane: i32, %v: f32):
    circuit.yield %lane, %v : i32, f32
  }
  %y2 = circuit.scatter grid(8) ins(%a : tensor<8xf32>) into %y : tensor<8xf32> {
  ^bb0(%lane: i32, %v: f32):
    %n = exp.neg %v : f32
    circuit.yield %lane, %n : i32, f32
  }
  %z2 = circuit.scatter grid(8) ins(%a : tensor<8xf32>) into %z : tensor<8xf32> {
  ^bb0(%lane: i32, %v: f32):
    %n = exp.exp %v : f32
    circuit.yield %lane, %n : i32, f32
  }
  circuit.output
}

// -----

//===----------------------------------------------------------------------===//
// Not fused
//===----------------------------------------------------------------------===//

// Different grids.

// CHECK-LABEL: circuit.graph @different_grids(
// CHECK:         circuit.scatter grid(64)
// CHECK:         circuit.scatter grid(32)
// CHECK-NOT:     circuit.scatter_multi
// VALID: graph @different_grids: 2 -> 2 dispatches, {{[0-9]+}} values compared, max error {{.*}}: ok
circuit.graph @different_grids(%k: tensor<64xf32>, %v: tensor<32xf32>,
                               %kc: tensor<256xf32>, %vc: tensor<256xf32>) {
  %kc2 = circuit.scatter grid(64) ins(%k : tensor<64xf32>)
      into %kc : tensor<256xf32> {
  ^bb0(%lane: i32, %a: f32):
    circuit.yield %lane, %a : i32, f32
  }
  %vc2 = circuit.scatter grid(32) ins(%v : tensor<32xf32>)
      into %vc : tensor<256xf32> {
  ^bb0(%lane: i32, %b: f32):
    circuit.yield %lane, %b : i32, f32
  }
  circuit.output
}

// -----

// The later scatter reads the earlier one's result (the updated cache).

// CHECK-LABEL: circuit.graph @later_reads_earlier(
// CHECK:         %[[KC2:.*]] = circuit.scatter grid(64) ins(%{{.*}} : tensor<64xf32>) into %{{.*}} : tensor<256xf32>
// CHECK:         circuit.scatter grid(64) ins(%[[KC2]] : tensor<256xf32>) into %{{.*}} : tensor<64xf32>
// CHECK-NOT:     circuit.scatter_multi
// VALID: graph @later_reads_earlier: 2 -> 2 dispatches, {{[0-9]+}} values compared, max error {{.*}}: ok
circuit.graph @later_reads_earlier(%k: tensor<64xf32>, %kc: tensor<256xf32>)
    -> tensor<64xf32> {
  %kc2 = circuit.scatter grid(64) ins(%k : tensor<64xf32>)
      into %kc : tensor<256xf32> {
  ^bb0(%lane: i32, %a: f32):
    circuit.yield %lane, %a : i32, f32
  }
  %z = circuit.zeros : tensor<64xf32>
  %r = circuit.scatter grid(64) ins(%kc2 : tensor<256xf32>)
      into %z : tensor<64xf32> {
  ^bb0(%lane: i32, %all: tensor<256xf32>):
    %c63 = exp.constant 63 : i32
    %i = exp.sub %c63, %lane : i32
    %e = circuit.extract %all[%i] : tensor<256xf32>
    circuit.yield %lane, %e : i32, f32
  }
  circuit.output %r : tensor<64xf32>
}

// -----

// The later scatter writes into the earlier one's result (a chain of
// in-place writes into one cache).

// CHECK-LABEL: circuit.graph @later_writes_into_earlier(
// CHECK:         %[[KC2:.*]] = circuit.scatter grid(64) ins(%{{.*}} : tensor<64xf32>) into %{{.*}} : tensor<256xf32>
// CHECK:         circuit.scatter grid(64) ins(%{{.*}} : tensor<64xf32>) into %[[KC2]] : tensor<256xf32>
// CHECK-NOT:     circuit.scatter_multi
// VALID: graph @later_writes_into_earlier: 2 -> 2 dispatches, {{[0-9]+}} values compared, max error {{.*}}: ok
circuit.graph @later_writes_into_earlier(%k: tensor<64xf32>,
                                         %kc: tensor<256xf32>) {
  %kc2 = circuit.scatter grid(64) ins(%k : tensor<64xf32>)
      into %kc : tensor<256xf32> {
  ^bb0(%lane: i32, %a: f32):
    circuit.yield %lane, %a : i32, f32
  }
  %kc3 = circuit.scatter grid(64) ins(%k : tensor<64xf32>)
      into %kc2 : tensor<256xf32> {
  ^bb0(%lane: i32, %a: f32):
    %c64 = exp.constant 64 : i32
    %i = exp.add %lane, %c64 : i32
    circuit.yield %i, %a : i32, f32
  }
  circuit.output
}

// -----

// The earlier scatter's result is used by a map in between.

// CHECK-LABEL: circuit.graph @result_used_between(
// CHECK:         %[[KC2:.*]] = circuit.scatter grid(64)
// CHECK:         circuit.map ins(%[[KC2]] : tensor<256xf32>) -> tensor<64xf32>
// CHECK:         circuit.scatter grid(64)
// CHECK-NOT:     circuit.scatter_multi
// VALID: graph @result_used_between: 3 -> 3 dispatches, {{[0-9]+}} values compared, max error {{.*}}: ok
circuit.graph @result_used_between(%k: tensor<64xf32>, %v: tensor<64xf32>,
                                   %kc: tensor<256xf32>, %vc: tensor<256xf32>)
    -> tensor<64xf32> {
  %kc2 = circuit.scatter grid(64) ins(%k : tensor<64xf32>)
      into %kc : tensor<256xf32> {
  ^bb0(%lane: i32, %a: f32):
    circuit.yield %lane, %a : i32, f32
  }
  %s = circuit.map ins(%kc2 : tensor<256xf32>) -> tensor<64xf32> {
  ^bb0(%lane: i32, %all: tensor<256xf32>):
    %c4 = exp.constant 4 : i32
    %i = exp.mul %lane, %c4 : i32
    %e = circuit.extract %all[%i] : tensor<256xf32>
    circuit.yield %e : f32
  }
  %vc2 = circuit.scatter grid(64) ins(%v : tensor<64xf32>)
      into %vc : tensor<256xf32> {
  ^bb0(%lane: i32, %b: f32):
    circuit.yield %lane, %b : i32, f32
  }
  circuit.output %s : tensor<64xf32>
}

// -----

// Hazard: a map between the K-cache scatter and the V-cache scatter reads
// the K cache the earlier scatter writes in place (its new version). Delayed
// to the V scatter's position, the K write would land after that read.

// CHECK-LABEL: circuit.graph @read_between_of_written_buffer(
// CHECK-SAME:    %[[K:.*]]: tensor<64xf32>, %[[V:.*]]: tensor<64xf32>, %[[KC:.*]]: tensor<256xf32>, %[[VC:.*]]: tensor<256xf32>)
// CHECK:         %[[KC2:.*]] = circuit.scatter grid(64) ins(%[[K]] : tensor<64xf32>) into %[[KC]]
// CHECK:         circuit.map ins(%[[KC2]] : tensor<256xf32>) -> tensor<64xf32>
// CHECK:         circuit.scatter grid(64) ins(%[[V]] : tensor<64xf32>) into %[[VC]]
// CHECK-NOT:     circuit.scatter_multi
// VALID: graph @read_between_of_written_buffer: 3 -> 3 dispatches, {{[0-9]+}} values compared, max error {{.*}}: ok
circuit.graph @read_between_of_written_buffer(%k: tensor<64xf32>,
                                              %v: tensor<64xf32>,
                                              %kc: tensor<256xf32>,
                                              %vc: tensor<256xf32>)
    -> tensor<64xf32> {
  %kc2 = circuit.scatter grid(64) ins(%k : tensor<64xf32>)
      into %kc : tensor<256xf32> {
  ^bb0(%lane: i32, %a: f32):
    circuit.yield %lane, %a : i32, f32
  }
  %s = circuit.map ins(%kc2 : tensor<256xf32>) -> tensor<64xf32> {
  ^bb0(%lane: i32, %all: tensor<256xf32>):
    %c4 = exp.constant 4 : i32
    %i = exp.mul %lane, %c4 : i32
    %e = circuit.extract %all[%i] : tensor<256xf32>
    circuit.yield %e : f32
  }
  %vc2 = circuit.scatter grid(64) ins(%v : tensor<64xf32>)
      into %vc : tensor<256xf32> {
  ^bb0(%lane: i32, %b: f32):
    circuit.yield %lane, %b : i32, f32
  }
  circuit.output %s : tensor<64xf32>
}

// -----

// Hazard: between the two, a scatter (over another grid) writes in place
// into %k, which the earlier scatter reads. Delayed, the earlier scatter
// would read the new values.

// CHECK-LABEL: circuit.graph @write_between_into_read_buffer(
// CHECK-SAME:    %[[K:.*]]: tensor<64xf32>, %[[V:.*]]: tensor<64xf32>, %[[U:.*]]: tensor<16xf32>, %[[KC:.*]]: tensor<256xf32>, %[[VC:.*]]: tensor<256xf32>)
// CHECK:         circuit.scatter grid(64) ins(%[[K]] : tensor<64xf32>) into %[[KC]]
// CHECK:         circuit.scatter grid(16) ins(%[[U]] : tensor<16xf32>) into %[[K]]
// CHECK:         circuit.scatter grid(64) ins(%[[V]] : tensor<64xf32>) into %[[VC]]
// CHECK-NOT:     circuit.scatter_multi
// VALID: graph @write_between_into_read_buffer: 3 -> 3 dispatches, {{[0-9]+}} values compared, max error {{.*}}: ok
circuit.graph @write_between_into_read_buffer(%k: tensor<64xf32>,
                                              %v: tensor<64xf32>,
                                              %u: tensor<16xf32>,
                                              %kc: tensor<256xf32>,
                                              %vc: tensor<256xf32>) {
  %kc2 = circuit.scatter grid(64) ins(%k : tensor<64xf32>)
      into %kc : tensor<256xf32> {
  ^bb0(%lane: i32, %a: f32):
    circuit.yield %lane, %a : i32, f32
  }
  %k2 = circuit.scatter grid(16) ins(%u : tensor<16xf32>)
      into %k : tensor<64xf32> {
  ^bb0(%lane: i32, %a: f32):
    circuit.yield %lane, %a : i32, f32
  }
  %vc2 = circuit.scatter grid(64) ins(%v : tensor<64xf32>)
      into %vc : tensor<256xf32> {
  ^bb0(%lane: i32, %b: f32):
    circuit.yield %lane, %b : i32, f32
  }
  circuit.output
}

// -----

// The later scatter writes in place the buffer the earlier one reads: in
// one kernel, the earlier scatter's reads would race with those writes.

// CHECK-LABEL: circuit.graph @later_writes_what_earlier_reads(
// CHECK-SAME:    %[[V:.*]]: tensor<64xf32>, %[[VC:.*]]: tensor<64xf32>)
// CHECK:         circuit.scatter grid(64) ins(%[[VC]] : tensor<64xf32>) into %{{.*}} : tensor<64xf32>
// CHECK:         circuit.scatter grid(64) ins(%[[V]] : tensor<64xf32>) into %[[VC]] : tensor<64xf32>
// CHECK-NOT:     circuit.scatter_multi
// VALID: graph @later_writes_what_earlier_reads: 2 -> 2 dispatches, {{[0-9]+}} values compared, max error {{.*}}: ok
circuit.graph @later_writes_what_earlier_reads(%v: tensor<64xf32>,
                                               %vc: tensor<64xf32>)
    -> tensor<64xf32> {
  %z = circuit.zeros : tensor<64xf32>
  %snap = circuit.scatter grid(64) ins(%vc : tensor<64xf32>)
      into %z : tensor<64xf32> {
  ^bb0(%lane: i32, %all: tensor<64xf32>):
    %c63 = exp.constant 63 : i32
    %i = exp.sub %c63, %lane : i32
    %e = circuit.extract %all[%i] : tensor<64xf32>
    circuit.yield %lane, %e : i32, f32
  }
  %vc2 = circuit.scatter grid(64) ins(%v : tensor<64xf32>)
      into %vc : tensor<64xf32> {
  ^bb0(%lane: i32, %b: f32):
    circuit.yield %lane, %b : i32, f32
  }
  circuit.output %snap : tensor<64xf32>
}

// -----

// Merged, these two scatters would bind 12 + 12 inputs and 2 destinations,
// more than the 24 buffers one kernel may (kMaxKernelBuffers), so they
// stay apart; with 11 inputs each (24 buffers) they merge.

// CHECK-LABEL: circuit.graph @over_buffer_limit(
// CHECK:         circuit.scatter grid(4)
// CHECK:         circuit.scatter grid(4)
// CHECK-NOT:     circuit.scatter_multi
// VALID: graph @over_buffer_limit: 2 -> 2 dispatches, {{[0-9]+}} values compared, max error {{.*}}: ok
circuit.graph @over_buffer_limit(%x0: tensor<4xf32>, %x1: tensor<4xf32>, %x2: tensor<4xf32>, %x3: tensor<4xf32>, %x4: tensor<4xf32>, %x5: tensor<4xf32>, %x6: tensor<4xf32>, %x7: tensor<4xf32>, %x8: tensor<4xf32>, %x9: tensor<4xf32>, %x10: tensor<4xf32>, %x11: tensor<4xf32>, %y0: tensor<4xf32>, %y1: tensor<4xf32>, %y2: tensor<4xf32>, %y3: tensor<4xf32>, %y4: tensor<4xf32>, %y5: tensor<4xf32>, %y6: tensor<4xf32>, %y7: tensor<4xf32>, %y8: tensor<4xf32>, %y9: tensor<4xf32>, %y10: tensor<4xf32>, %y11: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %za = circuit.zeros : tensor<4xf32>
  %zb = circuit.zeros : tensor<4xf32>
  %ra = circuit.scatter grid(4) ins(%x0, %x1, %x2, %x3, %x4, %x5, %x6, %x7, %x8, %x9, %x10, %x11 : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>)
      into %za : tensor<4xf32> {
  ^bb0(%lane: i32, %a0: f32, %a1: f32, %a2: f32, %a3: f32, %a4: f32, %a5: f32, %a6: f32, %a7: f32, %a8: f32, %a9: f32, %a10: f32, %a11: f32):
    %s1 = exp.add %a0, %a1 : f32
    %s2 = exp.add %s1, %a2 : f32
    %s3 = exp.add %s2, %a3 : f32
    %s4 = exp.add %s3, %a4 : f32
    %s5 = exp.add %s4, %a5 : f32
    %s6 = exp.add %s5, %a6 : f32
    %s7 = exp.add %s6, %a7 : f32
    %s8 = exp.add %s7, %a8 : f32
    %s9 = exp.add %s8, %a9 : f32
    %s10 = exp.add %s9, %a10 : f32
    %s11 = exp.add %s10, %a11 : f32
    circuit.yield %lane, %s11 : i32, f32
  }
  %rb = circuit.scatter grid(4) ins(%y0, %y1, %y2, %y3, %y4, %y5, %y6, %y7, %y8, %y9, %y10, %y11 : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>)
      into %zb : tensor<4xf32> {
  ^bb0(%lane: i32, %a0: f32, %a1: f32, %a2: f32, %a3: f32, %a4: f32, %a5: f32, %a6: f32, %a7: f32, %a8: f32, %a9: f32, %a10: f32, %a11: f32):
    %s1 = exp.add %a0, %a1 : f32
    %s2 = exp.add %s1, %a2 : f32
    %s3 = exp.add %s2, %a3 : f32
    %s4 = exp.add %s3, %a4 : f32
    %s5 = exp.add %s4, %a5 : f32
    %s6 = exp.add %s5, %a6 : f32
    %s7 = exp.add %s6, %a7 : f32
    %s8 = exp.add %s7, %a8 : f32
    %s9 = exp.add %s8, %a9 : f32
    %s10 = exp.add %s9, %a10 : f32
    %s11 = exp.add %s10, %a11 : f32
    circuit.yield %lane, %s11 : i32, f32
  }
  circuit.output %ra, %rb : tensor<4xf32>, tensor<4xf32>
}

// -----

// CHECK-LABEL: circuit.graph @at_buffer_limit(
// CHECK:         circuit.scatter_multi grid(4)
// VALID: graph @at_buffer_limit: 2 -> 1 dispatches, {{[0-9]+}} values compared, max error {{.*}}: ok
circuit.graph @at_buffer_limit(%x0: tensor<4xf32>, %x1: tensor<4xf32>, %x2: tensor<4xf32>, %x3: tensor<4xf32>, %x4: tensor<4xf32>, %x5: tensor<4xf32>, %x6: tensor<4xf32>, %x7: tensor<4xf32>, %x8: tensor<4xf32>, %x9: tensor<4xf32>, %x10: tensor<4xf32>, %y0: tensor<4xf32>, %y1: tensor<4xf32>, %y2: tensor<4xf32>, %y3: tensor<4xf32>, %y4: tensor<4xf32>, %y5: tensor<4xf32>, %y6: tensor<4xf32>, %y7: tensor<4xf32>, %y8: tensor<4xf32>, %y9: tensor<4xf32>, %y10: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %za = circuit.zeros : tensor<4xf32>
  %zb = circuit.zeros : tensor<4xf32>
  %ra = circuit.scatter grid(4) ins(%x0, %x1, %x2, %x3, %x4, %x5, %x6, %x7, %x8, %x9, %x10 : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>)
      into %za : tensor<4xf32> {
  ^bb0(%lane: i32, %a0: f32, %a1: f32, %a2: f32, %a3: f32, %a4: f32, %a5: f32, %a6: f32, %a7: f32, %a8: f32, %a9: f32, %a10: f32):
    %s1 = exp.add %a0, %a1 : f32
    %s2 = exp.add %s1, %a2 : f32
    %s3 = exp.add %s2, %a3 : f32
    %s4 = exp.add %s3, %a4 : f32
    %s5 = exp.add %s4, %a5 : f32
    %s6 = exp.add %s5, %a6 : f32
    %s7 = exp.add %s6, %a7 : f32
    %s8 = exp.add %s7, %a8 : f32
    %s9 = exp.add %s8, %a9 : f32
    %s10 = exp.add %s9, %a10 : f32
    circuit.yield %lane, %s10 : i32, f32
  }
  %rb = circuit.scatter grid(4) ins(%y0, %y1, %y2, %y3, %y4, %y5, %y6, %y7, %y8, %y9, %y10 : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>)
      into %zb : tensor<4xf32> {
  ^bb0(%lane: i32, %a0: f32, %a1: f32, %a2: f32, %a3: f32, %a4: f32, %a5: f32, %a6: f32, %a7: f32, %a8: f32, %a9: f32, %a10: f32):
    %s1 = exp.add %a0, %a1 : f32
    %s2 = exp.add %s1, %a2 : f32
    %s3 = exp.add %s2, %a3 : f32
    %s4 = exp.add %s3, %a4 : f32
    %s5 = exp.add %s4, %a5 : f32
    %s6 = exp.add %s5, %a6 : f32
    %s7 = exp.add %s6, %a7 : f32
    %s8 = exp.add %s7, %a8 : f32
    %s9 = exp.add %s8, %a9 : f32
    %s10 = exp.add %s9, %a10 : f32
    circuit.yield %lane, %s10 : i32, f32
  }
  circuit.output %ra, %rb : tensor<4xf32>, tensor<4xf32>
}
