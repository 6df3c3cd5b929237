// RUN: hesper-opt %s | hesper-opt | FileCheck %s
// RUN: hesper-opt %s --mlir-print-op-generic | hesper-opt | FileCheck %s

// Round trip of every shaderm op and type, in custom and generic form.

// Bindings: read-only and read-write buffers (the explicit `read_write`
// keyword is the default and is not printed), a dynamic length, and scalar
// push constants.

// CHECK-LABEL: shaderm.kernel @scale(
// CHECK-SAME:    %[[X:.*]]: !shaderm.buffer<1024xf32, read_only>,
// CHECK-SAME:    %[[Y:.*]]: !shaderm.buffer<?xf32>, %[[S:.*]]: f32, %[[N:.*]]: i32)
// CHECK-SAME:    workgroup_size(256, 1, 1) {
// CHECK:         %[[I:.*]] = shaderm.global_id x
// CHECK:         %[[V:.*]] = shaderm.load %[[X]][%[[I]]] : !shaderm.buffer<1024xf32, read_only> -> f32
// CHECK:         %[[R:.*]] = exp.mul %[[V]], %[[S]] : f32
// CHECK:         shaderm.store %[[R]], %[[Y]][%[[I]]] : f32, !shaderm.buffer<?xf32>
// CHECK-NEXT:    shaderm.return
// CHECK-NEXT:  }
shaderm.kernel @scale(%x: !shaderm.buffer<1024xf32, read_only>,
                      %y: !shaderm.buffer<?xf32, read_write>, %s: f32,
                      %n: i32)
    workgroup_size(256, 1, 1) {
  %i = shaderm.global_id x
  %v = shaderm.load %x[%i] : !shaderm.buffer<1024xf32, read_only> -> f32
  %r = exp.mul %v, %s : f32
  shaderm.store %r, %y[%i] : f32, !shaderm.buffer<?xf32>
  shaderm.return
}

// A kernel without bindings.

// CHECK-LABEL: shaderm.kernel @empty()
// CHECK-SAME:    workgroup_size(1, 1, 1) {
// CHECK-NEXT:    shaderm.return
// CHECK-NEXT:  }
shaderm.kernel @empty() workgroup_size(1, 1, 1) {
  shaderm.return
}

// Optional launch hints, one at a time and together.

// CHECK-LABEL: shaderm.kernel @subgroup_hint(
// CHECK-SAME:    workgroup_size(32, 4, 1) attributes {subgroup_size = 32 : i32} {
shaderm.kernel @subgroup_hint(%a: !shaderm.buffer<128xf32>)
    workgroup_size(32, 4, 1) attributes {subgroup_size = 32 : i32} {
  shaderm.return
}

// CHECK-LABEL: shaderm.kernel @occupancy_hint(
// CHECK-SAME:    workgroup_size(128, 1, 1) attributes {min_workgroups_per_sm = 4 : i32} {
shaderm.kernel @occupancy_hint(%a: !shaderm.buffer<128xf32>)
    workgroup_size(128, 1, 1) attributes {min_workgroups_per_sm = 4 : i32} {
  shaderm.return
}

// CHECK-LABEL: shaderm.kernel @both_hints(
// CHECK-SAME:    workgroup_size(1024, 1, 1) attributes {min_workgroups_per_sm = 1 : i32, subgroup_size = 64 : i32} {
shaderm.kernel @both_hints(%a: !shaderm.buffer<128xf32>)
    workgroup_size(1024, 1, 1)
    attributes {subgroup_size = 64 : i32, min_workgroups_per_sm = 1 : i32} {
  shaderm.return
}

// Argument attributes and discardable attributes survive the round trip.

