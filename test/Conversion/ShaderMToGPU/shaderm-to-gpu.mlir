// RUN: hesper-opt %s -split-input-file --convert-shaderm-to-gpu | FileCheck %s

// Bindings keep their order as memrefs; the ABI is recorded on the function.
// CHECK-LABEL: module attributes {gpu.container_module, hesper.kernels = {scale = {bindings = [{access = "read_only", index = 0 : i32
// CHECK:       gpu.module @hesper_kernels
// CHECK:       gpu.func @scale(%[[X:.*]]: memref<1024xf32>, %[[Y:.*]]: memref<1024xf32>, %[[S:.*]]: f32) kernel
// CHECK-SAME:    hesper.abi = {bindings = [{access = "read_only", index = 0 : i32, kind = "buffer", type = !shaderm.buffer<1024xf32, read_only>}, {access = "read_write", index = 1 : i32, kind = "buffer", type = !shaderm.buffer<1024xf32>}, {index = 2 : i32, kind = "scalar", type = f32}], shared_bytes = 0 : i64, workgroup_size = array<i32: 256, 1, 1>}
// CHECK-SAME:    known_block_size = array<i32: 256, 1, 1>
// CHECK:         %[[I:.*]] = gpu.global_id x
// CHECK:         scf.if
// CHECK:           %[[V:.*]] = memref.load %[[X]][%[[I]]] : memref<1024xf32>
// CHECK:           %[[R:.*]] = exp.mul %[[V]], %[[S]] : f32
// CHECK:           memref.store %[[R]], %[[Y]][%[[I]]] : memref<1024xf32>
// CHECK:         gpu.return
// CHECK-NOT:   {{ shaderm\.[a-z_]+ }}
shaderm.kernel @scale(%x: !shaderm.buffer<1024xf32, read_only>, %y: !shaderm.buffer<1024xf32>, %s: f32) workgroup_size(256, 1, 1) {
  %i = shaderm.global_id x
  %n = arith.constant 1024 : index
  %in = arith.cmpi ult, %i, %n : index
  scf.if %in {
    %v = shaderm.load %x[%i] : !shaderm.buffer<1024xf32, read_only> -> f32
    %r = exp.mul %v, %s : f32
    shaderm.store %r, %y[%i] : f32, !shaderm.buffer<1024xf32>
  }
  shaderm.return
}

// -----

// Shared memory becomes a workgroup attribution and counts in the ABI;
// ids, barriers, vector loads and atomics map to gpu, vector and memref.
// CHECK-LABEL: gpu.func @tree(
// CHECK-SAME:    workgroup(%[[TILE:.*]] : memref<256xf32, #gpu.address_space<workgroup>> {llvm.align = 16 : i64})
// CHECK-SAME:    shared_bytes = 1024 : i64
// CHECK-SAME:    subgroup_size = 32 : i32
// CHECK:         %[[L:.*]] = gpu.thread_id x
// CHECK:         gpu.block_id y
// CHECK:         gpu.grid_dim z
// CHECK:         vector.load %{{.*}}[%[[L]]] {alignment = 16 : i64} : memref<256xf32>, vector<4xf32>
// CHECK:         memref.store %{{.*}}, %[[TILE]][%[[L]]]
// CHECK:         gpu.barrier
// CHECK:         memref.atomic_rmw addi
// CHECK:         memref.atomic_rmw maxnumf
// CHECK:         memref.generic_atomic_rmw
// CHECK:           arith.xori
// CHECK:           memref.atomic_yield
shaderm.kernel @tree(%x: !shaderm.buffer<256xf32, read_only>, %out: !shaderm.buffer<1xf32>, %cnt: !shaderm.buffer<1xi32>) workgroup_size(256, 1, 1) attributes {subgroup_size = 32 : i32} {
  %tile = shaderm.shared_alloc : !shaderm.shared<256xf32>
  %l = shaderm.local_id x
  %wg = shaderm.workgroup_id y
  %nw = shaderm.num_workgroups z
  %q = shaderm.load %x[%l] : !shaderm.buffer<256xf32, read_only> -> vector<4xf32>
  %v = shaderm.load %x[%l] : !shaderm.buffer<256xf32, read_only> -> f32
  shaderm.store %v, %tile[%l] : f32, !shaderm.shared<256xf32>
  shaderm.barrier
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : i32
  %a = shaderm.atomic_rmw add %c1, %cnt[%c0] : i32, !shaderm.buffer<1xi32>
  %m = shaderm.atomic_rmw max %v, %out[%c0] : f32, !shaderm.buffer<1xf32>
  %o = shaderm.atomic_rmw xor %c1, %cnt[%c0] : i32, !shaderm.buffer<1xi32>
  shaderm.return
}

// -----

// A dynamic-length buffer becomes a dynamic memref.
// CHECK-LABEL: gpu.func @dynamic(
// CHECK-SAME:    memref<?xi32>
shaderm.kernel @dynamic(%b: !shaderm.buffer<?xi32>) workgroup_size(64, 1, 1) {
  shaderm.return
}

// -----

// No kernels: the module is left alone.
// CHECK-LABEL: func.func @host
// CHECK-NOT:   gpu.module
func.func @host() {
  return
}
