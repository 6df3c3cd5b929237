// RUN: hesper-opt %s -split-input-file | FileCheck %s
// RUN: hesper-opt %s -split-input-file --mlir-print-op-generic | hesper-opt -split-input-file | FileCheck %s
// RUN: hesper-opt %s -split-input-file --convert-shaderm-to-gpu | FileCheck %s --check-prefix=GPU

// A warp's tile product out of workgroup memory: the x tile read
// column-major (transpose), the weight tile row-major, the sums stored
// row-major into f32 workgroup memory.

// CHECK-LABEL: shaderm.kernel @tiles
// CHECK: %[[Z:.*]] = shaderm.matrix_fill %{{.*}} : f32 -> !gpu.mma_matrix<16x16xf32, "COp">
// CHECK: %[[A:.*]] = shaderm.matrix_load %{{.*}}[%{{.*}}] {lead = 64 : i64, transpose} : !shaderm.shared<1024xf16> -> !gpu.mma_matrix<16x16xf16, "AOp">
// CHECK: %[[B:.*]] = shaderm.matrix_load %{{.*}}[%{{.*}}] {lead = 64 : i64} : !shaderm.shared<1024xf16> -> !gpu.mma_matrix<16x16xf16, "BOp">
// CHECK: %[[D:.*]] = shaderm.matrix_mma %[[A]], %[[B]], %[[Z]] {a_transpose} : !gpu.mma_matrix<16x16xf16, "AOp">, !gpu.mma_matrix<16x16xf16, "BOp"> -> !gpu.mma_matrix<16x16xf32, "COp">
// CHECK: shaderm.matrix_store %[[D]], %{{.*}}[%{{.*}}] {lead = 64 : i64} : !gpu.mma_matrix<16x16xf32, "COp">, !shaderm.buffer<4096xf32>

// The same ops in the gpu dialect; workgroup arrays of a kernel with
// matrix tiles are 32-byte aligned (NVIDIA's wmma needs it).
// GPU-LABEL: gpu.func @tiles
// GPU-SAME: workgroup(%[[XS:.*]] : memref<1024xf16, #gpu.address_space<workgroup>> {llvm.align = 32 : i64}, %[[WS:.*]] : memref<1024xf16, #gpu.address_space<workgroup>> {llvm.align = 32 : i64})
// GPU: gpu.subgroup_mma_constant_matrix
// GPU: gpu.subgroup_mma_load_matrix %[[XS]][%{{.*}}] {leadDimension = 64 : index, transpose}
// GPU: gpu.subgroup_mma_load_matrix %[[WS]][%{{.*}}] {leadDimension = 64 : index}
// GPU: gpu.subgroup_mma_compute {{.*}} {a_transpose}
// GPU: gpu.subgroup_mma_store_matrix {{.*}} {leadDimension = 64 : index}
shaderm.kernel @tiles(%out: !shaderm.buffer<4096xf32>) workgroup_size(32, 1, 1) {
  %xs = shaderm.shared_alloc : !shaderm.shared<1024xf16>
  %ws = shaderm.shared_alloc : !shaderm.shared<1024xf16>
  %c0 = arith.constant 0 : index
  %c16 = arith.constant 16 : index
  %zero = arith.constant 0.0 : f32
  %acc = shaderm.matrix_fill %zero : f32 -> !gpu.mma_matrix<16x16xf32, "COp">
  %a = shaderm.matrix_load %xs[%c16] {lead = 64, transpose} : !shaderm.shared<1024xf16> -> !gpu.mma_matrix<16x16xf16, "AOp">
  %b = shaderm.matrix_load %ws[%c0] {lead = 64} : !shaderm.shared<1024xf16> -> !gpu.mma_matrix<16x16xf16, "BOp">
  %d = shaderm.matrix_mma %a, %b, %acc {a_transpose} : !gpu.mma_matrix<16x16xf16, "AOp">, !gpu.mma_matrix<16x16xf16, "BOp"> -> !gpu.mma_matrix<16x16xf32, "COp">
  shaderm.matrix_store %d, %out[%c16] {lead = 64} : !gpu.mma_matrix<16x16xf32, "COp">, !shaderm.buffer<4096xf32>
  shaderm.return
}

// -----

// Kernels without matrix tiles align their workgroup arrays to 16 bytes
// (what LLVM's vectorizer assumes of arrays over 16 bytes), not 32.
// GPU-LABEL: gpu.func @plain
// GPU-SAME: workgroup(%{{.*}} : memref<64xf32, #gpu.address_space<workgroup>> {llvm.align = 16 : i64})
// GPU: gpu.return
shaderm.kernel @plain(%out: !shaderm.buffer<64xf32>) workgroup_size(64, 1, 1) {
  %t = shaderm.shared_alloc : !shaderm.shared<64xf32>
  %i = shaderm.local_id x
  %v = shaderm.load %t[%i] : !shaderm.shared<64xf32> -> f32
  shaderm.store %v, %out[%i] : f32, !shaderm.buffer<64xf32>
  shaderm.return
}