// CHECK-LABEL: shaderm.kernel @attributes(
// CHECK-SAME:    %{{.*}}: !shaderm.buffer<4xf32> {hesper.name = "x"}, %{{.*}}: i32 {hesper.push})
// CHECK-SAME:    workgroup_size(1, 1, 1) attributes {hesper.tag = 1 : i64, subgroup_size = 16 : i32} {
shaderm.kernel @attributes(%x: !shaderm.buffer<4xf32> {hesper.name = "x"},
                           %n: i32 {hesper.push})
    workgroup_size(1, 1, 1)
    attributes {hesper.tag = 1 : i64, subgroup_size = 16 : i32} {
  shaderm.return
}

// Every buffer element type and access, as bindings.

// CHECK-LABEL: shaderm.kernel @buffer_types(
// CHECK-SAME:    %{{.*}}: !shaderm.buffer<1xi8>,
// CHECK-SAME:    %{{.*}}: !shaderm.buffer<2xi16, read_only>,
// CHECK-SAME:    %{{.*}}: !shaderm.buffer<?xi32>,
// CHECK-SAME:    %{{.*}}: !shaderm.buffer<?xi64, read_only>,
// CHECK-SAME:    %{{.*}}: !shaderm.buffer<4096xf16>,
// CHECK-SAME:    %{{.*}}: !shaderm.buffer<?xf32, read_only>,
// CHECK-SAME:    %{{.*}}: i32, %{{.*}}: f32)
// CHECK-SAME:    workgroup_size(8, 8, 4)
shaderm.kernel @buffer_types(%a: !shaderm.buffer<1xi8>,
                             %b: !shaderm.buffer<2xi16, read_only>,
                             %c: !shaderm.buffer<?xi32>,
                             %d: !shaderm.buffer<?xi64, read_only>,
                             %e: !shaderm.buffer<4096xf16, read_write>,
                             %f: !shaderm.buffer<?xf32, read_only>,
                             %g: i32, %h: f32)
    workgroup_size(8, 8, 4) {
  shaderm.return
}

// Builtin ids in every dimension.

// CHECK-LABEL: shaderm.kernel @ids(
// CHECK-SAME:    %[[OUT:.*]]: !shaderm.buffer<?xi32>)
// CHECK-DAG:     %[[GX:.*]] = shaderm.global_id x
// CHECK-DAG:     %[[GY:.*]] = shaderm.global_id y
// CHECK-DAG:     %[[GZ:.*]] = shaderm.global_id z
// CHECK-DAG:     %[[LX:.*]] = shaderm.local_id x
// CHECK-DAG:     %[[LY:.*]] = shaderm.local_id y
// CHECK-DAG:     %[[LZ:.*]] = shaderm.local_id z
// CHECK-DAG:     %[[WX:.*]] = shaderm.workgroup_id x
// CHECK-DAG:     %[[WY:.*]] = shaderm.workgroup_id y
// CHECK-DAG:     %[[WZ:.*]] = shaderm.workgroup_id z
// CHECK-DAG:     %[[NX:.*]] = shaderm.num_workgroups x
// CHECK-DAG:     %[[NY:.*]] = shaderm.num_workgroups y
// CHECK-DAG:     %[[NZ:.*]] = shaderm.num_workgroups z
// CHECK-DAG:     %[[SG:.*]] = shaderm.subgroup_id
// CHECK:         %[[S1:.*]] = exp.add %[[GX]], %[[GY]] : index
// CHECK:         %[[S2:.*]] = exp.add %[[S1]], %[[GZ]] : index
// CHECK:         %[[S3:.*]] = exp.add %[[S2]], %[[LX]] : index
// CHECK:         %[[S4:.*]] = exp.add %[[S3]], %[[LY]] : index
// CHECK:         %[[S5:.*]] = exp.add %[[S4]], %[[LZ]] : index
// CHECK:         %[[S6:.*]] = exp.add %[[S5]], %[[WX]] : index
// CHECK:         %[[S7:.*]] = exp.add %[[S6]], %[[WY]] : index
// CHECK:         %[[S8:.*]] = exp.add %[[S7]], %[[WZ]] : index
// CHECK:         %[[S9:.*]] = exp.add %[[S8]], %[[NX]] : index
// CHECK:         %[[S10:.*]] = exp.add %[[S9]], %[[NY]] : index
// CHECK:         %[[S11:.*]] = exp.add %[[S10]], %[[NZ]] : index
// CHECK:         %[[S12:.*]] = exp.add %[[S11]], %[[SG]] : index
// CHECK:         %[[W:.*]] = exp.convert %[[S12]] : index to i32
// CHECK:         shaderm.store %[[W]], %[[OUT]][%[[GX]]] : i32, !shaderm.buffer<?xi32>
shaderm.kernel @ids(%out: !shaderm.buffer<?xi32>) workgroup_size(4, 4, 4) {
  %gx = shaderm.global_id x
  %gy = shaderm.global_id y
  %gz = shaderm.global_id z
  %lx = shaderm.local_id x
  %ly = shaderm.local_id y
  %lz = shaderm.local_id z
  %wx = shaderm.workgroup_id x
  %wy = shaderm.workgroup_id y
  %wz = shaderm.workgroup_id z
  %nx = shaderm.num_workgroups x
  %ny = shaderm.num_workgroups y
  %nz = shaderm.num_workgroups z
  %sg = shaderm.subgroup_id
  %s1 = exp.add %gx, %gy : index
  %s2 = exp.add %s1, %gz : index
  %s3 = exp.add %s2, %lx : index
  %s4 = exp.add %s3, %ly : index
  %s5 = exp.add %s4, %lz : index
  %s6 = exp.add %s5, %wx : index
  %s7 = exp.add %s6, %wy : index
  %s8 = exp.add %s7, %wz : index
  %s9 = exp.add %s8, %nx : index
  %s10 = exp.add %s9, %ny : index
  %s11 = exp.add %s10, %nz : index
  %s12 = exp.add %s11, %sg : index
  %w = exp.convert %s12 : index to i32
  shaderm.store %w, %out[%gx] : i32, !shaderm.buffer<?xi32>
  shaderm.return
}

