// The kernels of a small model step through hesper-to-spirv for a device
// with subgroups of 8 (lavapipe): RMSNorm (reduce_epilogue), softmax (two
// reduce_epilogue), f32, q8_0, q4_k and q6_k matvecs, a reduction over
// short rows, a KV-cache write (scatter_multi) and a warp sum
// (subgroup_reduce in a map body). The one gpu.binary holds SPIR-V that
// spirv-val accepts for Vulkan 1.1; its disassembly shows one entry point
// per kernel with its workgroup size, subgroup reductions with one barrier
// per workgroup reduction (a barrier per tree step below 64 lanes), and a
// subgroup reduction for the warp sum.
//
// REQUIRES: spirv-val
// RUN: hesper-opt %s --hesper-to-spirv="subgroup-size=8" -o %t.mlir
// RUN: FileCheck %s < %t.mlir
// RUN: %extract_spirv %t.mlir -o %t.spv
// RUN: spirv-val --target-env vulkan1.1 %t.spv
// RUN: spirv-dis %t.spv -o %t.spvasm
// RUN: FileCheck %s --check-prefix=SPIRV < %t.spvasm
// RUN: FileCheck %s --check-prefix=SPIRV-HEADER < %t.spvasm

// The schedules stay, every kernel's ABI records the subgroup size, and the
// kernels are in one SPIR-V binary.
// CHECK:     hesper.kernels = {
// CHECK-DAG:   kv_write_k0_scatter_multi = {bindings = [{{[^]]*}}], shared_bytes = 0 : i64, subgroup_size = 8 : i32, workgroup_size = array<i32: 64, 1, 1>}
// CHECK-DAG:   matvec_k0_matmul = {bindings = [{{[^]]*}}], shared_bytes = 0 : i64, subgroup_size = 8 : i32, workgroup_size = array<i32: 64, 1, 1>}
// CHECK-DAG:   rmsnorm_k0_reduce_epilogue = {bindings = [{{[^]]*}}], shared_bytes = 1024 : i64, subgroup_size = 8 : i32, workgroup_size = array<i32: 256, 1, 1>}
// CHECK-DAG:   softmax_k0_reduce_epilogue = {bindings = [{{[^]]*}}], shared_bytes = 512 : i64, subgroup_size = 8 : i32, workgroup_size = array<i32: 128, 1, 1>}
// CHECK-DAG:   warp_sum_k0_map = {bindings = [{{[^]]*}}], shared_bytes = 0 : i64, subgroup_size = 8 : i32, workgroup_size = array<i32: 64, 1, 1>}
// CHECK:     shaderm.schedule @rmsnorm(
// CHECK:       shaderm.launch @rmsnorm_k0_reduce_epilogue grid [4, 1, 1]
// CHECK:     shaderm.schedule @softmax(
// CHECK:       shaderm.launch @softmax_k0_reduce_epilogue grid [2, 1, 1]
// CHECK:       shaderm.launch @softmax_k1_reduce_epilogue grid [2, 1, 1]
// Matvecs: one row per subgroup of 8 lanes, 8 rows per 64-lane workgroup.
// CHECK:     shaderm.schedule @matvec(
// CHECK:       shaderm.launch @matvec_k0_matmul grid [12, 1, 1]
// CHECK:     shaderm.schedule @matvec_q8_0(
// CHECK:       shaderm.launch @matvec_q8_0_k0_matmul grid [2, 1, 1]
// CHECK:     shaderm.schedule @kv_write(
// CHECK:       shaderm.launch @kv_write_k0_scatter_multi grid [1, 1, 1]
// CHECK:     shaderm.schedule @warp_sum(
// CHECK:       shaderm.launch @warp_sum_k0_map grid [1, 1, 1]
// CHECK:     gpu.binary @hesper_kernels  [#gpu.object<#spirv.target_env<{{.*}}api=Vulkan{{.*}}>, bin = "\03\02#\07
// CHECK-NOT: gpu.binary
// CHECK-NOT: gpu.module

