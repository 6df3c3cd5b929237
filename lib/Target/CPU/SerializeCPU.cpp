//===- SerializeCPU.cpp - Native code for the CPU target's kernels --------===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//
//
// hesper-serialize-cpu compiles each module of workgroup bodies (already in
// the llvm dialect) to a shared object:
//
//   1. translate to LLVM IR;
//   2. give every kernel its entry point, the C ABI the CPU driver calls:
//        void k(void *const *bindings, const void *push,
//               const uint32_t grid[3], uint64_t begin, uint64_t end)
//      running workgroups begin..end-1 (linear, x fastest) by calling the
//      inlined body in a loop over x within each row of the grid, which the
//      loop vectorizer can widen for kernels of one element per workgroup;
//   3. split the module into one module per kernel (a kernel whose LLVM IR,
//      inlined and without dead code, is an earlier one's but for the
//      names becomes aliases of that one's entry points) and, in parallel
//      on the MLIR context's threads, optimize each at O3 for the chosen CPU
//      and features (the host's, or an x86-64 micro-architecture level)
//      and emit its object file (and, for --dump-dir, its optimized IR
//      and assembly); then link the objects with the system C compiler
//      driver (`cc -shared`, a dependency scripts/setup.sh installs);
//   4. replace the module with a gpu.binary whose object is the shared
//      object and whose `format` property is `elf:` and the CPU features
//      the code needs, which the runtime checks before loading it.
//
//===----------------------------------------------------------------------===//

#include "CPUPasses.h"
#include "Hesper/Target/CPU/CPUTarget.h"
#include "Hesper/Target/Passes.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Threading.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Export.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Bitcode/BitcodeReader.h"
#include "llvm/Bitcode/BitcodeWriter.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Module.h"
#include "llvm/IR/Verifier.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FileUtilities.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/Target/TargetOptions.h"
#include "llvm/TargetParser/Host.h"
#include "llvm/TargetParser/Triple.h"
#include "llvm/Transforms/IPO/AlwaysInliner.h"
#include "llvm/Transforms/IPO/GlobalDCE.h"
#include "llvm/Transforms/Scalar/ADCE.h"
#include "llvm/Transforms/Utils/Cloning.h"

#include <map>

using namespace mlir;

namespace hesper {
#define GEN_PASS_DEF_SERIALIZECPUPASS
#include "Hesper/Target/Passes.h.inc"
} // namespace hesper

