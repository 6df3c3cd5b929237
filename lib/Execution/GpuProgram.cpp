//===- GpuProgram.cpp - Run gpu dialect programs on any backend -----------===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//
//
// See GpuProgram.h.
//
//===----------------------------------------------------------------------===//

#include "Hesper/Execution/GpuProgram.h"
#include "Hesper/Execution/Execution.h"
#include "RunnerUtils.h"
#include "Hesper/Dialect/Circuit/IR/Circuit.h"
#include "hesper/runtime/Mgpu.h"

#include "mlir/Conversion/ArithToLLVM/ArithToLLVM.h"
#include "mlir/Conversion/AsyncToLLVM/AsyncToLLVM.h"
#include "mlir/Conversion/ControlFlowToLLVM/ControlFlowToLLVM.h"
#include "mlir/Conversion/FuncToLLVM/ConvertFuncToLLVMPass.h"
#include "mlir/Conversion/GPUCommon/GPUCommonPass.h"
#include "mlir/Conversion/IndexToLLVM/IndexToLLVM.h"
#include "mlir/Conversion/MathToLLVM/MathToLLVM.h"
#include "mlir/Conversion/MemRefToLLVM/MemRefToLLVM.h"
#include "mlir/Conversion/ReconcileUnrealizedCasts/ReconcileUnrealizedCasts.h"
#include "mlir/Conversion/SCFToControlFlow/SCFToControlFlow.h"
#include "mlir/Conversion/VectorToLLVM/ConvertVectorToLLVMPass.h"
#include "mlir/Conversion/VectorToSCF/VectorToSCF.h"
#include "mlir/Dialect/Async/IR/Async.h"
#include "mlir/Dialect/Async/Passes.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/GPU/Transforms/Passes.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/ExecutionEngine/ExecutionEngine.h"
#include "mlir/ExecutionEngine/OptUtils.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/GPU/GPUToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Transforms/Passes.h"

#include "llvm/ADT/MapVector.h"
#include "llvm/ExecutionEngine/Orc/Mangling.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/raw_ostream.h"

#include <array>
#include <map>

using namespace mlir;
using namespace hesper;

bool exec::isGpuProgram(ModuleOp module) {
  return module.getOps<circuit::GraphOp>().empty() &&
         (!module.getOps<func::FuncOp>().empty() ||
          !module.getOps<gpu::GPUModuleOp>().empty());
}

bool exec::hasHostCode(ModuleOp module) {
  return !module.getOps<func::FuncOp>().empty();
}

//===----------------------------------------------------------------------===//
// Compiling
//===----------------------------------------------------------------------===//

/// Marks a kernel compiled at launch, once per block size it is launched
/// with (rt::setMgpuKernelCompiler).
static constexpr StringLiteral kAtLaunch = "hesper.block_size_at_launch";

static bool compiledAtLaunch(gpu::GPUFuncOp func) {
  return func->hasAttr(kAtLaunch);
}

