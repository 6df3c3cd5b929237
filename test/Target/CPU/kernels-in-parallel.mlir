// hesper-serialize-cpu compiles each kernel on its own, the kernels in
// parallel on the context's threads. A kernel's code must not depend on
// that: the module compiled with threads and without (and again) holds
// the same shared object, byte for byte. Every kernel is in it, in the
// dumped assembly and in the one relocatable object the dump links.
// Two graphs with the same matvec share one compiled kernel.
// REQUIRES: cpu-target
// RUN: rm -rf %t && mkdir -p %t/dump
// RUN: hesper-opt %s --hesper-to-cpu="isa=x86-64-v3 dump-dir=%t/dump" -o %t/threads.mlir
// RUN: hesper-opt %s --hesper-to-cpu="isa=x86-64-v3" --mlir-disable-threading -o %t/serial.mlir
// RUN: hesper-opt %s --hesper-to-cpu="isa=x86-64-v3" -o %t/again.mlir
// RUN: cmp %t/threads.mlir %t/serial.mlir
// RUN: cmp %t/threads.mlir %t/again.mlir
// RUN: FileCheck %s --check-prefix=BIN < %t/threads.mlir
// RUN: FileCheck %s --check-prefix=ASM < %t/dump/hesper_kernels.s
// RUN: nm %t/dump/hesper_kernels.o | FileCheck %s --check-prefix=OBJ

// BIN: shaderm.schedule @first
// BIN: shaderm.launch @first_k0_matmul
// BIN: shaderm.launch @first_k1_reduce_epilogue
// BIN: shaderm.schedule @second
// BIN: shaderm.launch @first_k0_matmul
// BIN: shaderm.launch @second_k1_reduce_epilogue
// BIN: gpu.binary @hesper_kernels

// ASM-DAG: .globl first_k0_matmul
// ASM-DAG: .globl first_k1_reduce_epilogue
// ASM-DAG: .globl second_k1_reduce_epilogue
// ASM-NOT: .globl second_k0_matmul

// OBJ-DAG: T first_k0_matmul
// OBJ-DAG: T first_k1_reduce_epilogue
// OBJ-DAG: T second_k1_reduce_epilogue

circuit.graph @first(%x: tensor<256xf32> {circuit.name = "x"},
                     %w: tensor<64x256xf32> {circuit.name = "w"})
    -> tensor<64xf32> {
  %y = circuit.matmul %x, %w : tensor<256xf32>, tensor<64x256xf32>
      -> tensor<64xf32>
  %ss = circuit.reduce sum_sq %y : tensor<64xf32> -> tensor<1xf32>
  %n = circuit.map ins(%y, %ss : tensor<64xf32>, tensor<1xf32>)
      -> tensor<64xf32> {
  ^bb0(%lane: i32, %v: f32, %s: f32):
    %r = exp.rsqrt %s : f32
    %o = exp.mul %v, %r : f32
    circuit.yield %o : f32
  }
  circuit.output %n : tensor<64xf32>
}

circuit.graph @second(%x: tensor<256xf32> {circuit.name = "x"},
                      %w: tensor<64x256xf32> {circuit.name = "w"})
    -> tensor<64xf32> {
  %y = circuit.matmul %x, %w : tensor<256xf32>, tensor<64x256xf32>
      -> tensor<64xf32>
  %m = circuit.reduce max %y : tensor<64xf32> -> tensor<1xf32>
  %e = circuit.map ins(%y, %m : tensor<64xf32>, tensor<1xf32>)
      -> tensor<64xf32> {
  ^bb0(%lane: i32, %v: f32, %mx: f32):
    %d = exp.sub %v, %mx : f32
    %o = exp.tanh %d : f32
    circuit.yield %o : f32
  }
  circuit.output %e : tensor<64xf32>
}