// SPIRV-HEADER-DAG: OpCapability Shader
// SPIRV-HEADER-DAG: OpCapability GroupNonUniformArithmetic
// SPIRV-HEADER-DAG: OpEntryPoint GLCompute %rmsnorm_k0_reduce_epilogue "rmsnorm_k0_reduce_epilogue"
// SPIRV-HEADER-DAG: OpEntryPoint GLCompute %softmax_k0_reduce_epilogue "softmax_k0_reduce_epilogue"
// SPIRV-HEADER-DAG: OpEntryPoint GLCompute %softmax_k1_reduce_epilogue "softmax_k1_reduce_epilogue"
// SPIRV-HEADER-DAG: OpEntryPoint GLCompute %matvec_k0_matmul "matvec_k0_matmul"
// SPIRV-HEADER-DAG: OpEntryPoint GLCompute %matvec_q8_0_k0_matmul "matvec_q8_0_k0_matmul"
// SPIRV-HEADER-DAG: OpEntryPoint GLCompute %kv_write_k0_scatter_multi "kv_write_k0_scatter_multi"
// SPIRV-HEADER-DAG: OpEntryPoint GLCompute %warp_sum_k0_map "warp_sum_k0_map"
// SPIRV-HEADER-DAG: OpExecutionMode %rmsnorm_k0_reduce_epilogue LocalSize 256 1 1
// SPIRV-HEADER-DAG: OpExecutionMode %softmax_k0_reduce_epilogue LocalSize 128 1 1
// SPIRV-HEADER-DAG: OpExecutionMode %softmax_k1_reduce_epilogue LocalSize 128 1 1
// SPIRV-HEADER-DAG: OpExecutionMode %matvec_k0_matmul LocalSize 64 1 1
// SPIRV-HEADER-DAG: OpExecutionMode %matvec_q8_0_k0_matmul LocalSize 64 1 1
// SPIRV-HEADER-DAG: OpExecutionMode %kv_write_k0_scatter_multi LocalSize 64 1 1
// SPIRV-HEADER-DAG: OpExecutionMode %warp_sum_k0_map LocalSize 64 1 1
// SPIRV-HEADER-DAG: OpDecorate %kv_write_k0_scatter_multi_arg_4 Binding 4
// SPIRV-HEADER-DAG: OpDecorate %kv_write_k0_scatter_multi_arg_4 DescriptorSet 0

// RMSNorm over rows of 256: 256 lanes; each subgroup adds its partial
// sums (a subgroup reduction), its first lane (SubgroupLocalInvocationId
// 0) writes the total to slot SubgroupId, one barrier, then the
// epilogue with rsqrt.
// SPIRV-LABEL:   %rmsnorm_k0_reduce_epilogue = OpFunction
// SPIRV:         OpGroupNonUniformFAdd %float %uint_3 Reduce
// SPIRV:         __builtin__SubgroupLocalInvocationId__
// SPIRV:         __builtin__SubgroupId__
// SPIRV:         OpControlBarrier %uint_2 %uint_2 %uint_264
// SPIRV-NOT:     OpControlBarrier
// SPIRV:         InverseSqrt
// SPIRV:         OpFunctionEnd
circuit.graph @rmsnorm(%x: tensor<4x256xf32>, %g: tensor<256xf32>)
    -> tensor<4x256xf32> {
  %n = circuit.reduce_epilogue sum_sq %x, %g
      : tensor<4x256xf32>, tensor<256xf32> -> tensor<4x256xf32> epilogue {
  ^bb0(%lane: i32, %ss: f32, %v: f32, %w: f32):
    %d = exp.constant 256.0 : f32
    %eps = exp.constant 1.0e-06 : f32
    %m = exp.div %ss, %d : f32
    %me = exp.add %m, %eps : f32
    %r = exp.rsqrt %me : f32
    %nv = exp.mul %v, %r : f32
    %o = exp.mul %nv, %w : f32
    circuit.yield %o : f32
  }
  circuit.output %n : tensor<4x256xf32>
}

