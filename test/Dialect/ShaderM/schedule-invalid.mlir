// RUN: hesper-opt %s -split-input-file -allow-unregistered-dialect -verify-diagnostics

// One case per diagnostic of the host-schedule ops: ScheduleOp::verifyRegions,
// LaunchOp::verify, LaunchOp::verifySymbolUses, and the HasParent and type
// constraints of shaderm.alloc, shaderm.launch and shaderm.output.

//===----------------------------------------------------------------------===//
// shaderm.schedule
//===----------------------------------------------------------------------===//

// ScheduleOp::verifyRegions' block-argument check is preceded by the same
// check of FunctionOpInterface, whose diagnostic is the one seen.
// expected-error @+1 {{'shaderm.schedule' op type of entry block argument #0('!shaderm.buffer<8xf32>') must match the type of the corresponding argument in function signature('!shaderm.buffer<4xf32>')}}
"shaderm.schedule"() <{function_type = (!shaderm.buffer<4xf32>) -> (),
                       sym_name = "wrong_block_arg"}> ({
^bb0(%a: !shaderm.buffer<8xf32>):
  "shaderm.output"() : () -> ()
}) : () -> ()

// -----

// expected-error @+1 {{'shaderm.schedule' op expects buffer arguments, got 'i32'}}
shaderm.schedule @scalar_arg(%n: i32) {
  shaderm.output
}

// -----

// expected-error @+1 {{'shaderm.schedule' op expects buffer arguments, got 'tensor<4xf32>'}}
shaderm.schedule @tensor_arg(%a: !shaderm.buffer<4xf32>, %t: tensor<4xf32>) {
  shaderm.output
}

// -----

// A body ending in another terminator (only an unregistered op can be one
// here: every registered terminator names its own parent).
// expected-error @+1 {{'shaderm.schedule' op expects its body to end with 'shaderm.output'}}
shaderm.schedule @other_terminator() {
  "test.terminator"() : () -> ()
}

// -----

shaderm.schedule @no_terminator(%a: !shaderm.buffer<4xf32>) {
  // expected-error @+1 {{block with no terminator}}
  %b = shaderm.alloc : !shaderm.buffer<4xf32>
}

// -----

shaderm.schedule @missing_result(%a: !shaderm.buffer<4xf32>)
    -> !shaderm.buffer<4xf32> {
  // expected-error @+1 {{'shaderm.output' op expects the schedule's result types}}
  shaderm.output
}

// -----

shaderm.schedule @wrong_result_length(%a: !shaderm.buffer<4xf32>)
    -> !shaderm.buffer<4xf32> {
  %b = shaderm.alloc : !shaderm.buffer<8xf32>
  // expected-error @+1 {{'shaderm.output' op expects the schedule's result types}}
  shaderm.output %b : !shaderm.buffer<8xf32>
}

// -----

shaderm.schedule @wrong_result_access(%a: !shaderm.buffer<4xf32>)
    -> !shaderm.buffer<4xf32, read_only> {
  // expected-error @+1 {{'shaderm.output' op expects the schedule's result types}}
  shaderm.output %a : !shaderm.buffer<4xf32>
}

// -----

shaderm.schedule @extra_result(%a: !shaderm.buffer<4xf32>) {
  // expected-error @+1 {{'shaderm.output' op expects the schedule's result types}}
  shaderm.output %a : !shaderm.buffer<4xf32>
}

// -----

// expected-error @+1 {{expected non-empty function body}}
shaderm.schedule @empty() {
}

// -----

// expected-error @+1 {{'shaderm.schedule' op expects region #0 to have 0 or 1 blocks}}
"shaderm.schedule"() <{function_type = () -> (), sym_name = "two_blocks"}> ({
^bb0:
  "shaderm.output"() : () -> ()
^bb1:
  "shaderm.output"() : () -> ()
}) : () -> ()

//===----------------------------------------------------------------------===//
// shaderm.launch: LaunchOp::verify
//===----------------------------------------------------------------------===//

// -----

shaderm.schedule @grid_2d(%a: !shaderm.buffer<4xf32>) {
  // expected-error @+1 {{'shaderm.launch' op expects a grid of 3 dimensions, got 2}}
  shaderm.launch @k grid [1, 1] (%a) : !shaderm.buffer<4xf32>
  shaderm.output
}

// -----

