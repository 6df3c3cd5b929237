//===- Plan.cpp - Kernel knobs and tuning plans ---------------------------===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//

#include "Hesper/Target/Plan.h"

#include "Hesper/Support/Json.h"

#include "Hesper/Dialect/Circuit/IR/Circuit.h"

#include "mlir/IR/OperationSupport.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Support/xxhash.h"

using namespace mlir;
using namespace hesper;
using namespace hesper::tune;
namespace cir = hesper::circuit;

namespace {

/// What an op's kernel is, for the knobs that apply to it.
enum class KernelKind { Elementwise, Reduction, Matmul, Attention };

KernelKind kindOf(Operation *op) {
  if (isa<cir::MapOp, cir::GatherOp, cir::ScatterOp, cir::ScatterMultiOp,
          cir::ScatterAddOp>(op))
    return KernelKind::Elementwise;
  if (isa<cir::ReduceOp, cir::ReduceEpilogueOp, cir::ReduceScatterEpilogueOp,
          cir::QuantizeOp, cir::WriteRowsOp>(op))
    return KernelKind::Reduction;
  if (isa<cir::MatmulOp, cir::MultiMatmulOp, cir::GatedMatmulOp,
          cir::ExpertMatmulOp>(op))
    return KernelKind::Matmul;
  return KernelKind::Attention;
}

constexpr int64_t kMaxRows = 32;
constexpr int64_t kMaxCols = 8;

/// The widest vector, in f32 elements, the CPU device's ISA has.
int64_t widestCpuVector(const TargetDevice &device) {
  StringRef isa = device.chip;
  if (isa.ends_with("x86-64-v4"))
    return 16;
  if (isa.ends_with("x86-64-v3"))
    return 8;
  return 4;
}

/// The row length of a matmul's weights, and whether they are plain f32
/// or f16 (which `vector_width` reads in vectors on GPU targets).
std::pair<int64_t, bool> weightRows(Operation *op) {
  // (An expert_matmul's operand 1 is its ids; its weights follow.)
  unsigned at = isa<cir::ExpertMatmulOp>(op) ? 2 : 1;
  auto w = cast<RankedTensorType>(op->getOperand(at).getType());
  Type element = w.getElementType();
  return {w.getShape().back(), element.isF32() || element.isF16()};
}

/// The most value words per block among a matmul's weights of the formats
/// whose GPU dot products split blocks between lanes (the `block_words`
/// knob: q8_0 8, q4_0 and iq4_nl 4, a q4_k/q5_k quarter super-block 8),
/// or 0 without such weights.
int64_t blockValueWords(Operation *op) {
  int64_t most = 0;
  for (Value operand : op->getOperands().drop_front()) {
    auto type = dyn_cast<RankedTensorType>(operand.getType());
    Type element = type ? type.getElementType() : Type();
    if (element && isa<cir::Q8_0Type, cir::Q4_KType, cir::Q5_KType>(element))
      most = std::max<int64_t>(most, 8);
    else if (element && isa<cir::Q4_0Type, cir::IQ4_NLType>(element))
      most = std::max<int64_t>(most, 4);
  }
  return most;
}

} // namespace

std::string hesper::tune::kernelSignature(Operation *op) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << op->getName() << " (";
  llvm::interleaveComma(op->getOperandTypes(), os);
  os << ") -> ";
  if (op->getNumResults() == 1)
    os << op->getResult(0).getType();
  else {
    os << "(";
    llvm::interleaveComma(op->getResultTypes(), os);
    os << ")";
  }
  // The bodies and attributes, without the knobs themselves.
  std::string body;
  llvm::raw_string_ostream bodyOs(body);
  Attribute knobs = op->removeAttr(cir::kKnobsAttrName);
  op->print(bodyOs, OpPrintingFlags().useLocalScope().printGenericOpForm());
  if (knobs)
    op->setAttr(cir::kKnobsAttrName, knobs);
  os << " #" << llvm::format_hex_no_prefix(llvm::xxh3_64bits(body), 16);
  return text;
}

