// A ShaderM kernel (shared memory, a barrier, an expanded GELU) lowered
// through convert-shaderm-to-gpu, convert-exp-to-std and the NVVM pipeline
// to PTX, which ptxas accepts for sm_90 and sm_80. math.tanh becomes a
// libdevice call, so the NVVM target links CUDA's libdevice. The shared
// array is declared 16-byte aligned: LLVM vectorizes its accesses on that
// assumption (a `.align 4` array after one of 5 floats faulted on an H200).
//
// REQUIRES: ptxas, libdevice
// RUN: hesper-opt %s --pass-pipeline="builtin.module(convert-shaderm-to-gpu,convert-exp-to-std,nvvm-attach-target{chip=sm_90 features=+ptx80 l=%libdevice},gpu.module(convert-scf-to-cf,convert-gpu-to-nvvm),reconcile-unrealized-casts,gpu-module-to-binary{format=isa})" -o %t.sm90.mlir
// RUN: FileCheck %s < %t.sm90.mlir
// RUN: %extract_ptx %t.sm90.mlir | FileCheck %s --check-prefix=PTX
// CHECK: gpu.binary @hesper_kernels
// PTX: .target sm_90
// PTX: .visible .entry tree(
// PTX-NOT: .shared .align 4
// PTX: .shared .align 16 .b8 __wg_tree_0[1024];
// PTX: bar.sync
// PTX: ld.shared
//
// RUN: %extract_ptx %t.sm90.mlir -o %t.sm90.ptx
// RUN: %ptxas --gpu-name sm_90 %t.sm90.ptx -o %t.sm90.cubin
// RUN: hesper-opt %s --pass-pipeline="builtin.module(convert-shaderm-to-gpu,convert-exp-to-std,nvvm-attach-target{chip=sm_80 features=+ptx80 l=%libdevice},gpu.module(convert-scf-to-cf,convert-gpu-to-nvvm),reconcile-unrealized-casts,gpu-module-to-binary{format=isa})" | %extract_ptx -o %t.sm80.ptx
// RUN: %ptxas --gpu-name sm_80 %t.sm80.ptx -o %t.sm80.cubin

shaderm.kernel @tree(%x: !shaderm.buffer<256xf32, read_only>, %out: !shaderm.buffer<256xf32>) workgroup_size(256, 1, 1) {
  %tile = shaderm.shared_alloc : !shaderm.shared<256xf32>
  %l = shaderm.local_id x
  %v = shaderm.load %x[%l] : !shaderm.buffer<256xf32, read_only> -> f32
  %g = exp.gelu %v : f32
  shaderm.store %g, %tile[%l] : f32, !shaderm.shared<256xf32>
  shaderm.barrier
  %c255 = arith.constant 255 : index
  %r = arith.subi %c255, %l : index
  %w = shaderm.load %tile[%r] : !shaderm.shared<256xf32> -> f32
  shaderm.store %w, %out[%l] : f32, !shaderm.buffer<256xf32>
  shaderm.return
}
