// The kernels of a small model step (as in spirv.mlir) through
// hesper-to-ptx: RMSNorm (reduce_epilogue), softmax (two reduce_epilogue),
// a reduction over short rows, f32, q8_0, q4_k and q6_k matvecs, a KV-cache
// write (scatter_multi) and a warp sum (subgroup_reduce in a map body,
// expanded into shuffles). The gpu.binary holds PTX that ptxas accepts for
// sm_90 (the default chip) and, built with chip=sm_80, for sm_80; the PTX
// shows one entry per kernel, warp reductions as butterfly shuffles with
// one barrier per workgroup reduction, and a bar.sync per tree step where
// the workgroup is smaller than 64 threads.
//
// REQUIRES: ptxas, libdevice
// RUN: hesper-opt %s --hesper-to-ptx="libdevice=%libdevice" -o %t.sm90.mlir
// RUN: FileCheck %s < %t.sm90.mlir
// RUN: %extract_ptx %t.sm90.mlir -o %t.sm90.ptx
// RUN: FileCheck %s --check-prefixes=PTX,SM90 < %t.sm90.ptx
// RUN: %ptxas --gpu-name sm_90 %t.sm90.ptx -o %t.sm90.cubin
// RUN: hesper-opt %s --pass-pipeline="builtin.module(hesper-to-ptx{chip=sm_80 libdevice=%libdevice})" -o %t.sm80.mlir
// RUN: %extract_ptx %t.sm80.mlir -o %t.sm80.ptx
// RUN: FileCheck %s --check-prefixes=PTX,SM80 < %t.sm80.ptx
// RUN: %ptxas --gpu-name sm_80 %t.sm80.ptx -o %t.sm80.cubin

// The schedules stay; the kernels' ABI records the NVIDIA subgroup size; one
// binary for the NVVM target.
// CHECK:     hesper.kernels = {
// CHECK-SAME:  warp_sum_k0_map = {bindings = [{{[^]]*}}], shared_bytes = 0 : i64, subgroup_size = 32 : i32, workgroup_size = array<i32: 64, 1, 1>}
// CHECK:     shaderm.schedule @rmsnorm(
// CHECK:       shaderm.launch @rmsnorm_k0_reduce_epilogue grid [4, 1, 1]
// CHECK:     shaderm.schedule @warp_sum(
// CHECK:       shaderm.launch @warp_sum_k0_map grid [1, 1, 1]
// CHECK:     gpu.binary @hesper_kernels  [#gpu.object<#nvvm.target<chip = "sm_90", features = "+ptx80"{{.*}}>, properties = {{.*}}assembly = "
// CHECK-NOT: gpu.binary
// CHECK-NOT: gpu.module

// SM90:      .target sm_90
// SM80:      .target sm_80

// RMSNorm: 256 threads; each warp reduces its partial sums with 5
// butterfly shuffles, its first lane writes the total to shared memory,
// one barrier, then every thread adds the 8 totals in order; an rsqrt.
// PTX-LABEL:     .visible .entry rmsnorm_k0_reduce_epilogue(
// PTX:           .maxntid 256, 1, 1
// PTX:           .shared .align 16 .b8 __wg_rmsnorm_k0_reduce_epilogue_0[1024];
// PTX-COUNT-5:   shfl.sync.bfly.b32
// PTX-NOT:       bar.sync
// PTX:           st.shared.b32
// PTX:           bar.sync 0;
// PTX-NOT:       bar.sync
// PTX:           ld.shared
// PTX:           rsqrt.approx.f32
// PTX-NOT:       bar.sync
// PTX:           ret;
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

// softmax over rows of 100 (128 threads): max (from -inf) then exp, sum
// then divide; a warp reduction and one barrier each.
// PTX-LABEL:     .visible .entry softmax_k0_reduce_epilogue(
// PTX:           .maxntid 128, 1, 1
// PTX:           max.f32 {{.*}}, 0fFF800000;
// PTX-COUNT-5:   shfl.sync.bfly.b32
// PTX:           bar.sync 0;
// PTX-NOT:       bar.sync
// PTX:           ex2.approx
// PTX:           ret;
// PTX-LABEL:     .visible .entry softmax_k1_reduce_epilogue(
// PTX-COUNT-5:   shfl.sync.bfly.b32
// PTX:           bar.sync 0;
// PTX-NOT:       bar.sync
// PTX:           div.rn.f32
// PTX:           ret;
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

// f32 matvec: 64 threads, each warp one output row (two rows per
// workgroup), 128-bit loads of x and w, four fmas per step, the row's dot
// product reduced with shuffles alone: no shared memory, no barrier.
// PTX-LABEL:     .visible .entry matvec_k0_matmul(
// PTX:           .maxntid 64, 1, 1
// PTX-COUNT-2:   ld.global.v4.b32
// PTX-COUNT-4:   fma.rn.f32
// PTX-COUNT-5:   shfl.sync.bfly.b32
// PTX-NOT:       bar.sync
// PTX:           ret;
circuit.graph @matvec(%x: tensor<256xf32>, %w: tensor<96x256xf32>)
    -> tensor<96xf32> {
  %y = circuit.matmul %x, %w : tensor<256xf32>, tensor<96x256xf32>
      -> tensor<96xf32>
  circuit.output %y : tensor<96xf32>
}

