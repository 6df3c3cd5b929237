// hesper-to-cpu compiles a graph to a gpu.binary holding a shared object
// whose format names the features of the ISA asked for, and dumps the
// object code and its assembly: for x86-64-v3 the matvec's dot product is
// 256-bit vector FMAs (ymm), for the x86-64 baseline 128-bit SSE
// multiplies and adds (xmm), never scalar-only code.
// REQUIRES: cpu-target
// RUN: rm -rf %t && mkdir -p %t/v3 %t/base
// RUN: hesper-opt %s --hesper-to-cpu="isa=x86-64-v3 dump-dir=%t/v3" | FileCheck %s --check-prefix=BIN
// RUN: FileCheck %s --check-prefix=V3 < %t/v3/hesper_kernels.s
// RUN: test -s %t/v3/hesper_kernels.o
// RUN: hesper-opt %s --hesper-to-cpu="isa=x86-64 dump-dir=%t/base" -o /dev/null
// RUN: FileCheck %s --check-prefix=BASE < %t/base/hesper_kernels.s
// RUN: not hesper-opt %s --hesper-to-cpu="isa=pentium4" -o /dev/null 2>&1 | FileCheck %s --check-prefix=BAD

// BIN: shaderm.schedule @matvec
// BIN: shaderm.launch @matvec_k0_matmul grid [16, 1, 1]
// BIN: gpu.binary @hesper_kernels [#gpu.object<#llvm.target<triple = "{{.*}}", chip = "x86-64-v3">, properties = {format = "elf:popcnt,sse3,sse4.1,sse4.2,ssse3,avx,avx2,bmi,bmi2,f16c,fma,lzcnt,movbe"}, bin = "\7FELF

// V3: .globl matvec_k0_matmul
// V3: matvec_k0_matmul:
// V3: vfmadd{{[0-9]+}}ps {{.*}}%ymm
// BASE: .globl matvec_k0_matmul
// BASE: matvec_k0_matmul:
// BASE: {{mulps|addps}} {{.*}}%xmm
// BAD: error: unknown CPU ISA 'pentium4' (expected native, x86-64, x86-64-v2, x86-64-v3 or x86-64-v4)

circuit.graph @matvec(%x: tensor<256xf32> {circuit.name = "x"},
                      %w: tensor<64x256xf32> {circuit.name = "w"})
    -> tensor<64xf32> {
  %y = circuit.matmul %x, %w : tensor<256xf32>, tensor<64x256xf32>
      -> tensor<64xf32>
  circuit.output %y : tensor<64xf32>
}
