// Acceptance case 7: RoPE-K and the KV-cache write as one kernel. 4 KV
// heads, max seq 32, head dim 16, pos = 5, base 1e6, frequency factors
// ff[j] = 1 + 0.1 j, NeoX pairing, k[i] = 0.137 i - 2, v[i] = 1000 + i.
// Unfused: gather (partner), gather (factor), map (rotation), scatter of
// K into its cache, scatter of V into its cache (5 dispatches). Fused: the
// gathers and the map are inlined into the K write, and the two writes over
// the same grid merge into one circuit.scatter_multi.
// --validate-fusion compares fused and unfused on random inputs over all
// 2048 cells of both caches (within 1e-4); the VALUES lines check every
// cell of both caches on the inputs above (row 5 of each head against the
// RoPE formula at 4 decimals, all other cells 0).
//
// RUN: hesper-opt %s --hesper-fuse | FileCheck %s --check-prefix=FUSED
// RUN: hesper-opt %s --hesper-fuse --circuit-count-dispatches -o /dev/null \
// RUN:   | FileCheck %s --check-prefix=COUNT
// RUN: hesper-run %s --backend=interp --input k=linear:0.137,-2 --input v=linear:1,1000 \
// RUN:   --input pos=values:5 --input ff=linear:0.1,1 --input kcache=const:0 \
// RUN:   --input vcache=const:0 --print-results \
// RUN:   | FileCheck %s --check-prefix=VALUES
// RUN: hesper-opt %s --hesper-fuse -o %t.mlir
// RUN: hesper-run %t.mlir --backend=interp --input k=linear:0.137,-2 --input v=linear:1,1000 \
// RUN:   --input pos=values:5 --input ff=linear:0.1,1 --input kcache=const:0 \
// RUN:   --input vcache=const:0 --print-results \
// RUN:   | FileCheck %s --check-prefix=VALUES
// RUN: hesper-run %s --validate-fusion | FileCheck %s --check-prefix=VALID

// FUSED-LABEL: circuit.graph @rope_kv_write(
// FUSED-SAME:    %[[K:[^:]*]]: tensor<4x16xf32> {{[^,]*}}, %[[V:[^:]*]]: tensor<4x16xf32> {{[^,]*}},
// FUSED-SAME:    %[[KC:[^:]*]]: tensor<4x32x16xf32> {{[^,]*}}, %[[VC:[^:]*]]: tensor<4x32x16xf32>
// FUSED-NOT:     circuit.{{(map|gather|scatter) }}
// FUSED:         circuit.scatter_multi grid(64) ins({{.*}}) into(%[[KC]], %[[VC]] : tensor<4x32x16xf32>, tensor<4x32x16xf32>) {
// FUSED:           circuit.extract
// FUSED:           exp.cos
// FUSED:           exp.sin
// FUSED:           circuit.yield %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} : i32, f32, i32, f32
// FUSED-NEXT:    }
// FUSED-NEXT:    circuit.output

// COUNT: graph @rope_kv_write: 1 dispatches (1 scatter_multi)

// VALUES: argument kcache (tensor<4x32x16xf32>): 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 -1.4341{{[0-9]*}} -0.7321{{[0-9]*}} -1.6282{{[0-9]*}} -1.5779{{[0-9]*}} -1.4507{{[0-9]*}} -1.3148{{[0-9]*}} -1.1779{{[0-9]*}} -1.041 1.6614{{[0-9]*}} -1.8769{{[0-9]*}} -0.8513{{[0-9]*}} -0.5272{{[0-9]*}} -0.3611{{[0-9]*}} -0.2197{{[0-9]*}} -0.0821{{[0-9]*}} 0.0549{{[0-9]*}} 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 1.2895{{[0-9]*}} -0.8031{{[0-9]*}} 0.2567{{[0-9]*}} 0.5661{{[0-9]*}} 0.7334{{[0-9]*}} 0.8758{{[0-9]*}} 1.0137{{[0-9]*}} 1.1509{{[0-9]*}} 0.1812{{[0-9]*}} 1.2221{{[0-9]*}} 1.6096{{[0-9]*}} 1.7116{{[0-9]*}} 1.8386{{[0-9]*}} 1.9735{{[0-9]*}} 2.1101 2.2470{{[0-9]*}} 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 4.0133{{[0-9]*}} -0.8742{{[0-9]*}} 2.1417{{[0-9]*}} 2.7102 2.9176 3.0665{{[0-9]*}} 3.2055{{[0-9]*}} 3.3429{{[0-9]*}} -1.2989{{[0-9]*}} 4.3213{{[0-9]*}} 4.0706{{[0-9]*}} 3.9505{{[0-9]*}} 4.0384{{[0-9]*}} 4.1668{{[0-9]*}} 4.3023{{[0-9]*}} 4.4390{{[0-9]*}} 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 6.7370{{[0-9]*}} -0.9452{{[0-9]*}} 4.0267{{[0-9]*}} 4.8542{{[0-9]*}} 5.1017{{[0-9]*}} 5.2572{{[0-9]*}} 5.3973{{[0-9]*}} 5.5348{{[0-9]*}} -2.7791{{[0-9]*}} 7.4204{{[0-9]*}} 6.5316{{[0-9]*}} 6.1894{{[0-9]*}} 6.2382{{[0-9]*}} 6.3601{{[0-9]*}} 6.4945{{[0-9]*}} 6.6310{{[0-9]*}} 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0{{$}}
// VALUES: argument vcache (tensor<4x32x16xf32>): 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 1000 1001 1002 1003 1004 1005 1006 1007 1008 1009 1010 1011 1012 1013 1014 1015 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 1016 1017 1018 1019 1020 1021 1022 1023 1024 1025 1026 1027 1028 1029 1030 1031 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 1032 1033 1034 1035 1036 1037 1038 1039 1040 1041 1042 1043 1044 1045 1046 1047 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 1048 1049 1050 1051 1052 1053 1054 1055 1056 1057 1058 1059 1060 1061 1062 1063 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0{{$}}

