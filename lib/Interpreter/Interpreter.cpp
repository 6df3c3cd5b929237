//===- Interpreter.cpp - Reference interpreter for Circuit graphs --------===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//
//
// runGraph: the walk over a Circuit graph's ops, each handed to the
// evaluation of its kind (EvalOps.cpp). HostTensor is in HostTensor.cpp, the
// tolerances of --check in CheckTolerance.cpp.
//
//===----------------------------------------------------------------------===//

#include "Hesper/Interpreter/Interpreter.h"

#include "GraphEvaluator.h"

#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace hesper;
using namespace hesper::circuit;
using namespace hesper::interp;

LogicalResult GraphEvaluator::run(GraphOp graph, std::vector<HostTensor> &args,
                                  std::vector<HostTensor> &results) {
  Block &body = graph.getBody().front();
  if (args.size() != body.getNumArguments())
    return graph.emitOpError("reference interpreter: expects ")
           << body.getNumArguments() << " arguments, got " << args.size();
  // Arguments are shared with the caller's vector so that in-place writes
  // show up there.
  std::vector<TensorRef> argRefs;
  for (auto [i, arg] : llvm::enumerate(body.getArguments())) {
    if (args[i].getType() != arg.getType())
      return graph.emitOpError("reference interpreter: argument #")
             << i << " has type " << args[i].getType() << ", expected "
             << arg.getType();
    if (options.wide)
      args[i] = args[i].widened();
    argRefs.push_back(std::make_shared<HostTensor>(std::move(args[i])));
    env[arg] = argRefs.back();
  }
  LogicalResult status = success();
  for (Operation &op : body.without_terminator())
    if (failed(eval(&op))) {
      status = failure();
      break;
    }
  for (size_t i = 0; i < args.size(); ++i)
    args[i] = *argRefs[i];
  if (failed(status))
    return failure();
  auto output = cast<OutputOp>(body.getTerminator());
  for (Value v : output.getResults())
    results.push_back(*env[v]);
  return success();
}

LogicalResult GraphEvaluator::eval(Operation *op) {
  return llvm::TypeSwitch<Operation *, LogicalResult>(op)
      .Case([&](ZerosOp z) {
        env[z] = fresh(z.getType());
        return success();
      })
      .Case([&](MapOp m) { return evalMap(m); })
      .Case([&](GatherOp g) { return evalGather(g); })
      .Case([&](ScatterOp s) {
        return evalScatter(s, s.getInputs(), s.getDest(),
                           static_cast<int64_t>(s.getGrid()), s.getBody());
      })
      .Case([&](ScatterMultiOp s) {
        return evalScatter(s, s.getInputs(), s.getDests(),
                           static_cast<int64_t>(s.getGrid()), s.getBody());
      })
      .Case([&](ScatterAddOp s) { return evalScatterAdd(s); })
      .Case([&](ReduceOp r) {
        return evalReduce(r, r.getKind(), r.getInputs(), r.getPrologue(),
                          nullptr, nullptr);
      })
      .Case([&](ReduceEpilogueOp r) {
        return evalReduce(r, r.getKind(), r.getInputs(), r.getPrologue(),
                          &r.getEpilogue(), nullptr);
      })
      .Case([&](ReduceScatterEpilogueOp r) {
        return evalReduce(r, r.getKind(), r.getInputs(), r.getPrologue(),
                          &r.getEpilogue(), r.getDest());
      })
      .Case([&](MatmulOp m) { return evalMatmul(m); })
      .Case([&](MultiMatmulOp m) { return evalMultiMatmul(m); })
      .Case([&](QuantizeOp q) { return evalQuantize(q); })
      .Case([&](WriteRowsOp w) { return evalWriteRows(w); })
      .Case([&](AttentionOp a) { return evalAttention(a); })
      .Case([&](GatedMatmulOp g) { return evalGatedMatmul(g); })
      .Case([&](ExpertMatmulOp x) { return evalExpertMatmul(x); })
      .Default([](Operation *other) {
        return other->emitOpError(
            "is not supported by the reference interpreter");
      });
}

FailureOr<std::vector<HostTensor>>
hesper::interp::runGraph(GraphOp graph, std::vector<HostTensor> &args,
                         const Options &options) {
  if (options.subgroupSize == 0 ||
      (options.subgroupSize & (options.subgroupSize - 1)) != 0)
    return graph.emitOpError("reference interpreter: subgroup size must be a "
                             "power of two, got ")
           << options.subgroupSize;
  GraphEvaluator evaluator(options);
  std::vector<HostTensor> results;
  if (failed(evaluator.run(graph, args, results)))
    return failure();
  return results;
}
