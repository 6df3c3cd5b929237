// RUN: hesper-opt %s -split-input-file -verify-diagnostics --hesper-serialize-spirv | FileCheck %s

// hesper-serialize-spirv: the spirv.module convert-gpu-to-spirv made of a
// gpu.module (@__spv__<name>) is serialized into a gpu.binary of the
// gpu.module's name: SPIR-V words (the magic number 0x07230203 first, as
// little-endian bytes "\03\02#\07"), target the gpu.module's
// #spirv.target_env. The gpu.module and the spirv.module are gone, the
// kernels' ABI stays on the enclosing module. A gpu.module without its
// spirv.module is an error. The end-to-end case that spirv-val checks is
// serialize-spirv-vulkan.mlir.

// CHECK-LABEL: module attributes {gpu.container_module, hesper.kernels = {k = {workgroup_size = array<i32: 64, 1, 1>}}} {
// CHECK-NEXT:    gpu.binary @hesper_kernels  [#gpu.object<#spirv.target_env<#spirv.vce<v1.3, [Shader], [SPV_KHR_storage_buffer_storage_class]>, api=Vulkan, #spirv.resource_limits<>>, bin = "\03\02#\07{{.*}}">]
// CHECK-NEXT:  }
// CHECK-NOT:   gpu.module
// CHECK-NOT:   spirv.module
module attributes {gpu.container_module,
    hesper.kernels = {k = {workgroup_size = array<i32: 64, 1, 1>}}} {
  spirv.module @__spv__hesper_kernels Logical GLSL450
      requires #spirv.vce<v1.0, [Shader], []> {
    spirv.func @k() "None" {
      spirv.Return
    }
    spirv.EntryPoint "GLCompute" @k
    spirv.ExecutionMode @k "LocalSize", 64, 1, 1
  }
  gpu.module @hesper_kernels [#spirv.target_env<#spirv.vce<v1.3, [Shader], [SPV_KHR_storage_buffer_storage_class]>, api=Vulkan, #spirv.resource_limits<>>] {
    gpu.func @k() kernel {
      gpu.return
    }
  }
}

// -----

// One binary per gpu.module, each from its own spirv.module; the target
// comes from a spirv.target_env attribute when the gpu.module has no
// targets.

// CHECK-LABEL: module attributes {gpu.container_module} {
// CHECK-NEXT:    gpu.binary @first  [#gpu.object<#spirv.target_env<#spirv.vce<v1.0, [Shader], []>, api=Vulkan, #spirv.resource_limits<>>, bin = "\03\02#\07
// CHECK-NEXT:    gpu.binary @second  [#gpu.object<#spirv.target_env<#spirv.vce<v1.3, [Shader, GroupNonUniform], []>, api=Vulkan, #spirv.resource_limits<>>, bin = "\03\02#\07
// CHECK-NEXT:  }
module attributes {gpu.container_module} {
  spirv.module @__spv__first Logical GLSL450 requires #spirv.vce<v1.0, [Shader], []> {
    spirv.func @a() "None" {
      spirv.Return
    }
    spirv.EntryPoint "GLCompute" @a
    spirv.ExecutionMode @a "LocalSize", 1, 1, 1
  }
  spirv.module @__spv__second Logical GLSL450 requires #spirv.vce<v1.0, [Shader], []> {
    spirv.func @b() "None" {
      spirv.Return
    }
    spirv.EntryPoint "GLCompute" @b
    spirv.ExecutionMode @b "LocalSize", 1, 1, 1
  }
  gpu.module @first [#spirv.target_env<#spirv.vce<v1.0, [Shader], []>, api=Vulkan, #spirv.resource_limits<>>] {
  }
  gpu.module @second attributes {spirv.target_env = #spirv.target_env<#spirv.vce<v1.3, [Shader, GroupNonUniform], []>, api=Vulkan, #spirv.resource_limits<>>} {
  }
}

// -----

// No gpu.module: nothing to do.

// CHECK-LABEL: func.func @host
// CHECK-NOT:     gpu.binary
func.func @host() {
  return
}

// -----

// The pass alone, before convert-gpu-to-spirv made a spirv.module.
module attributes {gpu.container_module} {
  // expected-error @+1 {{'gpu.module' op has no SPIR-V module; run convert-gpu-to-spirv first}}
  gpu.module @hesper_kernels {
    gpu.func @k() kernel {
      gpu.return
    }
  }
}

// -----

// A spirv.module of another name does not count.
module attributes {gpu.container_module} {
  spirv.module @__spv__other Logical GLSL450 requires #spirv.vce<v1.0, [Shader], []> {
  }
  // expected-error @+1 {{'gpu.module' op has no SPIR-V module; run convert-gpu-to-spirv first}}
  gpu.module @hesper_kernels {
  }
}