namespace hesper::cpu {

//===----------------------------------------------------------------------===//
// Instruction-set levels
//===----------------------------------------------------------------------===//

namespace {
struct Level {
  const char *name;
  std::vector<std::string> adds;
};
/// The x86-64 micro-architecture levels, each adding to the one before,
/// with the features of each that the runtime can check on a host (named
/// alike by LLVM and GCC's __builtin_cpu_supports).
const Level kLevels[] = {
    {"x86-64", {}},
    {"x86-64-v2", {"popcnt", "sse3", "sse4.1", "sse4.2", "ssse3"}},
    {"x86-64-v3",
     {"avx", "avx2", "bmi", "bmi2", "f16c", "fma", "lzcnt", "movbe"}},
    {"x86-64-v4", {"avx512bw", "avx512cd", "avx512dq", "avx512f", "avx512vl"}},
};
} // namespace

llvm::ArrayRef<llvm::StringLiteral> checkableFeatures() {
  static const llvm::StringLiteral kFeatures[] = {
#define HESPER_CPU_FEATURE(name) name,
#define HESPER_GCC_CPU_FEATURE(name) name,
#include "hesper/base/CpuFeatures.def"
  };
  return kFeatures;
}

bool resolveISA(llvm::StringRef name, llvm::ArrayRef<std::string> hostFeatures,
                ISA &isa, std::string &error) {
  isa = ISA();
  isa.name = name.str();
  if (name == "native") {
    isa.cpu = llvm::sys::getHostCPUName().str();
    llvm::StringMap<bool> host = llvm::sys::getHostCPUFeatures();
    std::vector<std::string> features;
    for (const auto &entry : host)
      features.push_back((entry.getValue() ? "+" : "-") + entry.getKey().str());
    llvm::sort(features);
    isa.features = llvm::join(features, ",");
    // Code for this host may use anything it has: a bundle compiled here
    // requires every feature of the host that the runtime can check.
    if (!hostFeatures.empty()) {
      llvm::append_range(isa.required, hostFeatures);
      return true;
    }
    for (StringRef feature : checkableFeatures())
      if (host.lookup(feature))
        isa.required.push_back(feature.str());
    return true;
  }
  for (const Level &level : kLevels) {
    llvm::append_range(isa.required, level.adds);
    if (name == level.name) {
      isa.cpu = level.name;
      return true;
    }
  }
  error = "unknown CPU ISA '" + name.str() +
          "' (expected native, x86-64, x86-64-v2, x86-64-v3 or x86-64-v4)";
  return false;
}

//===----------------------------------------------------------------------===//
// Entry points
//===----------------------------------------------------------------------===//

namespace {
/// In an entry point: the first `numBuffers` binding addresses (appended to
/// `args`) and the grid's x, y, z as i64 (into `dims`).
void loadBindingsAndGrid(llvm::IRBuilder<> &b, llvm::Value *bindings,
                         llvm::Value *grid, unsigned numBuffers,
                         SmallVectorImpl<llvm::Value *> &args,
                         llvm::Value *dims[3]) {
  llvm::LLVMContext &ctx = b.getContext();
  auto *ptr = llvm::PointerType::getUnqual(ctx);
  auto *i64 = llvm::Type::getInt64Ty(ctx);
  auto *i32 = llvm::Type::getInt32Ty(ctx);
  for (unsigned i = 0; i < numBuffers; ++i)
    args.push_back(b.CreateLoad(
        ptr, b.CreateConstInBoundsGEP1_64(ptr, bindings, i), "buffer"));
  for (int d = 0; d < 3; ++d)
    dims[d] = b.CreateZExt(
        b.CreateLoad(i32, b.CreateConstInBoundsGEP1_64(i32, grid, d)), i64);
}

/// Defines kernel `name`'s entry point around its workgroup body.
void addEntryPoint(llvm::Module &module, llvm::Function *body,
                   llvm::StringRef name) {
  llvm::LLVMContext &ctx = module.getContext();
  auto *ptr = llvm::PointerType::getUnqual(ctx);
  auto *i64 = llvm::Type::getInt64Ty(ctx);
  unsigned numBuffers = body->arg_size() - 6;
  body->setLinkage(llvm::GlobalValue::InternalLinkage);
  body->addFnAttr(llvm::Attribute::AlwaysInline);
  body->addFnAttr(llvm::Attribute::NoUnwind);

  auto *type = llvm::FunctionType::get(llvm::Type::getVoidTy(ctx),
                                       {ptr, ptr, ptr, i64, i64}, false);
  auto *entry = llvm::Function::Create(
      type, llvm::GlobalValue::ExternalLinkage, name, module);
  entry->addFnAttr(llvm::Attribute::NoUnwind);
  // The body is inlined here, where its loops are vectorized.
  if (body->hasFnAttribute("prefer-vector-width"))
    entry->addFnAttr(body->getFnAttribute("prefer-vector-width"));
  llvm::Value *bindings = entry->getArg(0), *grid = entry->getArg(2),
              *begin = entry->getArg(3), *end = entry->getArg(4);
  bindings->setName("bindings");
  grid->setName("grid");

  auto *start = llvm::BasicBlock::Create(ctx, "entry", entry);
  auto *row = llvm::BasicBlock::Create(ctx, "row", entry);
  auto *lane = llvm::BasicBlock::Create(ctx, "workgroup", entry);
  auto *next = llvm::BasicBlock::Create(ctx, "next_row", entry);
  auto *done = llvm::BasicBlock::Create(ctx, "done", entry);
  llvm::IRBuilder<> b(start);
  SmallVector<llvm::Value *> args;
  llvm::Value *dims[3];
  loadBindingsAndGrid(b, bindings, grid, numBuffers, args, dims);
  b.CreateCondBr(b.CreateICmpULT(begin, end), row, done);

  // A run of workgroups along x within one (y, z) row of the grid.
  b.SetInsertPoint(row);
  llvm::PHINode *w = b.CreatePHI(i64, 2, "w");
  w->addIncoming(begin, start);
  llvm::Value *x0 = b.CreateURem(w, dims[0]);
  llvm::Value *rest = b.CreateUDiv(w, dims[0]);
  llvm::Value *y = b.CreateURem(rest, dims[1]);
  llvm::Value *z = b.CreateUDiv(rest, dims[1]);
  llvm::Value *count = b.CreateBinaryIntrinsic(
      llvm::Intrinsic::umin, b.CreateSub(end, w), b.CreateSub(dims[0], x0));
  llvm::Value *xEnd = b.CreateAdd(x0, count);
  b.CreateBr(lane);

  b.SetInsertPoint(lane);
  llvm::PHINode *x = b.CreatePHI(i64, 2, "x");
  x->addIncoming(x0, row);
  SmallVector<llvm::Value *> callArgs(args);
  callArgs.append({x, y, z, dims[0], dims[1], dims[2]});
  b.CreateCall(body, callArgs);
  llvm::Value *xNext = b.CreateAdd(x, llvm::ConstantInt::get(i64, 1));
  x->addIncoming(xNext, lane);
  b.CreateCondBr(b.CreateICmpULT(xNext, xEnd), lane, next);

  b.SetInsertPoint(next);
  llvm::Value *wNext = b.CreateAdd(w, count);
  w->addIncoming(wNext, next);
  b.CreateCondBr(b.CreateICmpULT(wNext, end), row, done);

  b.SetInsertPoint(done);
  b.CreateRetVoid();
}

/// Defines the thread entry point of kernel `name` (see rt::KernelDesc)
/// around its thread body: the buffers from the bindings, the workgroup's
/// x, y, z from its linear index, the thread's from `thread`.
void addThreadEntryPoint(llvm::Module &module, llvm::Function *body,
                         llvm::StringRef name) {
  llvm::LLVMContext &ctx = module.getContext();
  auto *ptr = llvm::PointerType::getUnqual(ctx);
  auto *i64 = llvm::Type::getInt64Ty(ctx);
  auto *i32 = llvm::Type::getInt32Ty(ctx);
  // Buffers, then 9 indices, the workgroup memory, barrier and state.
  unsigned numBuffers = body->arg_size() - 12;
  body->setLinkage(llvm::GlobalValue::InternalLinkage);
  body->addFnAttr(llvm::Attribute::AlwaysInline);

  auto *type = llvm::FunctionType::get(
      llvm::Type::getVoidTy(ctx), {ptr, ptr, ptr, i64, ptr, ptr, ptr, ptr},
      false);
  auto *entry = llvm::Function::Create(
      type, llvm::GlobalValue::ExternalLinkage,
      std::string(kThreadEntryPrefix) + name.str(), module);
  llvm::Value *bindings = entry->getArg(0), *grid = entry->getArg(2),
              *workgroup = entry->getArg(3), *thread = entry->getArg(4);
  llvm::IRBuilder<> b(llvm::BasicBlock::Create(ctx, "entry", entry));
  SmallVector<llvm::Value *> args;
  llvm::Value *dims[3], *ids[3];
  loadBindingsAndGrid(b, bindings, grid, numBuffers, args, dims);
  for (int d = 0; d < 3; ++d)
    ids[d] = b.CreateZExt(
        b.CreateLoad(i32, b.CreateConstInBoundsGEP1_64(i32, thread, d)), i64);
  llvm::Value *x = b.CreateURem(workgroup, dims[0]);
  llvm::Value *rest = b.CreateUDiv(workgroup, dims[0]);
  args.append({x, b.CreateURem(rest, dims[1]), b.CreateUDiv(rest, dims[1]),
               dims[0], dims[1], dims[2], ids[0], ids[1], ids[2],
               entry->getArg(5), entry->getArg(6), entry->getArg(7)});
  b.CreateCall(body, args);
  b.CreateRetVoid();
}

//===----------------------------------------------------------------------===//
// Code generation and linking
//===----------------------------------------------------------------------===//

std::unique_ptr<llvm::TargetMachine> createTargetMachine(const ISA &isa,
                                                         std::string &error) {
  static const bool initialized = [] {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
    return true;
  }();
  (void)initialized;
  llvm::Triple triple(llvm::sys::getProcessTriple());
  const llvm::Target *target =
      llvm::TargetRegistry::lookupTarget(triple, error);
  if (!target)
    return nullptr;
  llvm::TargetOptions options;
  return std::unique_ptr<llvm::TargetMachine>(target->createTargetMachine(
      triple, isa.cpu, isa.features, options, llvm::Reloc::PIC_,
      std::nullopt, llvm::CodeGenOptLevel::Aggressive));
}

void optimize(llvm::Module &module, llvm::TargetMachine &machine) {
  llvm::LoopAnalysisManager lam;
  llvm::FunctionAnalysisManager fam;
  llvm::CGSCCAnalysisManager cgam;
  llvm::ModuleAnalysisManager mam;
  llvm::PipelineTuningOptions tuning;
  tuning.LoopVectorization = true;
  tuning.SLPVectorization = true;
  llvm::PassBuilder builder(&machine, tuning);
  builder.registerModuleAnalyses(mam);
  builder.registerCGSCCAnalyses(cgam);
  builder.registerFunctionAnalyses(fam);
  builder.registerLoopAnalyses(lam);
  builder.crossRegisterProxies(lam, fam, cgam, mam);
  llvm::ModulePassManager passes =
      builder.buildPerModuleDefaultPipeline(llvm::OptimizationLevel::O3);
  passes.run(module, mam);
}

/// Inlines the always-inline bodies into their entries and drops what is
/// then dead (a buffer's static size in a memref descriptor that no
/// instruction reads): what the comparison of kernels looks at.
void inlineAndDropDeadCode(llvm::Module &module) {
  llvm::LoopAnalysisManager lam;
  llvm::FunctionAnalysisManager fam;
  llvm::CGSCCAnalysisManager cgam;
  llvm::ModuleAnalysisManager mam;
  llvm::PassBuilder builder;
  builder.registerModuleAnalyses(mam);
  builder.registerCGSCCAnalyses(cgam);
  builder.registerFunctionAnalyses(fam);
  builder.registerLoopAnalyses(lam);
  builder.crossRegisterProxies(lam, fam, cgam, mam);
  llvm::ModulePassManager passes;
  passes.addPass(llvm::AlwaysInlinerPass());
  passes.addPass(llvm::GlobalDCEPass());
  passes.addPass(llvm::createModuleToFunctionPassAdaptor(llvm::ADCEPass()));
  passes.run(module, mam);
}

bool emit(llvm::Module &module, llvm::TargetMachine &machine,
          llvm::CodeGenFileType kind, SmallVectorImpl<char> &out) {
  llvm::raw_svector_ostream os(out);
  llvm::legacy::PassManager passes;
  if (machine.addPassesToEmitFile(passes, os, nullptr, kind))
    return false;
  passes.run(module);
  return true;
}

/// Links `objects` with the system C compiler driver into a shared object
/// (`relocatable`: into one relocatable object, for --dump-dir).
bool link(llvm::ArrayRef<SmallVector<char, 0>> objects, bool relocatable,
          std::vector<uint8_t> &shared, std::string &error) {
  std::string driver;
  for (const char *name : {"cc", "gcc", "clang"})
    if (auto found = llvm::sys::findProgramByName(name)) {
      driver = *found;
      break;
    }
  if (driver.empty()) {
    error = "the CPU target links kernels with the system C compiler "
            "driver (cc), which was not found on PATH";
    return false;
  }
  std::vector<SmallString<128>> objectPaths(objects.size());
  std::vector<llvm::FileRemover> removeObjects(objects.size());
  for (auto [i, object] : llvm::enumerate(objects)) {
    int fd = -1;
    if (auto ec = llvm::sys::fs::createTemporaryFile("hesper-kernels", "o",
                                                     fd, objectPaths[i])) {
      error = "cannot create a temporary file: " + ec.message();
      return false;
    }
    removeObjects[i].setFile(objectPaths[i]);
    llvm::raw_fd_ostream os(fd, /*shouldClose=*/true);
    os.write(object.data(), object.size());
  }
  SmallString<128> sharedPath, logPath;
  if (llvm::sys::fs::createTemporaryFile("hesper-kernels",
                                         relocatable ? "o" : "so",
                                         sharedPath) ||
      llvm::sys::fs::createTemporaryFile("hesper-link", "log", logPath)) {
    error = "cannot create a temporary file";
    return false;
  }
  llvm::FileRemover removeShared(sharedPath), removeLog(logPath);
  SmallVector<StringRef> args{driver};
  if (relocatable)
    args.append({"-r", "-nostdlib"});
  else
    args.push_back("-shared");
  args.append({"-o", sharedPath});
  for (const SmallString<128> &path : objectPaths)
    args.push_back(path);
  if (!relocatable)
    args.push_back("-lm");
  std::optional<StringRef> redirects[] = {std::nullopt, logPath, logPath};
  std::string message;
  int rc = llvm::sys::ExecuteAndWait(driver, args, std::nullopt, redirects,
                                     /*SecondsToWait=*/120, 0, &message);
  if (rc != 0) {
    auto log = llvm::MemoryBuffer::getFile(logPath);
    std::string text = log ? (*log)->getBuffer().trim().str() : message;
    error = "linking the kernels with " + driver + " failed: " +
            StringRef(text).split('\n').first.str();
    return false;
  }
  auto file = llvm::MemoryBuffer::getFile(sharedPath);
  if (!file) {
    error = "cannot read the linked kernels: " + file.getError().message();
    return false;
  }
  StringRef bytes = (*file)->getBuffer();
  shared.assign(bytes.begin(), bytes.end());
  return true;
}

void writeFile(StringRef dir, StringRef name, ArrayRef<char> bytes) {
  SmallString<128> path(dir);
  llvm::sys::path::append(path, name);
  std::error_code ec;
  llvm::raw_fd_ostream os(path, ec);
  if (!ec)
    os.write(bytes.data(), bytes.size());
}

/// The definitions that `root` reaches through its instructions' operands
/// and global initializers (constant expressions included).
void collectReachable(const llvm::GlobalValue *root,
                      llvm::SmallPtrSetImpl<const llvm::GlobalValue *> &seen) {
  SmallVector<const llvm::Value *> work{root};
  llvm::SmallPtrSet<const llvm::Constant *, 32> constants;
  auto visit = [&](const llvm::Value *v) {
    if (auto *gv = dyn_cast<llvm::GlobalValue>(v)) {
      if (seen.insert(gv).second)
        work.push_back(gv);
    } else if (auto *c = dyn_cast<llvm::Constant>(v)) {
      if (constants.insert(c).second)
        work.push_back(c);
    }
  };
  while (!work.empty()) {
    const llvm::Value *v = work.pop_back_val();
    if (auto *f = dyn_cast<llvm::Function>(v)) {
      for (const llvm::BasicBlock &block : *f)
        for (const llvm::Instruction &inst : block)
          for (const llvm::Value *operand : inst.operands())
            visit(operand);
    } else if (auto *g = dyn_cast<llvm::GlobalVariable>(v)) {
      if (g->hasInitializer())
        visit(g->getInitializer());
    } else if (auto *c = dyn_cast<llvm::Constant>(v);
               c && !isa<llvm::GlobalValue>(c)) {
      for (const llvm::Value *operand : c->operands())
        visit(operand);
    }
  }
}

/// One kernel's module, as bitcode, and the entry points of the kernels
/// whose code is the same but for their names: the part defines those
/// names as aliases of its own entries (`aliases`: alias, entry).
struct Part {
  SmallVector<char, 0> bitcode;
  SmallVector<std::pair<std::string, std::string>> aliases;
};

/// Splits `module` into one module per kernel, as bitcode: the kernel's
/// entry points (`kernel` and its thread entry, when it has one) and the
/// definitions they reach; the other kernels' become declarations. A
/// kernel whose module, with its name in every definition's name replaced
/// by a placeholder, is byte for byte an earlier kernel's becomes aliases
/// in that kernel's part instead of a part of its own: a model's decode
/// step and its prompt chunks share kernels whose ShaderM differed only in
/// buffer sizes that the LLVM IR does not carry (attention, quantize,
/// gathers), and each distinct one is optimized and compiled once.
std::vector<Part> splitByEntry(const llvm::Module &module,
                               llvm::ArrayRef<std::string> entries) {
  // A kernel's workgroup and thread entries go together.
  llvm::StringMap<SmallVector<const llvm::GlobalValue *, 2>> groups;
  SmallVector<std::string> order;
  for (const std::string &name : entries) {
    StringRef kernel = StringRef(name);
    kernel.consume_front(kThreadEntryPrefix);
    auto [it, inserted] = groups.try_emplace(kernel);
    if (inserted)
      order.push_back(kernel.str());
    it->second.push_back(module.getFunction(name));
  }
  std::vector<Part> parts;
  // Each distinct kernel's placeholder-named bitcode, its part and name.
  std::map<SmallVector<char, 0>, std::pair<size_t, std::string>> distinct;
  for (const std::string &kernel : order) {
    llvm::SmallPtrSet<const llvm::GlobalValue *, 16> keep;
    for (const llvm::GlobalValue *entry : groups[kernel]) {
      keep.insert(entry);
      collectReachable(entry, keep);
    }
    llvm::ValueToValueMapTy map;
    std::unique_ptr<llvm::Module> part = llvm::CloneModule(
        module, map,
        [&](const llvm::GlobalValue *gv) { return keep.contains(gv); });
    // Without the declarations of the other kernels' definitions.
    for (llvm::Function &f : llvm::make_early_inc_range(part->functions()))
      if (f.isDeclaration() && f.use_empty())
        f.eraseFromParent();
    for (llvm::GlobalVariable &g : llvm::make_early_inc_range(part->globals()))
      if (g.isDeclaration() && g.use_empty())
        g.eraseFromParent();
    // What kernels are compared by: a copy with the definitions named
    // after the kernel under a placeholder, inlined, without dead code.
    SmallVector<char, 0> canonical;
    {
      llvm::ValueToValueMapTy copyMap;
      std::unique_ptr<llvm::Module> copy = llvm::CloneModule(*part, copyMap);
      for (llvm::GlobalValue &gv : copy->global_values()) {
        std::string name = gv.getName().str();
        size_t at = name.find(kernel);
        if (!gv.isDeclaration() && at != std::string::npos)
          gv.setName(name.substr(0, at) + "\x01" +
                     name.substr(at + kernel.size()));
      }
      inlineAndDropDeadCode(*copy);
      llvm::raw_svector_ostream os(canonical);
      llvm::WriteBitcodeToFile(*copy, os);
    }
    auto [it, inserted] =
        distinct.try_emplace(std::move(canonical), parts.size(), kernel);
    if (!inserted) {
      auto &[index, kept] = it->second;
      for (const llvm::GlobalValue *entry : groups[kernel]) {
        std::string alias = entry->getName().str();
        std::string target = alias;
        target.replace(alias.find(kernel), kernel.size(), kept);
        parts[index].aliases.push_back({alias, target});
      }
      continue;
    }
    parts.emplace_back();
    llvm::raw_svector_ostream os(parts.back().bitcode);
    llvm::WriteBitcodeToFile(*part, os);
  }
  return parts;
}

/// Optimizes and compiles one part (bitcode) into `object`, and its
/// assembly into `assembly` when given; returns an error or "".
std::string compilePart(const Part &part, const ISA &isa,
                        SmallVector<char, 0> &object,
                        SmallVector<char, 0> *assembly,
                        SmallVector<char, 0> *optimizedIR) {
  llvm::LLVMContext context;
  llvm::Expected<std::unique_ptr<llvm::Module>> module =
      llvm::parseBitcodeFile(
          llvm::MemoryBufferRef(
              StringRef(part.bitcode.data(), part.bitcode.size()),
              "hesper_kernels"),
          context);
  if (!module)
    return "cannot read back a CPU kernel's bitcode: " +
           llvm::toString(module.takeError());
  for (const auto &[alias, target] : part.aliases) {
    llvm::Function *entry = (*module)->getFunction(target);
    if (!entry)
      return "a CPU kernel part has no entry '" + target + "' to alias";
    llvm::GlobalAlias::create(entry->getValueType(),
                              entry->getAddressSpace(),
                              llvm::GlobalValue::ExternalLinkage, alias,
                              entry, module->get());
  }
  std::string error;
  std::unique_ptr<llvm::TargetMachine> machine =
      createTargetMachine(isa, error);
  if (!machine)
    return "cannot create the CPU target machine: " + error;
  optimize(**module, *machine);
  if (optimizedIR) {
    llvm::raw_svector_ostream os(*optimizedIR);
    (*module)->print(os, nullptr);
  }
  if (assembly) {
    std::unique_ptr<llvm::Module> copy = llvm::CloneModule(**module);
    emit(*copy, *machine, llvm::CodeGenFileType::AssemblyFile, *assembly);
  }
  if (!emit(**module, *machine, llvm::CodeGenFileType::ObjectFile, object))
    return "the CPU target cannot emit object files";
  return "";
}

struct SerializeCPUPass
    : hesper::impl::SerializeCPUPassBase<SerializeCPUPass> {
  using Base::Base;
  void getDependentDialects(DialectRegistry &registry) const override {
    Base::getDependentDialects(registry);
    registerBuiltinDialectTranslation(registry);
    registerLLVMDialectTranslation(registry);
  }

  void runOnOperation() override {
    ModuleOp module = getOperation();
    ISA isa;
    std::string error;
    if (!resolveISA(isaName, hostFeatures, isa, error)) {
      module.emitError(error);
      return signalPassFailure();
    }
    SmallVector<ModuleOp> kernels;
    for (auto nested : module.getOps<ModuleOp>())
      if (nested->hasAttr(kCPUKernelsAttr))
        kernels.push_back(nested);
    for (ModuleOp nested : kernels)
      if (failed(serialize(nested, isa)))
        return signalPassFailure();
  }

  LogicalResult serialize(ModuleOp nested, const ISA &isa) {
    std::string error;
    std::unique_ptr<llvm::TargetMachine> machine =
        createTargetMachine(isa, error);
    if (!machine)
      return nested.emitError("cannot create the CPU target machine: ")
             << error;
    llvm::LLVMContext context;
    // The translation wants a module without Hesper's marker attributes.
    nested->removeAttr(kCPUKernelsAttr);
    std::unique_ptr<llvm::Module> ir =
        translateModuleToLLVMIR(nested, context, "hesper_kernels");
    if (!ir)
      return nested.emitError("cannot translate the CPU kernels to LLVM IR");
    ir->setTargetTriple(machine->getTargetTriple());
    ir->setDataLayout(machine->createDataLayout());
    SmallVector<std::pair<llvm::Function *, std::string>> bodies, threads;
    for (llvm::Function &f : *ir) {
      StringRef name = f.getName();
      if (f.isDeclaration())
        continue;
      if (name.consume_front(kernelBodyName("")))
        bodies.push_back({&f, name.str()});
      else if (name.consume_front(threadBodyName("")))
        threads.push_back({&f, name.str()});
    }
    for (auto &[body, name] : bodies)
      addEntryPoint(*ir, body, name);
    for (auto &[body, name] : threads)
      addThreadEntryPoint(*ir, body, name);
    if (llvm::verifyModule(*ir, &llvm::errs()))
      return nested.emitError("the CPU kernels' LLVM IR does not verify");

    // Each kernel is optimized and compiled on its own, the kernels in
    // parallel on the context's threads: a kernel's code depends only on
    // the kernel, not on how many threads there are or which others
    // compiled beside it (LLVM's modules are single-threaded, so each part
    // travels as bitcode into a context of its own).
    SmallVector<std::string> entries;
    for (auto &[body, name] : bodies)
      entries.push_back(name);
    for (auto &[body, name] : threads)
      entries.push_back(std::string(kThreadEntryPrefix) + name);
    std::vector<Part> parts = splitByEntry(*ir, entries);
    std::vector<SmallVector<char, 0>> objects(parts.size()),
        assembly(parts.size()), optimizedIR(parts.size());
    std::vector<std::string> errors(parts.size());
    bool dump = !dumpDir.empty();
    parallelFor(nested.getContext(), 0, parts.size(), [&](size_t i) {
      errors[i] = compilePart(parts[i], isa, objects[i],
                              dump ? &assembly[i] : nullptr,
                              dump ? &optimizedIR[i] : nullptr);
    });
    for (const std::string &partError : errors)
      if (!partError.empty())
        return nested.emitError(partError);
    if (dump) {
      // Each kernel's text, one after the other.
      auto writeJoined = [&](StringRef name,
                             ArrayRef<SmallVector<char, 0>> texts) {
        SmallVector<char, 0> all;
        for (const SmallVector<char, 0> &text : texts)
          all.append(text.begin(), text.end());
        writeFile(dumpDir, name, all);
      };
      writeJoined("hesper_kernels.s", assembly);
      writeJoined("hesper_kernels.ll", optimizedIR);
      std::vector<uint8_t> combined;
      if (link(objects, /*relocatable=*/true, combined, error))
        writeFile(dumpDir, "hesper_kernels.o",
                  ArrayRef<char>(reinterpret_cast<const char *>(
                                     combined.data()),
                                 combined.size()));
    }
    std::vector<uint8_t> shared;
    if (!link(objects, /*relocatable=*/false, shared, error))
      return nested.emitError(error);

    OpBuilder b(nested);
    MLIRContext *ctx = nested.getContext();
    auto target = LLVM::TargetAttr::get(
        ctx, b.getStringAttr(machine->getTargetTriple().str()),
        b.getStringAttr(isa.cpu), LLVM::TargetFeaturesAttr());
    auto properties = b.getDictionaryAttr(b.getNamedAttr(
        "format", b.getStringAttr("elf:" + llvm::join(isa.required, ","))));
    StringRef bytes(reinterpret_cast<const char *>(shared.data()),
                    shared.size());
    Attribute binary = gpu::ObjectAttr::get(
        ctx, target, gpu::CompilationTarget::Binary, b.getStringAttr(bytes),
        properties, nullptr);
    gpu::BinaryOp::create(b, nested.getLoc(),
                          nested.getSymName().value_or("hesper_kernels"),
                          Attribute(), b.getArrayAttr({binary}));
    nested.erase();
    return success();
  }
};
} // namespace

} // namespace hesper::cpu
