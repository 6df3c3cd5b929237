// hesper-gpu-to-cpu: one-lane gpu.func kernels become func.func workgroup
// bodies (buffers, then workgroup x/y/z, then grid x/y/z) in a
// builtin.module marked hesper.cpu_kernels; lane queries become constants,
// subgroup operations their operand, barriers vanish, shared memory is a
// stack array, fma a contractible multiply and reassociable add.
// RUN: hesper-opt %s -split-input-file --hesper-gpu-to-cpu -verify-diagnostics | FileCheck %s

// CHECK-LABEL: module @hesper_kernels attributes {hesper.cpu_kernels}
// CHECK:       func.func @__hesper_body_k(%[[X:.*]]: memref<64xf32>, %[[Y:.*]]: memref<64xf32>, %[[WX:.*]]: index, %[[WY:.*]]: index, %[[WZ:.*]]: index, %[[GX:.*]]: index, %[[GY:.*]]: index, %[[GZ:.*]]: index)
// CHECK:         %[[S:.*]] = memref.alloca() : memref<4xf32>
// CHECK-NOT:     gpu.
// CHECK:         %[[V:.*]] = memref.load %[[X]][%[[WX]]]
// CHECK:         %[[P:.*]] = arith.mulf %[[V]], %[[V]] fastmath<reassoc,contract>
// CHECK:         %[[A:.*]] = arith.addf %[[P]], %[[V]] fastmath<reassoc,contract>
// CHECK:         memref.store %[[A]], %[[S]]
// CHECK:         %[[I:.*]] = arith.addi %[[WY]], %[[GX]]
// CHECK:         memref.store %[[A]], %[[Y]][%[[I]]]
// CHECK:         return
// CHECK-NOT:   gpu.module
module attributes {gpu.container_module} {
  gpu.module @hesper_kernels {
    gpu.func @k(%x: memref<64xf32>, %y: memref<64xf32>) kernel
        attributes {known_block_size = array<i32: 1, 1, 1>} {
      %s = memref.alloc() : memref<4xf32, 3>
      %b = gpu.block_id x
      %v = memref.load %x[%b] : memref<64xf32>
      %r = gpu.subgroup_reduce add %v : (f32) -> f32
      %f = math.fma %r, %r, %r : f32
      %t = gpu.thread_id x
      memref.store %f, %s[%t] : memref<4xf32, 3>
      gpu.barrier
      %by = gpu.block_id y
      %gx = gpu.grid_dim x
      %i = arith.addi %by, %gx : index
      memref.store %f, %y[%i] : memref<64xf32>
      gpu.return
    }
  }
}

// -----

module attributes {gpu.container_module} {
  gpu.module @hesper_kernels {
    // expected-error @+1 {{'gpu.func' op has more than one lane per workgroup; the CPU target needs convert-circuit-to-shaderm{single-lane=true}}}
    gpu.func @wide(%x: memref<64xf32>) kernel
        attributes {known_block_size = array<i32: 64, 1, 1>} {
      gpu.return
    }
  }
}

// -----

module attributes {gpu.container_module} {
  gpu.module @hesper_kernels {
    gpu.func @printing(%x: memref<64xf32>) kernel
        attributes {known_block_size = array<i32: 1, 1, 1>} {
      // expected-error @+1 {{'gpu.printf' op is not supported by the CPU target}}
      gpu.printf "hello"
      gpu.return
    }
  }
}

// -----

module attributes {gpu.container_module} {
  gpu.module @hesper_kernels {
    // expected-error @+1 {{'gpu.func' op has memory attributions; the CPU target needs shared memory as memref.alloc}}
    gpu.func @attributed(%x: memref<64xf32>) workgroup(%w : memref<4xf32, #gpu.address_space<workgroup>>) kernel
        attributes {known_block_size = array<i32: 1, 1, 1>} {
      gpu.return
    }
  }
}