std::string hesper::tune::checkKnobs(Operation *op, DictionaryAttr knobs,
                                     const TargetDevice &device) {
  std::string error;
  llvm::raw_string_ostream os(error);
  if (!cir::isDispatchOp(op)) {
    os << op->getName() << " is not a kernel and has no knobs";
    return error;
  }
  KernelKind kind = kindOf(op);
  bool cpu = device.backend == TargetBackend::Cpu;
  int64_t lanes = 0;
  for (NamedAttribute knob : knobs) {
    StringRef name = knob.getName().getValue();
    // The value of an integer knob (a bool is an i1 attribute, not one).
    auto integer = [&]() -> std::optional<int64_t> {
      auto value = dyn_cast<IntegerAttr>(knob.getValue());
      if (!value || isa<BoolAttr>(value)) {
        os << "knob '" << name << "' takes an integer";
        return std::nullopt;
      }
      return value.getInt();
    };
    if (name == "lanes") {
      std::optional<int64_t> value = integer();
      if (!value)
        return error;
      lanes = *value;
      if (cpu && lanes != 1) {
        os << "lanes = " << lanes << ": the CPU target runs one lane per "
           << "workgroup (lanes = 1)";
        return error;
      }
      if (lanes < 1 || !llvm::isPowerOf2_64(lanes)) {
        os << "lanes = " << lanes << " is not a power of two";
        return error;
      }
      uint64_t limit = std::min<uint64_t>(device.maxWorkgroupInvocations,
                                          device.maxWorkgroupSize[0]);
      if (static_cast<uint64_t>(lanes) > limit) {
        os << "lanes = " << lanes << " exceeds the device's workgroup limit of "
           << limit << " invocations";
        return error;
      }
      // Reductions and dot products combine lanes in shared memory: one f32
      // slot per lane.
      if (kind != KernelKind::Elementwise && device.maxSharedMemoryBytes &&
          static_cast<uint64_t>(lanes) * 4 > device.maxSharedMemoryBytes) {
        os << "lanes = " << lanes << " needs " << lanes * 4
           << " bytes of shared memory; the device has "
           << device.maxSharedMemoryBytes;
        return error;
      }
    } else if (name == "rows") {
      std::optional<int64_t> rows = integer();
      if (!rows)
        return error;
      if (kind != KernelKind::Matmul) {
        os << "knob 'rows' applies to matmuls only, not to " << op->getName();
        return error;
      }
      if (*rows < 1 || *rows > kMaxRows) {
        os << "rows = " << *rows << " is outside 1.." << kMaxRows;
        return error;
      }
    } else if (name == "unroll") {
      std::optional<int64_t> value = integer();
      if (!value)
        return error;
      if (kind != KernelKind::Reduction && kind != KernelKind::Matmul) {
        os << "knob 'unroll' applies to reductions and matmuls only, not to "
           << op->getName();
        return error;
      }
      int64_t u = *value;
      if (u != 1 && u != 2 && u != 4 && u != 8) {
        os << "unroll = " << u << " must be 1, 2, 4 or 8";
        return error;
      }
    } else if (name == "cols") {
      std::optional<int64_t> cols = integer();
      if (!cols)
        return error;
      if (kind != KernelKind::Matmul) {
        os << "knob 'cols' applies to matmuls only, not to " << op->getName();
        return error;
      }
      if (*cols < 1 || *cols > kMaxCols) {
        os << "cols = " << *cols << " is outside 1.." << kMaxCols;
        return error;
      }
    } else if (name == "vector_width") {
      std::optional<int64_t> width = integer();
      if (!width)
        return error;
      if (cpu) {
        // The vectorizers' preferred width: SSE/NEON, AVX2, AVX-512.
        int64_t widest = widestCpuVector(device);
        if (*width != 4 && *width != 8 && *width != 16) {
          os << "vector_width = " << *width
             << " must be 4, 8 or 16 f32 elements on the CPU target";
          return error;
        }
        if (*width > widest) {
          os << "vector_width = " << *width << " exceeds the widest vector of "
             << "the device's ISA (" << widest << " f32 elements)";
          return error;
        }
        continue;
      }
      if (isa<cir::MapOp>(op)) {
        // A map's lanes take vector_width consecutive elements each.
        std::string why = cir::mapVectorObstacle(op, *width);
        if (!why.empty()) {
          os << "knob 'vector_width' on this map: " << why;
          return error;
        }
        continue;
      }
      if (kind != KernelKind::Matmul) {
        os << "knob 'vector_width' applies to matmuls and maps only on GPU "
           << "targets, not to " << op->getName();
        return error;
      }
      auto [k, plain] = weightRows(op);
      if (!plain) {
        os << "knob 'vector_width' applies to f32 and f16 weights only on "
           << "GPU targets (block formats are read by the word)";
        return error;
      }
      if (*width != 1 && *width != 2 && *width != 4) {
        os << "vector_width = " << *width << " must be 1, 2 or 4";
        return error;
      }
      if (k % *width != 0) {
        os << "vector_width = " << *width << " does not divide the row length "
           << k;
        return error;
      }
    } else if (name == "block_words") {
      std::optional<int64_t> words = integer();
      if (!words)
        return error;
      if (cpu) {
        os << "knob 'block_words' applies to GPU targets only (the CPU "
              "target's lane takes whole blocks)";
        return error;
      }
      int64_t blockWords =
          kind == KernelKind::Matmul ? blockValueWords(op) : 0;
      if (!blockWords) {
        os << "knob 'block_words' applies to matmuls of q8_0, q4_0, "
              "iq4_nl, q4_k and q5_k weights only, not to "
           << op->getName();
        return error;
      }
      if (*words < 1 || *words > blockWords || !llvm::isPowerOf2_64(*words)) {
        os << "block_words = " << *words << " must be a power of two up to "
           << blockWords << " (the words of the weights' blocks)";
        return error;
      }
    } else if (name == "gemm_rows") {
      std::optional<int64_t> rows = integer();
      if (!rows)
        return error;
      if (cpu) {
        os << "knob 'gemm_rows' applies to GPU targets only (the CPU "
              "target has no tiled GEMM)";
        return error;
      }
      if (kind != KernelKind::Matmul || isa<cir::ExpertMatmulOp>(op)) {
        os << "knob 'gemm_rows' applies to matmul, multi_matmul and "
              "gated_matmul only, not to "
           << op->getName();
        return error;
      }
      if (*rows != 64 && *rows != 128) {
        os << "gemm_rows = " << *rows << " must be 64 or 128";
        return error;
      }
    } else if (name == "threads") {
      std::optional<int64_t> threads = integer();
      if (!threads)
        return error;
      if (!cpu) {
        os << "knob 'threads' applies to the CPU target only";
        return error;
      }
      if (*threads < 1 || static_cast<uint64_t>(*threads) > device.threads) {
        os << "threads = " << *threads << " is outside 1.." << device.threads
           << " (the device's threads)";
        return error;
      }
    } else if (name == "subgroup_reduce") {
      auto value = dyn_cast<BoolAttr>(knob.getValue());
      if (!value) {
        os << "knob 'subgroup_reduce' takes true or false";
        return error;
      }
      if (kind != KernelKind::Reduction && kind != KernelKind::Matmul) {
        os << "knob 'subgroup_reduce' applies to reductions and matmuls "
              "only, not to "
           << op->getName();
        return error;
      }
      if (value.getValue() && (!device.subgroupArithmetic || cpu)) {
        os << "subgroup_reduce = true: the device has no subgroup "
              "arithmetic in compute shaders";
        return error;
      }
    } else {
      os << "unknown knob '" << name
         << "' (known: lanes, rows, cols, subgroup_reduce, unroll, "
            "vector_width, block_words, gemm_rows, threads)";
      return error;
    }
  }
  auto sub = knobs.getAs<BoolAttr>("subgroup_reduce");
  if (sub && sub.getValue() && lanes && device.subgroupSize > 1 &&
      lanes % device.subgroupSize != 0) {
    os << "subgroup_reduce = true with lanes = " << lanes
       << ": not a whole number of the device's subgroups of "
       << device.subgroupSize;
    return error;
  }
  return error;
}

