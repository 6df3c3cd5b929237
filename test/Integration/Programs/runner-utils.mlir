// The printing a program's host code does through MLIR's runner utilities
// (printMemref* for every element type and rank -- i8 elements print as
// characters --, vector.print of scalars and vectors), run twice: with MLIR's own libraries (the reference), and
// with Hesper's stand-ins (--builtin-runner-utils: what a release built by
// `make dist`, which has no MLIR, uses). Both must print the same text.
//
// REQUIRES: cpu-target
// RUN: hesper-run %s --backend=cpu | FileCheck %s
// RUN: hesper-run %s --backend=cpu --builtin-runner-utils | FileCheck %s

// CHECK:      rank = 0 offset = 0 sizes = [] strides = [] data =
// CHECK-NEXT: [1.5]
// CHECK:      rank = 1 offset = 0 sizes = [3] strides = [1] data =
// CHECK-NEXT: [1.5,  -3.25e-07,  1.23457e+08]
// CHECK:      rank = 3 offset = 0 sizes = [2, 2, 3] strides = [6, 3, 1] data =
// CHECK-NEXT: {{^}}[{{\[}}[0,    1,    2],
// CHECK-NEXT: {{^}}  [3,    4,    5]],
// CHECK-NEXT: {{^}} {{\[}}[6,    7,    8],
// CHECK-NEXT: {{^}}  [9,    10,    11]]]
// CHECK:      rank = 2 offset = 0 sizes = [2, 1] strides = [1, 1] data =
// CHECK-NEXT: {{^}}[{{\[}}0.1],
// CHECK-NEXT: {{^}} [0.1]]
// CHECK:      rank = 1 offset = 0 sizes = [2] strides = [1] data =
// CHECK-NEXT: [H,  i]
// CHECK:      rank = 1 offset = 0 sizes = [2] strides = [1] data =
// CHECK-NEXT: [-300,  30000]
// CHECK:      rank = 1 offset = 0 sizes = [2] strides = [1] data =
// CHECK-NEXT: [-5000000000,  42]
// CHECK:      rank = 1 offset = 0 sizes = [2] strides = [1] data =
// CHECK-NEXT: [3,  17]
// CHECK:      rank = 1 offset = 0 sizes = [2] strides = [1] data =
// CHECK-NEXT: [0.5,  -2]
// CHECK:      rank = 1 offset = 0 sizes = [2] strides = [1] data =
// CHECK-NEXT: [1.5,  -3]
// CHECK-NEXT: ( 1, 2.5, -0, 1e+20 )
// CHECK-NEXT: ( ( 1, -2 ), ( 3, 4 ) )
// CHECK-NEXT: 5
// CHECK-NEXT: 3e-05
// CHECK-NEXT: 1
// CHECK-NEXT: hello

