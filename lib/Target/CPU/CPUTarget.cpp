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
//
//===----------------------------------------------------------------------===//

#include "CPUPasses.h"

#include "Hesper/Pipelines/Pipelines.h"
#include "Hesper/Target/CPU/CPUTarget.h"
#include "Hesper/Target/Passes.h"
#include "Hesper/Target/Target.h"


using namespace mlir;
using namespace hesper;

/// From the modules of workgroup or thread functions hesper-gpu-to-cpu
/// wrote to a gpu.binary holding a shared object.
static void addCPUCodeSteps(OpPassManager &pm, const CPUPipelineOptions &options) {
  addPipeline(pm, "builtin.module(convert-scf-to-cf,"
                  "convert-math-to-llvm,convert-math-to-libm,"
                  "convert-vector-to-llvm,"
                  "finalize-memref-to-llvm,convert-arith-to-llvm,"
                  "convert-cf-to-llvm,"
                  "convert-func-to-llvm{use-bare-ptr-memref-call-conv=true},"
                  "reconcile-unrealized-casts)");
  SerializeCPUPassOptions serialize;
  serialize.isaName = options.isa;
  serialize.dumpDir = options.dumpDir;
  pm.addPass(createSerializeCPUPass(serialize));
}

void hesper::buildHesperToCPUPipeline(OpPassManager &pm,
                                      const CPUPipelineOptions &options) {
  buildHesperToGPUPipeline(pm, options.fuse, /*sharedMemoryAsAlloc=*/true,
                           /*subgroupSize=*/1, /*singleLane=*/true);
  addPipeline(pm, "hesper-gpu-to-cpu");
  addCPUCodeSteps(pm, options);
}

namespace {
class CPUTarget : public Target {
public:
  explicit CPUTarget(std::string isa) : isa(std::move(isa)) {}

  std::string str() const override { return "cpu:" + isa; }
  rt::Backend backend() const override { return rt::Backend::Cpu; }
  void buildPipeline(OpPassManager &pm,
                     const TargetPipelineOptions &options) const override {
    CPUPipelineOptions cpu;
    cpu.fuse = options.fuse;
    cpu.isa = isa;
    cpu.dumpDir = options.dumpDir;
    buildHesperToCPUPipeline(pm, cpu);
  }
  /// Hand-written kernels keep their threads: each runs as a fiber of its
  /// workgroup's OS thread, subgroups of one lane.
  bool buildGpuKernelPipeline(OpPassManager &pm,
                              std::string &) const override {
    addPipeline(pm, "hesper-normalize-gpu-kernels,"
                    "hesper-specialize-subgroup-size{size=1},canonicalize,"
                    "hesper-gpu-to-cpu{threads=true}");
    CPUPipelineOptions cpu;
    cpu.isa = isa;
    addCPUCodeSteps(pm, cpu);
    return true;
  }
  std::string binaryFileName(const TargetBinary &) const override {
    return "hesper_kernels.so";
  }

private:
  std::string isa;
};
} // namespace

TargetKind hesper::cpuTargetKind() {
  TargetKind kind;
  kind.name = "cpu";
  kind.backend = rt::Backend::Cpu;
  kind.parse = [](StringRef options,
                  std::string &error) -> std::unique_ptr<Target> {
    std::string name = options.empty() ? "native" : options.str();
    cpu::ISA isa;
    if (!cpu::resolveISA(name, isa, error))
      return nullptr;
    return std::make_unique<CPUTarget>(name);
  };
  kind.forDevice = [](const rt::DeviceInfo &) -> std::unique_ptr<Target> {
    return std::make_unique<CPUTarget>("native");
  };
  return kind;
}