FailureOr<Plan> hesper::tune::parsePlan(StringRef text, MLIRContext *context,
                                        std::string &error) {
  llvm::json::Value parsed(nullptr);
  const llvm::json::Object *root =
      json::parseVersioned(parsed, text, "hesper_plan", "plan", error);
  if (!root)
    return failure();
  Plan plan;
  if (auto device = root->getString("device"))
    plan.device = device->str();
  else {
    error = "the plan names no \"device\"";
    return failure();
  }
  const llvm::json::Array *kernels = root->getArray("kernels");
  if (!kernels) {
    error = "the plan has no \"kernels\" array";
    return failure();
  }
  Builder b(context);
  for (auto [i, value] : llvm::enumerate(*kernels)) {
    std::string where = "kernels[" + std::to_string(i) + "]";
    const llvm::json::Object *entry = value.getAsObject();
    auto signature = entry ? entry->getString("signature") : std::nullopt;
    const llvm::json::Object *knobs =
        entry ? entry->getObject("knobs") : nullptr;
    if (!signature || !knobs) {
      error = where + ": expects {\"signature\": ..., \"knobs\": {...}}";
      return failure();
    }
    std::string badKey;
    DictionaryAttr attrs = json::knobsFromJson(*knobs, b, badKey);
    if (!badKey.empty()) {
      error = where + ": knob '" + badKey + "' must be an integer or a boolean";
      return failure();
    }
    plan.entries.push_back({signature->str(), attrs});
  }
  return plan;
}

