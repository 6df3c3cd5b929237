// Division by a constant is lowered to a 64-bit multiply-high by a magic
// number; this runs the lowered code on the CPU (through LLVM) against
// arith.divui/remui on 2^16 inputs spread over the whole 32-bit range plus
// the edges, for divisors that stress the magic numbers. The result is the
// number of mismatches, which must be 0.
//
// REQUIRES: mlir-runner
// RUN: hesper-opt %s --convert-exp-to-std --convert-scf-to-cf \
// RUN:   --convert-arith-to-llvm --convert-cf-to-llvm --convert-func-to-llvm \
// RUN:   --reconcile-unrealized-casts \
// RUN: | mlir-runner -e main -entry-point-result=i32 | FileCheck %s
// CHECK: 0{{$}}

func.func @mismatches(%x: i32) -> i32 {
  %zero = arith.constant 0 : i32
  %one = arith.constant 1 : i32
  %d3 = arith.constant 3 : i32
  %d7 = arith.constant 7 : i32
  %d100 = arith.constant 100 : i32
  %d641 = arith.constant 641 : i32
  %d65535 = arith.constant 65535 : i32
  %dbig = arith.constant 2147483647 : i32
  %dmax = arith.constant -1 : i32
  %q3 = exp.div_by_const %x, 3 : i32
  %r3 = arith.divui %x, %d3 : i32
  %q7 = exp.div_by_const %x, 7 : i32
  %r7 = arith.divui %x, %d7 : i32
  %q100 = exp.rem_by_const %x, 100 : i32
  %r100 = arith.remui %x, %d100 : i32
  %q641 = exp.div_by_const %x, 641 : i32
  %r641 = arith.divui %x, %d641 : i32
  %q65535 = exp.div_by_const %x, 65535 : i32
  %r65535 = arith.divui %x, %d65535 : i32
  %qbig = exp.div_by_const %x, 2147483647 : i32
  %rbig = arith.divui %x, %dbig : i32
  %qmax = exp.div_by_const %x, 4294967295 : i32
  %rmax = arith.divui %x, %dmax : i32
  %qm = exp.rem_by_const %x, 4294967295 : i32
  %rm = arith.remui %x, %dmax : i32
  %e0 = arith.cmpi ne, %q3, %r3 : i32
  %e1 = arith.cmpi ne, %q7, %r7 : i32
  %e2 = arith.cmpi ne, %q100, %r100 : i32
  %e3 = arith.cmpi ne, %q641, %r641 : i32
  %e4 = arith.cmpi ne, %q65535, %r65535 : i32
  %e5 = arith.cmpi ne, %qbig, %rbig : i32
  %e6 = arith.cmpi ne, %qmax, %rmax : i32
  %e7 = arith.cmpi ne, %qm, %rm : i32
  %o0 = arith.ori %e0, %e1 : i1
  %o1 = arith.ori %o0, %e2 : i1
  %o2 = arith.ori %o1, %e3 : i1
  %o3 = arith.ori %o2, %e4 : i1
  %o4 = arith.ori %o3, %e5 : i1
  %o5 = arith.ori %o4, %e6 : i1
  %o6 = arith.ori %o5, %e7 : i1
  %r = arith.select %o6, %one, %zero : i32
  return %r : i32
}

func.func @main() -> i32 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = arith.constant 65536 : index
  %stride = arith.constant 65537 : i32
  %offset = arith.constant 12345 : i32
  %zero = arith.constant 0 : i32
  %sum = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %zero) -> i32 {
    %ii = arith.index_cast %i : index to i32
    %t = arith.muli %ii, %stride : i32
    %x = arith.addi %t, %offset : i32
    %m = func.call @mismatches(%x) : (i32) -> i32
    %a = arith.addi %acc, %m : i32
    scf.yield %a : i32
  }
  // The edges: 0, 1, 2^31 - 1, 2^31, 2^32 - 1.
  %e0 = arith.constant 0 : i32
  %e1 = arith.constant 1 : i32
  %e2 = arith.constant 2147483647 : i32
  %e3 = arith.constant -2147483648 : i32
  %e4 = arith.constant -1 : i32
  %m0 = func.call @mismatches(%e0) : (i32) -> i32
  %m1 = func.call @mismatches(%e1) : (i32) -> i32
  %m2 = func.call @mismatches(%e2) : (i32) -> i32
  %m3 = func.call @mismatches(%e3) : (i32) -> i32
  %m4 = func.call @mismatches(%e4) : (i32) -> i32
  %s0 = arith.addi %sum, %m0 : i32
  %s1 = arith.addi %s0, %m1 : i32
  %s2 = arith.addi %s1, %m2 : i32
  %s3 = arith.addi %s2, %m3 : i32
  %s4 = arith.addi %s3, %m4 : i32
  return %s4 : i32
}