// q8_0 matvec: the f16 scale converted to f32, a warp reduction, no
// barrier.
// PTX-LABEL:     .visible .entry matvec_q8_0_k0_matmul(
// PTX:           cvt.f32.f16
// PTX-COUNT-5:   shfl.sync.bfly.b32
// PTX-NOT:       bar.sync
// PTX:           ret;
circuit.graph @matvec_q8_0(%x: tensor<128xf32>,
                           %w: tensor<16x128x!circuit.q8_0>) -> tensor<16xf32> {
  %y = circuit.matmul %x, %w : tensor<128xf32>, tensor<16x128x!circuit.q8_0>
      -> tensor<16xf32>
  circuit.output %y : tensor<16xf32>
}

// q4_k matvec: the super-block's head (f16 d and dmin, the 12 scale
// bytes) in one 128-bit load, then the unit's 4 quant words in another,
// nibbles taken out of them, x read with 128-bit loads, a warp reduction
// and no barrier.
// PTX-LABEL:     .visible .entry matvec_q4_k_k0_matmul(
// PTX:           .maxntid 64, 1, 1
// PTX:           ld.global.v4.b32
// PTX-COUNT-2:   cvt.f32.f16
// PTX:           ld.global.v4.b32
// PTX-COUNT-2:   ld.global.v4.b32
// PTX:           and.b32 {{.*}}, 15;
// PTX:           fma.rn.f32
// PTX-COUNT-5:   shfl.sync.bfly.b32
// PTX-NOT:       bar.sync
// PTX:           ret;
circuit.graph @matvec_q4_k(%x: tensor<512xf32>,
                           %w: tensor<16x512x!circuit.q4_k>) -> tensor<16xf32> {
  %y = circuit.matmul %x, %w : tensor<512xf32>, tensor<16x512x!circuit.q4_k>
      -> tensor<16xf32>
  circuit.output %y : tensor<16xf32>
}

// q6_k matvec: words read at even byte offsets from two aligned words,
// 6-bit values centered at 32, a warp reduction and no barrier.
// PTX-LABEL:     .visible .entry matvec_q6_k_k0_matmul(
// PTX:           add.s32 {{.*}}, -32;
// PTX:           cvt.f32.f16
// PTX-COUNT-5:   shfl.sync.bfly.b32
// PTX-NOT:       bar.sync
// PTX:           ret;
circuit.graph @matvec_q6_k(%x: tensor<512xf32>,
                           %w: tensor<16x512x!circuit.q6_k>) -> tensor<16xf32> {
  %y = circuit.matmul %x, %w : tensor<512xf32>, tensor<16x512x!circuit.q6_k>
      -> tensor<16xf32>
  circuit.output %y : tensor<16xf32>
}

// Rows of 24 get a 32-thread workgroup, below the subgroup-reduction
// threshold: a barrier after the partial sums and one per tree step (5),
// no shuffles.
// PTX-LABEL:     .visible .entry short_rows_k0_reduce(
// PTX:           .maxntid 32, 1, 1
// PTX-NOT:       shfl.sync
// PTX-COUNT-6:   bar.sync 0;
// PTX-NOT:       bar.sync
// PTX-NOT:       shfl.sync
// PTX:           ret;
circuit.graph @short_rows(%x: tensor<3x24xf32>) -> tensor<3x1xf32> {
  %s = circuit.reduce sum %x : tensor<3x24xf32> -> tensor<3x1xf32>
  circuit.output %s : tensor<3x1xf32>
}

// The KV-cache write: no barrier, one store into each cache.
// PTX-LABEL:     .visible .entry kv_write_k0_scatter_multi(
// PTX-NOT:       bar.sync
// PTX-COUNT-2:   st.global.b32
// PTX-NOT:       bar.sync
// PTX:           ret;
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

// The warp sum: five butterfly shuffles (offsets 1 to 16) over a full
// warp, no barrier, no shared memory.
// PTX-LABEL:     .visible .entry warp_sum_k0_map(
// PTX-NOT:       bar.sync
// PTX-NOT:       .shared
// PTX:           shfl.sync.bfly.b32 {{.*}}, 1, 31, -1;
// PTX:           shfl.sync.bfly.b32 {{.*}}, 2, 31, -1;
// PTX:           shfl.sync.bfly.b32 {{.*}}, 4, 31, -1;
// PTX:           shfl.sync.bfly.b32 {{.*}}, 8, 31, -1;
// PTX:           shfl.sync.bfly.b32 {{.*}}, 16, 31, -1;
// PTX-NOT:       shfl.sync
// PTX-NOT:       bar.sync
// PTX:           ret;
circuit.graph @warp_sum(%x: tensor<64xf32>) -> tensor<64xf32> {
  %y = circuit.map ins(%x : tensor<64xf32>) -> tensor<64xf32> {
  ^bb0(%lane: i32, %v: f32):
    %s = exp.subgroup_reduce sum %v : f32
    circuit.yield %s : f32
  }
  circuit.output %y : tensor<64xf32>
}
