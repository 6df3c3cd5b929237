//===- Passes.td - Passes of the compilation targets -------*- tablegen -*-===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//
//
// The target-specific steps of the pipelines (lib/Target): the subgroup
// size every GPU target fixes, NVVM's subgroup-reduce expansion, the
// SPIR-V kernels' ABI and serialization, and the CPU target's kernels and
// native code.
//
//===----------------------------------------------------------------------===//

#ifndef HESPER_TARGET_PASSES_TD
#define HESPER_TARGET_PASSES_TD

include "mlir/Pass/PassBase.td"

def SpecializeSubgroupSizePass
    : Pass<"hesper-specialize-subgroup-size", "::mlir::ModuleOp"> {
  let summary = "Fix the subgroup size of every kernel to the target's";
  let description = [{
    Replaces `gpu.subgroup_size` in every kernel `gpu.func` by the target's
    subgroup size (the NVVM and SPIR-V lowerings need a constant: NVVM has
    no lowering for the op, and SPIR-V shuffles need a constant width), and
    records it in the kernel's `hesper.abi`. A kernel whose ABI states
    another subgroup size is an error.
  }];
  let options = [
    Option<"subgroupSize", "size", "unsigned", "32",
           "Lanes per subgroup of the target device">
  ];
  let dependentDialects = ["::mlir::arith::ArithDialect"];
}

def EmulateWideShufflesPass
    : Pass<"hesper-emulate-wide-shuffles", "::mlir::ModuleOp"> {
  let summary = "Carry out gpu.shuffle ops wider than the target's subgroups "
                "through workgroup memory";
  let description = [{
    A `gpu.shuffle` whose width is not the target's subgroup size (a
    program written for CUDA's warps of 32 on the CPU target's one-lane
    subgroups, or on a Vulkan device with subgroups of 8) is carried out by
    the whole workgroup: every thread stores its value in a workgroup
    buffer (one element per thread), a barrier, and each reads its source
    lane's, between barriers. Lanes are numbered as CUDA numbers a warp's
    (the linear thread id modulo 32, or modulo the width where that is a
    larger constant); the source is lane ^ offset, lane + offset, lane -
    offset or the offset itself, valid when it lies in [0, width), and an
    invalid source reads the thread's own value (as NVVM's shfl does).
    The barriers need every thread of the workgroup to reach the shuffle:
    one under a branch, or in a loop whose bounds are not constants, is an
    error. Shuffles whose width is the subgroup size (a constant, or
    `gpu.subgroup_size`) are left to the target. Kernels need a
    known_block_size.
  }];
  let options = [
    Option<"subgroupSize", "size", "unsigned", "32",
           "Lanes per subgroup of the target device">
  ];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::memref::MemRefDialect"];
}

def ExpandSubgroupReducePass
    : Pass<"hesper-expand-subgroup-reduce", "::mlir::ModuleOp"> {
  let summary = "Expand gpu.subgroup_reduce into butterfly shuffles";
  let description = [{
    For targets without a subgroup-reduce instruction (NVVM): every
    `gpu.subgroup_reduce` of 32-bit values becomes log2(size) `gpu.shuffle
    xor` steps and the combining op. `gpu.subgroup_id`, which NVVM has no
    register for, becomes the linear thread id divided by the size.
  }];
  let options = [
    Option<"subgroupSize", "size", "unsigned", "32",
           "Lanes per subgroup of the target device">
  ];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::vector::VectorDialect"];
}

def PrepareSPIRVKernelsPass
    : Pass<"hesper-prepare-spirv-kernels", "::mlir::ModuleOp"> {
  let summary = "Attach the Vulkan entry-point and binding ABI to kernels";
  let description = [{
    Before `convert-gpu-to-spirv`: every `gpu.func` kernel gets
    `spirv.entry_point_abi` with its workgroup size and every argument a
    `spirv.interface_var_abi` with descriptor set 0 and its binding index,
    the layout the Hesper Vulkan runtime creates. Run after
    `spirv-attach-target`: the gpu.module's SPIR-V target is also set as its
    `spirv.target_env` attribute, which passes such as
    `convert-math-to-spirv` look up. Vector loads and stores of buffers
    (which upstream lowers through a pointer cast that Vulkan's logical
    addressing forbids) become one access per element. With
    `subgroup-size`, the target's resource limits state that subgroup size
    (the `gpu.shuffle` conversion requires a width equal to it).
  }];
  let options = [
    Option<"subgroupSize", "subgroup-size", "unsigned", "0",
           "Lanes per subgroup of the device (0: keep the target's limit)">
  ];
  let dependentDialects = ["::mlir::spirv::SPIRVDialect",
                           "::mlir::memref::MemRefDialect",
                           "::mlir::vector::VectorDialect"];
}

