//===- ShaderMOps.td - ShaderM dialect operations ----------*- tablegen -*-===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//

#ifndef HESPER_DIALECT_SHADERM_IR_SHADERMOPS_TD
#define HESPER_DIALECT_SHADERM_IR_SHADERMOPS_TD

include "Hesper/Dialect/ShaderM/IR/ShaderMBase.td"
include "mlir/IR/SymbolInterfaces.td"
include "mlir/Interfaces/ControlFlowInterfaces.td"
include "mlir/Interfaces/FunctionInterfaces.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

//===----------------------------------------------------------------------===//
// Kernel
//===----------------------------------------------------------------------===//

def ShaderM_KernelOp : ShaderM_Op<"kernel", [
    IsolatedFromAbove, FunctionOpInterface, Symbol, SingleBlock,
    AutomaticAllocationScope]> {
  let summary = "a GPU kernel with its workgroup size and bindings";
  let description = [{
    A kernel is a function every lane of a dispatch runs. Its arguments are
    its bindings, in binding order: storage buffers (`!shaderm.buffer`) and
    scalar parameters (`i32`, `f32`, passed as push constants). It returns
    nothing; its body ends with `shaderm.return`.

    `workgroup_size` gives the lanes per workgroup in x, y, z (at most 1024
    in all). Optional launch hints: `subgroup_size` states the subgroup
    width the body assumes (the compiler rejects a target with another one),
    and `min_workgroups_per_sm` asks the backend to limit registers so that
    many workgroups fit on one multiprocessor (CUDA `__launch_bounds__`).
    Two hints only the CPU target reads (tuning knobs, docs/Tuning.md):
    `host_threads` caps the host threads the workgroups of one launch are
    spread over, and `vector_bits` (128, 256 or 512) is the vector width
    LLVM's vectorizers prefer for the kernel.

    ```mlir
    shaderm.kernel @scale(%x: !shaderm.buffer<1024xf32, read_only>,
                          %y: !shaderm.buffer<1024xf32>, %s: f32)
        workgroup_size(256, 1, 1) {
      %i = shaderm.global_id x
      %v = shaderm.load %x[%i] : !shaderm.buffer<1024xf32, read_only> -> f32
      %r = exp.mul %v, %s : f32
      shaderm.store %r, %y[%i] : f32, !shaderm.buffer<1024xf32>
      shaderm.return
    }
    ```
  }];
  let arguments = (ins SymbolNameAttr:$sym_name,
                       TypeAttrOf<FunctionType>:$function_type,
                       OptionalAttr<DictArrayAttr>:$arg_attrs,
                       OptionalAttr<DictArrayAttr>:$res_attrs,
                       DenseI32ArrayAttr:$workgroup_size,
                       OptionalAttr<I32Attr>:$subgroup_size,
                       OptionalAttr<I32Attr>:$min_workgroups_per_sm,
                       OptionalAttr<I32Attr>:$host_threads,
                       OptionalAttr<I32Attr>:$vector_bits);
  let regions = (region SizedRegion<1>:$body);
  let hasCustomAssemblyFormat = 1;
  let hasVerifier = 1;
  let hasRegionVerifier = 1;
  let extraClassDeclaration = [{
    /// FunctionOpInterface hooks.
    ::llvm::ArrayRef<::mlir::Type> getArgumentTypes() {
      return getFunctionType().getInputs();
    }
    ::llvm::ArrayRef<::mlir::Type> getResultTypes() {
      return getFunctionType().getResults();
    }
    ::mlir::Region *getCallableRegion() { return &getBody(); }

    /// Total lanes of one workgroup.
    int64_t getWorkgroupLanes();
    /// Bytes of workgroup memory the kernel allocates.
    int64_t getSharedMemoryBytes();
  }];
  let builders = [
    OpBuilder<(ins "::llvm::StringRef":$name, "::mlir::TypeRange":$argTypes,
                   "::llvm::ArrayRef<int32_t>":$workgroupSize)>
  ];
}

