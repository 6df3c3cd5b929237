// RUN: hesper-opt %s -split-input-file -verify-diagnostics --hesper-specialize-subgroup-size="size=16"

// hesper-specialize-subgroup-size refuses a kernel whose hesper.abi states
// another subgroup size than the target's; the diagnostic names both.

module attributes {gpu.container_module} {
  gpu.module @hesper_kernels {
    // expected-error @+1 {{'gpu.func' op assumes a subgroup of 8 lanes, but the target has 16}}
    gpu.func @assumes_8() kernel attributes {hesper.abi = {subgroup_size = 8 : i32}} {
      %s = gpu.subgroup_size : index
      gpu.return
    }
  }
}

// -----

// Every kernel is checked, not only the first.
module attributes {gpu.container_module} {
  gpu.module @hesper_kernels {
    gpu.func @fine() kernel {
      gpu.return
    }
    // expected-error @+1 {{'gpu.func' op assumes a subgroup of 64 lanes, but the target has 16}}
    gpu.func @assumes_64() kernel attributes {hesper.abi = {subgroup_size = 64 : i32}} {
      gpu.return
    }
  }
}