/// Gives every kernel without a known block size the one its launches use.
/// A kernel launched with several constant block sizes is compiled once per
/// size: the first keeps the kernel, each other size gets a copy
/// (`<name>_block_XxYxZ`) that its launches then name. A kernel with a
/// launch whose block size is not a compile-time constant is compiled at
/// launch instead, and so is one never launched (which then never is; in
/// a file of kernels alone, where nothing launches them, it is not
/// compiled, with a warning).
static void inferBlockSizes(ModuleOp module) {
  bool hostCode = exec::hasHostCode(module);
  DenseMap<Operation *, SmallVector<gpu::LaunchFuncOp>> launches;
  module.walk([&](gpu::LaunchFuncOp launch) {
    if (auto func = SymbolTable::lookupNearestSymbolFrom<gpu::GPUFuncOp>(
            module, launch.getKernel()))
      launches[func].push_back(launch);
  });
  SmallVector<gpu::GPUFuncOp> kernels;
  module.walk([&](gpu::GPUFuncOp func) {
    if (func.isKernel() && !func.getKnownBlockSizeAttr())
      kernels.push_back(func);
  });
  for (gpu::GPUFuncOp func : kernels) {
    // The distinct sizes in the order of first launch, with their launches.
    using Size = std::array<int32_t, 3>;
    llvm::MapVector<Size, SmallVector<gpu::LaunchFuncOp>,
                    std::map<Size, unsigned>>
        sizes;
    bool constant = true;
    for (gpu::LaunchFuncOp launch : launches.lookup(func)) {
      gpu::KernelDim3 block = launch.getBlockSizeOperandValues();
      Size these;
      const Value dims[] = {block.x, block.y, block.z};
      for (auto [d, v] : llvm::enumerate(dims)) {
        APInt c;
        if (!matchPattern(v, m_ConstantInt(&c)))
          constant = false;
        else
          these[d] = static_cast<int32_t>(c.getSExtValue());
      }
      if (constant)
        sizes[these].push_back(launch);
    }
    if (!constant || sizes.empty()) {
      if (!hostCode)
        func.emitWarning("kernel '")
            << func.getName()
            << "' is never launched and has no known_block_size: not "
               "compiled (its block size is not known)";
      func->setAttr(kAtLaunch, UnitAttr::get(func.getContext()));
      continue;
    }
    MLIRContext *context = func.getContext();
    func.setKnownBlockSizeAttr(DenseI32ArrayAttr::get(context, sizes.front().first));
    auto gpuModule = func->getParentOfType<gpu::GPUModuleOp>();
    SymbolTable symbols(gpuModule);
    for (auto &[size, users] : llvm::drop_begin(sizes)) {
      auto copy = cast<gpu::GPUFuncOp>(func->clone());
      copy.setKnownBlockSizeAttr(DenseI32ArrayAttr::get(context, size));
      std::string name = (func.getName() + "_block_" + Twine(size[0]) + "x" +
                          Twine(size[1]) + "x" + Twine(size[2]))
                             .str();
      copy.setName(name);
      symbols.insert(copy, std::next(Block::iterator(func)));
      auto target = SymbolRefAttr::get(
          gpuModule.getNameAttr(),
          {FlatSymbolRefAttr::get(copy.getNameAttr())});
      for (gpu::LaunchFuncOp launch : users)
        launch.setKernelAttr(target);
    }
  }
}

/// Upstream's gpu-to-llvm lowers gpu.alloc (unless host_shared),
/// gpu.dealloc, gpu.memcpy and gpu.memset only in their async form; the
/// synchronous forms, which a program may well use, become the async op
/// between a gpu.wait async and a gpu.wait on its token.
static void makeMemoryOpsAsync(ModuleOp module) {
  SmallVector<Operation *> ops;
  module.walk([&](Operation *op) {
    if (op->getParentOfType<gpu::GPUModuleOp>())
      return;
    auto async = dyn_cast<gpu::AsyncOpInterface>(op);
    if (!async || async.getAsyncToken())
      return;
    if (auto alloc = dyn_cast<gpu::AllocOp>(op); alloc && alloc.getHostShared())
      return;
    if (isa<gpu::AllocOp, gpu::DeallocOp, gpu::MemcpyOp, gpu::MemsetOp>(op))
      ops.push_back(op);
  });
  for (Operation *op : ops) {
    OpBuilder b(op);
    Location loc = op->getLoc();
    Type tokenType = gpu::AsyncTokenType::get(op->getContext());
    auto deps = cast<gpu::AsyncOpInterface>(op).getAsyncDependencies();
    SmallVector<Value> waitOn(deps.begin(), deps.end());
    Value start = gpu::WaitOp::create(b, loc, tokenType, waitOn).getAsyncToken();
    Value done;
    if (auto alloc = dyn_cast<gpu::AllocOp>(op)) {
      auto async = gpu::AllocOp::create(
          b, loc, alloc.getMemref().getType(), tokenType, ValueRange{start},
          alloc.getDynamicSizes(), alloc.getSymbolOperands(), UnitAttr());
      alloc.getMemref().replaceAllUsesWith(async.getMemref());
      done = async.getAsyncToken();
    } else if (auto dealloc = dyn_cast<gpu::DeallocOp>(op)) {
      done = gpu::DeallocOp::create(b, loc, tokenType, ValueRange{start},
                                    dealloc.getMemref())
                 .getAsyncToken();
    } else if (auto copy = dyn_cast<gpu::MemcpyOp>(op)) {
      done = gpu::MemcpyOp::create(b, loc, tokenType, ValueRange{start},
                                   copy.getDst(), copy.getSrc())
                 .getAsyncToken();
    } else {
      auto set = cast<gpu::MemsetOp>(op);
      done = gpu::MemsetOp::create(b, loc, tokenType, ValueRange{start},
                                   set.getDst(), set.getValue())
                 .getAsyncToken();
    }
    gpu::WaitOp::create(b, loc, Type(), ValueRange{done});
    op->erase();
  }
}

