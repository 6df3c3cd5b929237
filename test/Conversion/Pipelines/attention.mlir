// circuit.attention through both kernel pipelines: PTX that ptxas accepts
// for sm_90 (a bar.sync per tile barrier, the shared tile in .shared) and
// SPIR-V that spirv-val accepts for Vulkan 1.1.
// REQUIRES: ptxas, spirv-val, libdevice
// RUN: hesper-opt %s --hesper-to-ptx="libdevice=%libdevice" -o %t.ptx.mlir
// RUN: %extract_ptx %t.ptx.mlir -o %t.ptx
// RUN: FileCheck %s --check-prefix=PTX < %t.ptx
// RUN: %ptxas --gpu-name sm_90 %t.ptx -o %t.cubin
// RUN: hesper-opt %s --hesper-to-spirv="subgroup-size=8" -o %t.spv.mlir
// RUN: %extract_spirv %t.spv.mlir -o %t.spv
// RUN: spirv-val --target-env vulkan1.1 %t.spv

// PTX: .entry attend_k0_attention(
// PTX: .shared .align 16 .b8 {{.*}}[256];
// PTX: bar.sync 0;
// PTX: bar.sync 0;
circuit.graph @attend(%q: tensor<160xf32>, %k: tensor<8000xf32>,
                      %v: tensor<8000xf32>, %pos: tensor<1xi32>)
    -> tensor<160xf32> {
  %o = circuit.attention %q, %k, %v, %pos {heads = 2 : i64, kv_heads = 1 : i64,
      head_dim = 80 : i64, scale = 0.125 : f32}
      : tensor<160xf32>, tensor<8000xf32>, tensor<8000xf32>, tensor<1xi32>
      -> tensor<160xf32>
  circuit.output %o : tensor<160xf32>
}
