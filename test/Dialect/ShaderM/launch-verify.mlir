// RUN: hesper-opt %s -split-input-file -verify-diagnostics

// Launches LaunchOp's verifier must reject beyond the cases of
// schedule-invalid.mlir: a read-only buffer at a binding the kernel writes,
// and a symbol that names a schedule instead of a kernel.

// The op description allows a read-write buffer at a read-only binding,
// not the other way round: a kernel that writes its binding must not get a
// read-only buffer.
shaderm.kernel @writes(%x: !shaderm.buffer<4xf32>) workgroup_size(4, 1, 1) {
  shaderm.return
}
shaderm.schedule @read_only_to_writable(%a: !shaderm.buffer<4xf32, read_only>) {
  // expected-error @+1 {{'shaderm.launch' op binding #0 has type '!shaderm.buffer<4xf32, read_only>', but 'writes' expects '!shaderm.buffer<4xf32>'}}
  shaderm.launch @writes grid [1, 1, 1] (%a) : !shaderm.buffer<4xf32, read_only>
  shaderm.output
}

// -----

// The symbol names a schedule, not a kernel.
shaderm.schedule @launches_a_schedule(%a: !shaderm.buffer<4xf32>) {
  // expected-error-re @+1 {{'shaderm.launch' op {{.*}}launches_a_schedule}}
  shaderm.launch @launches_a_schedule grid [1, 1, 1] (%a) : !shaderm.buffer<4xf32>
  shaderm.output
}