/// The signature of a kernel as its launches pass it. A memref of dynamic
/// shape takes its sizes as one more binding: normalize-gpu-kernels'
/// sizes-for-dynamic-shapes (CUDA, the CPU target) rebuilds the view from
/// them, flatten-dynamic-shapes (SPIR-V) indexes a 1-D buffer with them.
static FailureOr<rt::GpuKernelImage> describeKernel(gpu::GPUFuncOp func) {
  rt::GpuKernelImage kernel;
  kernel.name = func.getName().str();
  // Zero where it is compiled at launch.
  DenseI32ArrayAttr block = func.getKnownBlockSizeAttr();
  for (int i = 0; i < 3; ++i)
    kernel.workgroupSize[i] =
        compiledAtLaunch(func) ? 0 : static_cast<uint32_t>(block[i]);
  for (auto [i, type] : llvm::enumerate(func.getArgumentTypes())) {
    rt::GpuKernelArg arg;
    Type element = type;
    if (auto memref = dyn_cast<MemRefType>(type)) {
      arg.kind = rt::GpuKernelArg::MemRef;
      arg.rank = memref.getRank();
      element = memref.getElementType();
      arg.passSizes = !memref.hasStaticShape();
    } else {
      arg.kind = rt::GpuKernelArg::Scalar;
    }
    // Host values as gpu-to-llvm passes them: index as i64, i1 as a byte.
    unsigned bits = element.isIndex() ? 64
                    : element.isIntOrFloat()
                        ? element.getIntOrFloatBitWidth()
                        : 0;
    if (bits == 0 || (isa<MemRefType>(type) && bits % 8 != 0 && bits != 1))
      return func.emitOpError("has argument #")
             << i << " of type " << type
             << ", which Hesper cannot pass to a kernel";
    arg.bytes = std::max(1u, bits / 8);
    kernel.args.push_back(arg);
  }
  return kernel;
}