def ShaderM_ReturnOp : ShaderM_Op<"return", [Pure, Terminator, ReturnLike,
                                             HasParent<"KernelOp">]> {
  let summary = "end of a kernel";
  let description = [{
    Ends the kernel body; it is the last op of the kernel's single block.
    Lanes that have no work (a guard on the global id) skip it with
    `scf.if`, and must still reach every barrier the others reach.

    ```mlir
    shaderm.return
    ```
  }];
  let assemblyFormat = "attr-dict";
}

//===----------------------------------------------------------------------===//
// Builtin ids
//===----------------------------------------------------------------------===//

class ShaderM_IdOp<string mnemonic, string what>
    : ShaderM_Op<mnemonic, [Pure]> {
  let summary = what;
  let description = what # [{ in one grid dimension, as `index`. Only valid
    inside a kernel.

    ```mlir
    %id = shaderm.}] # mnemonic # [{ x
    ```
  }];
  let arguments = (ins ShaderM_Dim:$dim);
  let results = (outs Index:$result);
  let assemblyFormat = "$dim attr-dict";
  let hasVerifier = 1;
}

def ShaderM_GlobalIdOp : ShaderM_IdOp<"global_id",
    "index of this lane in the whole dispatch (workgroup_id * size + local_id)">;
def ShaderM_LocalIdOp : ShaderM_IdOp<"local_id",
    "index of this lane within its workgroup">;
def ShaderM_WorkgroupIdOp : ShaderM_IdOp<"workgroup_id",
    "index of this workgroup in the grid">;
def ShaderM_NumWorkgroupsOp : ShaderM_IdOp<"num_workgroups",
    "number of workgroups in the grid">;

