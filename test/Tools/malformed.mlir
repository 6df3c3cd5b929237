// Malformed input gives a diagnostic and a non-zero exit, never a crash
// (`not` fails on a crash), and an empty input is an empty module.
//
// RUN: rm -rf %t && split-file %s %t
//
// RUN: not hesper-opt %t/garbage.mlir 2>&1 | FileCheck %s --check-prefix=GARBAGE
// GARBAGE: garbage.mlir:1:1: error: custom op 'this' is unknown
//
// RUN: not hesper-opt %t/braces.mlir 2>&1 | FileCheck %s --check-prefix=BRACES
// BRACES: braces.mlir:1:1: error: expected operation name in quotes
//
// RUN: not hesper-opt %t/bad-ssa.mlir 2>&1 | FileCheck %s --check-prefix=BAD-SSA
// BAD-SSA: bad-ssa.mlir:1:1: error: invalid SSA name
//
// RUN: not hesper-opt %t/unknown-circuit-op.mlir 2>&1 | FileCheck %s --check-prefix=UNKNOWN-CIRCUIT-OP
// UNKNOWN-CIRCUIT-OP: unknown-circuit-op.mlir:2:3: error: custom op 'circuit.bogus_op' is unknown
//
// RUN: not hesper-opt %t/unknown-shaderm-op.mlir 2>&1 | FileCheck %s --check-prefix=UNKNOWN-SHADERM-OP
// UNKNOWN-SHADERM-OP: unknown-shaderm-op.mlir:2:3: error: custom op 'shaderm.frobnicate' is unknown
//
// RUN: not hesper-opt %t/unknown-generic-op.mlir 2>&1 | FileCheck %s --check-prefix=UNKNOWN-GENERIC-OP
// UNKNOWN-GENERIC-OP: unknown-generic-op.mlir:2:3: error: unregistered operation 'circuit.nope' found in dialect ('circuit') that does not allow unknown operations
//
// RUN: not hesper-opt %t/unknown-dialect-op.mlir 2>&1 | FileCheck %s --check-prefix=UNKNOWN-DIALECT-OP
// UNKNOWN-DIALECT-OP: unknown-dialect-op.mlir:1:1: error: Dialect `foo' not found for custom op 'foo.bar'
//
// RUN: not hesper-opt %t/wrong-type.mlir 2>&1 | FileCheck %s --check-prefix=WRONG-TYPE
// WRONG-TYPE: wrong-type.mlir:2:24: error: use of value '%x' expects different type than prior uses: 'tensor<4xf32>' vs 'tensor<8xf32>'
// WRONG-TYPE: wrong-type.mlir:1:18: note: prior use here
//
// RUN: not hesper-opt %t/wrong-buffer-type.mlir 2>&1 | FileCheck %s --check-prefix=WRONG-BUFFER-TYPE
// WRONG-BUFFER-TYPE: wrong-buffer-type.mlir:3:21: error: use of value '%b' expects different type than prior uses: '!shaderm.buffer<8xf32>' vs '!shaderm.buffer<4xf32>'
//
// RUN: not hesper-opt %t/undefined-value.mlir 2>&1 | FileCheck %s --check-prefix=UNDEFINED-VALUE
// UNDEFINED-VALUE: undefined-value.mlir:2:18: error: use of undeclared SSA value name
//
// RUN: not hesper-opt %t/redefinition.mlir 2>&1 | FileCheck %s --check-prefix=REDEFINITION
// REDEFINITION: redefinition.mlir:2:3: error: redefinition of SSA value '%x'
//
// RUN: not hesper-opt %t/truncated-type.mlir 2>&1 | FileCheck %s --check-prefix=TRUNCATED-TYPE
// TRUNCATED-TYPE: truncated-type.mlir:6:22: error: expected non-function type
//
// RUN: not hesper-opt %t/truncated-region.mlir 2>&1 | FileCheck %s --check-prefix=TRUNCATED-REGION
// TRUNCATED-REGION: truncated-region.mlir:3:26: error: expected operation name in quotes
//
// RUN: not hesper-opt %t/truncated-graph.mlir 2>&1 | FileCheck %s --check-prefix=TRUNCATED-GRAPH
// TRUNCATED-GRAPH: truncated-graph.mlir:1:21: error: expected operation name in quotes
//
// RUN: not hesper-opt %t/truncated-kernel.mlir 2>&1 | FileCheck %s --check-prefix=TRUNCATED-KERNEL
// TRUNCATED-KERNEL: truncated-kernel.mlir:1:41: error: expected ')'
//
// RUN: not hesper-opt %t/truncated-buffer-type.mlir 2>&1 | FileCheck %s --check-prefix=TRUNCATED-BUFFER-TYPE
// TRUNCATED-BUFFER-TYPE: truncated-buffer-type.mlir:1:38: error: unbalanced '<' character in pretty dialect name
//
// RUN: not hesper-opt %t/unterminated-string.mlir 2>&1 | FileCheck %s --check-prefix=UNTERMINATED-STRING
// UNTERMINATED-STRING: unterminated-string.mlir:1:40: error: expected '"' in string literal
//
// RUN: not hesper-opt %t/bogus-circuit-type.mlir 2>&1 | FileCheck %s --check-prefix=BOGUS-CIRCUIT-TYPE
// BOGUS-CIRCUIT-TYPE: bogus-circuit-type.mlir:1:31: error: unknown{{ +}}type `bogus` in dialect `circuit`
//
// RUN: not hesper-opt %t/bogus-circuit-element.mlir 2>&1 | FileCheck %s --check-prefix=BOGUS-CIRCUIT-ELEMENT
// BOGUS-CIRCUIT-ELEMENT: bogus-circuit-element.mlir:1:42: error: unknown{{ +}}type `q7_k` in dialect `circuit`
//
// RUN: not hesper-opt %t/bogus-shaderm-type.mlir 2>&1 | FileCheck %s --check-prefix=BOGUS-SHADERM-TYPE
// BOGUS-SHADERM-TYPE: bogus-shaderm-type.mlir:1:32: error: unknown{{ +}}type `bogus` in dialect `shaderm`
//
// RUN: not hesper-opt %t/unregistered-dialect-type.mlir 2>&1 | FileCheck %s --check-prefix=UNREGISTERED-TYPE
// UNREGISTERED-TYPE: unregistered-dialect-type.mlir:1:23: error: `!"foo"<"bar">` type created with unregistered dialect
//
// Bytes that are not MLIR text, and truncated bytecode.
// RUN: printf '\000\001\002\377\376' > %t/binary.mlir
// RUN: not hesper-opt %t/binary.mlir 2>&1 | FileCheck %s --check-prefix=BINARY
// BINARY: binary.mlir:1:{{[0-9]+}}: error: unexpected character
//
// RUN: printf 'ML\357R' > %t/bytecode-magic.mlir
// RUN: not hesper-opt %t/bytecode-magic.mlir 2>&1 | FileCheck %s --check-prefix=BYTECODE-MAGIC
// BYTECODE-MAGIC: bytecode-magic.mlir:0:0: error: attempting to parse a byte at the end of the bytecode
//
// RUN: printf 'ML\357R\006\000\001' > %t/bytecode-truncated.mlir
// RUN: not hesper-opt %t/bytecode-truncated.mlir 2>&1 | FileCheck %s --check-prefix=BYTECODE-TRUNCATED
// BYTECODE-TRUNCATED: bytecode-truncated.mlir:0:0: error: malformed null-terminated string, no null character found
//
// RUN: not hesper-opt %t/does-not-exist.mlir 2>&1 | FileCheck %s --check-prefix=MISSING
// MISSING: cannot open input file '{{.*}}does-not-exist.mlir': No such file or directory
//
// Several malformed chunks in one file: each gets its diagnostic.
// RUN: not hesper-opt %t/chunks.mlir -split-input-file 2>&1 | FileCheck %s --check-prefix=CHUNKS
// CHUNKS: chunks.mlir:1:1: error: custom op 'garbage' is unknown
// CHUNKS: chunks.mlir:4:18: error: unknown{{ +}}type `bogus` in dialect `circuit`
// CHUNKS: chunks.mlir:8:1: error: expected operation name in quotes
//
// An empty file, or one of comments only, is an empty module.
// RUN: hesper-opt %t/empty.mlir | FileCheck %s --check-prefix=EMPTY
// RUN: hesper-opt %t/comments.mlir | FileCheck %s --check-prefix=EMPTY
// RUN: hesper-opt < %t/empty.mlir | FileCheck %s --check-prefix=EMPTY
// EMPTY:      module {
// EMPTY-NEXT: }
// EMPTY-NOT:  {{.}}