/// The kernels of `gpuModule` compiled for `target`, those compiled at
/// launch described only; `object` receives the compiled gpu.binary's
/// object (for its target attribute).
static FailureOr<rt::GpuModuleImage>
compileKernels(gpu::GPUModuleOp gpuModule, const Target &target,
               const std::string &dumpDir, gpu::ObjectAttr &object) {
  MLIRContext *context = gpuModule.getContext();
  rt::GpuModuleImage image;
  for (auto func : gpuModule.getOps<gpu::GPUFuncOp>()) {
    if (!func.isKernel())
      continue;
    FailureOr<rt::GpuKernelImage> kernel = describeKernel(func);
    if (failed(kernel))
      return failure();
    image.kernels.push_back(std::move(*kernel));
  }

  // The kernels are lowered in a module of their own, so that the host
  // code never meets the target's passes.
  OpBuilder b(context);
  OwningOpRef<ModuleOp> kernels = ModuleOp::create(gpuModule.getLoc());
  (*kernels)->setAttr(gpu::GPUDialect::getContainerModuleAttrName(),
                      b.getUnitAttr());
  b.setInsertionPointToStart(kernels->getBody());
  auto copy = cast<gpu::GPUModuleOp>(b.clone(*gpuModule));
  for (auto func : llvm::make_early_inc_range(copy.getOps<gpu::GPUFuncOp>()))
    if (compiledAtLaunch(func))
      func.erase();
  PassManager pm(context);
  std::string whyNot;
  if (!target.buildGpuKernelPipeline(pm, whyNot))
    return gpuModule.emitOpError("cannot be compiled: ") << whyNot;
  if (failed(pm.run(*kernels)))
    return failure();
  FailureOr<TargetBinary> binary = target.extractBinary(*kernels);
  if (failed(binary))
    return failure();
  // Workgroup memory the runtime provides, where the target says so in
  // the kernels' ABI (the CPU target).
  if (auto abis = (*kernels)->getAttrOfType<DictionaryAttr>("hesper.kernels"))
    for (rt::GpuKernelImage &kernel : image.kernels)
      if (auto abi = abis.getAs<DictionaryAttr>(kernel.name))
        if (auto bytes = abi.getAs<IntegerAttr>("shared_bytes"))
          kernel.sharedBytes = static_cast<uint32_t>(bytes.getInt());
  // Kernels that print into a buffer the runtime reads (Vulkan): its size
  // and the formats of their records.
  if (auto printing = (*kernels)->getAttrOfType<DictionaryAttr>("hesper.printf"))
    for (rt::GpuKernelImage &kernel : image.kernels)
      if (auto info = printing.getAs<DictionaryAttr>(kernel.name)) {
        kernel.printWords = static_cast<uint32_t>(
            info.getAs<IntegerAttr>("words").getInt());
        for (Attribute f : info.getAs<ArrayAttr>("formats")) {
          auto pair = cast<ArrayAttr>(f);
          kernel.printFormats.push_back(
              {cast<StringAttr>(pair[0]).str(), cast<StringAttr>(pair[1]).str()});
        }
      }
  auto compiled = *kernels->getOps<gpu::BinaryOp>().begin();
  object = cast<gpu::ObjectAttr>(compiled.getObjects()[0]);
  image.format = binary->format;
  image.binary = binary->bytes;

  if (!dumpDir.empty())
    writeDumpFile(dumpDir,
                  gpuModule.getName().str() + "." +
                      target.binaryFileName(*binary),
                  [&](llvm::raw_ostream &os) {
                    os.write(reinterpret_cast<const char *>(
                                 binary->bytes.data()),
                             binary->bytes.size());
                  });
  return image;
}

/// Replaces `gpuModule` by a gpu.binary holding its kernels compiled for
/// `target`, as a GpuModuleImage; with its source where some are compiled
/// at launch.
static LogicalResult compileKernelModule(gpu::GPUModuleOp gpuModule,
                                         const Target &target,
                                         const std::string &dumpDir) {
  MLIRContext *context = gpuModule.getContext();
  gpu::ObjectAttr compiledObject;
  FailureOr<rt::GpuModuleImage> image =
      compileKernels(gpuModule, target, dumpDir, compiledObject);
  if (failed(image))
    return failure();
  if (llvm::any_of(gpuModule.getOps<gpu::GPUFuncOp>(), compiledAtLaunch)) {
    llvm::raw_string_ostream os(image->source);
    gpuModule->print(os, OpPrintingFlags().enableDebugInfo());
  }
  std::vector<uint8_t> encoded = rt::encodeGpuModuleImage(*image);
  OpBuilder b(context);
  auto object = gpu::ObjectAttr::get(
      context, compiledObject.getTarget(), gpu::CompilationTarget::Binary,
      b.getStringAttr(StringRef(reinterpret_cast<const char *>(encoded.data()),
                                encoded.size())),
      nullptr, nullptr);
  b.setInsertionPoint(gpuModule);
  gpu::BinaryOp::create(b, gpuModule.getLoc(), gpuModule.getName(),
                        Attribute(), b.getArrayAttr({object}));
  gpuModule.erase();
  return success();
}