// Shared memory: allocation, scalar and vector loads and stores, next to
// vector loads and stores on buffers.

// CHECK-LABEL: shaderm.kernel @memory(
// CHECK-SAME:    %[[IN:.*]]: !shaderm.buffer<1024xf32, read_only>,
// CHECK-SAME:    %[[OUT:.*]]: !shaderm.buffer<1024xf32>,
// CHECK-SAME:    %[[HALF:.*]]: !shaderm.buffer<?xf16>,
// CHECK-SAME:    %[[BYTES:.*]]: !shaderm.buffer<?xi8, read_only>)
// CHECK:         %[[T:.*]] = shaderm.shared_alloc : !shaderm.shared<256xf32>
// CHECK:         %[[TH:.*]] = shaderm.shared_alloc : !shaderm.shared<64xf16>
// CHECK:         %[[TI:.*]] = shaderm.shared_alloc : !shaderm.shared<16xi64>
// CHECK:         %[[TB:.*]] = shaderm.shared_alloc : !shaderm.shared<1xi8>
// CHECK:         %[[L:.*]] = shaderm.local_id x
// CHECK:         %[[Q:.*]] = shaderm.load %[[IN]][%[[L]]] : !shaderm.buffer<1024xf32, read_only> -> vector<4xf32>
// CHECK:         shaderm.store %[[Q]], %[[T]][%[[L]]] : vector<4xf32>, !shaderm.shared<256xf32>
// CHECK:         %[[E:.*]] = shaderm.load %[[T]][%[[L]]] : !shaderm.shared<256xf32> -> f32
// CHECK:         %[[E4:.*]] = shaderm.load %[[T]][%[[L]]] : !shaderm.shared<256xf32> -> vector<4xf32>
// CHECK:         shaderm.store %[[E4]], %[[OUT]][%[[L]]] : vector<4xf32>, !shaderm.buffer<1024xf32>
// CHECK:         shaderm.store %[[E]], %[[OUT]][%[[L]]] : f32, !shaderm.buffer<1024xf32>
// CHECK:         %[[H:.*]] = shaderm.load %[[HALF]][%[[L]]] : !shaderm.buffer<?xf16> -> vector<2xf16>
// CHECK:         shaderm.store %[[H]], %[[TH]][%[[L]]] : vector<2xf16>, !shaderm.shared<64xf16>
// CHECK:         %[[B:.*]] = shaderm.load %[[BYTES]][%[[L]]] : !shaderm.buffer<?xi8, read_only> -> i8
// CHECK:         shaderm.store %[[B]], %[[TB]][%[[L]]] : i8, !shaderm.shared<1xi8>
// CHECK:         %[[I64:.*]] = shaderm.load %[[TI]][%[[L]]] : !shaderm.shared<16xi64> -> i64
// CHECK:         shaderm.store %[[I64]], %[[TI]][%[[L]]] : i64, !shaderm.shared<16xi64>
shaderm.kernel @memory(%in: !shaderm.buffer<1024xf32, read_only>,
                       %out: !shaderm.buffer<1024xf32>,
                       %half: !shaderm.buffer<?xf16>,
                       %bytes: !shaderm.buffer<?xi8, read_only>)
    workgroup_size(64, 1, 1) {
  %t = shaderm.shared_alloc : !shaderm.shared<256xf32>
  %th = shaderm.shared_alloc : !shaderm.shared<64xf16>
  %ti = shaderm.shared_alloc : !shaderm.shared<16xi64>
  %tb = shaderm.shared_alloc : !shaderm.shared<1xi8>
  %l = shaderm.local_id x
  %q = shaderm.load %in[%l] : !shaderm.buffer<1024xf32, read_only> -> vector<4xf32>
  shaderm.store %q, %t[%l] : vector<4xf32>, !shaderm.shared<256xf32>
  %e = shaderm.load %t[%l] : !shaderm.shared<256xf32> -> f32
  %e4 = shaderm.load %t[%l] : !shaderm.shared<256xf32> -> vector<4xf32>
  shaderm.store %e4, %out[%l] : vector<4xf32>, !shaderm.buffer<1024xf32>
  shaderm.store %e, %out[%l] : f32, !shaderm.buffer<1024xf32>
  %h = shaderm.load %half[%l] : !shaderm.buffer<?xf16> -> vector<2xf16>
  shaderm.store %h, %th[%l] : vector<2xf16>, !shaderm.shared<64xf16>
  %b = shaderm.load %bytes[%l] : !shaderm.buffer<?xi8, read_only> -> i8
  shaderm.store %b, %tb[%l] : i8, !shaderm.shared<1xi8>
  %i64 = shaderm.load %ti[%l] : !shaderm.shared<16xi64> -> i64
  shaderm.store %i64, %ti[%l] : i64, !shaderm.shared<16xi64>
  shaderm.return
}

