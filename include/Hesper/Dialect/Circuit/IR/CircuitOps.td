//===- CircuitOps.td - Circuit dialect operations ----------*- tablegen -*-===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//

#ifndef HESPER_DIALECT_CIRCUIT_IR_CIRCUITOPS_TD
#define HESPER_DIALECT_CIRCUIT_IR_CIRCUITOPS_TD

include "Hesper/Dialect/Circuit/IR/CircuitBase.td"
include "mlir/IR/SymbolInterfaces.td"
include "mlir/Interfaces/ControlFlowInterfaces.td"
include "mlir/Interfaces/FunctionInterfaces.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

//===----------------------------------------------------------------------===//
// Graph structure
//===----------------------------------------------------------------------===//

def Circuit_GraphOp : Circuit_Op<"graph", [
    IsolatedFromAbove, FunctionOpInterface, Symbol, SingleBlock]> {
  let summary = "a graph of tensor primitives over external buffers";
  let description = [{
    A graph is a function from tensors to tensors. Its arguments are the
    external buffers bound at run time (inputs, weights, caches); its results
    are the tensors it produces. An argument may also be written in place by
    `circuit.scatter` and its relatives (a KV cache, say); a version of a
    buffer may be read only before the write that updates it. The body is
    one block of primitives ending in `circuit.output`.

    Arguments carry attributes for whoever binds them: `circuit.name` (the
    name a user binds it by) and, optionally, `circuit.role`: one of
    `input` (the default), `weight`, `tokens`, `position`, `last_row`,
    `rope_freqs`, `rope_freqs_swa`, `cache` and `targets`. A weight may name
    its tensor in the model file (`circuit.tensor = "blk.0.attn_q.weight"`)
    and the rows of it that it binds (`circuit.rows = array<i64: first,
    count>`, count equal to the argument's first dimension); the verifier
    refuses an unknown role and these attributes on another role.

    ```mlir
    circuit.graph @double(%x: tensor<128xf32>) -> tensor<128xf32> {
      %y = circuit.map ins(%x : tensor<128xf32>) -> tensor<128xf32> {
      ^bb0(%lane: i32, %v: f32):
        %two = exp.constant 2.0 : f32
        %r = exp.mul %v, %two : f32
        circuit.yield %r : f32
      }
      circuit.output %y : tensor<128xf32>
    }
    ```
  }];
  let arguments = (ins SymbolNameAttr:$sym_name,
                       TypeAttrOf<FunctionType>:$function_type,
                       OptionalAttr<DictArrayAttr>:$arg_attrs,
                       OptionalAttr<DictArrayAttr>:$res_attrs);
  let regions = (region SizedRegion<1>:$body);
  let hasCustomAssemblyFormat = 1;
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    ::llvm::ArrayRef<::mlir::Type> getArgumentTypes() {
      return getFunctionType().getInputs();
    }
    ::llvm::ArrayRef<::mlir::Type> getResultTypes() {
      return getFunctionType().getResults();
    }
    ::mlir::Region *getCallableRegion() { return &getBody(); }
  }];
  let builders = [
    OpBuilder<(ins "::llvm::StringRef":$name, "::mlir::FunctionType":$type)>
  ];
}

def Circuit_OutputOp : Circuit_Op<"output", [Pure, Terminator, ReturnLike,
                                             HasParent<"GraphOp">]> {
  let summary = "the results of a graph";
  let description = [{
    ```mlir
    circuit.output %y, %z : tensor<128xf32>, tensor<4xf32>
    ```
  }];
  let arguments = (ins Variadic<Circuit_Tensor>:$results);
  let assemblyFormat = "($results^ `:` type($results))? attr-dict";
  let hasVerifier = 1;
}

def Circuit_YieldOp : Circuit_Op<"yield", [Pure, Terminator, ReturnLike,
    ParentOneOf<["MapOp", "GatherOp", "ScatterOp", "ScatterMultiOp",
                 "ReduceOp", "ReduceEpilogueOp", "ReduceScatterEpilogueOp",
                 "MatmulOp", "MultiMatmulOp", "GatedMatmulOp",
                 "ExpertMatmulOp"]>]> {
  let summary = "the values one lane of a body produces";
  let description = [{
    Ends a per-lane body. What it yields depends on the primitive: one
    element for `map`, an address for `gather`, address/value pairs for
    `scatter`, ...

    ```mlir
    circuit.yield %addr, %v : i32, f32
    ```
  }];
  let arguments = (ins Variadic<AnyType>:$values);
  let assemblyFormat = "($values^ `:` type($values))? attr-dict";
  let builders = [OpBuilder<(ins), [{ build($_builder, $_state, {}); }]>];
}

