//===- InitAllPasses.cpp - Register Hesper and upstream passes -----------===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//

#include "Hesper/InitAllPasses.h"

#include "Hesper/Conversion/Passes.h"
#include "Hesper/Dialect/Circuit/Transforms/Passes.h"
#include "Hesper/Dialect/ShaderM/Transforms/Passes.h"
#include "Hesper/Pipelines/Pipelines.h"
#include "Hesper/Target/Passes.h"

#include "mlir/Conversion/Passes.h"
#include "mlir/Dialect/GPU/Transforms/Passes.h"
#include "mlir/Dialect/SPIRV/Transforms/Passes.h"
#include "mlir/Transforms/Passes.h"

void hesper::registerAllPasses() {
  // Hesper's own: the Circuit fusion passes and the hesper-fuse pipeline.
  circuit::registerCircuitPasses();
  shaderm::registerShaderMTransformsPasses();
  registerHesperConversionPasses();
  registerHesperPipelines();
  registerTargetPassesAndPipelines();

  // Generic transformations: canonicalize, cse, inline, symbol-dce, ...
  mlir::registerTransformsPasses();
  // gpu-kernel-outlining, nvvm-attach-target, spirv-attach-target,
  // gpu-module-to-binary, ...
  mlir::registerGPUPasses();
  // spirv-lower-abi-attrs, spirv-update-vce, ...
  mlir::spirv::registerSPIRVPasses();

  // The conversions Hesper's pipelines are made of, registered one by one so
  // that the tools link only what they use.
  mlir::registerArithToLLVMConversionPass();
  mlir::registerConvertArithToSPIRVPass();
  mlir::registerConvertControlFlowToLLVMPass();
  mlir::registerConvertFuncToLLVMPass();
  mlir::registerConvertGPUToSPIRVPass();
  mlir::registerConvertGpuOpsToNVVMOpsPass();
  mlir::registerConvertIndexToLLVMPass();
  mlir::registerConvertMathToLLVMPass();
  mlir::registerConvertMathToLibmPass();
  mlir::registerConvertMathToSPIRVPass();
  mlir::registerConvertNVVMToLLVMPass();
  mlir::registerConvertVectorToLLVMPassPass();
  mlir::registerFinalizeMemRefToLLVMConversionPass();
  mlir::registerGpuToLLVMConversionPass();
  mlir::registerReconcileUnrealizedCastsPass();
  mlir::registerSCFToControlFlowPass();
  mlir::registerUBToLLVMConversionPass();
}
