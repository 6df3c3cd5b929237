// f16 math through hesper-to-spirv (float16 is on by default): a SiLU, an
// exp and an rsqrt on f16 values compile to SPIR-V that spirv-val accepts,
// the math done by GLSL.std.450 instructions on f16 or on f32 conversions.
//
// REQUIRES: spirv-val
// RUN: hesper-opt %s --hesper-to-spirv="subgroup-size=8" -o %t.mlir
// RUN: FileCheck %s < %t.mlir
// RUN: %extract_spirv %t.mlir -o %t.spv
// RUN: spirv-val --target-env vulkan1.1 %t.spv
// RUN: spirv-dis %t.spv | FileCheck %s --check-prefix=SPIRV

// CHECK:     gpu.binary @hesper_kernels
// CHECK-NOT: builtin.unrealized_conversion_cast

// SPIRV-DAG: OpCapability Float16
// SPIRV-DAG: OpEntryPoint GLCompute %silu_k0_map "silu_k0_map"
// SPIRV-DAG: OpEntryPoint GLCompute %norm_k0_map "norm_k0_map"
// SPIRV:     %silu_k0_map = OpFunction
// SPIRV:     Exp
// SPIRV:     %norm_k0_map = OpFunction
// SPIRV:     InverseSqrt
circuit.graph @silu(%x: tensor<128xf16>) -> tensor<128xf16> {
  %y = circuit.map ins(%x : tensor<128xf16>) -> tensor<128xf16> {
  ^bb0(%lane: i32, %v: f16):
    %s = exp.silu %v : f16
    circuit.yield %s : f16
  }
  circuit.output %y : tensor<128xf16>
}

circuit.graph @norm(%x: tensor<64xf16>, %s: tensor<1xf16>) -> tensor<64xf16> {
  %y = circuit.map ins(%x, %s : tensor<64xf16>, tensor<1xf16>) -> tensor<64xf16> {
  ^bb0(%lane: i32, %v: f16, %k: f16):
    %r = exp.rsqrt %k : f16
    %o = exp.mul %v, %r : f16
    circuit.yield %o : f16
  }
  circuit.output %y : tensor<64xf16>
}