std::string hesper::tune::printPlan(const Plan &plan) {
  llvm::json::Array kernels;
  for (const PlanEntry &e : plan.entries)
    kernels.push_back(llvm::json::Object{
        {"signature", e.signature}, {"knobs", json::knobsToJson(e.knobs)}});
  return json::print(llvm::json::Object{{"hesper_plan", 1},
                                        {"device", plan.device},
                                        {"kernels", std::move(kernels)}});
}

Plan hesper::tune::planOf(ModuleOp module, const TargetDevice &device) {
  Plan plan;
  plan.device = device.name;
  llvm::StringSet<> seen;
  module.walk([&](Operation *op) {
    if (!cir::isDispatchOp(op))
      return;
    std::string signature = kernelSignature(op);
    if (!seen.insert(signature).second)
      return;
    auto knobs = op->getAttrOfType<DictionaryAttr>(cir::kKnobsAttrName);
    plan.entries.push_back(
        {signature, knobs ? knobs : DictionaryAttr::get(op->getContext())});
  });
  return plan;
}

LogicalResult hesper::tune::applyPlan(ModuleOp module, const Plan &plan,
                                      const TargetDevice &device,
                                      bool skipIllegal) {
  if (plan.device != device.name)
    return module.emitError("plan for device '")
           << plan.device << "', but this device is '" << device.name << "'";
  llvm::StringMap<DictionaryAttr> bySignature;
  for (const PlanEntry &e : plan.entries)
    if (!bySignature.try_emplace(e.signature, e.knobs).second)
      return module.emitError("plan: two entries for kernel '")
             << e.signature << "'";
  // Check everything first, then set: a bad plan changes nothing.
  SmallVector<std::pair<Operation *, DictionaryAttr>> updates;
  WalkResult result = module.walk([&](Operation *op) {
    if (!cir::isDispatchOp(op))
      return WalkResult::advance();
    auto it = bySignature.find(kernelSignature(op));
    if (it == bySignature.end())
      return WalkResult::advance();
    std::string problem = checkKnobs(op, it->second, device);
    if (!problem.empty() && skipIllegal)
      return WalkResult::advance();
    if (!problem.empty()) {
      op->emitError("plan: kernel '") << it->getKey() << "': " << problem;
      return WalkResult::interrupt();
    }
    updates.push_back({op, it->second});
    return WalkResult::advance();
  });
  if (result.wasInterrupted())
    return failure();
  for (auto [op, knobs] : updates)
    op->setAttr(cir::kKnobsAttrName, knobs);
  return success();
}