/// The entry point exists, takes nothing and returns what
/// --entry-point-result says.
static LogicalResult checkEntryPoint(ModuleOp module,
                                     const exec::GpuProgramOptions &options) {
  auto entry = module.lookupSymbol<func::FuncOp>(options.entryPoint);
  if (!entry || entry.isExternal())
    return module.emitError("the program has no function '")
           << options.entryPoint << "' to run (set one with --entry-point)";
  if (entry.getNumArguments() != 0)
    return entry.emitOpError("takes arguments; the entry point takes none");
  std::string returns = "void";
  if (entry.getNumResults() == 1) {
    llvm::raw_string_ostream s(returns);
    returns.clear();
    s << entry.getResultTypes()[0];
  } else if (entry.getNumResults() > 1) {
    returns = "several values";
  }
  if (returns != options.entryResult)
    return entry.emitOpError("returns ")
           << returns << ", but the entry point result is "
           << options.entryResult << " (--entry-point-result)";
  return success();
}

LogicalResult exec::compileGpuProgram(ModuleOp module, const Target &target,
                                      const GpuProgramOptions &options) {
  MLIRContext *context = module.getContext();
  // A file of kernels alone compiles them (there is nothing to call).
  if (hasHostCode(module) && failed(checkEntryPoint(module, options)))
    return failure();

  if (!options.dumpDir.empty() &&
      failed(createDumpDir(module, options.dumpDir)))
    return failure();
  // gpu.launch bodies become kernels of their own gpu.module.
  {
    PassManager pm(context);
    pm.addPass(createGpuKernelOutliningPass());
    // Folds the host code's launch sizes to constants where they are
    // (memref.dim of a cast of a static allocation, arithmetic on
    // constants), so that a kernel's block size is known when it is
    // compiled.
    pm.addNestedPass<func::FuncOp>(createCanonicalizerPass());
    if (failed(pm.run(module)))
      return failure();
  }
  inferBlockSizes(module);
  makeMemoryOpsAsync(module);
  SmallVector<gpu::GPUModuleOp> gpuModules(module.getOps<gpu::GPUModuleOp>());
  for (gpu::GPUModuleOp gpuModule : gpuModules)
    if (failed(compileKernelModule(gpuModule, target, options.dumpDir)))
      return failure();

  // The host code, as upstream's GPU pipelines lower it.
  bool usesAsync = false;
  module.walk([&](Operation *op) {
    if (isa<async::AsyncDialect>(op->getDialect()))
      usesAsync = true;
  });
  PassManager pm(context);
  // vector.print of a vector becomes a loop of scalar prints, and
  // vector.transfer_read/write loops of loads and stores.
  pm.addNestedPass<func::FuncOp>(createConvertVectorToSCFPass());
  pm.addPass(createSCFToControlFlowPass());
  pm.addPass(memref::createExpandStridedMetadataPass());
  pm.addPass(createGpuToLLVMConversionPass());
  // async.execute regions as coroutines on MLIR's async runtime (its
  // library is loaded with the runner utilities), as upstream's async GPU
  // tests lower them.
  if (usesAsync) {
    pm.addPass(createAsyncToAsyncRuntimePass());
    pm.addPass(createAsyncRuntimeRefCountingPass());
    pm.addPass(createAsyncRuntimeRefCountingOptPass());
    pm.addPass(createConvertAsyncToLLVMPass());
  }
  pm.addPass(createConvertVectorToLLVMPass());
  pm.addPass(createConvertMathToLLVMPass());
  pm.addPass(createArithToLLVMConversionPass());
  pm.addPass(createConvertIndexToLLVMPass());
  pm.addPass(createFinalizeMemRefToLLVMConversionPass());
  pm.addPass(createConvertFuncToLLVMPass());
  pm.addPass(createConvertControlFlowToLLVMPass());
  pm.addPass(createReconcileUnrealizedCastsPass());
  if (failed(pm.run(module)))
    return failure();
  if (!options.dumpDir.empty())
    writeDumpFile(options.dumpDir, "host.mlir",
                  [&](llvm::raw_ostream &os) { module.print(os); });
  return success();
}

//===----------------------------------------------------------------------===//
// Running
//===----------------------------------------------------------------------===//

