// hesper-serialize-cpu compiles kernels that differ only in what their LLVM
// IR does not read once: a one-row and a four-row quantize differ at the
// ShaderM level (their buffers' sizes, which shaderm-dedup-kernels
// compares), but after inlining and dropping dead code their LLVM IR is
// the same but for the names, so the second is an alias of the first in
// the shared object (each launch still finds its kernel by name: a model's
// decode step and prompt chunks share their quantize and attention kernels
// so, which the model tests run against the NumPy reference). A kernel
// whose code does differ (the elementwise maps' bounds: 256 against 1024
// values) is compiled apart.
// REQUIRES: cpu-target
// RUN: rm -rf %t && mkdir -p %t/dump
// RUN: hesper-opt %s --hesper-to-cpu="isa=x86-64-v3 dump-dir=%t/dump" -o %t/out.mlir
// RUN: FileCheck %s --check-prefix=ASM < %t/dump/hesper_kernels.s
// RUN: nm %t/dump/hesper_kernels.o | FileCheck %s --check-prefix=OBJ

// ASM-DAG: .globl one_k0_map
// ASM-DAG: .globl four_k0_map
// ASM-DAG: .globl one_k1_quantize
// ASM-DAG: four_k1_quantize = one_k1_quantize
// ASM-NOT: four_k0_map = one_k0_map

// OBJ: [[ADDR:[0-9a-f]+]] T four_k1_quantize
// OBJ: {{^}}[[ADDR]] T one_k1_quantize

circuit.graph @one(%x: tensor<256xf32> {circuit.name = "x"})
    -> tensor<256x!circuit.q8_1> {
  %y = circuit.map ins(%x : tensor<256xf32>) -> tensor<256xf32> {
  ^bb0(%lane: i32, %v: f32):
    %o = exp.mul %v, %v : f32
    circuit.yield %o : f32
  }
  %q = circuit.quantize %y : tensor<256xf32> -> tensor<256x!circuit.q8_1>
  circuit.output %q : tensor<256x!circuit.q8_1>
}

circuit.graph @four(%x: tensor<4x256xf32> {circuit.name = "x"})
    -> tensor<4x256x!circuit.q8_1> {
  %y = circuit.map ins(%x : tensor<4x256xf32>) -> tensor<4x256xf32> {
  ^bb0(%lane: i32, %v: f32):
    %o = exp.mul %v, %v : f32
    circuit.yield %o : f32
  }
  %q = circuit.quantize %y : tensor<4x256xf32> -> tensor<4x256x!circuit.q8_1>
  circuit.output %q : tensor<4x256x!circuit.q8_1>
}
