// RUN: hesper-opt %s -split-input-file --hesper-prepare-spirv-kernels | FileCheck %s

// hesper-prepare-spirv-kernels: every gpu.func kernel gets
// spirv.entry_point_abi with its known_block_size as workgroup size, and
// every argument spirv.interface_var_abi with descriptor set 0 and its
// position as binding, the layout the Vulkan runtime creates.

// CHECK-LABEL: gpu.func @scale(
// CHECK-SAME:    %{{.*}}: memref<1024xf32> {spirv.interface_var_abi = #spirv.interface_var_abi<(0, 0)>},
// CHECK-SAME:    %{{.*}}: memref<1024xf32> {spirv.interface_var_abi = #spirv.interface_var_abi<(0, 1)>},
// CHECK-SAME:    %{{.*}}: memref<?xi32> {spirv.interface_var_abi = #spirv.interface_var_abi<(0, 2)>})
// CHECK-SAME:    kernel
// CHECK-SAME:    spirv.entry_point_abi = #spirv.entry_point_abi<workgroup_size = [128, 2, 1]>
module attributes {gpu.container_module} {
  gpu.module @hesper_kernels {
    gpu.func @scale(%x: memref<1024xf32>, %y: memref<1024xf32>, %n: memref<?xi32>) kernel
        attributes {known_block_size = array<i32: 128, 2, 1>} {
      gpu.return
    }
  }
}

// -----

// Without known_block_size the workgroup size is 1 x 1 x 1.

// CHECK-LABEL: gpu.func @no_size(
// CHECK-SAME:    {spirv.interface_var_abi = #spirv.interface_var_abi<(0, 0)>}
// CHECK-SAME:    spirv.entry_point_abi = #spirv.entry_point_abi<workgroup_size = [1, 1, 1]>
module attributes {gpu.container_module} {
  gpu.module @hesper_kernels {
    gpu.func @no_size(%x: memref<16xi32>) kernel {
      gpu.return
    }
  }
}

// -----

// Every kernel of the module; functions that are not kernels are left
// alone; existing argument attributes are kept.

// CHECK-LABEL: gpu.func @first(
// CHECK-SAME:    spirv.entry_point_abi = #spirv.entry_point_abi<workgroup_size = [64, 1, 1]>
// CHECK-LABEL: gpu.func @helper(
// CHECK-SAME:    %{{.*}}: memref<16xi32>)
// CHECK-NOT:     spirv.
// CHECK-LABEL: gpu.func @second(
// CHECK-SAME:    %{{.*}}: memref<8xf32> {hesper.tag, spirv.interface_var_abi = #spirv.interface_var_abi<(0, 0)>},
// CHECK-SAME:    %{{.*}}: memref<8xf32> {spirv.interface_var_abi = #spirv.interface_var_abi<(0, 1)>})
// CHECK-SAME:    spirv.entry_point_abi = #spirv.entry_point_abi<workgroup_size = [8, 4, 2]>
module attributes {gpu.container_module} {
  gpu.module @hesper_kernels {
    gpu.func @first() kernel attributes {known_block_size = array<i32: 64, 1, 1>} {
      gpu.return
    }
    gpu.func @helper(%x: memref<16xi32>) {
      gpu.return
    }
    gpu.func @second(%a: memref<8xf32> {hesper.tag}, %b: memref<8xf32>) kernel
        attributes {known_block_size = array<i32: 8, 4, 2>} {
      gpu.return
    }
  }
}

// -----

// Vector loads and stores of buffers become one access per element (at
// index + i), rebuilt with from_elements / taken apart with extract;
// scalar accesses stay.

// CHECK-LABEL: gpu.func @vectors(
// CHECK-SAME:    %[[X:[^:]*]]: memref<64xf32>
// CHECK-SAME:    %[[Y:[^:]*]]: memref<64xf32>
// CHECK-SAME:    %[[I:[^:]*]]: index
// CHECK-NOT:     vector.load
// CHECK:         %[[L0:.*]] = memref.load %[[X]][%{{.*}}] : memref<64xf32>
// CHECK:         %[[C1:.*]] = arith.constant 1 : index
// CHECK-NEXT:    %[[I1:.*]] = arith.addi %[[I]], %[[C1]] : index
// CHECK-NEXT:    %[[L1:.*]] = memref.load %[[X]][%[[I1]]] : memref<64xf32>
// CHECK:         %[[V:.*]] = vector.from_elements %[[L0]], %[[L1]], %{{.*}}, %{{.*}} : vector<4xf32>
// CHECK-NOT:     vector.store
// CHECK:         %[[E0:.*]] = vector.extract %[[V]][0] : f32 from vector<4xf32>
// CHECK-NEXT:    memref.store %[[E0]], %[[Y]][%{{.*}}] : memref<64xf32>
// CHECK-COUNT-3: memref.store
// CHECK-NOT:     vector.store
// CHECK:         %[[S:.*]] = memref.load %[[X]][%[[I]]] : memref<64xf32>
// CHECK-NEXT:    memref.store %[[S]], %[[Y]][%[[I]]] : memref<64xf32>
module attributes {gpu.container_module} {
  gpu.module @hesper_kernels {
    gpu.func @vectors(%x: memref<64xf32>, %y: memref<64xf32>, %i: index) kernel {
      %v = vector.load %x[%i] {alignment = 16 : i64} : memref<64xf32>, vector<4xf32>
      vector.store %v, %y[%i] {alignment = 16 : i64} : memref<64xf32>, vector<4xf32>
      %s = memref.load %x[%i] : memref<64xf32>
      memref.store %s, %y[%i] : memref<64xf32>
      gpu.return
    }
  }
}
