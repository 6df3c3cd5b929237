//===- Validate.cpp - Translation validation with the interpreter --------===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//

#include "Hesper/Interpreter/Validate.h"
#include "Hesper/Support/Half.h"

#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <cmath>
#include <cstring>

using namespace mlir;
using namespace hesper;
using namespace hesper::circuit;
using namespace hesper::interp;

namespace {
/// xorshift64*: small, fast, and the same on every platform.
class Random {
public:
  explicit Random(uint64_t seed) : state(seed * 0x9E3779B97F4A7C15ull + 1) {}
  uint64_t next() {
    state ^= state >> 12;
    state ^= state << 25;
    state ^= state >> 27;
    return state * 0x2545F4914F6CDD1Dull;
  }
  /// Uniform in [lo, hi).
  float uniform(float lo, float hi) {
    return lo + (hi - lo) * static_cast<float>(next() >> 40) /
                    static_cast<float>(1ull << 24);
  }

private:
  uint64_t state;
};
} // namespace

HostTensor hesper::interp::randomTensor(RankedTensorType type,
                                        uint64_t seed) {
  HostTensor t(type);
  Random rng(seed);
  Type element = type.getElementType();
  int64_t n = type.getNumElements();
  if (element.isInteger(32)) {
    for (int64_t i = 0; i < n; ++i)
      t.setInt(i, static_cast<int32_t>(rng.next() % 16));
  } else if (element.isF32() || element.isF16() || element.isBF16()) {
    for (int64_t i = 0; i < n; ++i)
      t.setFloat(i, rng.uniform(-2.0f, 2.0f));
  } else if (isa<Q8_0Type, Q8_1Type>(element)) {
    std::vector<float> values(n);
    for (float &v : values)
      v = rng.uniform(-2.0f, 2.0f);
    // quantizeBlocks appends: the tensor's zero bytes go first.
    t.bytes().clear();
    quantizeBlocks(values, isa<Q8_1Type>(element), t.bytes());
  } else {
    for (uint8_t &b : t.bytes())
      b = static_cast<uint8_t>(rng.next());
    // Keep the f16 scales of k-quant blocks small and finite.
    int64_t blockBytes = getQuantBlockBytes(element);
    uint16_t scale = floatToHalfBits(0.01f);
    for (size_t at = 0; at + blockBytes <= t.bytes().size();
         at += blockBytes) {
      uint8_t *block = t.bytes().data() + at;
      auto setHalf = [&](size_t offset) {
        block[offset] = scale & 0xff;
        block[offset + 1] = scale >> 8;
      };
      if (isa<Q4_0Type, Q5_0Type, IQ4_NLType, IQ4_XSType>(element)) {
        setHalf(0);
      } else if (isa<Q4_KType, Q5_KType, Q4_1Type, Q5_1Type>(element)) {
        setHalf(0);
        setHalf(2);
      } else if (isa<Q6_KType>(element)) {
        setHalf(208);
      } else if (isa<Q2_KType>(element)) {
        setHalf(80);
        setHalf(82);
      } else if (isa<Q3_KType>(element)) {
        setHalf(108);
      } else if (isa<TQ1_0Type>(element)) {
        setHalf(52);
      } else if (isa<TQ2_0Type>(element)) {
        setHalf(64);
      }
    }
    // An i2_s tensor's scale after its blocks, then zero padding.
    if (isa<I2_SType>(element)) {
      size_t at = static_cast<size_t>(n / 4);
      float scale = 0.01f;
      std::fill(t.bytes().begin() + at, t.bytes().end(), 0);
      std::memcpy(t.bytes().data() + at, &scale, sizeof(scale));
    }
  }
  return t;
}

/// Compares two tensors of one type; updates the report.
static void compare(const HostTensor &want, const HostTensor &got,
                    StringRef what, const ValidationOptions &options,
                    ValidationReport &report) {
  std::vector<float> w = want.toFloats(), g = got.toFloats();
  if (w.size() != g.size()) {
    if (report.matches)
      report.firstMismatch = (what + ": sizes differ").str();
    report.matches = false;
    return;
  }
  for (size_t i = 0; i < w.size(); ++i) {
    ++report.compared;
    double a = w[i], b = g[i];
    bool bothNaN = std::isnan(a) && std::isnan(b);
    double error = bothNaN ? 0.0 : std::fabs(a - b);
    if (std::isnan(error))
      error = INFINITY;
    report.maxError = std::max(report.maxError, error);
    if (error > options.atol + options.rtol * std::fabs(a)) {
      if (report.matches) {
        std::string text;
        llvm::raw_string_ostream os(text);
        os << what << "[" << i << "]: expected " << a << ", got " << b;
        report.firstMismatch = os.str();
      }
      report.matches = false;
    }
  }
}

FailureOr<ValidationReport>
hesper::interp::validateTransform(GraphOp source, GraphOp transformed,
                                  const ValidationOptions &options) {
  if (source.getFunctionType() != transformed.getFunctionType())
    return transformed.emitOpError("translation validation: the signature "
                                   "changed from ")
           << source.getFunctionType();
  ValidationReport report;
  ArrayRef<Type> argTypes = source.getArgumentTypes();
  for (unsigned trial = 0; trial < options.trials; ++trial) {
    std::vector<HostTensor> srcArgs, newArgs;
    for (auto [i, type] : llvm::enumerate(argTypes)) {
      uint64_t seed = (options.seed + trial) * 1000003ull + i;
      srcArgs.push_back(randomTensor(cast<RankedTensorType>(type), seed));
      newArgs.push_back(srcArgs.back());
    }
    auto want = runGraph(source, srcArgs, options.interpreter);
    if (failed(want))
      return failure();
    auto got = runGraph(transformed, newArgs, options.interpreter);
    if (failed(got))
      return failure();
    for (size_t r = 0; r < want->size(); ++r)
      compare((*want)[r], (*got)[r], "result #" + std::to_string(r), options,
              report);
    // Arguments written in place must end up the same too.
    for (size_t a = 0; a < srcArgs.size(); ++a)
      compare(srcArgs[a], newArgs[a], "argument #" + std::to_string(a),
              options, report);
  }
  return report;
}
