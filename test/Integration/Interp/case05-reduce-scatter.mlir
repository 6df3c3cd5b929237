// Acceptance case 5: reduce, then scatter. D = 64, x[i] = i + 1 (sum 2080);
// (x / sum) * 100 is written at lane + 64 of a fresh 256-element buffer:
// dst[64 + i] = (i + 1) / 2080 * 100 (checked at 4 decimals), every other
// cell 0.
//
// Fusion inlines the map into the scatter, then folds the reduction into it:
// one circuit.reduce_scatter_epilogue, one dispatch.
//
// RUN: hesper-opt %s --hesper-fuse | FileCheck %s --check-prefix=FUSED
// RUN: hesper-opt %s --hesper-fuse --circuit-count-dispatches -o /dev/null \
// RUN:   | FileCheck %s --check-prefix=COUNT
// RUN: hesper-run %s --backend=interp --input x=linear:1,1 --print-results \
// RUN:   | FileCheck %s --check-prefix=VALUES
// RUN: hesper-opt %s --hesper-fuse -o %t.mlir
// RUN: hesper-run %t.mlir --backend=interp --input x=linear:1,1 --print-results \
// RUN:   | FileCheck %s --check-prefix=VALUES
// RUN: hesper-run %s --validate-fusion | FileCheck %s --check-prefix=VALID

// FUSED-LABEL: circuit.graph @reduce_scatter(
// FUSED-NOT:     circuit.map
// FUSED:         %[[Z:.*]] = circuit.zeros : tensor<256xf32>
// FUSED-NOT:     circuit.map
// FUSED-NOT:     circuit.reduce sum
// FUSED:         %[[R:.*]] = circuit.reduce_scatter_epilogue sum {{.*}}into %[[Z]] : tensor<256xf32>
// FUSED-DAG:       %[[C64:.*]] = exp.constant 64 : i32
// FUSED-DAG:       %[[A:.*]] = exp.add %{{[^,]*}}, %[[C64]] : i32
// FUSED-DAG:       exp.div
// FUSED-DAG:       exp.mul
// FUSED:           circuit.yield %[[A]], %{{.*}} : i32, f32
// FUSED-NEXT:    }
// FUSED-NEXT:    circuit.output %[[R]] : tensor<256xf32>

// VALUES: result #0 (tensor<256xf32>): 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0.0480{{[0-9]*}} 0.0961{{[0-9]*}} 0.1442{{[0-9]*}} 0.1923{{[0-9]*}} 0.2403{{[0-9]*}} 0.2884{{[0-9]*}} 0.3365{{[0-9]*}} 0.3846{{[0-9]*}} 0.4326{{[0-9]*}} 0.4807{{[0-9]*}} 0.5288{{[0-9]*}} 0.5769{{[0-9]*}} 0.625 0.6730{{[0-9]*}} 0.7211{{[0-9]*}} 0.7692{{[0-9]*}} 0.8173{{[0-9]*}} 0.8653{{[0-9]*}} 0.9134{{[0-9]*}} 0.9615{{[0-9]*}} 1.0096{{[0-9]*}} 1.0576{{[0-9]*}} 1.1057{{[0-9]*}} 1.1538{{[0-9]*}} 1.2019{{[0-9]*}} 1.25 1.2980{{[0-9]*}} 1.3461{{[0-9]*}} 1.3942{{[0-9]*}} 1.4423{{[0-9]*}} 1.4903{{[0-9]*}} 1.5384{{[0-9]*}} 1.5865{{[0-9]*}} 1.6346{{[0-9]*}} 1.6826{{[0-9]*}} 1.7307{{[0-9]*}} 1.7788{{[0-9]*}} 1.8269{{[0-9]*}} 1.875 1.9230{{[0-9]*}} 1.9711{{[0-9]*}} 2.0192{{[0-9]*}} 2.0673{{[0-9]*}} 2.1153{{[0-9]*}} 2.1634{{[0-9]*}} 2.2115{{[0-9]*}} 2.2596{{[0-9]*}} 2.3076{{[0-9]*}} 2.3557{{[0-9]*}} 2.4038{{[0-9]*}} 2.4519{{[0-9]*}} 2.5 2.5480{{[0-9]*}} 2.5961{{[0-9]*}} 2.6442{{[0-9]*}} 2.6923{{[0-9]*}} 2.7403{{[0-9]*}} 2.7884{{[0-9]*}} 2.8365{{[0-9]*}} 2.8846{{[0-9]*}} 2.9326{{[0-9]*}} 2.9807{{[0-9]*}} 3.0288{{[0-9]*}} 3.0769{{[0-9]*}} 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0{{$}}

// COUNT: graph @reduce_scatter: 1 dispatches (1 reduce_scatter_epilogue)
// VALID: graph @reduce_scatter: 3 -> 1 dispatches, {{.*}}: ok

circuit.graph @reduce_scatter(%x: tensor<64xf32> {circuit.name = "x"})
    -> tensor<256xf32> {
  %sum = circuit.reduce sum %x : tensor<64xf32> -> tensor<1xf32>
  %share = circuit.map ins(%x, %sum : tensor<64xf32>, tensor<1xf32>)
      -> tensor<64xf32> {
  ^bb0(%lane: i32, %v: f32, %s: f32):
    %q = exp.div %v, %s : f32
    %h = exp.constant 100.0 : f32
    %o = exp.mul %q, %h : f32
    circuit.yield %o : f32
  }
  %dst = circuit.zeros : tensor<256xf32>
  %r = circuit.scatter grid(64) ins(%share : tensor<64xf32>)
      into %dst : tensor<256xf32> {
  ^bb0(%lane: i32, %v: f32):
    %c64 = exp.constant 64 : i32
    %a = exp.add %lane, %c64 : i32
    circuit.yield %a, %v : i32, f32
  }
  circuit.output %r : tensor<256xf32>
}