//--- garbage.mlir
this is not MLIR at all }{ @#$
//--- braces.mlir
}}}
//--- bad-ssa.mlir
%%%% 12 34
//--- unknown-circuit-op.mlir
circuit.graph @g() {
  circuit.bogus_op
  circuit.output
}
//--- unknown-shaderm-op.mlir
shaderm.kernel @k() workgroup_size(1, 1, 1) {
  shaderm.frobnicate
  shaderm.return
}
//--- unknown-generic-op.mlir
circuit.graph @g() {
  "circuit.nope"() : () -> ()
  circuit.output
}
//--- unknown-dialect-op.mlir
foo.bar
//--- wrong-type.mlir
circuit.graph @g(%x: tensor<8xf32>) {
  %r = circuit.map ins(%x : tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%l: i32, %v: f32):
    circuit.yield %v : f32
  }
  circuit.output
}
//--- wrong-buffer-type.mlir
shaderm.kernel @k(%b: !shaderm.buffer<4xf32>) workgroup_size(1, 1, 1) {
  %c = exp.constant 0 : index
  %v = shaderm.load %b[%c] : !shaderm.buffer<8xf32> -> f32
  shaderm.return
}
//--- undefined-value.mlir
circuit.graph @g() -> tensor<4xf32> {
  circuit.output %nope : tensor<4xf32>
}
//--- redefinition.mlir
circuit.graph @g(%x: tensor<4xf32>) {
  %x = circuit.zeros : tensor<4xf32>
  circuit.output
}
//--- truncated-type.mlir
circuit.graph @g(%x: tensor<8xf32>) -> tensor<8xf32> {
  %r = circuit.map ins(%x : tensor<8xf32>) -> tensor<8xf32> {
  ^bb0(%l: i32, %v: f32):
    circuit.yield %v : f32
  }
  circuit.output %r : tens
//--- truncated-region.mlir
circuit.graph @g(%x: tensor<8xf32>) {
  %r = circuit.map ins(%x : tensor<8xf32>) -> tensor<8xf32> {
  ^bb0(%l: i32, %v: f32):
//--- truncated-graph.mlir
circuit.graph @g() {
//--- truncated-kernel.mlir
shaderm.kernel @k() workgroup_size(64, 1
//--- truncated-buffer-type.mlir
shaderm.kernel @k(%a: !shaderm.buffer<4xf3
//--- unterminated-string.mlir
circuit.graph @g() attributes {a = "abc
//--- bogus-circuit-type.mlir
circuit.graph @g(%x: !circuit.bogus) {
  circuit.output
}
//--- bogus-circuit-element.mlir
circuit.graph @g(%x: tensor<256x!circuit.q7_k>) {
  circuit.output
}
//--- bogus-shaderm-type.mlir
shaderm.kernel @k(%x: !shaderm.bogus<4xf32>) workgroup_size(1, 1, 1) {
  shaderm.return
}
//--- unregistered-dialect-type.mlir
func.func @f(%x: !foo.bar) {
  return
}
//--- chunks.mlir
garbage
// -----
circuit.graph @g(
    %x: !circuit.bogus) {
  circuit.output
}
// -----
}
//--- empty.mlir
//--- comments.mlir
// Only a comment.