// softmax over rows of 100 (128 lanes): max then exp(x - max), sum then
// divide; a subgroup reduction and one barrier each, the first combining
// with a max.
// SPIRV-LABEL:   %softmax_k0_reduce_epilogue = OpFunction
// SPIRV:         FMax
// SPIRV:         OpGroupNonUniformFMax %float %uint_3 Reduce
// SPIRV:         OpControlBarrier %uint_2 %uint_2 %uint_264
// SPIRV-NOT:     OpControlBarrier
// SPIRV:         Exp
// SPIRV:         OpFunctionEnd
// SPIRV-LABEL:   %softmax_k1_reduce_epilogue = OpFunction
// SPIRV:         OpGroupNonUniformFAdd %float %uint_3 Reduce
// SPIRV:         OpControlBarrier %uint_2 %uint_2 %uint_264
// SPIRV-NOT:     OpControlBarrier
// SPIRV:         OpFDiv
// SPIRV:         OpFunctionEnd
circuit.graph @softmax(%x: tensor<2x100xf32>) -> tensor<2x100xf32> {
  %e = circuit.reduce_epilogue max %x : tensor<2x100xf32> -> tensor<2x100xf32>
      epilogue {
  ^bb0(%lane: i32, %m: f32, %v: f32):
    %d = exp.sub %v, %m : f32
    %r = exp.exp %d : f32
    circuit.yield %r : f32
  }
  %s = circuit.reduce_epilogue sum %e : tensor<2x100xf32> -> tensor<2x100xf32>
      epilogue {
  ^bb0(%lane: i32, %sum: f32, %v: f32):
    %r = exp.div %v, %sum : f32
    circuit.yield %r : f32
  }
  circuit.output %s : tensor<2x100xf32>
}

// f32 matvec: 64 lanes, one row per subgroup, fma over K, a subgroup
// reduction and no barrier.
// SPIRV-LABEL:   %matvec_k0_matmul = OpFunction
// SPIRV:         Fma
// SPIRV:         OpGroupNonUniformFAdd %float %uint_3 Reduce
// SPIRV-NOT:     OpControlBarrier
// SPIRV:         OpFunctionEnd
circuit.graph @matvec(%x: tensor<256xf32>, %w: tensor<96x256xf32>)
    -> tensor<96xf32> {
  %y = circuit.matmul %x, %w : tensor<256xf32>, tensor<96x256xf32>
      -> tensor<96xf32>
  circuit.output %y : tensor<96xf32>
}

// q8_0 matvec: bytes taken out of 32-bit words, the int8 values
// sign-extended by an arithmetic shift, the f16 scale converted to f32.
// SPIRV-LABEL:   %matvec_q8_0_k0_matmul = OpFunction
// SPIRV:         OpShiftRightLogical
// SPIRV:         OpBitwiseAnd
// SPIRV:         OpShiftRightArithmetic
// SPIRV:         OpConvertSToF
// SPIRV:         OpGroupNonUniformFAdd %float %uint_3 Reduce
// SPIRV-NOT:     OpControlBarrier
// SPIRV:         OpFunctionEnd
circuit.graph @matvec_q8_0(%x: tensor<128xf32>,
                           %w: tensor<16x128x!circuit.q8_0>) -> tensor<16xf32> {
  %y = circuit.matmul %x, %w : tensor<128xf32>, tensor<16x128x!circuit.q8_0>
      -> tensor<16xf32>
  circuit.output %y : tensor<16xf32>
}

