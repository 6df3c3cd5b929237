// The CPU target's iq4_nl matvec looks its nibbles up in the format's
// 16-byte table with byte permutes (dynamic extracts gathered into a
// vector, which LLVM's x86 backend turns into vpshufb with AVX2 and vpermb
// or vpshufb with AVX-512), not with a chain of compares and blends, which
// made the decode 3x slower than q4_0's.
// REQUIRES: cpu-target
// RUN: rm -rf %t && mkdir -p %t/v3 %t/v4
// RUN: hesper-opt %s --hesper-to-cpu="isa=x86-64-v3 dump-dir=%t/v3" -o /dev/null
// RUN: FileCheck %s --check-prefix=V3 < %t/v3/hesper_kernels.s
// RUN: hesper-opt %s --hesper-to-cpu="isa=x86-64-v4 dump-dir=%t/v4" -o /dev/null
// RUN: FileCheck %s --check-prefix=V4 < %t/v4/hesper_kernels.s

// V3: iq4_k0_matmul:
// V3-NOT: {{vpblendvb|vpcmpeqb}}
// V3: vpshufb
// V3-NOT: {{vpblendvb|vpcmpeqb}}
// V3: .size iq4_k0_matmul
// V4: iq4_k0_matmul:
// V4-NOT: {{vpblendmb|vpcmpeqb}}
// V4: {{vpermb|vpshufb}}
// V4-NOT: {{vpblendmb|vpcmpeqb}}
// V4: .size iq4_k0_matmul

circuit.graph @iq4(%x: tensor<512xf32> {circuit.name = "x"},
                   %w: tensor<16x512x!circuit.iq4_nl> {circuit.name = "w"})
    -> tensor<16xf32> {
  %y = circuit.matmul %x, %w : tensor<512xf32>, tensor<16x512x!circuit.iq4_nl>
      -> tensor<16xf32>
  circuit.output %y : tensor<16xf32>
}