// Integer atomics: every kind on i32, add on i64, and on shared memory.

// CHECK-LABEL: shaderm.kernel @atomics_int(
// CHECK-SAME:    %[[C:.*]]: !shaderm.buffer<16xi32>, %[[C64:.*]]: !shaderm.buffer<?xi64>, %[[V:.*]]: i32)
// CHECK:         %[[I:.*]] = shaderm.global_id x
// CHECK:         %[[A0:.*]] = shaderm.atomic_rmw add %[[V]], %[[C]][%[[I]]] : i32, !shaderm.buffer<16xi32>
// CHECK:         %[[A1:.*]] = shaderm.atomic_rmw max %[[A0]], %[[C]][%[[I]]] : i32, !shaderm.buffer<16xi32>
// CHECK:         %[[A2:.*]] = shaderm.atomic_rmw min %[[A1]], %[[C]][%[[I]]] : i32, !shaderm.buffer<16xi32>
// CHECK:         %[[A3:.*]] = shaderm.atomic_rmw umax %[[A2]], %[[C]][%[[I]]] : i32, !shaderm.buffer<16xi32>
// CHECK:         %[[A4:.*]] = shaderm.atomic_rmw umin %[[A3]], %[[C]][%[[I]]] : i32, !shaderm.buffer<16xi32>
// CHECK:         %[[A5:.*]] = shaderm.atomic_rmw and %[[A4]], %[[C]][%[[I]]] : i32, !shaderm.buffer<16xi32>
// CHECK:         %[[A6:.*]] = shaderm.atomic_rmw or %[[A5]], %[[C]][%[[I]]] : i32, !shaderm.buffer<16xi32>
// CHECK:         %[[A7:.*]] = shaderm.atomic_rmw xor %[[A6]], %[[C]][%[[I]]] : i32, !shaderm.buffer<16xi32>
// CHECK:         %[[A8:.*]] = shaderm.atomic_rmw exchange %[[A7]], %[[C]][%[[I]]] : i32, !shaderm.buffer<16xi32>
// CHECK:         %[[W:.*]] = exp.convert %[[A8]] : i32 to i64
// CHECK:         %{{.*}} = shaderm.atomic_rmw add %[[W]], %[[C64]][%[[I]]] : i64, !shaderm.buffer<?xi64>
// CHECK:         %[[SH:.*]] = shaderm.shared_alloc : !shaderm.shared<32xi32>
// CHECK:         %{{.*}} = shaderm.atomic_rmw add %[[V]], %[[SH]][%[[I]]] : i32, !shaderm.shared<32xi32>
// CHECK:         %{{.*}} = shaderm.atomic_rmw or %[[V]], %[[SH]][%[[I]]] : i32, !shaderm.shared<32xi32>
shaderm.kernel @atomics_int(%c: !shaderm.buffer<16xi32>,
                            %c64: !shaderm.buffer<?xi64>, %v: i32)
    workgroup_size(32, 1, 1) {
  %i = shaderm.global_id x
  %a0 = shaderm.atomic_rmw add %v, %c[%i] : i32, !shaderm.buffer<16xi32>
  %a1 = shaderm.atomic_rmw max %a0, %c[%i] : i32, !shaderm.buffer<16xi32>
  %a2 = shaderm.atomic_rmw min %a1, %c[%i] : i32, !shaderm.buffer<16xi32>
  %a3 = shaderm.atomic_rmw umax %a2, %c[%i] : i32, !shaderm.buffer<16xi32>
  %a4 = shaderm.atomic_rmw umin %a3, %c[%i] : i32, !shaderm.buffer<16xi32>
  %a5 = shaderm.atomic_rmw and %a4, %c[%i] : i32, !shaderm.buffer<16xi32>
  %a6 = shaderm.atomic_rmw or %a5, %c[%i] : i32, !shaderm.buffer<16xi32>
  %a7 = shaderm.atomic_rmw xor %a6, %c[%i] : i32, !shaderm.buffer<16xi32>
  %a8 = shaderm.atomic_rmw exchange %a7, %c[%i] : i32, !shaderm.buffer<16xi32>
  %w = exp.convert %a8 : i32 to i64
  %a9 = shaderm.atomic_rmw add %w, %c64[%i] : i64, !shaderm.buffer<?xi64>
  %sh = shaderm.shared_alloc : !shaderm.shared<32xi32>
  %a10 = shaderm.atomic_rmw add %v, %sh[%i] : i32, !shaderm.shared<32xi32>
  %a11 = shaderm.atomic_rmw or %v, %sh[%i] : i32, !shaderm.shared<32xi32>
  shaderm.return
}

