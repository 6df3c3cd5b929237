// RUN: hesper-opt %s -split-input-file --hesper-specialize-subgroup-size="size=16" | FileCheck %s
// RUN: hesper-opt %s -split-input-file -verify-diagnostics --hesper-specialize-subgroup-size | FileCheck %s --check-prefix=DEFAULT

// hesper-specialize-subgroup-size: gpu.subgroup_size in every kernel becomes
// a constant (the option's size, 32 by default), and the kernel's
// hesper.abi and the module's hesper.kernels record the size. The error for
// a kernel whose ABI states another size: specialize-subgroup-size-invalid.mlir.

// CHECK-LABEL: module attributes {gpu.container_module, hesper.kernels = {lanes = {shared_bytes = 0 : i64, subgroup_size = 16 : i32, workgroup_size = array<i32: 64, 1, 1>}}}
// CHECK:       gpu.func @lanes(%[[OUT:.*]]: memref<64xindex>) kernel
// CHECK-SAME:    hesper.abi = {shared_bytes = 0 : i64, subgroup_size = 16 : i32, workgroup_size = array<i32: 64, 1, 1>}
// CHECK-NOT:     gpu.subgroup_size
// CHECK:         %[[T:.*]] = gpu.thread_id x
// CHECK-NEXT:    %[[C16:.*]] = arith.constant 16 : index
// CHECK-NEXT:    %[[L:.*]] = arith.remui %[[T]], %[[C16]] : index
// CHECK-NEXT:    memref.store %[[L]], %[[OUT]][%[[T]]]
// CHECK-NEXT:    %[[C16B:.*]] = arith.constant 16 : index
// CHECK-NEXT:    memref.store %[[C16B]], %[[OUT]]
// CHECK-NOT:     gpu.subgroup_size
// CHECK:         gpu.return

// DEFAULT-LABEL: module attributes {gpu.container_module, hesper.kernels = {lanes = {shared_bytes = 0 : i64, subgroup_size = 32 : i32, workgroup_size = array<i32: 64, 1, 1>}}}
// DEFAULT:       gpu.func @lanes(
// DEFAULT-SAME:    subgroup_size = 32 : i32
// DEFAULT:         %[[C32:.*]] = arith.constant 32 : index
// DEFAULT-NEXT:    arith.remui %{{.*}}, %[[C32]] : index
// DEFAULT-NOT:     gpu.subgroup_size
// DEFAULT:         gpu.return
module attributes {gpu.container_module,
    hesper.kernels = {lanes = {shared_bytes = 0 : i64,
                               workgroup_size = array<i32: 64, 1, 1>}}} {
  gpu.module @hesper_kernels {
    gpu.func @lanes(%out: memref<64xindex>) kernel
        attributes {hesper.abi = {shared_bytes = 0 : i64,
                                  workgroup_size = array<i32: 64, 1, 1>}} {
      %c0 = arith.constant 0 : index
      %t = gpu.thread_id x
      %s = gpu.subgroup_size : index
      %l = arith.remui %t, %s : index
      memref.store %l, %out[%t] : memref<64xindex>
      %s2 = gpu.subgroup_size : index
      memref.store %s2, %out[%c0] : memref<64xindex>
      gpu.return
    }
  }
}

// -----

// A kernel whose ABI already states the target's size is accepted (at the
// default size, 32, the same kernel is refused; the exact message is
// checked in specialize-subgroup-size-invalid.mlir); a kernel without an
// ABI gets one.

// CHECK-LABEL: gpu.func @stated(
// CHECK-SAME:    hesper.abi = {subgroup_size = 16 : i32}
// CHECK:         arith.constant 16 : index
// CHECK-NOT:     gpu.subgroup_size
// CHECK-LABEL: gpu.func @no_abi()
// CHECK-SAME:    hesper.abi = {subgroup_size = 16 : i32}
module attributes {gpu.container_module} {
  gpu.module @hesper_kernels {
    // expected-error-re @+1 {{'gpu.func' op assumes a subgroup of 16 lanes, but the target has {{.*}}}}
    gpu.func @stated(%out: memref<1xindex>) kernel
        attributes {hesper.abi = {subgroup_size = 16 : i32}} {
      %c0 = arith.constant 0 : index
      %s = gpu.subgroup_size : index
      memref.store %s, %out[%c0] : memref<1xindex>
      gpu.return
    }
    gpu.func @no_abi() kernel {
      gpu.return
    }
  }
}