/// MLIR's runner utilities where MLIR is installed (the printMemref*
/// functions mlir-runner programs call).
static std::vector<std::string> defaultSharedLibs() {
  std::vector<std::string> libs;
#ifdef HESPER_MLIR_LIBRARY_DIR
  for (const char *name :
       {"libmlir_runner_utils.so", "libmlir_c_runner_utils.so",
        "libmlir_async_runtime.so"}) {
    SmallString<128> path(HESPER_MLIR_LIBRARY_DIR);
    llvm::sys::path::append(path, name);
    if (llvm::sys::fs::exists(path))
      libs.push_back(std::string(path));
  }
#endif
  return libs;
}

/// Kernel `name` of a module image's `source`, compiled for `block` alone
/// (the runtime's compiler of kernels compiled at launch). Errors come back
/// as the status: the first error, with its file, line and column (the
/// source keeps the program's locations).
static rt::Result<rt::GpuModuleImage>
compileAtLaunch(MLIRContext *context, const Target &target,
                const std::string &source, const std::string &name,
                const uint32_t block[3]) {
  std::string firstError;
  ScopedDiagnosticHandler collect(context, [&](Diagnostic &diag) {
    if (diag.getSeverity() != DiagnosticSeverity::Error || !firstError.empty())
      return success();
    llvm::raw_string_ostream os(firstError);
    if (auto file = dyn_cast<FileLineColLoc>(diag.getLocation()))
      os << file.getFilename().getValue() << ":" << file.getLine() << ":"
         << file.getColumn() << ": ";
    os << diag.str();
    return success();
  });
  OwningOpRef<ModuleOp> holder = ModuleOp::create(UnknownLoc::get(context));
  ParserConfig config(context);
  if (failed(parseSourceString(source, holder->getBody(), config)))
    return rt::Status::error("the kernel's source does not parse: " +
                             firstError);
  auto modules = holder->getOps<gpu::GPUModuleOp>();
  if (modules.empty())
    return rt::Status::error("the kernel's source holds no gpu.module");
  gpu::GPUModuleOp gpuModule = *modules.begin();
  bool found = false;
  for (auto func :
       llvm::make_early_inc_range(gpuModule.getOps<gpu::GPUFuncOp>())) {
    if (!func.isKernel())
      continue;
    if (func.getName() != name) {
      func.erase();
      continue;
    }
    found = true;
    func->removeAttr(kAtLaunch);
    func.setKnownBlockSizeAttr(DenseI32ArrayAttr::get(
        context, {static_cast<int32_t>(block[0]),
                  static_cast<int32_t>(block[1]),
                  static_cast<int32_t>(block[2])}));
  }
  if (!found)
    return rt::Status::error("the kernel's source has no kernel '" + name +
                             "'");
  gpu::ObjectAttr object;
  FailureOr<rt::GpuModuleImage> image =
      compileKernels(gpuModule, target, /*dumpDir=*/"", object);
  if (failed(image))
    return rt::Status::error(firstError.empty() ? "the compile failed"
                                                : firstError);
  return std::move(*image);
}

