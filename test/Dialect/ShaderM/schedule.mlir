// RUN: hesper-opt %s | hesper-opt | FileCheck %s
// RUN: hesper-opt %s --mlir-print-op-generic | hesper-opt | FileCheck %s

// Round trip of the host-schedule ops (shaderm.schedule, shaderm.alloc,
// shaderm.launch, shaderm.output), in custom and generic form, with
// argument, result and discardable attributes.

shaderm.kernel @scale(%x: !shaderm.buffer<1024xf32, read_only>,
                      %y: !shaderm.buffer<1024xf32>)
    workgroup_size(256, 1, 1) {
  shaderm.return
}

shaderm.kernel @reduce_rows(%x: !shaderm.buffer<1024xf32, read_only>,
                            %sums: !shaderm.buffer<4xf32>)
    workgroup_size(256, 1, 1) {
  shaderm.return
}

shaderm.kernel @fill(%b: !shaderm.buffer<?xi32>) workgroup_size(64, 1, 1) {
  shaderm.return
}

shaderm.kernel @mixed(%a: !shaderm.buffer<8xf16, read_only>,
                      %b: !shaderm.buffer<16xi8>,
                      %c: !shaderm.buffer<32xi64, read_only>,
                      %d: !shaderm.buffer<2xi32>) workgroup_size(1, 1, 1) {
  shaderm.return
}

// The example of the op description: an argument, an intermediate buffer,
// one launch, one result.

// CHECK-LABEL: shaderm.schedule @step(
// CHECK-SAME:    %[[X:.*]]: !shaderm.buffer<1024xf32>) -> !shaderm.buffer<1024xf32> {
// CHECK-NEXT:    %[[Y:.*]] = shaderm.alloc : !shaderm.buffer<1024xf32>
// CHECK-NEXT:    shaderm.launch @scale grid [4, 1, 1](%[[X]], %[[Y]]) : !shaderm.buffer<1024xf32>, !shaderm.buffer<1024xf32>
// CHECK-NEXT:    shaderm.output %[[Y]] : !shaderm.buffer<1024xf32>
// CHECK-NEXT:  }
shaderm.schedule @step(%x: !shaderm.buffer<1024xf32>)
    -> !shaderm.buffer<1024xf32> {
  %y = shaderm.alloc : !shaderm.buffer<1024xf32>
  shaderm.launch @scale grid [4, 1, 1] (%x, %y)
      : !shaderm.buffer<1024xf32>, !shaderm.buffer<1024xf32>
  shaderm.output %y : !shaderm.buffer<1024xf32>
}

// Argument and result attributes (the names convert-circuit-to-shaderm
// carries over from the graph) and a discardable attribute on the op.

// CHECK-LABEL: shaderm.schedule @named(
// CHECK-SAME:    %[[X:.*]]: !shaderm.buffer<1024xf32> {circuit.name = "x"},
// CHECK-SAME:    %[[C:.*]]: !shaderm.buffer<?xi32> {circuit.name = "cache", hesper.in_place})
// CHECK-SAME:    -> (!shaderm.buffer<1024xf32> {circuit.name = "y"}, !shaderm.buffer<4xf32>)
// CHECK-SAME:    attributes {hesper.tag = 7 : i32} {
// CHECK-NEXT:    %[[Y:.*]] = shaderm.alloc : !shaderm.buffer<1024xf32>
// CHECK-NEXT:    %[[S:.*]] = shaderm.alloc : !shaderm.buffer<4xf32>
// CHECK-NEXT:    shaderm.launch @scale grid [4, 1, 1](%[[X]], %[[Y]]) : !shaderm.buffer<1024xf32>, !shaderm.buffer<1024xf32>
// CHECK-NEXT:    shaderm.launch @reduce_rows grid [4, 1, 1](%[[Y]], %[[S]]) {hesper.note = "rows"} : !shaderm.buffer<1024xf32>, !shaderm.buffer<4xf32>
// CHECK-NEXT:    shaderm.launch @fill grid [2, 3, 4](%[[C]]) : !shaderm.buffer<?xi32>
// CHECK-NEXT:    shaderm.output %[[Y]], %[[S]] : !shaderm.buffer<1024xf32>, !shaderm.buffer<4xf32>
// CHECK-NEXT:  }
shaderm.schedule @named(%x: !shaderm.buffer<1024xf32> {circuit.name = "x"},
                        %cache: !shaderm.buffer<?xi32>
                            {circuit.name = "cache", hesper.in_place})
    -> (!shaderm.buffer<1024xf32> {circuit.name = "y"}, !shaderm.buffer<4xf32>)
    attributes {hesper.tag = 7 : i32} {
  %y = shaderm.alloc : !shaderm.buffer<1024xf32>
  %s = shaderm.alloc : !shaderm.buffer<4xf32>
  shaderm.launch @scale grid [4, 1, 1] (%x, %y)
      : !shaderm.buffer<1024xf32>, !shaderm.buffer<1024xf32>
  shaderm.launch @reduce_rows grid [4, 1, 1] (%y, %s) {hesper.note = "rows"}
      : !shaderm.buffer<1024xf32>, !shaderm.buffer<4xf32>
  shaderm.launch @fill grid [2, 3, 4] (%cache) : !shaderm.buffer<?xi32>
  shaderm.output %y, %s : !shaderm.buffer<1024xf32>, !shaderm.buffer<4xf32>
}

// A schedule that writes its argument in place and returns nothing: the
// output has no operands.