// Float atomics: add, max, min and exchange on f32.

// CHECK-LABEL: shaderm.kernel @atomics_float(
// CHECK-SAME:    %[[ACC:.*]]: !shaderm.buffer<1xf32>, %[[V:.*]]: f32)
// CHECK:         %[[Z:.*]] = exp.constant 0 : index
// CHECK:         %[[F0:.*]] = shaderm.atomic_rmw add %[[V]], %[[ACC]][%[[Z]]] : f32, !shaderm.buffer<1xf32>
// CHECK:         %[[F1:.*]] = shaderm.atomic_rmw max %[[F0]], %[[ACC]][%[[Z]]] : f32, !shaderm.buffer<1xf32>
// CHECK:         %[[F2:.*]] = shaderm.atomic_rmw min %[[F1]], %[[ACC]][%[[Z]]] : f32, !shaderm.buffer<1xf32>
// CHECK:         %[[F3:.*]] = shaderm.atomic_rmw exchange %[[F2]], %[[ACC]][%[[Z]]] : f32, !shaderm.buffer<1xf32>
// CHECK:         %[[SH:.*]] = shaderm.shared_alloc : !shaderm.shared<1xf32>
// CHECK:         %{{.*}} = shaderm.atomic_rmw add %[[F3]], %[[SH]][%[[Z]]] : f32, !shaderm.shared<1xf32>
shaderm.kernel @atomics_float(%acc: !shaderm.buffer<1xf32>, %v: f32)
    workgroup_size(64, 1, 1) {
  %z = exp.constant 0 : index
  %f0 = shaderm.atomic_rmw add %v, %acc[%z] : f32, !shaderm.buffer<1xf32>
  %f1 = shaderm.atomic_rmw max %f0, %acc[%z] : f32, !shaderm.buffer<1xf32>
  %f2 = shaderm.atomic_rmw min %f1, %acc[%z] : f32, !shaderm.buffer<1xf32>
  %f3 = shaderm.atomic_rmw exchange %f2, %acc[%z] : f32, !shaderm.buffer<1xf32>
  %sh = shaderm.shared_alloc : !shaderm.shared<1xf32>
  %f4 = shaderm.atomic_rmw add %f3, %sh[%z] : f32, !shaderm.shared<1xf32>
  shaderm.return
}