def Circuit_ZerosOp : Circuit_Op<"zeros"> {
  let summary = "a fresh zero-filled buffer";
  let description = [{
    A new tensor whose every element is zero: the destination of a scatter
    that does not write into an external buffer. It is an allocation, so two
    of them are never merged (each is written once), and an unused one is
    erased.

    ```mlir
    %dst = circuit.zeros : tensor<256xf32>
    ```
  }];
  let results = (outs Res<Circuit_ScalarTensor, "a fresh buffer",
                          [MemAlloc<DefaultResource>]>:$result);
  let assemblyFormat = "attr-dict `:` type($result)";
}

def Circuit_ExtractOp : Circuit_Op<"extract", [Pure,
    DeclareOpInterfaceMethods<InferTypeOpInterface>]> {
  let summary = "read one element of a whole-tensor body argument";
  let description = [{
    Inside a per-lane body, an input whose block argument has the input's
    tensor type (instead of its element type) is not read lane for lane: the
    body reads it at any flat index with `circuit.extract`, which yields 0
    for an index out of range. This is how a body gathers (RoPE's partner
    element, a KV-cache row), and how fusion inlines a `circuit.gather` into
    its user.

    ```mlir
    %y = circuit.map ins(%x : tensor<8xf32>) -> tensor<8xf32> {
    ^bb0(%lane: i32, %all: tensor<8xf32>):
      %c7 = exp.constant 7 : i32
      %i = exp.sub %c7, %lane : i32
      %v = circuit.extract %all[%i] : tensor<8xf32>
      circuit.yield %v : f32
    }
    ```
  }];
  let arguments = (ins Circuit_ScalarTensor:$tensor, I32:$index);
  let results = (outs Circuit_ScalarElement:$result);
  let assemblyFormat = "$tensor `[` $index `]` attr-dict `:` type($tensor)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Pointwise primitives
//===----------------------------------------------------------------------===//

def Circuit_MapOp : Circuit_Op<"map", [Pure, IsolatedFromAbove]> {
  let summary = "compute every element of a tensor from its inputs";
  let description = [{
    For every lane `i` of the result, runs the body on `i` and the inputs'
    elements for `i` (broadcast inputs by the dialect's rule: a `[D]` input
    at `i mod D`, a `[rows, 1]` input at `i div D`, a `[1]` input at 0),
    and stores the yielded value at `i`. With no inputs, the body computes from the lane
    index alone.

    ```mlir
    %y = circuit.map ins(%x, %s : tensor<128xf32>, tensor<1xf32>)
        -> tensor<128xf32> {
    ^bb0(%lane: i32, %a: f32, %b: f32):
      %p = exp.mul %a, %b : f32
      circuit.yield %p : f32
    }
    ```
  }];
  let arguments = (ins Variadic<Circuit_ScalarTensor>:$inputs);
  let results = (outs Circuit_ScalarTensor:$result);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = [{
    (`ins` `(` $inputs^ `:` type($inputs) `)`)? `->` type($result)
    attr-dict-with-keyword $body
  }];
  let hasRegionVerifier = 1;
}

def Circuit_GatherOp : Circuit_Op<"gather", [Pure, IsolatedFromAbove]> {
  let summary = "read elements of a source tensor at computed addresses";
  let description = [{
    For every lane `i` of the result, the body computes a flat address into
    `source` from `i` and the inputs' elements; the result at `i` is the
    source element there, or zero when the address is out of range. A
    quantized source (q8_0, q4_k, q6_k: a model's token embedding table) is
    read as its dequantized f32 values, decoded from its blocks; the result
    is then f32.

    ```mlir
    // Reverse a vector.
    %r = circuit.gather %x : tensor<8xf32> -> tensor<8xf32> {
    ^bb0(%lane: i32):
      %c7 = exp.constant 7 : i32
      %a = exp.sub %c7, %lane : i32
      circuit.yield %a : i32
    }
    ```
  }];
  let arguments = (ins Circuit_Tensor:$source,
                       Variadic<Circuit_ScalarTensor>:$inputs);
  let results = (outs Circuit_ScalarTensor:$result);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = [{
    $source (`ins` `(` $inputs^ `:` type($inputs) `)`)? `:` type($source)
    `->` type($result) attr-dict-with-keyword $body
  }];
  let hasVerifier = 1;
  let hasRegionVerifier = 1;
}

def Circuit_ScatterOp : Circuit_Op<"scatter", [IsolatedFromAbove,
    DeclareOpInterfaceMethods<InferTypeOpInterface>,
    DeclareOpInterfaceMethods<MemoryEffectsOpInterface>]> {
  let summary = "write computed values at computed addresses";
  let description = [{
    Runs the body for `grid` lanes; lane `i` yields a flat address and a
    value, and the value is written there in `dest`. The result is `dest`
    with those writes; addresses out of range are skipped (a body can use
    -1 to write nothing). Two lanes must not write the same address.

    `dest` is either a fresh buffer (`circuit.zeros`) or an external buffer
    (a graph argument, or the result of an earlier in-place write to one),
    which is then updated in place: its old value must not be read after the
    scatter. The verifier refuses a graph that does (naming the read and the
    write), since every backend would return the written values there rather
    than the old ones; read before the write, or read the scatter's result.

    ```mlir
    // Write x into dst[128 .. 255].
    %r = circuit.scatter grid(128) ins(%x : tensor<128xf32>)
        into %dst : tensor<256xf32> {
    ^bb0(%lane: i32, %v: f32):
      %c128 = exp.constant 128 : i32
      %a = exp.add %lane, %c128 : i32
      circuit.yield %a, %v : i32, f32
    }
    ```
  }];
  let arguments = (ins ConfinedAttr<I64Attr, [IntPositive]>:$grid,
                       Variadic<Circuit_ScalarTensor>:$inputs,
                       Circuit_ScalarTensor:$dest);
  let results = (outs Circuit_ScalarTensor:$result);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = [{
    `grid` `(` $grid `)` (`ins` `(` $inputs^ `:` type($inputs) `)`)?
    `into` $dest `:` type($dest) attr-dict-with-keyword $body
  }];
  let hasVerifier = 1;
  let hasRegionVerifier = 1;
}

def Circuit_ScatterMultiOp : Circuit_Op<"scatter_multi", [IsolatedFromAbove,
    AttrSizedOperandSegments,
    DeclareOpInterfaceMethods<InferTypeOpInterface>,
    DeclareOpInterfaceMethods<MemoryEffectsOpInterface>]> {
  let summary = "one grid of lanes writing into several destinations";
  let description = [{
    Like `circuit.scatter` with N destinations: lane `i` yields N
    address/value pairs, pair `k` written into `dests[k]`. One kernel writes
    them all (e.g. RoPE'd K and V into their caches).

    ```mlir
    %k2, %v2 = circuit.scatter_multi grid(64)
        ins(%k, %v : tensor<64xf32>, tensor<64xf32>)
        into(%kc, %vc : tensor<512xf32>, tensor<512xf32>) {
    ^bb0(%lane: i32, %a: f32, %b: f32):
      circuit.yield %lane, %a, %lane, %b : i32, f32, i32, f32
    }
    ```
  }];
  let arguments = (ins ConfinedAttr<I64Attr, [IntPositive]>:$grid,
                       Variadic<Circuit_ScalarTensor>:$inputs,
                       Variadic<Circuit_ScalarTensor>:$dests);
  let results = (outs Variadic<Circuit_ScalarTensor>:$results);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = [{
    `grid` `(` $grid `)` (`ins` `(` $inputs^ `:` type($inputs) `)`)?
    `into` `(` $dests `:` type($dests) `)` attr-dict-with-keyword $body
  }];
  let hasVerifier = 1;
  let hasRegionVerifier = 1;
}

def Circuit_WriteRowsOp : Circuit_Op<"write_rows", [
    DeclareOpInterfaceMethods<InferTypeOpInterface>,
    DeclareOpInterfaceMethods<MemoryEffectsOpInterface>]> {
  let summary = "store rows at positions of a cache, in the cache's type";
  let description = [{
    `values` is `[rows, D]`; `dest` holds `P` rows of `D` values,
    `[P * D]` (a KV cache: `D` is `kv_heads * head_dim`). Row `r` of
    `values` is stored as row `pos[0] + r` of `dest` when `pos` has one
    element, or as row `pos[r]` when it has `rows` (a batch step whose rows
    belong to different sequences). A row whose position lies outside
    `[0, P)` is not stored.

    Each row is converted to `dest`'s element type as it is stored: `f32`
    as is, `f16` rounded to nearest even, `q8_0` quantized block by block
    exactly as `circuit.quantize` does (`d = max|v| / 127`,
    `q = round(v / d)`), so that a cache can be kept in any of llama.cpp's
    `-ctk`/`-ctv` types `f32`, `f16` and `q8_0`. `D` must be a multiple of
    the 32-value block for `q8_0`.

    The result is `dest` with those rows written; `dest` follows
    `circuit.scatter`'s rules (a fresh buffer or an external one, updated
    in place, whose old value is not read after the write).

    ```mlir
    // Two rotated K rows into a q8_0 cache of 16 positions of 64 values.
    %kc2 = circuit.write_rows %k at %pos into %kc
        : tensor<2x64xf32>, tensor<1xi32> into tensor<1024x!circuit.q8_0>
    ```
  }];
  let arguments = (ins Circuit_FloatTensor:$values,
                       StaticShapeTensorOf<[I32]>:$pos,
                       Circuit_CacheTensor:$dest);
  let results = (outs Circuit_CacheTensor:$result);
  let assemblyFormat = [{
    $values `at` $pos `into` $dest attr-dict `:` type($values) `,` type($pos)
    `into` type($dest)
  }];
  let hasVerifier = 1;
}

def Circuit_ScatterAddOp : Circuit_Op<"scatter_add", [Pure]> {
  let summary = "sum rows of a source into the rows its indices name";
  let description = [{
    `result[r, :]` is the sum of the rows `source[s, :]` whose index
    `indices[s]` is `r`, added in increasing `s` starting from zero; a row
    that no index names is zero, and an index outside `[0, R)` adds
    nothing. It is the transpose of a gather of rows by index (an
    embedding lookup), so its use is that gather's gradient: tokens that
    repeat add their rows' gradients into one row of the table.

    The order of the additions is fixed, so the result is the same on every
    backend and for any thread count; no lane ever adds into a row another
    lane adds into at the same time (each owns one column).

    ```mlir
    %d = circuit.scatter_add %dy, %tokens
        : tensor<8x64xf32>, tensor<8xi32> -> tensor<256x64xf32>
    ```
  }];
  let arguments = (ins StaticShapeTensorOf<[F32]>:$source,
                       StaticShapeTensorOf<[I32]>:$indices);
  let results = (outs StaticShapeTensorOf<[F32]>:$result);
  let assemblyFormat = [{
    $source `,` $indices `:` type($source) `,` type($indices) `->`
    type($result) attr-dict
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Reductions
//===----------------------------------------------------------------------===//

def Circuit_ReduceOp : Circuit_Op<"reduce", [Pure, IsolatedFromAbove]> {
  let summary = "reduce the last axis of a tensor";
  let description = [{
    Iterates over the shape of the first input, `[rows..., D]`, and reduces
    each row of `D` values to one `f32` with `sum`, `sum_sq` (sum of
    squares) or `max`. The result keeps the reduced axis with size 1,
    `[rows..., 1]`, so that it broadcasts back over the rows. Without a `prologue`, the first input's elements are
    reduced; with one, the prologue computes the value to reduce from the
    lane and all inputs' elements. Sums are accumulated in `f32` in a fixed
    order.

    The iteration shape is the first input's, or the explicit `over` shape.
    With `over`, the reduction has a prologue and every input may be read
    whole: attention scores reduce over `[heads, positions, head_dim]` while
    reading the KV cache in its own layout.

    ```mlir
    %ss = circuit.reduce sum_sq %x : tensor<4x256xf32> -> tensor<4x1xf32>
    %dot = circuit.reduce sum %a, %b : tensor<64xf32>, tensor<64xf32>
        -> tensor<1xf32> prologue {
    ^bb0(%lane: i32, %p: f32, %q: f32):
      %m = exp.mul %p, %q : f32
      circuit.yield %m : f32
    }
    ```
  }];
  let arguments = (ins Circuit_ReduceKind:$kind,
                       Variadic<Circuit_ScalarTensor>:$inputs,
                       OptionalAttr<DenseI64ArrayAttr>:$over);
  let results = (outs Circuit_FloatTensor:$result);
  let regions = (region AnyRegion:$prologue);
  let assemblyFormat = [{
    $kind ($inputs^ `:` type($inputs))? (`over` $over^)? `->` type($result)
    attr-dict-with-keyword (`prologue` $prologue^)?
  }];
  let hasVerifier = 1;
  let hasRegionVerifier = 1;
}

def Circuit_ReduceEpilogueOp : Circuit_Op<"reduce_epilogue", [Pure,
    IsolatedFromAbove]> {
  let summary = "reduce each row, then compute every element of the row";
  let description = [{
    A reduction fused with a full-shape map that sees the reduced value:
    for each row of the first input's shape `[rows..., D]`, reduces as
    `circuit.reduce` does (with an optional `prologue`), then runs the
    `epilogue` for every lane of the row on the lane index, the row's
    reduced `f32` and the inputs' elements. The result has the first
    input's shape. RMSNorm is one of these. With a `q8_1` or `q8_0` result
    type, the epilogue yields `f32` and each row is quantized as it is
    stored (as `circuit.quantize` does): normalization and quantization in
    one kernel.

    ```mlir
    %y = circuit.reduce_epilogue sum_sq %x, %w
        : tensor<256xf32>, tensor<256xf32> -> tensor<256xf32> epilogue {
    ^bb0(%lane: i32, %ss: f32, %v: f32, %g: f32):
      %d = exp.constant 256.0 : f32
      %eps = exp.constant 1.0e-06 : f32
      %m = exp.div %ss, %d : f32
      %me = exp.add %m, %eps : f32
      %r = exp.rsqrt %me : f32
      %n = exp.mul %v, %r : f32
      %o = exp.mul %n, %g : f32
      circuit.yield %o : f32
    }
    ```
  }];
  let arguments = (ins Circuit_ReduceKind:$kind,
                       Variadic<Circuit_ScalarTensor>:$inputs,
                       OptionalAttr<DenseI64ArrayAttr>:$over);
  let results = (outs Circuit_Tensor:$result);
  let regions = (region AnyRegion:$prologue, SizedRegion<1>:$epilogue);
  let assemblyFormat = [{
    $kind ($inputs^ `:` type($inputs))? (`over` $over^)? `->` type($result)
    attr-dict-with-keyword (`prologue` $prologue^)? `epilogue` $epilogue
  }];
  let hasVerifier = 1;
  let hasRegionVerifier = 1;
}

def Circuit_ReduceScatterEpilogueOp : Circuit_Op<"reduce_scatter_epilogue", [
    IsolatedFromAbove, DeclareOpInterfaceMethods<InferTypeOpInterface>,
    DeclareOpInterfaceMethods<MemoryEffectsOpInterface>]> {
  let summary = "reduce each row, then scatter per-lane values";
  let description = [{
    Like `circuit.reduce_epilogue`, but the epilogue yields an address and a
    value for each lane, written into `dest` as `circuit.scatter` does.

    ```mlir
    // dst[64 + i] = x[i] / sum(x) * 100
    %r = circuit.reduce_scatter_epilogue sum %x : tensor<64xf32>
        into %dst : tensor<256xf32> epilogue {
    ^bb0(%lane: i32, %s: f32, %v: f32):
      %c64 = exp.constant 64 : i32
      %a = exp.add %lane, %c64 : i32
      %q = exp.div %v, %s : f32
      %h = exp.constant 100.0 : f32
      %o = exp.mul %q, %h : f32
      circuit.yield %a, %o : i32, f32
    }
    ```
  }];
  let arguments = (ins Circuit_ReduceKind:$kind,
                       Variadic<Circuit_ScalarTensor>:$inputs,
                       Circuit_ScalarTensor:$dest,
                       OptionalAttr<DenseI64ArrayAttr>:$over);
  let results = (outs Circuit_ScalarTensor:$result);
  let regions = (region AnyRegion:$prologue, SizedRegion<1>:$epilogue);
  let assemblyFormat = [{
    $kind ($inputs^ `:` type($inputs))? (`over` $over^)? `into` $dest `:`
    type($dest) attr-dict-with-keyword (`prologue` $prologue^)? `epilogue`
    $epilogue
  }];
  let hasVerifier = 1;
  let hasRegionVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Matrix products and quantization
//===----------------------------------------------------------------------===//

def Circuit_MatmulOp : Circuit_Op<"matmul", [Pure, IsolatedFromAbove]> {
  let summary = "activations times transposed weights, with an epilogue";
  let description = [{
    `y[m, n] = sum_k x[m, k] * w[n, k]`: the weight is `[N, K]`, row-major,
    as GGUF stores it (a rank-1 `x` of `[K]` gives a matvec with result
    `[N]`). `x` is `f32`, `f16` or `q8_1` (quantized activations, for the
    integer dot-product kernels); `w` is `f32`, `f16`, `q8_0`, `q4_k`,
    `q6_k` or `i2_s`. Products are accumulated in `f32`.

    The optional `epilogue` turns each accumulated value into the stored
    one, given the flat output index, the `f32` accumulator and the elements
    of the extra `ins` (broadcast over the result shape): bias, activation,
    residual add or scaling, fused into the same kernel.

    ```mlir
    %y = circuit.matmul %x, %w ins(%b : tensor<64xf32>)
        : tensor<256xf32>, tensor<64x256x!circuit.q4_k> -> tensor<64xf32>
        epilogue {
    ^bb0(%lane: i32, %acc: f32, %bias: f32):
      %s = exp.add %acc, %bias : f32
      %g = exp.gelu %s : f32
      circuit.yield %g : f32
    }
    ```
  }];
  let arguments = (ins Circuit_Tensor:$x, Circuit_Tensor:$weight,
                       Variadic<Circuit_ScalarTensor>:$inputs);
  let results = (outs Circuit_FloatTensor:$result);
  let regions = (region AnyRegion:$epilogue);
  let assemblyFormat = [{
    $x `,` $weight (`ins` `(` $inputs^ `:` type($inputs) `)`)? `:`
    type($x) `,` type($weight) `->` type($result) attr-dict-with-keyword
    (`epilogue` $epilogue^)?
  }];
  let hasVerifier = 1;
  let hasRegionVerifier = 1;
}

def Circuit_MultiMatmulOp : Circuit_Op<"multi_matmul", [Pure,
    IsolatedFromAbove]> {
  let summary = "several matmuls of one activation tensor in one dispatch";
  let description = [{
    `results[i] = x · weights[i]ᵀ` for every weight, launched as one kernel
    that reads `x` once: Q, K and V, or gate and up. Weights may have
    different formats and row counts. Each weight has an epilogue region,
    empty for none, that maps the lane index and the `f32` accumulator to
    the stored value (the epilogues take no extra inputs).

    ```mlir
    %q, %k = circuit.multi_matmul %x, %wq, %wk
        : tensor<256xf32>, tensor<256x256x!circuit.q4_k>, tensor<64x256xf16>
        -> tensor<256xf32>, tensor<64xf32> epilogues {
    }, {
    ^bb0(%lane: i32, %acc: f32):
      %two = exp.constant 2.0 : f32
      %s = exp.mul %acc, %two : f32
      circuit.yield %s : f32
    }
    ```
  }];
  let arguments = (ins Circuit_Tensor:$x, Variadic<Circuit_Tensor>:$weights);
  let results = (outs Variadic<Circuit_FloatTensor>:$results);
  let regions = (region VariadicRegion<AnyRegion>:$epilogues);
  let assemblyFormat = [{
    $x `,` $weights `:` type($x) `,` type($weights) `->` type($results)
    attr-dict-with-keyword `epilogues` $epilogues
  }];
  let hasVerifier = 1;
  let hasRegionVerifier = 1;
}

def Circuit_QuantizeOp : Circuit_Op<"quantize", [Pure]> {
  let summary = "quantize activations to a block format";
  let description = [{
    Splits the last axis into blocks of 32 values; per block,
    `d = max|v| / 127` and `q = round(v / d)` (0 when `d` is 0). The result
    is `q8_1` (which also keeps `d * sum(q)` per block for the integer
    kernels) or `q8_0`.

    ```mlir
    %q = circuit.quantize %x : tensor<256xf32> -> tensor<256x!circuit.q8_1>
    ```
  }];
  let arguments = (ins Circuit_FloatTensor:$input);
  let results = (outs Circuit_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
}

def Circuit_GatedMatmulOp : Circuit_Op<"gated_matmul", [Pure,
    IsolatedFromAbove]> {
  let summary = "two matmuls of one activation combined element by element";
  let description = [{
    `result[i] = combine(i, (x · gateᵀ)[i], (x · upᵀ)[i])`: the gated
    feed-forward of SwiGLU or GeGLU models (`silu(gate) * up`) as one
    dispatch that reads `x` once and never stores the two products. Both
    weights have the result's row count; they may have different formats.
    The `combine` body maps the lane index and the two `f32` accumulators
    to the stored value.

    ```mlir
    %h = circuit.gated_matmul %x, %wg, %wu
        : tensor<256xf32>, tensor<512x256xf32>, tensor<512x256x!circuit.q8_0>
        -> tensor<512xf32> combine {
    ^bb0(%lane: i32, %g: f32, %u: f32):
      %s = exp.silu %g : f32
      %h = exp.mul %s, %u : f32
      circuit.yield %h : f32
    }
    ```
  }];
  let arguments = (ins Circuit_Tensor:$x, Circuit_Tensor:$gate,
                       Circuit_Tensor:$up);
  let results = (outs Circuit_FloatTensor:$result);
  let regions = (region SizedRegion<1>:$combine);
  let assemblyFormat = [{
    $x `,` $gate `,` $up `:` type($x) `,` type($gate) `,` type($up) `->`
    type($result) attr-dict-with-keyword `combine` $combine
  }];
  let hasVerifier = 1;
  let hasRegionVerifier = 1;
}

def Circuit_ExpertMatmulOp : Circuit_Op<"expert_matmul", [Pure,
    IsolatedFromAbove]> {
  let summary = "matmuls whose weights are chosen per row from a stack of "
                "experts";
  let description = [{
    The projections of a mixture-of-experts layer. `ids` (`[S]` or
    `[T, S]` i32) names, for each of the `S` slots of each of `T` tokens,
    one of the `E` experts of the weights (`[E, N, K]`, each expert's
    `[N, K]` matrix as GGUF stacks them); the result row of slot `(t, s)`
    is `x_row · W[ids[t, s]]ᵀ`, and only the chosen experts' rows are read.
    `x` has one row per token (`[K]` or `[T, K]`: the token's slots share
    it, as the gate and up projections do) or one per slot (`[S, K]` or
    `[T, S, K]`: the down projection of each slot's activation). The
    result is `[S, N]` or `[T, S, N]`. An id outside `[0, E)` is clamped
    into it.

    With one weight the result is the product. With two (gate and up,
    which must have the same `E` and `N`), the `combine` body maps the flat
    result index and the two `f32` accumulators to the stored value, as
    `circuit.gated_matmul`'s does; `hesper-fuse` forms it from two
    single-weight ops of the same `x` and `ids` and the map that combines
    them.

    ```mlir
    %h = circuit.expert_matmul %x, %ids, %wg, %wu
        : tensor<256xf32>, tensor<2xi32>, tensor<8x512x256x!circuit.q8_0>,
          tensor<8x512x256x!circuit.q8_0> -> tensor<2x512xf32> combine {
    ^bb0(%lane: i32, %g: f32, %u: f32):
      %s = exp.silu %g : f32
      %h = exp.mul %s, %u : f32
      circuit.yield %h : f32
    }
    ```
  }];
  let arguments = (ins Circuit_Tensor:$x, StaticShapeTensorOf<[I32]>:$ids,
                       Variadic<Circuit_Tensor>:$weights);
  let results = (outs Circuit_FloatTensor:$result);
  let regions = (region AnyRegion:$combine);
  let assemblyFormat = [{
    $x `,` $ids `,` $weights `:` type($x) `,` type($ids) `,` type($weights)
    `->` type($result) attr-dict-with-keyword (`combine` $combine^)?
  }];
  let hasVerifier = 1;
  let hasRegionVerifier = 1;
}

def Circuit_AttentionOp : Circuit_Op<"attention", [Pure]> {
  let summary = "causal attention of one query token over a KV cache";
  let description = [{
    Decode-step attention, one dispatch: for every query head `h` (of
    `heads`, sharing key/value head `h / (heads / kv_heads)`), over the
    cached positions `t = 0 .. pos` (inclusive),

      s[t] = scale * dot(q[h], k_cache[t, kvh])
      s[t] = softcap * tanh(s[t] / softcap)      (only with `softcap`)
      p    = softmax(s)
      out[h] = sum_t p[t] * v_cache[t, kvh]

    `q` and the result are `[heads * head_dim]` for one token, or `rows`
    times that for a chunk of consecutive tokens, whose row `r` is the
    token at position `pos + r` and sees positions `0 .. pos + r` (the
    causal mask inside the chunk); the caches are
    `[positions * kv_heads * head_dim]` (position-major, then head, then
    dimension), read in place, each in `f32`, `f16` or `q8_0` (llama.cpp's
    `-ctk`/`-ctv`: values are widened to `f32` as they are read; a `q8_0`
    cache needs a `head_dim` that is a multiple of its 32-value block);
    `pos` is an `i32` tensor of one element.
    Positions after a row's own are never read, so the cost grows with the
    position, not with the cache length. A position outside the cache is
    clamped to its last one.

    With `window = W` (sliding-window attention, as Gemma 2 and 3 use on
    their local layers) the row at position `p` sees only the last `W`
    positions, `max(0, p - W + 1) .. p`: positions further back are
    neither read nor counted. `softcap` (Gemma 2's attention-logit
    soft-capping) squashes every score into `(-softcap, softcap)` before
    the softmax.

    With `seq_len = S` the caches hold several independent sequences of
    `S` positions each, one after the other (sequence `i` at positions
    `i * S .. i * S + S - 1`), and `pos` holds one position per row, in
    those global terms: row `r` is the token at `pos[r]` and sees the
    positions of its own sequence only, `(pos[r] / S) * S .. pos[r]` (with
    `window`, the last `W` of them). The rows of one step may belong to
    different sequences: a batch of decode tokens of several requests, or a
    prompt chunk beside them (continuous batching). A row's positions are
    scored in the same tiles, counted from its sequence's start, as the
    same row would be in a cache of its sequence alone, so its result is
    bit-identical.

    Lowered as one workgroup per query head that walks the positions in
    tiles with an online softmax (flash-decoding): a running maximum and
    sum are rescaled per tile, in a fixed order, so results are
    bit-identical from run to run.

    ```mlir
    %o = circuit.attention %q, %kc, %vc, %pos
        {heads = 4 : i64, kv_heads = 2 : i64, head_dim = 16 : i64,
         scale = 0.25 : f32}
        : tensor<64xf32>, tensor<1024xf32>, tensor<1024xf32>, tensor<1xi32>
        -> tensor<64xf32>
    %w = circuit.attention %q, %kc, %vc, %pos
        {heads = 4 : i64, kv_heads = 2 : i64, head_dim = 16 : i64,
         scale = 0.25 : f32, softcap = 50.0 : f32, window = 4096 : i64}
        : tensor<64xf32>, tensor<1024xf32>, tensor<1024xf32>, tensor<1xi32>
        -> tensor<64xf32>
    // Two rows of two sequences of 16 positions each.
    %b = circuit.attention %q2, %kc, %vc, %pos2
        {heads = 4 : i64, kv_heads = 2 : i64, head_dim = 16 : i64,
         scale = 0.25 : f32, seq_len = 16 : i64}
        : tensor<128xf32>, tensor<1024xf32>, tensor<1024xf32>, tensor<2xi32>
        -> tensor<128xf32>
    ```
  }];
  let arguments = (ins Circuit_FloatTensor:$q, Circuit_CacheTensor:$k_cache,
                       Circuit_CacheTensor:$v_cache, Circuit_Tensor:$pos,
                       I64Attr:$heads, I64Attr:$kv_heads, I64Attr:$head_dim,
                       F32Attr:$scale, OptionalAttr<F32Attr>:$softcap,
                       OptionalAttr<I64Attr>:$window,
                       OptionalAttr<I64Attr>:$seq_len);
  let results = (outs Circuit_FloatTensor:$result);
  let assemblyFormat = [{
    $q `,` $k_cache `,` $v_cache `,` $pos attr-dict `:` type($q) `,`
    type($k_cache) `,` type($v_cache) `,` type($pos) `->` type($result)
  }];
  let hasVerifier = 1;
}

#endif // HESPER_DIALECT_CIRCUIT_IR_CIRCUITOPS_TD
