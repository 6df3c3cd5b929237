//===- Pipelines.cpp - The named compilation pipelines --------------------===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//
//
// Each pipeline is written as the textual pipeline a user would pass to
// hesper-opt, so that docs/Pipelines.md, the tests and the tools agree on
// one spelling. The passes must be registered (hesper::registerAllPasses).
//
//===----------------------------------------------------------------------===//

#include "Hesper/Pipelines/Pipelines.h"

#include "mlir/Pass/PassRegistry.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdlib>

using namespace mlir;

/// Appends `text` (a comma-separated list of passes nested in
/// builtin.module) to `pm`; a parse error is a bug in this file.
static void addPipeline(OpPassManager &pm, const std::string &text) {
  if (failed(parsePassPipeline(text, pm, llvm::errs())))
    llvm::report_fatal_error(llvm::Twine("hesper: bad built-in pipeline: ") +
                             text);
}

std::string hesper::findLibdevice() {
  SmallVector<std::string> roots;
  if (const char *home = std::getenv("CUDA_HOME"))
    roots.push_back(home);
  roots.push_back("/usr/local/cuda");
  for (const std::string &root : roots) {
    SmallString<128> path(root);
    llvm::sys::path::append(path, "nvvm", "libdevice", "libdevice.10.bc");
    if (llvm::sys::fs::exists(path))
      return std::string(path);
  }
  return "";
}

void hesper::buildHesperToGPUPipeline(OpPassManager &pm, bool fuse,
                                      bool sharedMemoryAsAlloc,
                                      unsigned subgroupSize,
                                      bool singleLane) {
  std::string text;
  if (fuse)
    text += "hesper-fuse,";
  // One kernel per dispatch op, then one copy of identical kernels (the
  // layers of a model launch the same ones).
  text += "convert-circuit-to-shaderm{subgroup-size=" +
          std::to_string(subgroupSize) +
          (singleLane ? " single-lane=true" : "") +
          "},shaderm-dedup-kernels,";
  text += "convert-shaderm-to-gpu{shared-memory-as-alloc=";
  text += sharedMemoryAsAlloc ? "true" : "false";
  text += "},convert-exp-to-std,canonicalize,cse,loop-invariant-code-motion";
  addPipeline(pm, text);
}

void hesper::buildHesperToPTXPipeline(OpPassManager &pm,
                                      const PTXPipelineOptions &options) {
  buildHesperToGPUPipeline(pm, options.fuse, /*sharedMemoryAsAlloc=*/false,
                           /*subgroupSize=*/32);
  std::string libdevice = options.libdevice;
  if (libdevice.empty())
    libdevice = findLibdevice();
  std::string text = "hesper-specialize-subgroup-size{size=32},"
                     "hesper-expand-subgroup-reduce{size=32},canonicalize,";
  text += "nvvm-attach-target{chip=" + options.chip +
          " features=" + options.features;
  if (!libdevice.empty())
    text += " l=" + libdevice;
  text += "},gpu.module(convert-scf-to-cf,convert-gpu-to-nvvm),"
          "reconcile-unrealized-casts,gpu-module-to-binary{format=" +
          options.format + "}";
  addPipeline(pm, text);
}

void hesper::buildHesperToSPIRVPipeline(OpPassManager &pm,
                                        const SPIRVPipelineOptions &options) {
  buildHesperToGPUPipeline(pm, options.fuse, /*sharedMemoryAsAlloc=*/true,
                           options.subgroupSize);
  // Everything the device offers is declared; spirv-update-vce then keeps
  // only the capabilities and extensions the kernels use.
  std::string caps = "Shader,Int64,GroupNonUniform,GroupNonUniformArithmetic,"
                     "GroupNonUniformShuffle,GroupNonUniformBallot,"
                     "GroupNonUniformVote";
  std::string exts = "SPV_KHR_storage_buffer_storage_class";
  if (options.float16) {
    caps += ",Float16,Int16,StorageBuffer16BitAccess";
    exts += ",SPV_KHR_16bit_storage";
  }
  if (options.int8) {
    caps += ",Int8,StorageBuffer8BitAccess";
    exts += ",SPV_KHR_8bit_storage";
  }
  std::string text = "hesper-specialize-subgroup-size{size=" +
                     std::to_string(options.subgroupSize) + "},canonicalize,";
  text += "spirv-attach-target{ver=v1.3 client_api=Vulkan caps=" + caps +
          " exts=" + exts + "},hesper-prepare-spirv-kernels,";
  text += "gpu.module(convert-math-to-spirv),convert-gpu-to-spirv,"
          "spirv.module(spirv-lower-abi-attrs,"
          "spirv-update-vce),hesper-serialize-spirv";
  addPipeline(pm, text);
}

void hesper::registerHesperPipelines() {
  PassPipelineRegistration<GPUPipelineOptions>(
      "hesper-to-gpu",
      "Fuse Circuit graphs, lower them to ShaderM kernels and a schedule, "
      "then kernels to gpu.func and Exp to arith/math/gpu",
      [](OpPassManager &pm, const GPUPipelineOptions &options) {
        buildHesperToGPUPipeline(pm, options.fuse, false, 0);
      });
  PassPipelineRegistration<PTXPipelineOptions>(
      "hesper-to-ptx",
      "hesper-to-gpu, then NVVM and a gpu.binary holding PTX (format=isa) "
      "or a cubin (format=bin)",
      buildHesperToPTXPipeline);
  PassPipelineRegistration<SPIRVPipelineOptions>(
      "hesper-to-spirv",
      "hesper-to-gpu, then SPIR-V for Vulkan serialized into a gpu.binary",
      buildHesperToSPIRVPipeline);
}