// Barriers, at the top level and nested in control flow.

// CHECK-LABEL: shaderm.kernel @barriers(
// CHECK:         shaderm.barrier
// CHECK-NEXT:    shaderm.subgroup_barrier
// CHECK:         scf.if
// CHECK-NEXT:      shaderm.subgroup_barrier
// CHECK-NEXT:    }
// CHECK:         scf.for
// CHECK-NEXT:      shaderm.barrier
// CHECK-NEXT:    }
// CHECK-NEXT:    shaderm.return
shaderm.kernel @barriers(%flag: i32) workgroup_size(64, 1, 1) {
  shaderm.barrier
  shaderm.subgroup_barrier
  %zero = exp.constant 0 : i32
  %c = exp.cmp ne, %flag, %zero : i32
  scf.if %c {
    shaderm.subgroup_barrier
  }
  %lo = exp.constant 0 : index
  %hi = exp.constant 4 : index
  %st = exp.constant 1 : index
  scf.for %k = %lo to %hi step %st {
    shaderm.barrier
  }
  shaderm.return
}

// Control flow with exp ops: a bounds-checked grid-stride loop carrying a
// value, an scf.if with results, and a guarded store.

// CHECK-LABEL: shaderm.kernel @control_flow(
// CHECK-SAME:    %[[X:.*]]: !shaderm.buffer<?xf32, read_only>, %[[Y:.*]]: !shaderm.buffer<?xf32>, %[[N:.*]]: i32)
// CHECK:         %[[G:.*]] = shaderm.global_id x
// CHECK:         %[[NW:.*]] = shaderm.num_workgroups x
// CHECK:         %[[NI:.*]] = exp.convert %[[N]] : i32 to index
// CHECK:         %[[STEP:.*]] = exp.mul %[[NW]], %{{.*}} : index
// CHECK:         %[[SUM:.*]] = scf.for %[[K:.*]] = %[[G]] to %[[NI]] step %[[STEP]] iter_args(%[[ACC:.*]] = %{{.*}}) -> (f32) {
// CHECK:           %[[V:.*]] = shaderm.load %[[X]][%[[K]]] : !shaderm.buffer<?xf32, read_only> -> f32
// CHECK:           %[[POS:.*]] = exp.cmp gt, %[[V]], %{{.*}} : f32
// CHECK:           %[[T:.*]] = scf.if %[[POS]] -> (f32) {
// CHECK:             %[[EV:.*]] = exp.exp %[[V]] : f32
// CHECK:             scf.yield %[[EV]] : f32
// CHECK:           } else {
// CHECK:             %[[NV:.*]] = exp.neg %[[V]] : f32
// CHECK:             scf.yield %[[NV]] : f32
// CHECK:           }
// CHECK:           %[[NEXT:.*]] = exp.add %[[ACC]], %[[T]] : f32
// CHECK:           scf.yield %[[NEXT]] : f32
// CHECK:         }
// CHECK:         %[[IN:.*]] = exp.cmp ult, %[[G]], %[[NI]] : index
// CHECK:         scf.if %[[IN]] {
// CHECK:           shaderm.store %[[SUM]], %[[Y]][%[[G]]] : f32, !shaderm.buffer<?xf32>
// CHECK:         }
// CHECK:         shaderm.return
shaderm.kernel @control_flow(%x: !shaderm.buffer<?xf32, read_only>,
                             %y: !shaderm.buffer<?xf32>, %n: i32)
    workgroup_size(128, 1, 1) {
  %g = shaderm.global_id x
  %nw = shaderm.num_workgroups x
  %ni = exp.convert %n : i32 to index
  %c128 = exp.constant 128 : index
  %step = exp.mul %nw, %c128 : index
  %zero = exp.constant 0.0 : f32
  %sum = scf.for %k = %g to %ni step %step iter_args(%acc = %zero) -> (f32) {
    %v = shaderm.load %x[%k] : !shaderm.buffer<?xf32, read_only> -> f32
    %pos = exp.cmp gt, %v, %zero : f32
    %t = scf.if %pos -> (f32) {
      %ev = exp.exp %v : f32
      scf.yield %ev : f32
    } else {
      %nv = exp.neg %v : f32
      scf.yield %nv : f32
    }
    %next = exp.add %acc, %t : f32
    scf.yield %next : f32
  }
  %in = exp.cmp ult, %g, %ni : index
  scf.if %in {
    shaderm.store %sum, %y[%g] : f32, !shaderm.buffer<?xf32>
  }
  shaderm.return
}