def ShaderM_SubgroupIdOp : ShaderM_Op<"subgroup_id", [Pure]> {
  let summary = "index of this lane's subgroup within its workgroup";
  let description = [{
    `local_id` (linearized) divided by the subgroup size. Only valid inside a
    kernel.

    ```mlir
    %warp = shaderm.subgroup_id
    ```
  }];
  let results = (outs Index:$result);
  let assemblyFormat = "attr-dict";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Memory
//===----------------------------------------------------------------------===//

def ShaderM_SharedAllocOp : ShaderM_Op<"shared_alloc"> {
  let summary = "allocate workgroup (shared) memory";
  let description = [{
    Reserves an array of workgroup memory for the kernel it appears in. Its
    contents are undefined until written. Only valid inside a kernel, at any
    depth; the allocation lives for the whole dispatch.

    ```mlir
    %tile = shaderm.shared_alloc : !shaderm.shared<256xf32>
    ```
  }];
  let results = (outs Res<ShaderM_SharedType, "the allocation",
                          [MemAlloc<AutomaticAllocationScopeResource>]>:$result);
  let assemblyFormat = "attr-dict `:` qualified(type($result))";
  let hasVerifier = 1;
}

def ShaderM_LoadOp : ShaderM_Op<"load"> {
  let summary = "read an element (or a vector of elements) from memory";
  let description = [{
    Reads the element at `index` of a buffer or of shared memory. With a
    vector result type, reads that many consecutive elements starting at
    `index`: a vectorized load, which the lowering marks as aligned to the
    vector's size in bytes (or the largest power of two dividing it), so
    `index` must be a multiple of the vector length. Only
    valid inside a kernel. Out-of-range indices are undefined: guard them.

    ```mlir
    %v = shaderm.load %buf[%i] : !shaderm.buffer<1024xf32, read_only> -> f32
    %q = shaderm.load %buf[%j] : !shaderm.buffer<1024xf32, read_only> -> vector<4xf32>
    ```
  }];
  let arguments = (ins Arg<ShaderM_MemoryType, "memory to read",
                           [MemRead]>:$memory,
                       Index:$index);
  let results = (outs AnyTypeOf<[AnySignlessInteger, F16, F32,
                                 VectorOfRankAndType<[1], [AnySignlessInteger,
                                                           F16, F32]>]>:$result);
  let assemblyFormat =
      "$memory `[` $index `]` attr-dict `:` type($memory) `->` type($result)";
  let hasVerifier = 1;
}

def ShaderM_StoreOp : ShaderM_Op<"store"> {
  let summary = "write an element (or a vector of elements) to memory";
  let description = [{
    Writes `value` at `index` of a read-write buffer or of shared memory; a
    vector value writes consecutive elements, with the same alignment
    contract as a vector `load`. Storing into a `read_only`
    buffer is an error. Only valid inside a kernel.

    ```mlir
    shaderm.store %v, %out[%i] : f32, !shaderm.buffer<1024xf32>
    ```
  }];
  let arguments = (ins AnyTypeOf<[AnySignlessInteger, F16, F32,
                                  VectorOfRankAndType<[1], [AnySignlessInteger,
                                                            F16, F32]>]>:$value,
                       Arg<ShaderM_MemoryType, "memory to write",
                           [MemWrite]>:$memory,
                       Index:$index);
  let assemblyFormat = [{
    $value `,` $memory `[` $index `]` attr-dict `:` type($value) `,`
    type($memory)
  }];
  let hasVerifier = 1;
}

def ShaderM_AtomicRMWOp : ShaderM_Op<"atomic_rmw",
    [AllTypesMatch<["value", "result"]>]> {
  let summary = "atomic read-modify-write of one element";
  let description = [{
    Atomically replaces `memory[index]` by `kind(memory[index], value)` and
    returns the old value. Integer elements take every kind; `f32` takes
    `add`, `max`, `min` and `exchange`. Float atomics make sums depend on
    lane timing: Hesper's own lowerings never use them for reductions.

    ```mlir
    %old = shaderm.atomic_rmw add %one, %counter[%c0] : i32, !shaderm.buffer<1xi32>
    ```
  }];
  let arguments = (ins ShaderM_AtomicKind:$kind,
                       AnyTypeOf<[I32, I64, F32]>:$value,
                       Arg<ShaderM_MemoryType, "memory to update",
                           [MemRead, MemWrite]>:$memory,
                       Index:$index);
  let results = (outs AnyTypeOf<[I32, I64, F32]>:$result);
  let assemblyFormat = [{
    $kind $value `,` $memory `[` $index `]` attr-dict `:` type($value) `,`
    type($memory)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Matrix tiles of a subgroup (tensor cores, cooperative matrices)
//===----------------------------------------------------------------------===//

// upstream's !gpu.mma_matrix (GPUBase.td is not included: its enums would
// be generated again with this dialect's).
def ShaderM_MatrixTile : Type<
    CPred<"::llvm::isa<::mlir::gpu::MMAMatrixType>($_self)">,
    "a gpu.mma_matrix tile", "::mlir::gpu::MMAMatrixType">;

def ShaderM_MatrixLoadOp : ShaderM_Op<"matrix_load"> {
  let summary = "a subgroup loads a matrix tile for the matrix units";
  let description = [{
    Every lane of a subgroup executes it together (uniform control flow in
    the subgroup): the subgroup reads a 16 x 16 matrix whose element (r, c)
    is `memory[index + r * lead + c]` (row-major), or with `transpose`
    `memory[index + c * lead + r]` (column-major), into a value spread over
    its lanes in the target's own way. `lead` must be at least 16 and a
    whole number of 16-byte units, and `index * element bytes` a multiple
    of 32 (the alignment NVIDIA's `wmma` loads need). Lowered to `gpu.subgroup_mma_load_matrix`: `wmma` on CUDA,
    a cooperative-matrix load on SPIR-V; the CPU target's stand-in
    (`cpu:...:mma`) holds the whole tile in every lane.

    ```mlir
    %a = shaderm.matrix_load %xs[%i] {lead = 64, transpose}
        : !shaderm.shared<1024xf16> -> !gpu.mma_matrix<16x16xf16, "AOp">
    ```
  }];
  let arguments = (ins Arg<ShaderM_MemoryType, "memory to read",
                           [MemRead]>:$memory,
                       Index:$index, I64Attr:$lead, UnitAttr:$transpose);
  let results = (outs ShaderM_MatrixTile:$result);
  let assemblyFormat =
      "$memory `[` $index `]` attr-dict `:` type($memory) `->` type($result)";
  let hasVerifier = 1;
}

def ShaderM_MatrixMmaOp : ShaderM_Op<"matrix_mma", [Pure,
    AllTypesMatch<["acc", "result"]>]> {
  let summary = "a subgroup multiplies two matrix tiles and adds a third";
  let description = [{
    `result = a * b + acc` over 16 x 16 tiles, computed by the whole
    subgroup together. `a_transpose` and `b_transpose` state how `a` and
    `b` were loaded (NVIDIA's `wmma.mma` must name the loads' layouts); the
    verifier checks them against a `matrix_load` that made the operand.
    f16 tiles accumulate in f32; i8 tiles in i32.

    ```mlir
    %d = shaderm.matrix_mma %a, %b, %c {a_transpose}
        : !gpu.mma_matrix<16x16xf16, "AOp">, !gpu.mma_matrix<16x16xf16, "BOp">
          -> !gpu.mma_matrix<16x16xf32, "COp">
    ```
  }];
  let arguments = (ins ShaderM_MatrixTile:$a, ShaderM_MatrixTile:$b, ShaderM_MatrixTile:$acc,
                       UnitAttr:$a_transpose, UnitAttr:$b_transpose);
  let results = (outs ShaderM_MatrixTile:$result);
  let assemblyFormat = [{
    $a `,` $b `,` $acc attr-dict `:` type($a) `,` type($b) `->` type($result)
  }];
  let hasVerifier = 1;
}

def ShaderM_MatrixFillOp : ShaderM_Op<"matrix_fill", [Pure]> {
  let summary = "an accumulator tile with every element the same value";
  let description = [{
    ```mlir
    %zero = shaderm.matrix_fill %f0 : f32 -> !gpu.mma_matrix<16x16xf32, "COp">
    ```
  }];
  let arguments = (ins AnyTypeOf<[F16, F32, I32]>:$value);
  let results = (outs ShaderM_MatrixTile:$result);
  let assemblyFormat = "$value attr-dict `:` type($value) `->` type($result)";
  let hasVerifier = 1;
}

def ShaderM_MatrixStoreOp : ShaderM_Op<"matrix_store"> {
  let summary = "a subgroup stores an accumulator tile";
  let description = [{
    Writes element (r, c) of a 16 x 16 accumulator tile to
    `memory[index + r * lead + c]`, the whole subgroup together; `lead`
    and `index` obey `matrix_load`'s rules (for 32-bit elements, `lead` a
    multiple of 4).

    ```mlir
    shaderm.matrix_store %d, %out[%i] {lead = 64}
        : !gpu.mma_matrix<16x16xf32, "COp">, !shaderm.shared<4096xf32>
    ```
  }];
  let arguments = (ins ShaderM_MatrixTile:$value,
                       Arg<ShaderM_MemoryType, "memory to write",
                           [MemWrite]>:$memory,
                       Index:$index, I64Attr:$lead);
  let assemblyFormat = [{
    $value `,` $memory `[` $index `]` attr-dict `:` type($value) `,`
    type($memory)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Synchronization
//===----------------------------------------------------------------------===//

def ShaderM_BarrierOp : ShaderM_Op<"barrier"> {
  let summary = "workgroup execution and memory barrier";
  let description = [{
    Every lane of the workgroup waits here until all have arrived; writes to
    shared and buffer memory made before it are visible to the workgroup
    after it. All lanes of a workgroup must reach the same barrier (not in
    divergent control flow). Only valid inside a kernel.

    ```mlir
    shaderm.barrier
    ```
  }];
  let assemblyFormat = "attr-dict";
  let hasVerifier = 1;
}

def ShaderM_SubgroupBarrierOp : ShaderM_Op<"subgroup_barrier"> {
  let summary = "subgroup execution and memory barrier";
  let description = [{
    Like `shaderm.barrier`, for the lanes of one subgroup.

    ```mlir
    shaderm.subgroup_barrier
    ```
  }];
  let assemblyFormat = "attr-dict";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Host schedule
//===----------------------------------------------------------------------===//

def ShaderM_ScheduleOp : ShaderM_Op<"schedule", [
    IsolatedFromAbove, FunctionOpInterface, Symbol, SingleBlock]> {
  let summary = "the ordered kernel launches of one program step";
  let description = [{
    What the host does to run a program once: allocate its intermediate
    buffers, launch kernels in order (each sees every write of the ones
    before it), and hand back the result buffers. Arguments are the
    program's external buffers (graph arguments, written in place where the
    program says so); results are buffers. `convert-circuit-to-shaderm`
    produces one schedule per `circuit.graph`; the runtime records it once
    into a command list and replays it every step.

    ```mlir
    shaderm.schedule @step(%x: !shaderm.buffer<1024xf32>)
        -> !shaderm.buffer<1024xf32> {
      %y = shaderm.alloc : !shaderm.buffer<1024xf32>
      shaderm.launch @scale grid [4, 1, 1] (%x, %y)
          : !shaderm.buffer<1024xf32>, !shaderm.buffer<1024xf32>
      shaderm.output %y : !shaderm.buffer<1024xf32>
    }
    ```
  }];
  let arguments = (ins SymbolNameAttr:$sym_name,
                       TypeAttrOf<FunctionType>:$function_type,
                       OptionalAttr<DictArrayAttr>:$arg_attrs,
                       OptionalAttr<DictArrayAttr>:$res_attrs);
  let regions = (region SizedRegion<1>:$body);
  let hasCustomAssemblyFormat = 1;
  let hasRegionVerifier = 1;
  let extraClassDeclaration = [{
    ::llvm::ArrayRef<::mlir::Type> getArgumentTypes() {
      return getFunctionType().getInputs();
    }
    ::llvm::ArrayRef<::mlir::Type> getResultTypes() {
      return getFunctionType().getResults();
    }
    ::mlir::Region *getCallableRegion() { return &getBody(); }
  }];
}

def ShaderM_AllocOp : ShaderM_Op<"alloc", [HasParent<"ScheduleOp">]> {
  let summary = "a buffer the schedule owns";
  let description = [{
    A device buffer for an intermediate value, alive for the whole schedule
    (its contents are undefined until a kernel writes them).

    ```mlir
    %t = shaderm.alloc : !shaderm.buffer<256xf32>
    ```
  }];
  let results = (outs Res<ShaderM_BufferType, "",
                          [MemAlloc<DefaultResource>]>:$result);
  let assemblyFormat = "attr-dict `:` qualified(type($result))";
}

def ShaderM_LaunchOp : ShaderM_Op<"launch", [HasParent<"ScheduleOp">,
    DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "launch a kernel over a grid of workgroups";
  let description = [{
    Runs `kernel` on `grid` workgroups (x, y, z) with the buffers bound in
    the kernel's binding order. Each buffer must have the length and element
    type of the kernel's binding; a read-write buffer may be bound to a
    read-only binding, not the other way round. The symbol must name a
    `shaderm.kernel` while the kernels are in ShaderM; after
    `convert-shaderm-to-gpu` it names the lowered kernel in the gpu module.

    `traffic`, when present, is the bytes the launch must move at the least
    (rt::LaunchTraffic, for `hesper-run --kernel-times`): `[read, written,
    per_position, window, positions]` -- bytes read and written at every
    run, bytes read per cached position a step attends, the positions a row
    sees at most (0: all) and the cache's positions (0: no cap).
    `convert-circuit-to-shaderm` derives it from the Circuit op the kernel
    computes.

    ```mlir
    shaderm.launch @scale grid [4, 1, 1] (%x, %y)
        {traffic = array<i64: 4096, 4096, 0, 0, 0>}
        : !shaderm.buffer<1024xf32>, !shaderm.buffer<1024xf32>
    ```
  }];
  let arguments = (ins FlatSymbolRefAttr:$kernel, DenseI64ArrayAttr:$grid,
                       Variadic<ShaderM_BufferType>:$bindings,
                       OptionalAttr<DenseI64ArrayAttr>:$traffic);
  let assemblyFormat = [{
    $kernel `grid` $grid `(` $bindings `)` attr-dict (`:` type($bindings)^)?
  }];
  let hasVerifier = 1;
}

def ShaderM_OutputOp : ShaderM_Op<"output", [Pure, Terminator, ReturnLike,
                                             HasParent<"ScheduleOp">]> {
  let summary = "the result buffers of a schedule";
  let description = [{
    ```mlir
    shaderm.output %y : !shaderm.buffer<1024xf32>
    ```
  }];
  let arguments = (ins Variadic<ShaderM_BufferType>:$results);
  let assemblyFormat = "($results^ `:` type($results))? attr-dict";
}

#endif // HESPER_DIALECT_SHADERM_IR_SHADERMOPS_TD
