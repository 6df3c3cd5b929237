// RUN: hesper-opt %s --hesper-to-gpu | FileCheck %s
// RUN: hesper-opt %s --hesper-to-gpu="fuse=false" | FileCheck %s --check-prefix=NOFUSE
// RUN: hesper-opt %s --hesper-to-gpu | FileCheck %s --check-prefix=LOWERED \
// RUN:   --implicit-check-not='{{ circuit\.[a-z_]+ }}' \
// RUN:   --implicit-check-not='{{ exp\.[a-z_]+ }}' \
// RUN:   --implicit-check-not=shaderm.kernel

// hesper-to-gpu: Circuit graphs are fused (unless fuse=false), lowered to
// ShaderM kernels and a schedule, the kernels to gpu.func in one gpu.module
// and Exp to arith/math. The schedules survive with their argument
// attributes, the module records every kernel's ABI in hesper.kernels, and
// shared memory stays a workgroup attribution (the NVVM form). No
// subgroup size is fixed yet.

// CHECK-LABEL: module attributes {gpu.container_module, hesper.kernels = {
// CHECK-SAME:    chain_k0_map = {bindings = [{access = "read_only", index = 0 : i32, kind = "buffer", type = !shaderm.buffer<128xf32, read_only>}, {access = "read_write", index = 1 : i32, kind = "buffer", type = !shaderm.buffer<128xf32>}], shared_bytes = 0 : i64, workgroup_size = array<i32: 128, 1, 1>}
// CHECK-SAME:    sum_k0_reduce = {bindings = [{access = "read_only", index = 0 : i32, kind = "buffer", type = !shaderm.buffer<64xf32, read_only>}, {access = "read_write", index = 1 : i32, kind = "buffer", type = !shaderm.buffer<1xf32>}], shared_bytes = 256 : i64, workgroup_size = array<i32: 64, 1, 1>}
// CHECK-NOT:     subgroup_size
// CHECK:       shaderm.schedule @chain(%[[X:.*]]: !shaderm.buffer<128xf32> {circuit.name = "x"}) -> !shaderm.buffer<128xf32> {
// CHECK-NEXT:    %[[Y:.*]] = shaderm.alloc : !shaderm.buffer<128xf32>
// CHECK-NEXT:    shaderm.launch @chain_k0_map grid [1, 1, 1](%[[X]], %[[Y]])
// CHECK-NEXT:    shaderm.output %[[Y]] : !shaderm.buffer<128xf32>
// CHECK:       shaderm.schedule @sum(
// CHECK:         shaderm.launch @sum_k0_reduce grid [1, 1, 1](
// CHECK:       gpu.module @hesper_kernels {
// CHECK:         gpu.func @chain_k0_map(%[[IN:.*]]: memref<128xf32>, %[[OUT:.*]]: memref<128xf32>) kernel
// CHECK-SAME:      known_block_size = array<i32: 128, 1, 1>
// CHECK:           %[[G:.*]] = gpu.global_id x
// CHECK:           %[[V:.*]] = memref.load %[[IN]][%[[G]]] : memref<128xf32>
// CHECK-NEXT:      %[[M:.*]] = arith.mulf %[[V]], %{{.*}} : f32
// CHECK-NEXT:      %[[E:.*]] = math.exp %[[M]] : f32
// CHECK-NEXT:      memref.store %[[E]], %[[OUT]][%[[G]]] : memref<128xf32>
// CHECK:         gpu.func @sum_k0_reduce(%{{.*}}: memref<64xf32>, %{{.*}}: memref<1xf32>) workgroup(%[[TILE:.*]] : memref<64xf32, #gpu.address_space<workgroup>> {llvm.align = 16 : i64}) kernel
// CHECK:           gpu.subgroup_reduce add
// CHECK:           gpu.lane_id
// CHECK:           gpu.subgroup_id
// CHECK:           gpu.barrier
// CHECK-NOT:       gpu.barrier
// CHECK:           gpu.return

// Nothing of Circuit, Exp or ShaderM kernels is left.
// LOWERED: gpu.module @hesper_kernels

// Without fusion the two maps stay two kernels, launched in order.
// NOFUSE-LABEL: shaderm.schedule @chain(
// NOFUSE:         shaderm.launch @chain_k0_map grid [1, 1, 1]
// NOFUSE-NEXT:    %{{.*}} = shaderm.alloc : !shaderm.buffer<128xf32>
// NOFUSE-NEXT:    shaderm.launch @chain_k1_map grid [1, 1, 1]
// NOFUSE:       gpu.func @chain_k0_map(
// NOFUSE:         arith.mulf
// NOFUSE-NOT:     math.exp
// NOFUSE:       gpu.func @chain_k1_map(
// NOFUSE:         math.exp
circuit.graph @chain(%x: tensor<128xf32> {circuit.name = "x"}) -> tensor<128xf32> {
  %a = circuit.map ins(%x : tensor<128xf32>) -> tensor<128xf32> {
  ^bb0(%lane: i32, %v: f32):
    %two = exp.constant 2.0 : f32
    %r = exp.mul %v, %two : f32
    circuit.yield %r : f32
  }
  %b = circuit.map ins(%a : tensor<128xf32>) -> tensor<128xf32> {
  ^bb0(%lane: i32, %v: f32):
    %e = exp.exp %v : f32
    circuit.yield %e : f32
  }
  circuit.output %b : tensor<128xf32>
}

circuit.graph @sum(%x: tensor<64xf32>) -> tensor<1xf32> {
  %s = circuit.reduce sum %x : tensor<64xf32> -> tensor<1xf32>
  circuit.output %s : tensor<1xf32>
}
