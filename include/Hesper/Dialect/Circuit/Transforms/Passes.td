//===- Passes.td - Circuit fusion passes -------------------*- tablegen -*-===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//

#ifndef HESPER_DIALECT_CIRCUIT_TRANSFORMS_PASSES_TD
#define HESPER_DIALECT_CIRCUIT_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

class Circuit_FusionPass<string arg, string name>
    : Pass<arg, "::hesper::circuit::GraphOp"> {
  let dependentDialects = ["::hesper::circuit::CircuitDialect",
                           "::hesper::exp::ExpDialect"];
  let statistics = [
    Statistic<"numFused", "fused", "Number of primitives fused away">,
  ];
}

def CircuitFusePointwisePass
    : Circuit_FusionPass<"circuit-fuse-pointwise", "FusePointwise"> {
  let summary = "Inline a map into the primitive that consumes it";
  let description = [{
    A `circuit.map` whose only user is another primitive (a map, a gather's
    extra input, a scatter or scatter_multi, a reduction's input, a matmul
    epilogue's extra input) is computed inside that user's body instead of
    in a kernel of its own. Writing a map into a slice of a buffer becomes a
    single scatter.

    Legal when the map has one use and is not a graph result; when the user
    reads it lane for lane (the map's shape is the user's iteration shape,
    or every input of the map is a single element); and when no in-place
    write to a buffer the map reads lies between the map and its user (the
    map's reads would move past it).
  }];
}

def CircuitFuseMatmulEpiloguePass
    : Circuit_FusionPass<"circuit-fuse-matmul-epilogue",
                         "FuseMatmulEpilogue"> {
  let summary = "Fold a map over a matmul's result into its epilogue";
  let description = [{
    `map(matmul(x, w), extra...)` becomes one `circuit.matmul` whose
    epilogue runs the map's body on the accumulator: bias, activation,
    residual add, scaling. Legal when the matmul has one use, the map
    iterates over the matmul's result shape and reads it lane for lane, and
    no in-place write to a buffer the map reads lies between them.
  }];
}

def CircuitFuseReduceEpiloguePass
    : Circuit_FusionPass<"circuit-fuse-reduce-epilogue",
                         "FuseReduceEpilogue"> {
  let summary = "Fold a reduction and the maps that use it into one op";
  let description = [{
    `reduce` -> per-row scalar maps -> a full-shape map that reads the
    per-row value becomes one `circuit.reduce_epilogue` (RMSNorm's four
    primitives become one). Likewise a single-row reduction whose value a
    scatter over the same grid reads becomes one reduce_scatter_epilogue.
    Legal when every intermediate has one use, the full-shape map (or the
    scatter) iterates over the reduction's shape, the scalar map reads only
    the reduction and single elements, and no in-place write to a buffer
    the reduction reads lies between them (or is the scatter itself).
  }];
}

def CircuitFuseReduceIntoQuantizePass
    : Circuit_FusionPass<"circuit-fuse-reduce-into-quantize",
                         "FuseReduceIntoQuantize"> {
  let summary = "Quantize the result of a reduce_epilogue as it is stored";
  let description = [{
    `quantize(reduce_epilogue(...))` becomes a `circuit.reduce_epilogue`
    with a `q8_1` (or `q8_0`) result: the kernel that normalizes also
    quantizes. Legal when the reduce_epilogue has one use, is not quantized
    already, and its rows are whole quantization blocks.
  }];
}

def CircuitFuseScatterPass
    : Circuit_FusionPass<"circuit-fuse-scatter", "FuseScatter"> {
  let summary = "Merge scatters over the same grid into one scatter_multi";
  let description = [{
    Two scatters (or scatter_multis) with the same grid become one
    `circuit.scatter_multi` at the later one's position, e.g. RoPE'd K and V
    written into their caches by one kernel. Legal when the later one does
    not depend on the earlier one, nothing between them uses the earlier
    one's results, and nothing between them reads or writes a buffer the
    earlier one writes in place (the write would move past it).
  }];
}

def CircuitFuseGatedMatmulPass
    : Circuit_FusionPass<"circuit-fuse-gated-matmul", "FuseGatedMatmul"> {
  let summary = "Two matmuls of one input combined by a map: one kernel";
  let description = [{
    `map(x · Aᵀ, x · Bᵀ)` -- a map whose two inputs are the results of two
    matmuls of the same activations, as in SwiGLU's `silu(gate) * up` --
    becomes one `circuit.gated_matmul` whose `combine` body is the map's
    body: the two products are never stored, and `x` is read once.

    Legal when both matmuls have no epilogue, read the same `x`, have the
    map as their only user and the map's shape; the map reads both lane for
    lane (no whole-tensor inputs) and has exactly those two inputs; and no
    buffer the matmuls read is written in place between them and the map
    (their reads move to the map's position).
  }];
}

def CircuitMergeSameDispatchPass
    : Circuit_FusionPass<"circuit-merge-same-dispatch", "MergeSameDispatch"> {
  let summary = "Merge matmuls that read the same activations";
  let description = [{
    Matmuls of one activation tensor by different weights (Q, K and V;
    gate and up) become one `circuit.multi_matmul` dispatch, whatever their
    weight formats. Legal when none depends on another, nothing between
    them uses the earlier results, and no in-place write to a buffer they
    read lies between them.
  }];
}

def CircuitCSEQuantizePass
    : Circuit_FusionPass<"circuit-cse-quantize", "CSEQuantize"> {
  let summary = "Quantize each tensor once";
  let description = [{
    Two `circuit.quantize` ops of the same tensor to the same format in one
    graph become one.
  }];
}

def CircuitFusePass : Pass<"circuit-fuse", "::hesper::circuit::GraphOp"> {
  let summary = "Run every fusion pattern set, in order, to a fixed point";
  let description = [{
    Applies the pattern sets of circuit-fuse-pointwise,
    circuit-merge-same-dispatch, circuit-fuse-matmul-epilogue,
    circuit-fuse-reduce-epilogue, circuit-fuse-reduce-into-quantize,
    circuit-cse-quantize and circuit-fuse-scatter one after the other, and
    repeats the sequence until a round changes nothing (a later fusion can
    enable an earlier one). This is the core of the `hesper-fuse` pipeline.
  }];
  let dependentDialects = ["::hesper::circuit::CircuitDialect",
                           "::hesper::exp::ExpDialect"];
  let options = [
    Option<"maxRounds", "max-rounds", "unsigned", /*default=*/"16",
           "Give up after this many rounds (each must make progress)">,
  ];
  let statistics = [
    Statistic<"numFused", "fused", "Number of primitives fused away">,
    Statistic<"numRounds", "rounds", "Rounds until nothing changed">,
  ];
}

def CircuitAutodiffPass : Pass<"circuit-autodiff", "::mlir::ModuleOp"> {
  let summary = "Build the gradient graph of a graph by reverse-mode AD";
  let description = [{
    For each selected `circuit.graph @f(args...) -> (results...)`, adds
    `@f_grad(args..., d_results...) -> (results..., d_args...)` after it:
    the forward primitives, then the vector-Jacobian product of each one
    in reverse order, built from the same primitives so that `hesper-fuse`
    and the lowerings handle it like any other graph. `d_results` are the
    cotangents of the results (the seed of a scalar loss is a tensor<1xf32>
    holding 1), `d_args` the gradients with respect to the arguments named
    in `wrt` (their `circuit.name`), or every f32 argument by default.

    Rules exist for map, reduce (sum, sum_sq, max, with a prologue),
    reduce_epilogue and matmul epilogues (split into their parts first),
    matmul with f32 operands (dX = dY·W, dW = dYᵀ·X), gather (the
    source's gradient is summed in lane order, with no atomics), and
    scatter into a fresh buffer; inside bodies, one rule per exp op.
    Anything else on the gradient path is an error naming the op.
  }];
  let options = [
    Option<"graphName", "graph", "std::string", /*default=*/"\"\"",
           "Differentiate only this graph (default: every graph)">,
    ListOption<"wrt", "wrt", "std::string",
               "Names of the arguments to differentiate with respect to "
               "(default: every f32 argument)">,
  ];
  let dependentDialects = ["::hesper::circuit::CircuitDialect",
                           "::hesper::exp::ExpDialect"];
}

def CircuitCountDispatchesPass
    : Pass<"circuit-count-dispatches", "::mlir::ModuleOp"> {
  let summary = "Report how many kernels each graph will launch";
  let description = [{
    Counts the dispatch-level primitives of each graph (one kernel each
    after lowering) and prints `graph @name: N dispatches (...)` to the
    standard output, with a breakdown by op, one line per graph in the
    order the graphs appear in the module; the total is also the pass
    statistic `dispatches`. It runs on the module, not on each graph, so
    that the lines of several graphs never interleave.
  }];
  let statistics = [
    Statistic<"numDispatches", "dispatches", "Number of kernels to launch">,
  ];
}

#endif // HESPER_DIALECT_CIRCUIT_TRANSFORMS_PASSES_TD