module {
  func.func private @printMemrefF32(memref<*xf32>)
  func.func private @printMemrefI32(memref<*xi32>)
  func.func private @printMemrefF64(memref<*xf64>)
  func.func private @printMemrefI64(memref<*xi64>)
  // MLIR has these in their C-interface form only.
  func.func private @printMemrefI8(memref<*xi8>) attributes {llvm.emit_c_interface}
  func.func private @printMemrefI16(memref<*xi16>) attributes {llvm.emit_c_interface}
  func.func private @printMemrefInd(memref<*xindex>)
  func.func private @printMemrefF16(memref<*xf16>) attributes {llvm.emit_c_interface}
  func.func private @printMemrefBF16(memref<*xbf16>) attributes {llvm.emit_c_interface}
  func.func @main() {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %c3 = arith.constant 3 : index
    %c12 = arith.constant 12 : index
    // rank 0 and 1
    %f = arith.constant 1.5 : f32
    %g = arith.constant -3.25e-7 : f32
    %h = arith.constant 123456789.0 : f32
    %a0 = memref.alloc() : memref<f32>
    memref.store %f, %a0[] : memref<f32>
    %u0 = memref.cast %a0 : memref<f32> to memref<*xf32>
    call @printMemrefF32(%u0) : (memref<*xf32>) -> ()
    %a1 = memref.alloc() : memref<3xf32>
    memref.store %f, %a1[%c0] : memref<3xf32>
    memref.store %g, %a1[%c1] : memref<3xf32>
    memref.store %h, %a1[%c2] : memref<3xf32>
    %u1 = memref.cast %a1 : memref<3xf32> to memref<*xf32>
    call @printMemrefF32(%u1) : (memref<*xf32>) -> ()
    // rank 3: element i of the flat buffer holds i
    %flat = memref.alloc() : memref<12xi32>
    scf.for %i = %c0 to %c12 step %c1 {
      %v = arith.index_cast %i : index to i32
      memref.store %v, %flat[%i] : memref<12xi32>
    }
    %a3 = memref.expand_shape %flat [[0, 1, 2]] output_shape [2, 2, 3]
        : memref<12xi32> into memref<2x2x3xi32>
    %u3 = memref.cast %a3 : memref<2x2x3xi32> to memref<*xi32>
    call @printMemrefI32(%u3) : (memref<*xi32>) -> ()
    // rank 2, f64
    %d = memref.alloc() : memref<2x1xf64>
    %dv = arith.constant 0.1 : f64
    memref.store %dv, %d[%c0, %c0] : memref<2x1xf64>
    memref.store %dv, %d[%c1, %c0] : memref<2x1xf64>
    %ud = memref.cast %d : memref<2x1xf64> to memref<*xf64>
    call @printMemrefF64(%ud) : (memref<*xf64>) -> ()
    // i8, i16, i64, index, f16, bf16
    %b8 = memref.alloc() : memref<2xi8>
    %m7 = arith.constant 72 : i8
    %p100 = arith.constant 105 : i8
    memref.store %m7, %b8[%c0] : memref<2xi8>
    memref.store %p100, %b8[%c1] : memref<2xi8>
    %u8 = memref.cast %b8 : memref<2xi8> to memref<*xi8>
    call @printMemrefI8(%u8) : (memref<*xi8>) -> ()
    %b16 = memref.alloc() : memref<2xi16>
    %m300 = arith.constant -300 : i16
    %p30k = arith.constant 30000 : i16
    memref.store %m300, %b16[%c0] : memref<2xi16>
    memref.store %p30k, %b16[%c1] : memref<2xi16>
    %u16 = memref.cast %b16 : memref<2xi16> to memref<*xi16>
    call @printMemrefI16(%u16) : (memref<*xi16>) -> ()
    %b64 = memref.alloc() : memref<2xi64>
    %big = arith.constant -5000000000 : i64
    %p42 = arith.constant 42 : i64
    memref.store %big, %b64[%c0] : memref<2xi64>
    memref.store %p42, %b64[%c1] : memref<2xi64>
    %u64 = memref.cast %b64 : memref<2xi64> to memref<*xi64>
    call @printMemrefI64(%u64) : (memref<*xi64>) -> ()
    %bi = memref.alloc() : memref<2xindex>
    %c17 = arith.constant 17 : index
    memref.store %c3, %bi[%c0] : memref<2xindex>
    memref.store %c17, %bi[%c1] : memref<2xindex>
    %ui = memref.cast %bi : memref<2xindex> to memref<*xindex>
    call @printMemrefInd(%ui) : (memref<*xindex>) -> ()
    %bh = memref.alloc() : memref<2xf16>
    %half = arith.constant 0.5 : f16
    %m2 = arith.constant -2.0 : f16
    memref.store %half, %bh[%c0] : memref<2xf16>
    memref.store %m2, %bh[%c1] : memref<2xf16>
    %uh = memref.cast %bh : memref<2xf16> to memref<*xf16>
    call @printMemrefF16(%uh) : (memref<*xf16>) -> ()
    %bb = memref.alloc() : memref<2xbf16>
    %b15 = arith.constant 1.5 : bf16
    %bm3 = arith.constant -3.0 : bf16
    memref.store %b15, %bb[%c0] : memref<2xbf16>
    memref.store %bm3, %bb[%c1] : memref<2xbf16>
    %ub = memref.cast %bb : memref<2xbf16> to memref<*xbf16>
    call @printMemrefBF16(%ub) : (memref<*xbf16>) -> ()
    // vector.print
    %v = arith.constant dense<[1.0, 2.5, -0.0, 1.0e20]> : vector<4xf32>
    vector.print %v : vector<4xf32>
    %w = arith.constant dense<[[1, -2], [3, 4]]> : vector<2x2xi64>
    vector.print %w : vector<2x2xi64>
    %x = arith.constant 5 : i8
    vector.print %x : i8
    %y = arith.constant 3.0e-5 : f64
    vector.print %y : f64
    %t = arith.constant true
    vector.print %t : i1
    vector.print str "hello\n"
    memref.dealloc %a0 : memref<f32>
    memref.dealloc %a1 : memref<3xf32>
    memref.dealloc %flat : memref<12xi32>
    memref.dealloc %d : memref<2x1xf64>
    memref.dealloc %b8 : memref<2xi8>
    memref.dealloc %b16 : memref<2xi16>
    memref.dealloc %b64 : memref<2xi64>
    memref.dealloc %bi : memref<2xindex>
    memref.dealloc %bh : memref<2xf16>
    memref.dealloc %bb : memref<2xbf16>
    return
  }
}