// VALID: graph @rope_kv_write: 5 -> 1 dispatches, {{.*}}: ok

circuit.graph @rope_kv_write(
    %k: tensor<4x16xf32> {circuit.name = "k"},
    %v: tensor<4x16xf32> {circuit.name = "v"},
    %pos: tensor<1xi32> {circuit.name = "pos"},
    %ff: tensor<8xf32> {circuit.name = "ff"},
    %kcache: tensor<4x32x16xf32> {circuit.name = "kcache"},
    %vcache: tensor<4x32x16xf32> {circuit.name = "vcache"}) {
  // RoPE (NeoX pairing) of K, as GraphBuilder::rope builds it: the partner
  // element (d < 8 pairs with d + 8 in the same head), the frequency factor
  // of pair j = d mod 8, then the rotation.
  %partner = circuit.gather %k : tensor<4x16xf32> -> tensor<4x16xf32> {
  ^bb0(%lane: i32):
    %c8 = exp.constant 8 : i32
    %d = exp.rem_by_const %lane, 16 : i32
    %start = exp.sub %lane, %d : i32
    %lower = exp.cmp lt, %d, %c8 : i32
    %up = exp.add %d, %c8 : i32
    %down = exp.sub %d, %c8 : i32
    %other = exp.select %lower, %up, %down : i32
    %a = exp.add %start, %other : i32
    circuit.yield %a : i32
  }
  %factor = circuit.gather %ff : tensor<8xf32> -> tensor<4x16xf32> {
  ^bb0(%lane: i32):
    %d = exp.rem_by_const %lane, 16 : i32
    %j = exp.rem_by_const %d, 8 : i32
    circuit.yield %j : i32
  }
  // theta = pos * base^(-2j / 16) / factor with base = 1e6; the first of a
  // pair gets x cos - x' sin, the second x cos + x' sin.
  %kr = circuit.map ins(%k, %partner, %pos, %factor
                        : tensor<4x16xf32>, tensor<4x16xf32>, tensor<1xi32>,
                          tensor<4x16xf32>) -> tensor<4x16xf32> {
  ^bb0(%lane: i32, %self: f32, %other: f32, %p: i32, %f: f32):
    %c8 = exp.constant 8 : i32
    %d = exp.rem_by_const %lane, 16 : i32
    %ji = exp.rem_by_const %d, 8 : i32
    %j = exp.convert %ji : i32 to f32
    // -2 ln(1e6) / 16
    %k0 = exp.constant -1.72693882 : f32
    %e = exp.mul %j, %k0 : f32
    %inv = exp.exp %e : f32
    %pf = exp.convert %p : i32 to f32
    %t0 = exp.mul %pf, %inv : f32
    %theta = exp.div %t0, %f : f32
    %c = exp.cos %theta : f32
    %s = exp.sin %theta : f32
    %xc = exp.mul %self, %c : f32
    %xs = exp.mul %other, %s : f32
    %first = exp.cmp lt, %d, %c8 : i32
    %lo = exp.sub %xc, %xs : f32
    %hi = exp.add %xc, %xs : f32
    %r = exp.select %first, %lo, %hi : f32
    circuit.yield %r : f32
  }
  // Row pos of each head: addr = h * 32 * 16 + pos * 16 + d.
  %k2 = circuit.scatter grid(64)
      ins(%kr, %pos : tensor<4x16xf32>, tensor<1xi32>)
      into %kcache : tensor<4x32x16xf32> {
  ^bb0(%lane: i32, %val: f32, %p: i32):
    %c512 = exp.constant 512 : i32
    %c16 = exp.constant 16 : i32
    %h = exp.div_by_const %lane, 16 : i32
    %d = exp.rem_by_const %lane, 16 : i32
    %hb = exp.mul %h, %c512 : i32
    %row = exp.mul %p, %c16 : i32
    %a0 = exp.add %hb, %row : i32
    %a = exp.add %a0, %d : i32
    circuit.yield %a, %val : i32, f32
  }
  %v2 = circuit.scatter grid(64)
      ins(%v, %pos : tensor<4x16xf32>, tensor<1xi32>)
      into %vcache : tensor<4x32x16xf32> {
  ^bb0(%lane: i32, %val: f32, %p: i32):
    %c512 = exp.constant 512 : i32
    %c16 = exp.constant 16 : i32
    %h = exp.div_by_const %lane, 16 : i32
    %d = exp.rem_by_const %lane, 16 : i32
    %hb = exp.mul %h, %c512 : i32
    %row = exp.mul %p, %c16 : i32
    %a0 = exp.add %hb, %row : i32
    %a = exp.add %a0, %d : i32
    circuit.yield %a, %val : i32, f32
  }
  circuit.output
}