def SerializeSPIRVPass : Pass<"hesper-serialize-spirv", "::mlir::ModuleOp"> {
  let summary = "Serialize SPIR-V modules into gpu.binary ops";
  let description = [{
    After `convert-gpu-to-spirv`: serializes each `spirv.module` produced
    from a `gpu.module` and replaces the `gpu.module` by a `gpu.binary` of
    the same name holding the SPIR-V words (`format = bin`, target the
    module's `#spirv.target_env`). The kernels' `hesper.abi` dictionaries
    stay on the enclosing module as `hesper.kernels`.
  }];
}

def NormalizeGpuKernelsPass
    : Pass<"hesper-normalize-gpu-kernels", "::mlir::ModuleOp"> {
  let summary = "Bring gpu.func kernels written by hand to Hesper's ABI";
  let description = [{
    For gpu dialect programs (`hesper-run prog.mlir` with `func @main`):
    before a kernel pipeline, every kernel of every `gpu.module`
    - takes a buffer per argument: a scalar argument becomes a
      `memref<1xT>` read at the kernel's entry (`index` travels as i64,
      `i1` as i8), the layout Hesper's runtime binds;
    - has its `gpu.all_reduce` ops (with an operation or a region) lowered
      to a tree over a workgroup buffer with barriers, in a fixed order, so
      results do not depend on the device's subgroup size;
    - with `attributions-as-alloc` (SPIR-V, whose conversion takes no
      memory attributions), has its workgroup and private attributions
      turned into `memref.alloc` in memory space 3 and `memref.alloca` in
      memory space 6 (Workgroup and Function storage).
    A kernel needs a known block size (`known_block_size`, which
    `gpu-kernel-outlining` sets, or the constant block size every launch
    of it uses). `gpu.printf` and `cf.assert` (which prints when it fails)
    with `allow-printf=false`, and `gpu.dynamic_shared_memory`, are errors
    naming the op.
  }];
  let options = [
    Option<"attributionsAsAlloc", "attributions-as-alloc", "bool", "false",
           "Turn memory attributions into memref.alloc/alloca (SPIR-V)">,
    Option<"allowPrintf", "allow-printf", "bool", "true",
           "Accept gpu.printf and cf.assert (the target lowers them)">,
    Option<"sizesForDynamicShapes", "sizes-for-dynamic-shapes", "bool",
           "false",
           "A kernel memref of dynamic shape becomes a one-element memref "
           "(the buffer's pointer) and a memref of its i64 sizes right "
           "after it, from which the kernel rebuilds the view (targets "
           "that bind a buffer as a pointer alone: CUDA, the CPU)">,
    Option<"flattenDynamicShapes", "flatten-dynamic-shapes", "bool",
           "false",
           "A kernel memref of dynamic shape takes a memref of its i64 "
           "sizes right after it, which its memref.dim ops read; one of "
           "rank above one becomes a 1-D memref of its elements, its loads "
           "and stores indexed row-major. For SPIR-V, whose logical "
           "addressing has no view to rebuild">,
    Option<"allowLLVMFuncs", "allow-llvm-funcs", "bool", "true",
           "Accept llvm.func in a gpu.module (kernels or helpers written "
           "in the llvm dialect; SPIR-V cannot take them)">,
  ];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::gpu::GPUDialect",
                           "::mlir::memref::MemRefDialect",
                           "::mlir::scf::SCFDialect"];
}

def EmulateMatrixTilesPass
    : Pass<"hesper-emulate-matrix-tiles", "::mlir::ModuleOp"> {
  let summary = "Subgroup matrix tiles as loops of one lane (CPU target)";
  let description = [{
    The CPU target's stand-in for matrix units, to run kernels written for
    them (convert-circuit-to-shaderm{matrix-units}) on fibers: each
    `gpu.subgroup_mma_*` tile becomes a `vector<256xT>` that one lane holds
    whole (element (r, c) at r * 16 + c); loads and stores become loops
    over the tile's elements at `index + r * lead + c` (`c * lead + r`
    transposed), and a compute a loop over K per element, in the sums'
    type (f16 products in f32, i8 in i32). Loop-carried tiles take the
    vector type. Memory of more than one dimension is an error.
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::memref::MemRefDialect",
                           "::mlir::scf::SCFDialect",
                           "::mlir::vector::VectorDialect"];
}

