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
