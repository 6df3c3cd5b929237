//===- ExpandSubgroupReduce.cpp - Subgroup reductions as shuffles --------===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//
//
// hesper-expand-subgroup-reduce: NVVM has no subgroup-reduce instruction
// for every type, so reductions become butterfly shuffles, and its missing
// subgroup-id register a division of the linear thread id.
//
//===----------------------------------------------------------------------===//

#include "Hesper/Target/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/GPU/Transforms/Passes.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace hesper {
#define GEN_PASS_DEF_EXPANDSUBGROUPREDUCEPASS
#include "Hesper/Target/Passes.h.inc"
} // namespace hesper

using namespace mlir;
using namespace hesper;

namespace {

struct ExpandSubgroupReducePass
    : hesper::impl::ExpandSubgroupReducePassBase<ExpandSubgroupReducePass> {
  using Base::Base;
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    populateGpuBreakDownSubgroupReducePatterns(patterns,
                                               /*maxShuffleBitwidth=*/32);
    populateGpuLowerSubgroupReduceToShufflePatterns(patterns, subgroupSize,
                                                    /*shuffleBitwidth=*/32);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
    // NVVM has no subgroup-id register: the linear thread id divided by
    // the size (warps are consecutive runs of linear ids).
    getOperation().walk([&](gpu::SubgroupIdOp op) {
      OpBuilder b(op);
      Location loc = op.getLoc();
      auto id = [&](gpu::Dimension d) -> Value {
        return gpu::ThreadIdOp::create(b, loc, d);
      };
      auto dim = [&](gpu::Dimension d) -> Value {
        return gpu::BlockDimOp::create(b, loc, d);
      };
      Value yz = arith::AddIOp::create(
          b, loc, id(gpu::Dimension::y),
          arith::MulIOp::create(b, loc, dim(gpu::Dimension::y),
                                id(gpu::Dimension::z)));
      Value linear = arith::AddIOp::create(
          b, loc, id(gpu::Dimension::x),
          arith::MulIOp::create(b, loc, dim(gpu::Dimension::x), yz));
      Value size = arith::ConstantIndexOp::create(b, loc, subgroupSize);
      op.replaceAllUsesWith(
          arith::DivUIOp::create(b, loc, linear, size).getResult());
      op.erase();
    });
    WalkResult left = getOperation().walk([](gpu::SubgroupReduceOp op) {
      op.emitOpError("could not be expanded into shuffles (only 32-bit "
                     "values and vectors of them are)");
      return WalkResult::interrupt();
    });
    if (left.wasInterrupted())
      signalPassFailure();
  }
};

} // namespace
