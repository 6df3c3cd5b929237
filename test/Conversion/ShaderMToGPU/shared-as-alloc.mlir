// Shared allocations as memref.alloc (the SPIR-V and CPU pipelines): one
// memref.alloc in memory space 3 per shaderm.shared_alloc, in order, for
// every element type. Several allocations in one kernel used to crash the
// pass (its builder pointed at the first allocation after erasing it).
// The project's own ShaderM op test, which crashed hesper-to-spirv, now
// gets the one diagnostic for what SPIR-V lowering cannot express.
//
// RUN: hesper-opt %s --convert-shaderm-to-gpu="shared-memory-as-alloc=true" | FileCheck %s
// RUN: not hesper-opt %S/../../Dialect/ShaderM/ops.mlir --hesper-to-spirv="subgroup-size=8" -o /dev/null 2>&1 | FileCheck %s --check-prefix=OPS
// OPS: error: 'shaderm.subgroup_barrier' op is not supported by convert-shaderm-to-gpu
// OPS-NOT: Stack dump
// RUN: hesper-opt %s --convert-shaderm-to-gpu | FileCheck %s --check-prefix=ATTR

// CHECK-LABEL: gpu.func @four
// CHECK-NEXT:    %[[A:.*]] = memref.alloc() : memref<256xf32, 3>
// CHECK-NEXT:    %[[B:.*]] = memref.alloc() : memref<64xf16, 3>
// CHECK-NEXT:    %[[C:.*]] = memref.alloc() : memref<16xi64, 3>
// CHECK-NEXT:    %[[D:.*]] = memref.alloc() : memref<1xi8, 3>
// CHECK-NOT:     shaderm.shared_alloc
// CHECK:         memref.store %{{.*}}, %[[A]]
// CHECK:         memref.store %{{.*}}, %[[D]]
// ATTR-LABEL: gpu.func @four
// ATTR-SAME:    workgroup(%{{.*}} : memref<256xf32, #gpu.address_space<workgroup>> {llvm.align = 16 : i64}, %{{.*}} : memref<64xf16, #gpu.address_space<workgroup>> {llvm.align = 16 : i64}, %{{.*}} : memref<16xi64, #gpu.address_space<workgroup>> {llvm.align = 16 : i64}, %{{.*}} : memref<1xi8, #gpu.address_space<workgroup>> {llvm.align = 16 : i64})
// ATTR-NOT:     memref.alloc
shaderm.kernel @four(%out: !shaderm.buffer<4xf32>) workgroup_size(4, 1, 1) {
  %a = shaderm.shared_alloc : !shaderm.shared<256xf32>
  %b = shaderm.shared_alloc : !shaderm.shared<64xf16>
  %c = shaderm.shared_alloc : !shaderm.shared<16xi64>
  %d = shaderm.shared_alloc : !shaderm.shared<1xi8>
  %l = shaderm.local_id x
  %v = arith.constant 1.0 : f32
  shaderm.store %v, %a[%l] : f32, !shaderm.shared<256xf32>
  %zero = arith.constant 0 : index
  %byte = arith.constant 7 : i8
  shaderm.store %byte, %d[%zero] : i8, !shaderm.shared<1xi8>
  shaderm.return
}
