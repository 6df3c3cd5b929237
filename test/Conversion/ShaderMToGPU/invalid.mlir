// RUN: hesper-opt %s -split-input-file --convert-shaderm-to-gpu -verify-diagnostics

shaderm.kernel @warp_sync() workgroup_size(32, 1, 1) {
  // expected-error @+1 {{'shaderm.subgroup_barrier' op is not supported by convert-shaderm-to-gpu: the gpu dialect has no subgroup barrier}}
  shaderm.subgroup_barrier
  shaderm.return
}
