//===- CPUTarget.cpp - The native CPU target ------------------------------===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//
//
// cpu[:ISA]: the shared lowering with one lane per workgroup, the kernels
// lowered to the llvm dialect, then native code for the host (`native`, the
// default) or an x86-64 level, linked into a shared object that the CPU
// driver loads and runs on its thread pool.
// cpu[:ISA]:mma: instead the kernels of a GPU with matrix units (tensor
// cores), their lanes run as fibers and their matrix tiles emulated
// (EmulateMatrixTiles.cpp), to test those kernels where no such GPU is.
//
//===----------------------------------------------------------------------===//

#include "CPUPasses.h"

#include "Hesper/Pipelines/Pipelines.h"
#include "Hesper/Target/CPU/CPUTarget.h"
#include "Hesper/Target/Passes.h"
#include "Hesper/Target/Target.h"

#include "mlir/Conversion/ArithToLLVM/ArithToLLVM.h"
#include "mlir/Conversion/ControlFlowToLLVM/ControlFlowToLLVM.h"
#include "mlir/Conversion/FuncToLLVM/ConvertFuncToLLVMPass.h"
#include "mlir/Conversion/MathToLLVM/MathToLLVM.h"
#include "mlir/Conversion/MathToLibm/MathToLibm.h"
#include "mlir/Conversion/MemRefToLLVM/MemRefToLLVM.h"
#include "mlir/Conversion/ReconcileUnrealizedCasts/ReconcileUnrealizedCasts.h"
#include "mlir/Conversion/SCFToControlFlow/SCFToControlFlow.h"
#include "mlir/Conversion/VectorToLLVM/ConvertVectorToLLVMPass.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Transforms/Passes.h"


using namespace mlir;
using namespace hesper;

/// From the modules of workgroup or thread functions hesper-gpu-to-cpu
/// wrote to a gpu.binary holding a shared object.
static void addCPUCodeSteps(OpPassManager &pm, const CPUPipelineOptions &options) {
  // Inside each module of workgroup bodies: upstream's lowering to llvm.
  OpPassManager &bodies = pm.nest<ModuleOp>();
  bodies.addPass(createSCFToControlFlowPass());
  bodies.addPass(createConvertMathToLLVMPass());
  bodies.addPass(createConvertMathToLibmPass());
  bodies.addPass(createConvertVectorToLLVMPass());
  bodies.addPass(createFinalizeMemRefToLLVMConversionPass());
  bodies.addPass(createArithToLLVMConversionPass());
  bodies.addPass(createConvertControlFlowToLLVMPass());
  ConvertFuncToLLVMPassOptions funcs;
  funcs.useBarePtrCallConv = true;
  bodies.addPass(createConvertFuncToLLVMPass(funcs));
  bodies.addPass(createReconcileUnrealizedCastsPass());
  SerializeCPUPassOptions serialize;
  serialize.isaName = options.isa;
  serialize.hostFeatures.assign(options.hostFeatures.begin(),
                                options.hostFeatures.end());
  serialize.dumpDir = options.dumpDir;
  pm.addPass(createSerializeCPUPass(serialize));
}

/// Kernels of several lanes per workgroup: each lane a function the CPU
/// driver runs as a fiber, subgroups of one lane.
static void addThreadedKernelSteps(OpPassManager &pm,
                                   const CPUPipelineOptions &options) {
  SpecializeSubgroupSizePassOptions oneLane;
  oneLane.subgroupSize = 1;
  pm.addPass(createSpecializeSubgroupSizePass(oneLane));
  pm.addPass(createCanonicalizerPass());
  GpuToCPUPassOptions threads;
  threads.threads = true;
  pm.addPass(createGpuToCPUPass(threads));
  addCPUCodeSteps(pm, options);
}

