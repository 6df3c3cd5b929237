// RUN: hesper-opt %s --split-input-file --shaderm-dedup-kernels | FileCheck %s

// Two kernels equal but for their names: the second is erased and its
// launch points at the first.
// CHECK-LABEL: shaderm.kernel @a(
// CHECK-NOT: shaderm.kernel @b(
// CHECK: shaderm.schedule @s
// CHECK: shaderm.launch @a grid [1, 1, 1]
// CHECK: shaderm.launch @a grid [2, 1, 1]
shaderm.kernel @a(%x: !shaderm.buffer<4xf32>) workgroup_size(4, 1, 1) {
  %i = shaderm.global_id x
  %c = arith.constant 1.0 : f32
  shaderm.store %c, %x[%i] : f32, !shaderm.buffer<4xf32>
  shaderm.return
}
shaderm.kernel @b(%x: !shaderm.buffer<4xf32>) workgroup_size(4, 1, 1) {
  %i = shaderm.global_id x
  %c = arith.constant 1.0 : f32
  shaderm.store %c, %x[%i] : f32, !shaderm.buffer<4xf32>
  shaderm.return
}
shaderm.schedule @s(%x: !shaderm.buffer<4xf32>) {
  shaderm.launch @a grid [1, 1, 1](%x) : !shaderm.buffer<4xf32>
  shaderm.launch @b grid [2, 1, 1](%x) : !shaderm.buffer<4xf32>
  shaderm.output
}

// -----

// A different constant, workgroup size or buffer length keeps kernels
// apart.
// CHECK-LABEL: shaderm.kernel @c(
// CHECK: shaderm.kernel @d(
// CHECK: shaderm.kernel @e(
// CHECK: shaderm.kernel @f(
// CHECK: shaderm.launch @c
// CHECK: shaderm.launch @d
// CHECK: shaderm.launch @e
// CHECK: shaderm.launch @f
shaderm.kernel @c(%x: !shaderm.buffer<4xf32>) workgroup_size(4, 1, 1) {
  %i = shaderm.global_id x
  %c = arith.constant 1.0 : f32
  shaderm.store %c, %x[%i] : f32, !shaderm.buffer<4xf32>
  shaderm.return
}
shaderm.kernel @d(%x: !shaderm.buffer<4xf32>) workgroup_size(4, 1, 1) {
  %i = shaderm.global_id x
  %c = arith.constant 2.0 : f32
  shaderm.store %c, %x[%i] : f32, !shaderm.buffer<4xf32>
  shaderm.return
}
shaderm.kernel @e(%x: !shaderm.buffer<4xf32>) workgroup_size(2, 1, 1) {
  %i = shaderm.global_id x
  %c = arith.constant 1.0 : f32
  shaderm.store %c, %x[%i] : f32, !shaderm.buffer<4xf32>
  shaderm.return
}
shaderm.kernel @f(%x: !shaderm.buffer<8xf32>) workgroup_size(4, 1, 1) {
  %i = shaderm.global_id x
  %c = arith.constant 1.0 : f32
  shaderm.store %c, %x[%i] : f32, !shaderm.buffer<8xf32>
  shaderm.return
}
shaderm.schedule @s(%x: !shaderm.buffer<4xf32>, %y: !shaderm.buffer<8xf32>) {
  shaderm.launch @c grid [1, 1, 1](%x) : !shaderm.buffer<4xf32>
  shaderm.launch @d grid [1, 1, 1](%x) : !shaderm.buffer<4xf32>
  shaderm.launch @e grid [1, 1, 1](%x) : !shaderm.buffer<4xf32>
  shaderm.launch @f grid [1, 1, 1](%y) : !shaderm.buffer<8xf32>
  shaderm.output
}

// -----

// The same ops in the same order over different values (a - b against
// b - a) stay apart; a third kernel equal to the second but for its value
// names and locations goes, and so does a fourth equal to the first, with
// both launches of each redirected.
// CHECK-LABEL: shaderm.kernel @g(
// CHECK: shaderm.kernel @h(
// CHECK-NOT: shaderm.kernel
// CHECK: shaderm.launch @g grid [1, 1, 1]
// CHECK: shaderm.launch @h grid [1, 1, 1]
// CHECK: shaderm.launch @h grid [2, 1, 1]
// CHECK: shaderm.launch @g grid [2, 1, 1]
shaderm.kernel @g(%a: !shaderm.buffer<4xf32>, %b: !shaderm.buffer<4xf32>) workgroup_size(4, 1, 1) {
  %i = shaderm.global_id x
  %u = shaderm.load %a[%i] : !shaderm.buffer<4xf32> -> f32
  %v = shaderm.load %b[%i] : !shaderm.buffer<4xf32> -> f32
  %d = arith.subf %u, %v : f32
  shaderm.store %d, %a[%i] : f32, !shaderm.buffer<4xf32>
  shaderm.return
}
shaderm.kernel @h(%a: !shaderm.buffer<4xf32>, %b: !shaderm.buffer<4xf32>) workgroup_size(4, 1, 1) {
  %i = shaderm.global_id x
  %u = shaderm.load %a[%i] : !shaderm.buffer<4xf32> -> f32
  %v = shaderm.load %b[%i] : !shaderm.buffer<4xf32> -> f32
  %d = arith.subf %v, %u : f32
  shaderm.store %d, %a[%i] : f32, !shaderm.buffer<4xf32>
  shaderm.return
}
shaderm.kernel @h2(%p: !shaderm.buffer<4xf32>, %q: !shaderm.buffer<4xf32>) workgroup_size(4, 1, 1) {
  %lane = shaderm.global_id x loc("elsewhere")
  %first = shaderm.load %p[%lane] : !shaderm.buffer<4xf32> -> f32
  %second = shaderm.load %q[%lane] : !shaderm.buffer<4xf32> -> f32
  %diff = arith.subf %second, %first : f32
  shaderm.store %diff, %p[%lane] : f32, !shaderm.buffer<4xf32>
  shaderm.return
}
shaderm.kernel @g2(%a: !shaderm.buffer<4xf32>, %b: !shaderm.buffer<4xf32>) workgroup_size(4, 1, 1) {
  %i = shaderm.global_id x
  %u = shaderm.load %a[%i] : !shaderm.buffer<4xf32> -> f32
  %v = shaderm.load %b[%i] : !shaderm.buffer<4xf32> -> f32
  %d = arith.subf %u, %v : f32
  shaderm.store %d, %a[%i] : f32, !shaderm.buffer<4xf32>
  shaderm.return
}
shaderm.schedule @s(%x: !shaderm.buffer<4xf32>, %y: !shaderm.buffer<4xf32>) {
  shaderm.launch @g grid [1, 1, 1](%x, %y) : !shaderm.buffer<4xf32>, !shaderm.buffer<4xf32>
  shaderm.launch @h grid [1, 1, 1](%x, %y) : !shaderm.buffer<4xf32>, !shaderm.buffer<4xf32>
  shaderm.launch @h2 grid [2, 1, 1](%x, %y) : !shaderm.buffer<4xf32>, !shaderm.buffer<4xf32>
  shaderm.launch @g2 grid [2, 1, 1](%x, %y) : !shaderm.buffer<4xf32>, !shaderm.buffer<4xf32>
  shaderm.output
}