def GpuToCPUPass : Pass<"hesper-gpu-to-cpu", "::mlir::ModuleOp"> {
  let summary = "Turn one-lane gpu.func kernels into workgroup functions";
  let description = [{
    For the CPU target: every `gpu.func` kernel of a `gpu.module` (lowered
    with `convert-circuit-to-shaderm{single-lane=true}`, so one lane per
    workgroup) becomes a `func.func` that runs one workgroup, taking its
    buffers, then the workgroup's x, y, z and the grid's x, y, z as `index`
    arguments. Lane and subgroup queries become constants, subgroup
    operations return their operand, barriers disappear, shared memory
    becomes a stack array, `math.fma` a contractible multiply and a
    reassociable add (so dot products vectorize), float adds become
    reassociable, vector loads lose the GPU lowering's alignment promise,
    and exp, expm1, tanh, log, log2, log1p and erf become MLIR's polynomial
    approximations (plain arithmetic the loop vectorizer widens). The functions land in a `builtin.module` marked
    `hesper.cpu_kernels`. Kernels of more than one lane, memory
    attributions and other gpu ops are errors.

    With `threads` (hand-written kernels of gpu dialect programs, after
    `hesper-normalize-gpu-kernels`): every kernel keeps its block size and
    becomes a function that runs one thread: its buffers, workgroup and
    grid x/y/z, thread x/y/z, the workgroup memory (`memref<Sxi8>`: the
    workgroup attributions are views of it at 16-byte aligned offsets,
    private ones stack arrays), and the barrier function and its state
    (`!llvm.ptr`), which `gpu.barrier` calls; subgroups have one lane;
    `gpu.printf` calls the C library's printf; a failing `cf.assert` prints
    CUDA's message for it (the location's file, line and function, the
    block and the thread, the message) and calls the barrier function with
    a null state, which ends the thread (the driver reports the launch as
    failed).
    Arithmetic is left as written. The module's `hesper.kernels` states
    each kernel's workgroup memory bytes.
  }];
  let options = [
    Option<"threads", "threads", "bool", "false",
           "Kernels of several threads per workgroup (gpu dialect programs)">
  ];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::func::FuncDialect",
                           "::mlir::LLVM::LLVMDialect",
                           "::mlir::math::MathDialect",
                           "::mlir::memref::MemRefDialect",
                           "::mlir::scf::SCFDialect",
                           "::mlir::vector::VectorDialect"];
}

def SerializeCPUPass : Pass<"hesper-serialize-cpu", "::mlir::ModuleOp"> {
  let summary = "Compile the CPU kernels to a shared object in a gpu.binary";
  let description = [{
    For each module of workgroup functions (in the llvm dialect):
    translates it to LLVM IR, adds one C entry point per kernel
    (`void k(void *const *bindings, const void *push, const uint32_t
    grid[3], uint64_t begin, uint64_t end)`, running workgroups
    begin..end-1 in x-fastest order), optimizes at O3 for the chosen CPU,
    emits an object file, links it with the system C compiler driver
    (`cc -shared`) and replaces the module with a `gpu.binary` whose object
    holds the shared object and the property `format = "elf:<features>"`
    naming the CPU features the runtime must find on the host.
  }];
  let options = [
    Option<"isaName", "isa", "std::string", "\"native\"",
           "native (the host) or an x86-64 level: x86-64, x86-64-v2, "
           "x86-64-v3, x86-64-v4">,
    Option<"dumpDir", "dump-dir", "std::string", "\"\"",
           "Write the object code (hesper_kernels.o) and its assembly "
           "(hesper_kernels.s) here">,
    ListOption<"hostFeatures", "host-features", "std::string",
               "With isa=native: the host's features, as the runtime that "
               "will load the code names those it checks (GCC's names); "
               "by default, the host's features as LLVM detects them, "
               "among those the runtime can check">,
  ];
  let dependentDialects = ["::mlir::gpu::GPUDialect",
                           "::mlir::LLVM::LLVMDialect"];
}

#endif // HESPER_TARGET_PASSES_TD