void hesper::buildHesperToCPUPipeline(OpPassManager &pm,
                                      const CPUPipelineOptions &options) {
  if (options.matrixUnits) {
    buildHesperToGPUPipeline(pm, options.fuse, /*sharedMemoryAsAlloc=*/false,
                             /*subgroupSize=*/1, /*singleLane=*/false,
                             /*beforeExpToStd=*/nullptr,
                             /*matrixUnits=*/true);
    pm.addPass(createEmulateMatrixTilesPass());
    addThreadedKernelSteps(pm, options);
    return;
  }
  // The byte dot products go to VNNI where this ISA has it (an unknown ISA
  // is the serializer's to report).
  cpu::ISA isa;
  std::string error;
  bool vnni = cpu::resolveISA(options.isa, options.hostFeatures, isa, error) &&
              cpu::hasByteDotInstruction(isa);
  bool wideVnni = vnni && cpu::hasWideByteDotInstruction(isa);
  buildHesperToGPUPipeline(pm, options.fuse, /*sharedMemoryAsAlloc=*/true,
                           /*subgroupSize=*/1, /*singleLane=*/true,
                           [&](OpPassManager &kernels) {
                             if (vnni)
                               kernels.addPass(
                                   cpu::createVectorDotToVNNIPass(wideVnni));
                           });
  pm.addPass(createGpuToCPUPass());
  addCPUCodeSteps(pm, options);
}

namespace {
class CPUTarget : public Target {
public:
  /// `hostFeatures`: with isa `native`, the features of the host (as the
  /// runtime names those it checks) that the code may require; empty: as
  /// LLVM detects them.
  CPUTarget(std::string isa, std::vector<std::string> hostFeatures,
            bool matrixUnits = false)
      : isa(std::move(isa)), hostFeatures(std::move(hostFeatures)),
        matrixUnits(matrixUnits) {}

  std::string str() const override {
    return "cpu:" + isa + (matrixUnits ? ":mma" : "");
  }
  TargetBackend backend() const override { return TargetBackend::Cpu; }
  /// The same ISA and host features, with the tensor-core kernels run as
  /// fibers and their tiles emulated.
  std::unique_ptr<Target> withMatrixUnits(std::string &) const override {
    return std::make_unique<CPUTarget>(isa, hostFeatures,
                                       /*matrixUnits=*/true);
  }
  void buildPipeline(OpPassManager &pm,
                     const TargetPipelineOptions &options) const override {
    CPUPipelineOptions cpu;
    cpu.fuse = options.fuse;
    cpu.isa = isa;
    cpu.hostFeatures = hostFeatures;
    cpu.dumpDir = options.dumpDir;
    cpu.matrixUnits = matrixUnits;
    buildHesperToCPUPipeline(pm, cpu);
  }
  /// Hand-written kernels keep their threads: each runs as a fiber of its
  /// workgroup's OS thread, subgroups of one lane.
  bool buildGpuKernelPipeline(OpPassManager &pm,
                              std::string &) const override {
    EmulateWideShufflesPassOptions shuffles;
    shuffles.subgroupSize = 1;
    pm.addPass(createEmulateWideShufflesPass(shuffles));
    NormalizeGpuKernelsPassOptions normalize;
    normalize.sizesForDynamicShapes = true;
    pm.addPass(createNormalizeGpuKernelsPass(normalize));
    CPUPipelineOptions cpu;
    cpu.isa = isa;
    cpu.hostFeatures = hostFeatures;
    addThreadedKernelSteps(pm, cpu);
    return true;
  }
  std::string binaryFileName(const TargetBinary &) const override {
    return "hesper_kernels.so";
  }

private:
  std::string isa;
  std::vector<std::string> hostFeatures;
  bool matrixUnits;
};
} // namespace

TargetKind hesper::cpuTargetKind() {
  TargetKind kind;
  kind.name = "cpu";
  kind.backend = TargetBackend::Cpu;
  kind.parse = [](StringRef options,
                  std::string &error) -> std::unique_ptr<Target> {
    // [ISA][:mma]
    bool mma = options.consume_back(":mma");
    if (options == "mma") {
      mma = true;
      options = "";
    }
    std::string name = options.empty() ? "native" : options.str();
    cpu::ISA isa;
    if (!cpu::resolveISA(name, {}, isa, error))
      return nullptr;
    return std::make_unique<CPUTarget>(name, std::vector<std::string>(), mma);
  };
  kind.forDevice = [](const TargetDevice &device) -> std::unique_ptr<Target> {
    return std::make_unique<CPUTarget>("native", device.cpuFeatures);
  };
  return kind;
}
