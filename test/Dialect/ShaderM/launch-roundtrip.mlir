// RUN: hesper-opt %s | hesper-opt | FileCheck %s

// A launch of a kernel without bindings prints in a form the parser reads
// back (the custom form must not end in a dangling ':').

shaderm.kernel @no_bindings() workgroup_size(1, 1, 1) {
  shaderm.return
}

// CHECK-LABEL: shaderm.schedule @launch_without_bindings() {
// CHECK-NEXT:    shaderm.launch @no_bindings grid [1, 1, 1]
// CHECK-NOT:     :
// CHECK-NEXT:    shaderm.output
shaderm.schedule @launch_without_bindings() {
  "shaderm.launch"() <{grid = array<i64: 1, 1, 1>, kernel = @no_bindings}>
      : () -> ()
  shaderm.output
}

// A launch's traffic (the bytes it must move) survives a round trip.

shaderm.kernel @copy(%x: !shaderm.buffer<4xf32, read_only>,
                     %y: !shaderm.buffer<4xf32>) workgroup_size(4, 1, 1) {
  shaderm.return
}

// CHECK-LABEL: shaderm.schedule @launch_with_traffic(
// CHECK-NEXT:    shaderm.launch @copy grid [1, 1, 1](%{{.*}}, %{{.*}}) {traffic = array<i64: 16, 16, 0, 0, 0>}
shaderm.schedule @launch_with_traffic(%x: !shaderm.buffer<4xf32>,
                                      %y: !shaderm.buffer<4xf32>) {
  shaderm.launch @copy grid [1, 1, 1] (%x, %y)
      {traffic = array<i64: 16, 16, 0, 0, 0>}
      : !shaderm.buffer<4xf32>, !shaderm.buffer<4xf32>
  shaderm.output
}