// q4_k and q6_k matvecs: the f16 super-block scales widened, a subgroup
// reduction, no barrier.
// SPIRV-LABEL:   %matvec_q4_k_k0_matmul = OpFunction
// SPIRV:         OpFConvert %float
// SPIRV:         OpGroupNonUniformFAdd %float %uint_3 Reduce
// SPIRV-NOT:     OpControlBarrier
// SPIRV:         OpFunctionEnd
// SPIRV-LABEL:   %matvec_q6_k_k0_matmul = OpFunction
// SPIRV:         OpShiftRightArithmetic
// SPIRV:         OpFConvert %float
// SPIRV:         OpGroupNonUniformFAdd %float %uint_3 Reduce
// SPIRV-NOT:     OpControlBarrier
// SPIRV:         OpFunctionEnd
circuit.graph @matvec_q4_k(%x: tensor<512xf32>,
                           %w: tensor<16x512x!circuit.q4_k>) -> tensor<16xf32> {
  %y = circuit.matmul %x, %w : tensor<512xf32>, tensor<16x512x!circuit.q4_k>
      -> tensor<16xf32>
  circuit.output %y : tensor<16xf32>
}
circuit.graph @matvec_q6_k(%x: tensor<512xf32>,
                           %w: tensor<16x512x!circuit.q6_k>) -> tensor<16xf32> {
  %y = circuit.matmul %x, %w : tensor<512xf32>, tensor<16x512x!circuit.q6_k>
      -> tensor<16xf32>
  circuit.output %y : tensor<16xf32>
}

// Rows of 24 get 32 lanes, below the subgroup-reduction threshold: a
// shared-memory tree, a barrier after the partial sums and one per step.
// SPIRV-LABEL:   %short_rows_k0_reduce = OpFunction
// SPIRV-NOT:     OpGroupNonUniform
// SPIRV-COUNT-6: OpControlBarrier %uint_2 %uint_2 %uint_264
// SPIRV-NOT:     OpControlBarrier
// SPIRV-NOT:     OpGroupNonUniform
// SPIRV:         OpFunctionEnd
circuit.graph @short_rows(%x: tensor<3x24xf32>) -> tensor<3x1xf32> {
  %s = circuit.reduce sum %x : tensor<3x24xf32> -> tensor<3x1xf32>
  circuit.output %s : tensor<3x1xf32>
}

// The KV-cache write: no barrier, a guarded store into each cache.
// SPIRV-LABEL:   %kv_write_k0_scatter_multi = OpFunction
// SPIRV-NOT:     OpControlBarrier
// SPIRV:         OpStore
// SPIRV:         OpStore
// SPIRV:         OpFunctionEnd
circuit.graph @kv_write(%k: tensor<64xf32>, %v: tensor<64xf32>,
                        %pos: tensor<1xi32>, %kc: tensor<4x64xf32>,
                        %vc: tensor<4x64xf32>) {
  %k2, %v2 = circuit.scatter_multi grid(64)
      ins(%k, %v, %pos : tensor<64xf32>, tensor<64xf32>, tensor<1xi32>)
      into(%kc, %vc : tensor<4x64xf32>, tensor<4x64xf32>) {
  ^bb0(%lane: i32, %a: f32, %b: f32, %p: i32):
    %c64 = exp.constant 64 : i32
    %row = exp.mul %p, %c64 : i32
    %addr = exp.add %row, %lane : i32
    circuit.yield %addr, %a, %addr, %b : i32, f32, i32, f32
  }
  circuit.output
}

// The warp sum: one subgroup reduction (scope Subgroup = 3), no barrier,
// no shuffles.
// SPIRV-LABEL:   %warp_sum_k0_map = OpFunction
// SPIRV-NOT:     OpControlBarrier
// SPIRV-NOT:     OpGroupNonUniformShuffle
// SPIRV:         OpGroupNonUniformFAdd %float %uint_3 Reduce
// SPIRV-NOT:     OpControlBarrier
// SPIRV:         OpFunctionEnd
circuit.graph @warp_sum(%x: tensor<64xf32>) -> tensor<64xf32> {
  %y = circuit.map ins(%x : tensor<64xf32>) -> tensor<64xf32> {
  ^bb0(%lane: i32, %v: f32):
    %s = exp.subgroup_reduce sum %v : f32
    circuit.yield %s : f32
  }
  circuit.output %y : tensor<64xf32>
}
