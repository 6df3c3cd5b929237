// A Circuit graph through the whole hesper-to-spirv pipeline: the kernels
// end in one gpu.binary @hesper_kernels holding SPIR-V that spirv-val
// accepts for Vulkan 1.1, next to the schedule and the kernels' ABI.
//
// REQUIRES: spirv-val
// RUN: hesper-opt %s --hesper-to-spirv="subgroup-size=8" -o %t.mlir
// RUN: FileCheck %s < %t.mlir
// RUN: %extract_spirv %t.mlir -o %t.spv
// RUN: spirv-val --target-env vulkan1.1 %t.spv
// RUN: spirv-dis %t.spv | FileCheck %s --check-prefix=SPIRV

// CHECK-LABEL: module attributes {gpu.container_module, hesper.kernels = {scale_k0_map = {bindings = [{access = "read_only", index = 0 : i32, kind = "buffer", type = !shaderm.buffer<1000xf32, read_only>}, {access = "read_write", index = 1 : i32, kind = "buffer", type = !shaderm.buffer<1000xf32>}], shared_bytes = 0 : i64, subgroup_size = 8 : i32, workgroup_size = array<i32: 256, 1, 1>}}}
// CHECK:         shaderm.schedule @scale(
// CHECK:           shaderm.launch @scale_k0_map grid [4, 1, 1]
// CHECK:         gpu.binary @hesper_kernels  [#gpu.object<#spirv.target_env<{{.*}}api=Vulkan{{.*}}>, bin = "\03\02#\07
// CHECK-NOT:     gpu.module
// CHECK-NOT:     spirv.module

// SPIRV:       OpEntryPoint GLCompute %scale_k0_map "scale_k0_map"
// SPIRV:       OpExecutionMode %scale_k0_map LocalSize 256 1 1
// SPIRV-DAG:   OpDecorate %{{.*}} DescriptorSet 0
// SPIRV-DAG:   OpDecorate %{{.*}} Binding 1
circuit.graph @scale(%x: tensor<1000xf32>) -> tensor<1000xf32> {
  %y = circuit.map ins(%x : tensor<1000xf32>) -> tensor<1000xf32> {
  ^bb0(%lane: i32, %v: f32):
    %two = exp.constant 2.0 : f32
    %r = exp.mul %v, %two : f32
    circuit.yield %r : f32
  }
  circuit.output %y : tensor<1000xf32>
}
