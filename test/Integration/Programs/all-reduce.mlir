// gpu.all_reduce over a 3-D block of 4x2x3 threads, written with gpu.launch
// (outlined by hesper-run), for every operation on f32 and i32 and for a
// region. Thread (x, y, z) has id t = x + 4 * (y + 2 * z) and reduces
// t + 1 (1..24); the products reduce t % 3 + 1 (eight each of 1, 2, 3); the
// signed min/max reduce t - 10. Expected: sum 300, product 2^8 * 3^8 =
// 1679616, min 1, max 24, signed -10 and 13, and 0, or 31, xor 24. The
// tree's order is fixed, so the f32 results are the same on every device.
//
// REQUIRES: vulkan
// RUN: hesper-run %s --backend=vulkan --validation | FileCheck %s
// The same on the CPU target (the threads of a workgroup as fibers,
// subgroups of one lane):
// RUN: %if cpu-target %{ hesper-run %s --backend=cpu | FileCheck %s %}

// CHECK: data =
// CHECK-NEXT: [300, 1.67962e+06, 1, 24, 1, 24, 300]
// CHECK: data =
// CHECK-NEXT: [300, 1679616, 1, 24, -10, 13, 0, 31, 24, 300]

module {
  func.func @main() {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %c3 = arith.constant 3 : index
    %c4 = arith.constant 4 : index
    %f = memref.alloc() : memref<7xf32>
    %i = memref.alloc() : memref<10xi32>
    %uf = memref.cast %f : memref<7xf32> to memref<*xf32>
    %ui = memref.cast %i : memref<10xi32> to memref<*xi32>
    gpu.host_register %uf : memref<*xf32>
    gpu.host_register %ui : memref<*xi32>
    gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
               threads(%tx, %ty, %tz) in (%sx = %c4, %sy = %c2, %sz = %c3) {
      %zy = arith.muli %tz, %c2 : index
      %yz = arith.addi %ty, %zy : index
      %r = arith.muli %yz, %c4 : index
      %t = arith.addi %tx, %r : index
      %t32 = arith.index_cast %t : index to i32
      %one = arith.constant 1 : i32
      %three = arith.constant 3 : i32
      %ten = arith.constant 10 : i32
      %v = arith.addi %t32, %one : i32
      %m3 = arith.remsi %t32, %three : i32
      %p = arith.addi %m3, %one : i32
      %s = arith.subi %t32, %ten : i32
      %vf = arith.sitofp %v : i32 to f32
      %pf = arith.sitofp %p : i32 to f32

      %fadd = gpu.all_reduce add %vf uniform {} : (f32) -> f32
      %fmul = gpu.all_reduce mul %pf uniform {} : (f32) -> f32
      %fmin = gpu.all_reduce minnumf %vf uniform {} : (f32) -> f32
      %fmax = gpu.all_reduce maxnumf %vf uniform {} : (f32) -> f32
      %fminimum = gpu.all_reduce minimumf %vf uniform {} : (f32) -> f32
      %fmaximum = gpu.all_reduce maximumf %vf uniform {} : (f32) -> f32
      %fregion = gpu.all_reduce %vf {
      ^bb(%lhs : f32, %rhs : f32):
        %sum = arith.addf %lhs, %rhs : f32
        "gpu.yield"(%sum) : (f32) -> ()
      } : (f32) -> (f32)

      %iadd = gpu.all_reduce add %v uniform {} : (i32) -> i32
      %imul = gpu.all_reduce mul %p uniform {} : (i32) -> i32
      %iminu = gpu.all_reduce minui %v uniform {} : (i32) -> i32
      %imaxu = gpu.all_reduce maxui %v uniform {} : (i32) -> i32
      %imins = gpu.all_reduce minsi %s uniform {} : (i32) -> i32
      %imaxs = gpu.all_reduce maxsi %s uniform {} : (i32) -> i32
      %iand = gpu.all_reduce and %v uniform {} : (i32) -> i32
      %ior = gpu.all_reduce or %v uniform {} : (i32) -> i32
      %ixor = gpu.all_reduce xor %v uniform {} : (i32) -> i32
      %iregion = gpu.all_reduce %v {
      ^bb(%lhs : i32, %rhs : i32):
        %sum = arith.addi %lhs, %rhs : i32
        "gpu.yield"(%sum) : (i32) -> ()
      } : (i32) -> (i32)

      %first = arith.cmpi eq, %t, %c0 : index
      scf.if %first {
        %c5 = arith.constant 5 : index
        %c6 = arith.constant 6 : index
        %c7 = arith.constant 7 : index
        %c8 = arith.constant 8 : index
        %c9 = arith.constant 9 : index
        memref.store %fadd, %f[%c0] : memref<7xf32>
        memref.store %fmul, %f[%c1] : memref<7xf32>
        memref.store %fmin, %f[%c2] : memref<7xf32>
        memref.store %fmax, %f[%c3] : memref<7xf32>
        memref.store %fminimum, %f[%c4] : memref<7xf32>
        memref.store %fmaximum, %f[%c5] : memref<7xf32>
        memref.store %fregion, %f[%c6] : memref<7xf32>
        memref.store %iadd, %i[%c0] : memref<10xi32>
        memref.store %imul, %i[%c1] : memref<10xi32>
        memref.store %iminu, %i[%c2] : memref<10xi32>
        memref.store %imaxu, %i[%c3] : memref<10xi32>
        memref.store %imins, %i[%c4] : memref<10xi32>
        memref.store %imaxs, %i[%c5] : memref<10xi32>
        memref.store %iand, %i[%c6] : memref<10xi32>
        memref.store %ior, %i[%c7] : memref<10xi32>
        memref.store %ixor, %i[%c8] : memref<10xi32>
        memref.store %iregion, %i[%c9] : memref<10xi32>
      }
      gpu.terminator
    }
    call @printMemrefF32(%uf) : (memref<*xf32>) -> ()
    call @printMemrefI32(%ui) : (memref<*xi32>) -> ()
    gpu.host_unregister %uf : memref<*xf32>
    gpu.host_unregister %ui : memref<*xi32>
    memref.dealloc %f : memref<7xf32>
    memref.dealloc %i : memref<10xi32>
    return
  }
  func.func private @printMemrefF32(memref<*xf32>) attributes { llvm.emit_c_interface }
  func.func private @printMemrefI32(memref<*xi32>) attributes { llvm.emit_c_interface }
}