//===----------------------------------------------------------------------===//
// The tuning cache
//===----------------------------------------------------------------------===//

std::string hesper::tune::compilerVersion() {
  return "hesper-" HESPER_SOURCE_REVISION;
}

std::string hesper::tune::cacheDirOr(StringRef dir) {
  if (!dir.empty())
    return dir.str();
  const char *env = std::getenv("HESPER_CACHE_DIR");
  return env ? env : "";
}

std::string hesper::tune::cachePath(StringRef dir) {
  SmallString<128> path(dir);
  llvm::sys::path::append(path, "tune-cache.json");
  return std::string(path);
}

FailureOr<std::vector<CacheEntry>> hesper::tune::loadCache(StringRef dir,
                                                           MLIRContext *context,
                                                           std::string &error) {
  std::vector<CacheEntry> entries;
  std::string path = cachePath(dir);
  if (!llvm::sys::fs::exists(path))
    return entries;
  auto file = llvm::MemoryBuffer::getFile(path, /*IsText=*/true);
  if (!file) {
    error = path + ": " + file.getError().message();
    return failure();
  }
  llvm::json::Value parsed(nullptr);
  const llvm::json::Object *root = json::parseVersioned(
      parsed, (*file)->getBuffer(), "hesper_tune_cache", "tuning cache", error);
  const llvm::json::Array *list = root ? root->getArray("entries") : nullptr;
  if (!list) {
    error = path + ": " + (root ? "not a tuning cache" : error);
    return failure();
  }
  Builder b(context);
  for (const llvm::json::Value &value : *list) {
    const llvm::json::Object *e = value.getAsObject();
    if (!e)
      continue;
    auto device = e->getString("device");
    auto compiler = e->getString("compiler");
    auto signature = e->getString("signature");
    const llvm::json::Object *knobs = e->getObject("knobs");
    if (!device || !compiler || !signature || !knobs)
      continue;
    // A knob of another type is left out (a cache never stops a compile).
    std::string ignored;
    entries.push_back({device->str(), compiler->str(), signature->str(),
                       json::knobsFromJson(*knobs, b, ignored)});
  }
  return entries;
}

std::string hesper::tune::storeCache(StringRef dir, MLIRContext *context,
                                     ArrayRef<CacheEntry> added) {
  std::string error;
  auto existing = loadCache(dir, context, error);
  if (failed(existing))
    return error;
  std::vector<CacheEntry> entries;
  auto same = [](const CacheEntry &a, const CacheEntry &b) {
    return a.device == b.device && a.compiler == b.compiler &&
           a.signature == b.signature;
  };
  for (const CacheEntry &e : *existing)
    if (llvm::none_of(added, [&](const CacheEntry &n) { return same(e, n); }))
      entries.push_back(e);
  entries.insert(entries.end(), added.begin(), added.end());

  llvm::json::Array list;
  for (const CacheEntry &e : entries)
    list.push_back(llvm::json::Object{{"device", e.device},
                                      {"compiler", e.compiler},
                                      {"signature", e.signature},
                                      {"knobs", json::knobsToJson(e.knobs)}});
  if (std::error_code ec = llvm::sys::fs::create_directories(dir))
    return dir.str() + ": " + ec.message();
  std::string path = cachePath(dir), temporary = path + ".tmp";
  {
    std::error_code ec;
    llvm::raw_fd_ostream os(temporary, ec);
    if (ec)
      return temporary + ": " + ec.message();
    os << json::print(llvm::json::Object{{"hesper_tune_cache", 1},
                                         {"entries", std::move(list)}});
  }
  if (std::error_code ec = llvm::sys::fs::rename(temporary, path))
    return path + ": " + ec.message();
  return "";
}

Plan hesper::tune::planFromCache(ArrayRef<CacheEntry> entries,
                                 const TargetDevice &device) {
  Plan plan;
  plan.device = device.name;
  std::string compiler = compilerVersion();
  for (const CacheEntry &e : entries)
    if (e.device == device.cacheId && e.compiler == compiler)
      plan.entries.push_back({e.signature, e.knobs});
  return plan;
}