// A realistic kernel: one partial sum per workgroup by a shared-memory tree
// reduction, halving the active lanes in an scf.for with a barrier per step.

// CHECK-LABEL: shaderm.kernel @tree_reduce(
// CHECK-SAME:    %[[IN:.*]]: !shaderm.buffer<?xf32, read_only>,
// CHECK-SAME:    %[[OUT:.*]]: !shaderm.buffer<?xf32>, %[[N:.*]]: i32)
// CHECK-SAME:    workgroup_size(256, 1, 1) attributes {subgroup_size = 32 : i32} {
// CHECK:         %[[TILE:.*]] = shaderm.shared_alloc : !shaderm.shared<256xf32>
// CHECK:         %[[G:.*]] = shaderm.global_id x
// CHECK:         %[[L:.*]] = shaderm.local_id x
// CHECK:         %[[WG:.*]] = shaderm.workgroup_id x
// CHECK:         %[[INB:.*]] = exp.cmp ult, %[[G]], %{{.*}} : index
// CHECK:         %[[V:.*]] = scf.if %[[INB]] -> (f32) {
// CHECK:           %[[LD:.*]] = shaderm.load %[[IN]][%[[G]]] : !shaderm.buffer<?xf32, read_only> -> f32
// CHECK:           scf.yield %[[LD]] : f32
// CHECK:         } else {
// CHECK:           scf.yield %{{.*}} : f32
// CHECK:         }
// CHECK:         shaderm.store %[[V]], %[[TILE]][%[[L]]] : f32, !shaderm.shared<256xf32>
// CHECK-NEXT:    shaderm.barrier
// CHECK:         scf.for %[[STEP:.*]] = %{{.*}} to %{{.*}} step %{{.*}} {
// CHECK:           %[[HALF:.*]] = exp.shr_u %{{.*}}, %[[STEP]] : index
// CHECK:           %[[ACTIVE:.*]] = exp.cmp ult, %[[L]], %[[HALF]] : index
// CHECK:           scf.if %[[ACTIVE]] {
// CHECK:             %[[OTHER:.*]] = exp.add %[[L]], %[[HALF]] : index
// CHECK:             %[[A:.*]] = shaderm.load %[[TILE]][%[[L]]] : !shaderm.shared<256xf32> -> f32
// CHECK:             %[[B:.*]] = shaderm.load %[[TILE]][%[[OTHER]]] : !shaderm.shared<256xf32> -> f32
// CHECK:             %[[S:.*]] = exp.add %[[A]], %[[B]] : f32
// CHECK:             shaderm.store %[[S]], %[[TILE]][%[[L]]] : f32, !shaderm.shared<256xf32>
// CHECK:           }
// CHECK-NEXT:      shaderm.barrier
// CHECK-NEXT:    }
// CHECK:         %[[FIRST:.*]] = exp.cmp eq, %[[L]], %{{.*}} : index
// CHECK:         scf.if %[[FIRST]] {
// CHECK:           %[[TOTAL:.*]] = shaderm.load %[[TILE]][%{{.*}}] : !shaderm.shared<256xf32> -> f32
// CHECK:           shaderm.store %[[TOTAL]], %[[OUT]][%[[WG]]] : f32, !shaderm.buffer<?xf32>
// CHECK:         }
// CHECK:         shaderm.return
shaderm.kernel @tree_reduce(%in: !shaderm.buffer<?xf32, read_only>,
                            %out: !shaderm.buffer<?xf32>, %n: i32)
    workgroup_size(256, 1, 1) attributes {subgroup_size = 32 : i32} {
  %tile = shaderm.shared_alloc : !shaderm.shared<256xf32>
  %g = shaderm.global_id x
  %l = shaderm.local_id x
  %wg = shaderm.workgroup_id x
  %c0 = exp.constant 0 : index
  %c1 = exp.constant 1 : index
  %c9 = exp.constant 9 : index
  %c256 = exp.constant 256 : index
  %zero = exp.constant 0.0 : f32
  %ni = exp.convert %n : i32 to index
  %inb = exp.cmp ult, %g, %ni : index
  %v = scf.if %inb -> (f32) {
    %ld = shaderm.load %in[%g] : !shaderm.buffer<?xf32, read_only> -> f32
    scf.yield %ld : f32
  } else {
    scf.yield %zero : f32
  }
  shaderm.store %v, %tile[%l] : f32, !shaderm.shared<256xf32>
  shaderm.barrier
  // Steps 1..8: half = 256 >> step = 128, 64, ..., 1.
  scf.for %step = %c1 to %c9 step %c1 {
    %half = exp.shr_u %c256, %step : index
    %active = exp.cmp ult, %l, %half : index
    scf.if %active {
      %other = exp.add %l, %half : index
      %a = shaderm.load %tile[%l] : !shaderm.shared<256xf32> -> f32
      %b = shaderm.load %tile[%other] : !shaderm.shared<256xf32> -> f32
      %s = exp.add %a, %b : f32
      shaderm.store %s, %tile[%l] : f32, !shaderm.shared<256xf32>
    }
    shaderm.barrier
  }
  %first = exp.cmp eq, %l, %c0 : index
  scf.if %first {
    %total = shaderm.load %tile[%c0] : !shaderm.shared<256xf32> -> f32
    shaderm.store %total, %out[%wg] : f32, !shaderm.buffer<?xf32>
  }
  shaderm.return
}
