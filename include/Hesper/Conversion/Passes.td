//===- Passes.td - Hesper conversion passes ----------------*- tablegen -*-===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//

#ifndef HESPER_CONVERSION_PASSES_TD
#define HESPER_CONVERSION_PASSES_TD

include "mlir/Pass/PassBase.td"

def ConvertExpToStdPass : Pass<"convert-exp-to-std"> {
  let summary = "Lower exp ops to arith, math and gpu";
  let description = [{
    Replaces every `exp` op by upstream ops of the same types: arithmetic,
    comparisons, selection, conversions and bit operations by `arith`; math
    functions by `math` (sigmoid, SiLU and the tanh form of GELU expanded);
    packing and the 8-bit dot product by shifts, masks and integer
    arithmetic; division by a constant by a shift (powers of two) or a
    64-bit multiply-high by a magic number, exact for every 32-bit input;
    lane operations by `gpu.lane_id`, `gpu.subgroup_size`,
    `gpu.subgroup_reduce`, `gpu.shuffle xor` and `gpu.subgroup_broadcast`.
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::vector::VectorDialect",
                           "::mlir::math::MathDialect",
                           "::mlir::gpu::GPUDialect"];
}

def ConvertCircuitToShaderMPass
    : Pass<"convert-circuit-to-shaderm", "::mlir::ModuleOp"> {
  let summary = "Lower Circuit graphs to ShaderM kernels and a host schedule";
  let description = [{
    Turns every `circuit.graph` of the module into `shaderm.kernel`s, one per
    dispatch-level op, and a `shaderm.schedule` of the same name that
    allocates the intermediate buffers and launches the kernels in order.
    Tensors become buffers of their elements (quantized tensors: buffers of
    32-bit words holding the GGUF blocks); in-place writes reuse the
    destination's buffer. Algorithms:

    - `map`, `gather`, `scatter`, `scatter_multi`, `zeros`: one lane per
      element, workgroups of up to 256 lanes, a bounds guard (bodies with
      subgroup ops run on every lane and only the stores are guarded).
    - `reduce`, `reduce_epilogue`, `reduce_scatter_epilogue`: one workgroup
      per row; each lane accumulates a strided slice of the row in a fixed
      order, the lanes are combined (below), and the epilogue runs strided
      over the row.
    - Combining the lanes of a workgroup: with 64 lanes or more (a whole
      number of subgroups on devices with 8 to 64 lanes per subgroup), a
      subgroup reduction, the first lane of each subgroup writing its total
      to shared memory, one barrier, and every lane adding the subgroup
      totals in index order; below 64 lanes, a shared-memory tree with a
      barrier per step. Both orders are fixed, so results are
      deterministic on a given device.
    - `matmul`, `multi_matmul`: one 64-lane workgroup per output element
      (matvec: per weight row), lanes striding over K, the dot product
      combined as above, the epilogue on lane 0; `multi_matmul` is one
      kernel over the concatenated rows. Weights are decoded in the kernel:
      `f32`/`f16` four elements per vector load when K is a multiple of 4;
      `q8_0` per 32-value block; `q4_k` per quarter super-block (64 values,
      two 6-bit scale/min pairs, the mins applied once to the sum of x);
      `q6_k` per 16 values sharing a scale.
    - `quantize` and quantized `reduce_epilogue` results (`q8_0`, `q8_1`):
      the row staged in shared memory, one lane per output word.

    With `subgroup-size` set (the pipelines pass the target's), matmul
    kernels give each subgroup one output row, combined by a subgroup
    reduction alone: 64 / subgroup-size rows per workgroup, no shared
    memory and no barrier.

    With `single-lane` (the CPU target), every workgroup is one lane: the
    unit of work one thread takes. Elementwise kernels take an element per
    workgroup, reductions a row, matmuls a weight row for up to 8 rows of x
    (the weight row is decoded once for all of them), attention a (query
    row, head) pair with its accumulators in a scratch row. Lanes are never
    combined, so no kernel needs a barrier, and subgroups have one lane.

    What is not lowered yet (`i2_s` weights, `q8_1` activations) is refused
    with an error naming it, as are grids that do not fit.
  }];
  let options = [
    Option<"subgroupSize", "subgroup-size", "int64_t", "0",
           "Lanes per subgroup of the target (0: unknown; kernels then "
           "combine lanes through shared memory)">,
    Option<"singleLane", "single-lane", "bool", "false",
           "One lane per workgroup (the CPU target)">,
    Option<"matrixUnits", "matrix-units", "bool", "false",
           "Prompt-chunk matmuls multiply 16 x 16 f16 tiles on the "
           "subgroup's matrix units (shaderm.matrix_mma: tensor cores); "
           "not with single-lane">,
    Option<"wideLoads", "wide-loads", "bool", "true",
           "Read runs of elements with one vector load where only that "
           "changes (attention's K rows; the sums keep their order): off "
           "for SPIR-V, whose kernels load a vector one element at a time">,
    Option<"doubleBuffer", "double-buffer", "bool", "true",
           "The tiled GEMM keeps two copies of its workgroup tiles, so that "
           "one slice's loads overlap the previous slice's products: off "
           "for SPIR-V (lavapipe allows 32 KiB of workgroup memory, and "
           "its validation layer counts every kernel's arrays of a module "
           "against that)">,
    Option<"gemmSlice", "gemm-slice", "int64_t", "16",
           "Values of K the tiled GEMM stages per slice, 16 or 32 (more "
           "products between barriers; the CUDA pipeline takes 32); a "
           "kernel whose tiles would pass 48 KiB takes 16">,
    Option<"mutant", "mutant", "std::string", /*default=*/"\"\"",
           "Test only: build one kind of kernel deliberately wrong, to "
           "check that verification catches it: drop-scale, "
           "short-reduction, unmasked-tail, guard-off-by-one, block-size, "
           "tile-layout (matrix units: the x tile read column-major) "
           "(also taken from the module's `hesper.mutant` attribute)">,
  ];
  let dependentDialects = ["::hesper::shaderm::ShaderMDialect",
                           "::hesper::exp::ExpDialect",
                           "::mlir::arith::ArithDialect",
                           "::mlir::scf::SCFDialect",
                           "::mlir::vector::VectorDialect"];
}

def ConvertShaderMToGPUPass
    : Pass<"convert-shaderm-to-gpu", "::mlir::ModuleOp"> {
  let summary = "Lower shaderm kernels to gpu.func kernels";
  let description = [{
    Moves every `shaderm.kernel` of the module into a `gpu.module
    @hesper_kernels` as a `gpu.func ... kernel`: buffer bindings become
    memrefs (in binding order), shared allocations become workgroup
    attributions, builtin ids become `gpu` ids, loads, stores and atomics
    become `memref` (and `vector`) ops, barriers `gpu.barrier`. The kernel
    ABI is recorded on the function as `hesper.abi`: workgroup size,
    shared-memory bytes, and per binding its kind, type and access; the
    workgroup size is also `known_block_size`. Exp ops are left for
    `convert-exp-to-std`.
  }];
  let options = [
    Option<"sharedMemoryAsAlloc", "shared-memory-as-alloc", "bool", "false",
           "Shared allocations become `memref.alloc` in workgroup memory "
           "(what convert-gpu-to-spirv takes) instead of workgroup "
           "attributions (what convert-gpu-to-nvvm takes)">
  ];
  let dependentDialects = ["::mlir::gpu::GPUDialect",
                           "::mlir::memref::MemRefDialect",
                           "::mlir::vector::VectorDialect",
                           "::mlir::arith::ArithDialect"];
}

#endif // HESPER_CONVERSION_PASSES_TD
