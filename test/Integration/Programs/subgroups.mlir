// Subgroup operations in a block of 32 threads, written for any subgroup
// size: the shuffle width is gpu.subgroup_size (which hesper-run fixes to
// the device's: 8 on lavapipe, 32 on NVIDIA, 1 on the CPU target). Thread
// t, lane l = t mod S. Every row is all ones on every device.
//   out[0][t]: shuffle xor 1: 1 where the result is valid exactly when
//              l ^ 1 < S and then equals t ^ 1, else 0
//   out[1][t]: shuffle idx 0 of t equals t - l, the subgroup's first
//              lane (1 if so)
//   out[2][t]: shuffle down 1: 1 where the result is valid exactly when
//              l + 1 < S and then equals t + 1, else 0
//   out[3][t]: shuffle up 1: the same for l >= 1 and t - 1
//   out[4][t]: subgroup_reduce add of t equals the sum of the subgroup's
//              ids, S * (t - l) + S * (S - 1) / 2 (1 if so)
//   out[5][t]: subgroup_reduce maxsi of t equals t - l + S - 1 (1 if so)
//
// REQUIRES: vulkan
// RUN: hesper-run %s --backend=vulkan --validation | FileCheck %s
// The same on the CPU target (the threads of a workgroup as fibers,
// subgroups of one lane):
// RUN: %if cpu-target %{ hesper-run %s --backend=cpu | FileCheck %s %}

// CHECK: sizes = [6, 32] strides = [32, 1] data =
// CHECK-NEXT: {{\[\[}}1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1],
// CHECK-NEXT: [1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1],
// CHECK-NEXT: [1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1],
// CHECK-NEXT: [1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1],
// CHECK-NEXT: [1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1],
// CHECK-NEXT: [1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1]]
module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @subgroups(%out: memref<6x32xi32>) kernel
        attributes {known_block_size = array<i32: 32, 1, 1>} {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c2 = arith.constant 2 : index
      %c3 = arith.constant 3 : index
      %c4 = arith.constant 4 : index
      %c5 = arith.constant 5 : index
      %tid = gpu.thread_id x
      %t = arith.index_cast %tid : index to i32
      %sgi = gpu.subgroup_size : index
      %s = arith.index_cast %sgi : index to i32
      %l = arith.remui %t, %s : i32
      %first = arith.subi %t, %l : i32
      %zero = arith.constant 0 : i32
      %one = arith.constant 1 : i32

      %x, %xv = gpu.shuffle xor %t, %one, %s : i32
      %lx = arith.xori %l, %one : i32
      %xexp = arith.cmpi ult, %lx, %s : i32
      %tx = arith.xori %t, %one : i32
      %xsame = arith.cmpi eq, %x, %tx : i32
      %xok1 = arith.cmpi eq, %xv, %xexp : i1
      %xvalue = arith.select %xv, %xsame, %xok1 : i1
      %xok = arith.andi %xok1, %xvalue : i1
      %xflag = arith.extui %xok : i1 to i32
      memref.store %xflag, %out[%c0, %tid] : memref<6x32xi32>
      %i, %iv = gpu.shuffle idx %t, %zero, %s : i32
      %iok = arith.cmpi eq, %i, %first : i32
      %iflag = arith.extui %iok : i1 to i32
      memref.store %iflag, %out[%c1, %tid] : memref<6x32xi32>

      %d, %dv = gpu.shuffle down %t, %one, %s : i32
      %lp1 = arith.addi %l, %one : i32
      %dexp = arith.cmpi ult, %lp1, %s : i32
      %tp1 = arith.addi %t, %one : i32
      %dsame = arith.cmpi eq, %d, %tp1 : i32
      %dok1 = arith.cmpi eq, %dv, %dexp : i1
      %dvalue = arith.select %dv, %dsame, %dok1 : i1
      %dok = arith.andi %dok1, %dvalue : i1
      %dflag = arith.extui %dok : i1 to i32
      memref.store %dflag, %out[%c2, %tid] : memref<6x32xi32>

      %u, %uv = gpu.shuffle up %t, %one, %s : i32
      %uexp = arith.cmpi uge, %l, %one : i32
      %tm1 = arith.subi %t, %one : i32
      %usame = arith.cmpi eq, %u, %tm1 : i32
      %uok1 = arith.cmpi eq, %uv, %uexp : i1
      %uvalue = arith.select %uv, %usame, %uok1 : i1
      %uok = arith.andi %uok1, %uvalue : i1
      %uflag = arith.extui %uok : i1 to i32
      memref.store %uflag, %out[%c3, %tid] : memref<6x32xi32>

      %sum = gpu.subgroup_reduce add %t : (i32) -> i32
      %sf = arith.muli %s, %first : i32
      %sm1 = arith.subi %s, %one : i32
      %tri0 = arith.muli %s, %sm1 : i32
      %two = arith.constant 2 : i32
      %tri = arith.divui %tri0, %two : i32
      %want = arith.addi %sf, %tri : i32
      %sumok = arith.cmpi eq, %sum, %want : i32
      %sumflag = arith.extui %sumok : i1 to i32
      memref.store %sumflag, %out[%c4, %tid] : memref<6x32xi32>

      %max = gpu.subgroup_reduce maxsi %t : (i32) -> i32
      %last = arith.addi %first, %sm1 : i32
      %maxok = arith.cmpi eq, %max, %last : i32
      %maxflag = arith.extui %maxok : i1 to i32
      memref.store %maxflag, %out[%c5, %tid] : memref<6x32xi32>
      gpu.return
    }
  }

  func.func @main() {
    %c1 = arith.constant 1 : index
    %c32 = arith.constant 32 : index
    %out = gpu.alloc () : memref<6x32xi32>
    gpu.launch_func @kernels::@subgroups blocks in (%c1, %c1, %c1)
        threads in (%c32, %c1, %c1) args(%out : memref<6x32xi32>)
    %host = memref.alloc() : memref<6x32xi32>
    gpu.memcpy %host, %out : memref<6x32xi32>, memref<6x32xi32>
    gpu.dealloc %out : memref<6x32xi32>
    %u = memref.cast %host : memref<6x32xi32> to memref<*xi32>
    call @printMemrefI32(%u) : (memref<*xi32>) -> ()
    memref.dealloc %host : memref<6x32xi32>
    return
  }
  func.func private @printMemrefI32(memref<*xi32>) attributes { llvm.emit_c_interface }
}