// CHECK-LABEL: shaderm.schedule @in_place(
// CHECK-SAME:    %[[C:.*]]: !shaderm.buffer<?xi32>) {
// CHECK-NEXT:    shaderm.launch @fill grid [1, 1, 1](%[[C]]) : !shaderm.buffer<?xi32>
// CHECK-NEXT:    shaderm.output{{$}}
// CHECK-NEXT:  }
shaderm.schedule @in_place(%cache: !shaderm.buffer<?xi32>) {
  shaderm.launch @fill grid [1, 1, 1] (%cache) : !shaderm.buffer<?xi32>
  shaderm.output
}

// An argument handed straight back, allocations of several element types,
// an attribute on an alloc, and a grid of 65535 workgroups (the most
// convert-circuit-to-shaderm launches in one dimension).

// CHECK-LABEL: shaderm.schedule @buffers(
// CHECK-SAME:    %[[A:.*]]: !shaderm.buffer<8xf16>) -> (!shaderm.buffer<8xf16>, !shaderm.buffer<16xi8>, !shaderm.buffer<32xi64>, !shaderm.buffer<2xi32>) {
// CHECK-NEXT:    %[[B:.*]] = shaderm.alloc : !shaderm.buffer<16xi8>
// CHECK-NEXT:    %[[C:.*]] = shaderm.alloc : !shaderm.buffer<32xi64>
// CHECK-NEXT:    %[[D:.*]] = shaderm.alloc {hesper.pool = 1 : i32} : !shaderm.buffer<2xi32>
// CHECK-NEXT:    shaderm.launch @mixed grid [65535, 1, 1](%[[A]], %[[B]], %[[C]], %[[D]]) : !shaderm.buffer<8xf16>, !shaderm.buffer<16xi8>, !shaderm.buffer<32xi64>, !shaderm.buffer<2xi32>
// CHECK-NEXT:    shaderm.output %[[A]], %[[B]], %[[C]], %[[D]] : !shaderm.buffer<8xf16>, !shaderm.buffer<16xi8>, !shaderm.buffer<32xi64>, !shaderm.buffer<2xi32>
shaderm.schedule @buffers(%a: !shaderm.buffer<8xf16>)
    -> (!shaderm.buffer<8xf16>, !shaderm.buffer<16xi8>,
        !shaderm.buffer<32xi64>, !shaderm.buffer<2xi32>) {
  %b = shaderm.alloc : !shaderm.buffer<16xi8>
  %c = shaderm.alloc : !shaderm.buffer<32xi64>
  %d = shaderm.alloc {hesper.pool = 1 : i32} : !shaderm.buffer<2xi32>
  shaderm.launch @mixed grid [65535, 1, 1] (%a, %b, %c, %d)
      : !shaderm.buffer<8xf16>, !shaderm.buffer<16xi8>,
        !shaderm.buffer<32xi64>, !shaderm.buffer<2xi32>
  shaderm.output %a, %b, %c, %d
      : !shaderm.buffer<8xf16>, !shaderm.buffer<16xi8>,
        !shaderm.buffer<32xi64>, !shaderm.buffer<2xi32>
}

// A read-write buffer binds to a read-only binding of the same length and
// element type; the same buffer may be bound twice.

// CHECK-LABEL: shaderm.schedule @rebind(
// CHECK-SAME:    %[[X:.*]]: !shaderm.buffer<1024xf32>)
// CHECK-NEXT:    shaderm.launch @scale grid [4, 1, 1](%[[X]], %[[X]]) : !shaderm.buffer<1024xf32>, !shaderm.buffer<1024xf32>
shaderm.schedule @rebind(%x: !shaderm.buffer<1024xf32>) {
  shaderm.launch @scale grid [4, 1, 1] (%x, %x)
      : !shaderm.buffer<1024xf32>, !shaderm.buffer<1024xf32>
  shaderm.output
}

// A schedule without arguments, with several launches in order.

// CHECK-LABEL: shaderm.schedule @ordered() -> !shaderm.buffer<4xf32> {
// CHECK-NEXT:    %[[X:.*]] = shaderm.alloc : !shaderm.buffer<1024xf32>
// CHECK-NEXT:    %[[S:.*]] = shaderm.alloc : !shaderm.buffer<4xf32>
// CHECK-NEXT:    shaderm.launch @scale grid [4, 1, 1](%[[X]], %[[X]])
// CHECK-NEXT:    shaderm.launch @reduce_rows grid [4, 1, 1](%[[X]], %[[S]])
// CHECK-NEXT:    shaderm.launch @scale grid [4, 1, 1](%[[X]], %[[X]])
// CHECK-NEXT:    shaderm.output %[[S]] : !shaderm.buffer<4xf32>
shaderm.schedule @ordered() -> !shaderm.buffer<4xf32> {
  %x = shaderm.alloc : !shaderm.buffer<1024xf32>
  %s = shaderm.alloc : !shaderm.buffer<4xf32>
  shaderm.launch @scale grid [4, 1, 1] (%x, %x)
      : !shaderm.buffer<1024xf32>, !shaderm.buffer<1024xf32>
  shaderm.launch @reduce_rows grid [4, 1, 1] (%x, %s)
      : !shaderm.buffer<1024xf32>, !shaderm.buffer<4xf32>
  shaderm.launch @scale grid [4, 1, 1] (%x, %x)
      : !shaderm.buffer<1024xf32>, !shaderm.buffer<1024xf32>
  shaderm.output %s : !shaderm.buffer<4xf32>
}
