//===- GradientCheck.cpp - Gradients against finite differences -----------===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//

#include "Hesper/Interpreter/GradientCheck.h"

#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>

using namespace mlir;
using namespace hesper;
using namespace hesper::interp;

std::string GradientCheckReport::describe() const {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << "argument #" << argument << "[" << index << "]: analytic "
     << llvm::format("%.9g", analytic) << ", numeric "
     << llvm::format("%.9g", numeric) << " (error "
     << llvm::format("%.3g", maxError) << ")";
  return text;
}

/// Uniform in [-1, 1] from a splitmix64 stream.
static double nextUniform(uint64_t &state) {
  uint64_t z = (state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  z ^= z >> 31;
  return static_cast<double>(z >> 11) * 0x1.0p-53 * 2.0 - 1.0;
}

FailureOr<GradientCheckReport> hesper::interp::checkGradients(
    circuit::GraphOp forward, circuit::GraphOp gradient,
    ArrayRef<unsigned> wrt, ArrayRef<HostTensor> inputs,
    const GradientCheckOptions &options) {
  Options wide;
  wide.wide = true;
  auto resultTypes = forward.getFunctionType().getResults();
  size_t numResults = resultTypes.size();
  if (gradient.getFunctionType().getNumInputs() !=
          inputs.size() + numResults ||
      gradient.getFunctionType().getNumResults() != numResults + wrt.size())
    return gradient.emitOpError("gradient check: expects the signature of a "
                                "gradient of @")
           << forward.getSymName() << " with " << wrt.size()
           << " differentiated arguments";

  std::vector<HostTensor> point;
  for (const HostTensor &t : inputs)
    point.push_back(t.widened());
  uint64_t state = options.seed;
  std::vector<HostTensor> seeds;
  for (Type type : resultTypes) {
    HostTensor u(cast<RankedTensorType>(type), /*wide=*/true);
    for (int64_t i = 0, e = u.getNumElements(); i < e; ++i)
      u.setDouble(i, nextUniform(state));
    seeds.push_back(std::move(u));
  }

  std::vector<HostTensor> gradArgs(point);
  gradArgs.insert(gradArgs.end(), seeds.begin(), seeds.end());
  auto analytic = runGraph(gradient, gradArgs, wide);
  if (failed(analytic))
    return failure();

  // L(x) = Σ_r <u_r, f_r(x)>.
  auto loss = [&](std::vector<HostTensor> args) -> FailureOr<double> {
    auto results = runGraph(forward, args, wide);
    if (failed(results))
      return failure();
    double sum = 0;
    for (size_t r = 0; r < numResults; ++r)
      for (int64_t i = 0, e = seeds[r].getNumElements(); i < e; ++i)
        sum += seeds[r].getDouble(i) * (*results)[r].getDouble(i);
    return sum;
  };

  GradientCheckReport report;
  for (auto [k, argIndex] : llvm::enumerate(wrt)) {
    const HostTensor &grad = (*analytic)[numResults + k];
    if (argIndex >= point.size() ||
        grad.getNumElements() != point[argIndex].getNumElements())
      return gradient.emitOpError("gradient check: gradient #")
             << k << " does not match argument #" << argIndex;
    for (int64_t i = 0, e = grad.getNumElements(); i < e; ++i) {
      double x = point[argIndex].getDouble(i);
      std::vector<HostTensor> plus(point), minus(point);
      plus[argIndex].setDouble(i, x + options.step);
      minus[argIndex].setDouble(i, x - options.step);
      auto lp = loss(std::move(plus));
      auto lm = loss(std::move(minus));
      if (failed(lp) || failed(lm))
        return failure();
      double numeric = (*lp - *lm) / (2 * options.step);
      double a = grad.getDouble(i);
      double error = std::fabs(a - numeric) / (1 + std::fabs(numeric));
      if (std::isnan(error))
        error = std::numeric_limits<double>::infinity();
      ++report.checked;
      if (error > options.tolerance)
        report.failedWithin = true;
      if (error >= report.maxError) {
        report.maxError = error;
        report.argument = argIndex;
        report.index = i;
        report.analytic = a;
        report.numeric = numeric;
      }
    }
  }
  return report;
}