shaderm.schedule @grid_4d(%a: !shaderm.buffer<4xf32>) {
  // expected-error @+1 {{'shaderm.launch' op expects a grid of 3 dimensions, got 4}}
  shaderm.launch @k grid [1, 1, 1, 1] (%a) : !shaderm.buffer<4xf32>
  shaderm.output
}

// -----

shaderm.schedule @grid_zero(%a: !shaderm.buffer<4xf32>) {
  // expected-error @+1 {{'shaderm.launch' op expects a positive grid, got 0}}
  shaderm.launch @k grid [1, 0, 1] (%a) : !shaderm.buffer<4xf32>
  shaderm.output
}

// -----

shaderm.schedule @grid_negative(%a: !shaderm.buffer<4xf32>) {
  // expected-error @+1 {{'shaderm.launch' op expects a positive grid, got -1}}
  shaderm.launch @k grid [-1, 1, 1] (%a) : !shaderm.buffer<4xf32>
  shaderm.output
}

// -----

shaderm.schedule @traffic_short(%a: !shaderm.buffer<4xf32>) {
  // expected-error @+1 {{'shaderm.launch' op expects a traffic of 5 numbers (read, written, per_position, window, positions), got 2}}
  shaderm.launch @k grid [1, 1, 1] (%a) {traffic = array<i64: 16, 16>}
      : !shaderm.buffer<4xf32>
  shaderm.output
}

// -----

shaderm.schedule @traffic_negative(%a: !shaderm.buffer<4xf32>) {
  // expected-error @+1 {{'shaderm.launch' op expects a traffic of non-negative byte and position counts, got -16}}
  shaderm.launch @k grid [1, 1, 1] (%a) {traffic = array<i64: 16, -16, 0, 0, 0>}
      : !shaderm.buffer<4xf32>
  shaderm.output
}

// -----

shaderm.schedule @scalar_binding(%n: !shaderm.buffer<4xf32>) {
  %c = "test.scalar"() : () -> i32
  // expected-error @+1 {{'shaderm.launch' op operand #0 must be variadic of a storage buffer bound to a kernel, but got 'i32'}}
  "shaderm.launch"(%c) <{grid = array<i64: 1, 1, 1>, kernel = @k}> : (i32) -> ()
  shaderm.output
}

//===----------------------------------------------------------------------===//
// shaderm.launch: LaunchOp::verifySymbolUses
//===----------------------------------------------------------------------===//

// -----

shaderm.kernel @one(%x: !shaderm.buffer<4xf32>) workgroup_size(4, 1, 1) {
  shaderm.return
}
shaderm.schedule @too_many(%a: !shaderm.buffer<4xf32>) {
  // expected-error @+1 {{'shaderm.launch' op binds 2 buffers to 'one', which takes 1}}
  shaderm.launch @one grid [1, 1, 1] (%a, %a)
      : !shaderm.buffer<4xf32>, !shaderm.buffer<4xf32>
  shaderm.output
}

// -----

// The kernel is found wherever it is in the module.
shaderm.schedule @too_few(%a: !shaderm.buffer<4xf32>) {
  // expected-error @+1 {{'shaderm.launch' op binds 1 buffers to 'two', which takes 2}}
  shaderm.launch @two grid [1, 1, 1] (%a) : !shaderm.buffer<4xf32>
  shaderm.output
}
shaderm.kernel @two(%x: !shaderm.buffer<4xf32, read_only>,
                    %y: !shaderm.buffer<4xf32>) workgroup_size(4, 1, 1) {
  shaderm.return
}

// -----

shaderm.kernel @one(%x: !shaderm.buffer<4xf32>) workgroup_size(4, 1, 1) {
  shaderm.return
}
shaderm.schedule @no_bindings() {
  // expected-error @+1 {{'shaderm.launch' op binds 0 buffers to 'one', which takes 1}}
  "shaderm.launch"() <{grid = array<i64: 1, 1, 1>, kernel = @one}> : () -> ()
  shaderm.output
}

// -----

shaderm.kernel @k(%x: !shaderm.buffer<4xf32>) workgroup_size(4, 1, 1) {
  shaderm.return
}
shaderm.schedule @wrong_length(%a: !shaderm.buffer<8xf32>) {
  // expected-error @+1 {{'shaderm.launch' op binding #0 has type '!shaderm.buffer<8xf32>', but 'k' expects '!shaderm.buffer<4xf32>'}}
  shaderm.launch @k grid [1, 1, 1] (%a) : !shaderm.buffer<8xf32>
  shaderm.output
}