LogicalResult exec::runGpuProgram(ModuleOp module, const Target &target,
                                  rt::Device &device,
                                  const GpuProgramOptions &options,
                                  llvm::raw_ostream &os) {
  auto fail = [](const llvm::Twine &message) {
    llvm::errs() << "error: " << message << "\n";
    return failure();
  };
  static const char *const results[] = {"void", "i32", "i64", "f32"};
  if (!llvm::is_contained(results, options.entryResult))
    return fail("--entry-point-result takes void, i32, i64 or f32, got '" +
                options.entryResult + "'");
  if (options.optLevel > 3)
    return fail("the optimization level is 0 to 3");

  DialectRegistry registry;
  registerBuiltinDialectTranslation(registry);
  registerLLVMDialectTranslation(registry);
  registerGPUDialectTranslation(registry);
  gpu::registerOffloadingLLVMTranslationInterfaceExternalModels(registry);
  module.getContext()->appendDialectRegistry(registry);

  llvm::InitializeNativeTarget();
  llvm::InitializeNativeTargetAsmPrinter();

  // Upstream's GPU runtimes: Hesper's mgpu functions stand in for them.
  std::vector<std::string> libs;
  bool launchTimes = options.launchTimes;
  for (const std::string &lib : options.sharedLibs) {
    StringRef name = llvm::sys::path::filename(lib);
    if (name.starts_with("libmlir_vulkan_runtime.") ||
        name.starts_with("libvulkan-runtime-wrappers."))
      launchTimes = true;
    else if (!name.starts_with("libmlir_cuda_runtime.") &&
             !name.starts_with("libmlir_rocm_runtime."))
      libs.push_back(lib);
  }
  auto named = [&](StringRef name) {
    return llvm::any_of(libs, [&](const std::string &given) {
      return llvm::sys::path::filename(given) == name;
    });
  };
  for (const std::string &lib : defaultSharedLibs()) {
    StringRef name = llvm::sys::path::filename(lib);
    if (options.builtinRunnerUtils && name.contains("runner_utils"))
      continue;
    if (!named(name))
      libs.push_back(lib);
  }
  // Hesper's own printing functions stand in for MLIR's runner utilities
  // where those are not loaded.
  bool ownMemrefPrinting = !named("libmlir_runner_utils.so");
  bool ownScalarPrinting = !named("libmlir_c_runner_utils.so") &&
                           !named("libmlir_runner_utils.so");
  for (const std::string &lib : libs)
    if (!llvm::sys::fs::exists(lib))
      return fail("shared library '" + lib + "' does not exist");
  SmallVector<StringRef> libRefs(libs.begin(), libs.end());

  auto transformer = makeOptimizingTransformer(options.optLevel, 0, nullptr);
  ExecutionEngineOptions engineOptions;
  engineOptions.transformer = transformer;
  engineOptions.jitCodeGenOptLevel =
      static_cast<llvm::CodeGenOptLevel>(options.optLevel);
  engineOptions.sharedLibPaths = libRefs;
  auto engine = ExecutionEngine::create(module, engineOptions);
  if (!engine)
    return fail("cannot JIT-compile the host code: " +
                llvm::toString(engine.takeError()));
  (*engine)->registerSymbols([&](llvm::orc::MangleAndInterner interner) {
    llvm::orc::SymbolMap symbols;
    auto add = [&](const std::vector<std::pair<const char *, void *>> &all) {
      for (auto [name, address] : all)
        symbols[interner(name)] = {llvm::orc::ExecutorAddr::fromPtr(address),
                                   llvm::JITSymbolFlags::Exported};
    };
    add(rt::mgpuSymbols());
    add(runnerUtilSymbols(ownMemrefPrinting, ownScalarPrinting));
    return symbols;
  });

  rt::setMgpuDevice(&device);
  rt::setMgpuLaunchTimes(launchTimes);
  MLIRContext *context = module.getContext();
  rt::setMgpuKernelCompiler([context, &target](const std::string &source,
                                               const std::string &name,
                                               const uint32_t block[3]) {
    return compileAtLaunch(context, target, source, name, block);
  });
  os.flush();
  int32_t i32 = 0;
  int64_t i64 = 0;
  float f32 = 0;
  void *result = options.entryResult == "i32"   ? static_cast<void *>(&i32)
                 : options.entryResult == "i64" ? static_cast<void *>(&i64)
                 : options.entryResult == "f32" ? static_cast<void *>(&f32)
                                                : nullptr;
  SmallVector<void *, 1> args;
  if (result)
    args.push_back(result);
  llvm::Error error = (*engine)->invokePacked(options.entryPoint, args);
  // The module's destructors (kernel modules unloaded) run with the device
  // still set.
  engine->reset();
  rt::setMgpuDevice(nullptr);
  rt::setMgpuKernelCompiler({});
  rt::setMgpuLaunchTimes(false);
  if (error)
    return fail("running '" + options.entryPoint +
                "': " + llvm::toString(std::move(error)));
  if (options.entryResult == "i32")
    os << i32 << "\n";
  else if (options.entryResult == "i64")
    os << i64 << "\n";
  else if (options.entryResult == "f32")
    os << f32 << "\n";
  return success();
}