// -----

shaderm.kernel @k(%x: !shaderm.buffer<4xf32, read_only>, %y: !shaderm.buffer<4xf32>)
    workgroup_size(4, 1, 1) {
  shaderm.return
}
shaderm.schedule @wrong_element(%a: !shaderm.buffer<4xf32>, %b: !shaderm.buffer<4xf16>) {
  // expected-error @+1 {{'shaderm.launch' op binding #1 has type '!shaderm.buffer<4xf16>', but 'k' expects '!shaderm.buffer<4xf32>'}}
  shaderm.launch @k grid [1, 1, 1] (%a, %b)
      : !shaderm.buffer<4xf32>, !shaderm.buffer<4xf16>
  shaderm.output
}

// -----

// A static length does not bind to a dynamic-length binding.
shaderm.kernel @k(%x: !shaderm.buffer<?xf32>) workgroup_size(4, 1, 1) {
  shaderm.return
}
shaderm.schedule @static_to_dynamic(%a: !shaderm.buffer<4xf32>) {
  // expected-error @+1 {{'shaderm.launch' op binding #0 has type '!shaderm.buffer<4xf32>', but 'k' expects '!shaderm.buffer<?xf32>'}}
  shaderm.launch @k grid [1, 1, 1] (%a) : !shaderm.buffer<4xf32>
  shaderm.output
}

// -----

// A scalar binding (a push constant) cannot be bound from a schedule.
shaderm.kernel @k(%x: !shaderm.buffer<4xf32, read_only>, %n: i32)
    workgroup_size(4, 1, 1) {
  shaderm.return
}
shaderm.schedule @buffer_to_scalar(%a: !shaderm.buffer<4xf32>, %b: !shaderm.buffer<1xi32>) {
  // expected-error @+1 {{'shaderm.launch' op binding #1 has type '!shaderm.buffer<1xi32>', but 'k' expects 'i32'}}
  shaderm.launch @k grid [1, 1, 1] (%a, %b)
      : !shaderm.buffer<4xf32>, !shaderm.buffer<1xi32>
  shaderm.output
}

//===----------------------------------------------------------------------===//
// Ops outside a schedule, and their types
//===----------------------------------------------------------------------===//

// -----

func.func @alloc_outside() {
  // expected-error @+1 {{'shaderm.alloc' op expects parent op 'shaderm.schedule'}}
  %b = shaderm.alloc : !shaderm.buffer<8xf32>
  return
}

// -----

shaderm.kernel @alloc_in_kernel() workgroup_size(1, 1, 1) {
  // expected-error @+1 {{'shaderm.alloc' op expects parent op 'shaderm.schedule'}}
  %b = shaderm.alloc : !shaderm.buffer<8xf32>
  shaderm.return
}

// -----

shaderm.schedule @alloc_shared() {
  // expected-error @+1 {{'shaderm.alloc' op result #0 must be a storage buffer bound to a kernel, but got '!shaderm.shared<8xf32>'}}
  %b = "shaderm.alloc"() : () -> !shaderm.shared<8xf32>
  shaderm.output
}

// -----

func.func @launch_outside(%a: !shaderm.buffer<4xf32>) {
  // expected-error @+1 {{'shaderm.launch' op expects parent op 'shaderm.schedule'}}
  shaderm.launch @k grid [1, 1, 1] (%a) : !shaderm.buffer<4xf32>
  return
}

// -----

shaderm.kernel @launch_in_kernel(%a: !shaderm.buffer<4xf32>) workgroup_size(1, 1, 1) {
  // expected-error @+1 {{'shaderm.launch' op expects parent op 'shaderm.schedule'}}
  shaderm.launch @launch_in_kernel grid [1, 1, 1] (%a) : !shaderm.buffer<4xf32>
  shaderm.return
}

// -----

func.func @output_outside() {
  // expected-error @+1 {{'shaderm.output' op expects parent op 'shaderm.schedule'}}
  shaderm.output
}


// -----

shaderm.schedule @output_scalar(%a: !shaderm.buffer<4xf32>) {
  %c = "test.scalar"() : () -> i32
  // expected-error @+1 {{'shaderm.output' op operand #0 must be variadic of a storage buffer bound to a kernel, but got 'i32'}}
  "shaderm.output"(%c) : (i32) -> ()
}
