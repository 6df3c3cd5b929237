//===- CircuitToShaderM.cpp - Circuit graphs to kernels and a schedule ----===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//
//
// Every dispatch-level op of a circuit.graph becomes one shaderm.kernel; the
// graph itself becomes a shaderm.schedule of the same name that allocates
// the intermediate buffers and launches the kernels in graph order.
//
// Bodies (Exp ops over a lane index and the inputs' elements) are cloned
// into the kernels: a body argument becomes a load at the lane's broadcast
// index, a whole-tensor argument becomes the buffer itself and each
// `circuit.extract` of it a load, `circuit.yield` gives the values to store.
//
// Index arithmetic is emitted with `arith` on `index`; values keep the types
// the bodies give them.
//
//===----------------------------------------------------------------------===//

#include "GraphLowering.h"

namespace hesper {
#define GEN_PASS_DEF_CONVERTCIRCUITTOSHADERMPASS
#include "Hesper/Conversion/Passes.h.inc"
} // namespace hesper

namespace hesper::lowering {

//===----------------------------------------------------------------------===//
// Kernel plumbing
//===----------------------------------------------------------------------===//

void GraphLowering::createKernel(KernelState &ks, Operation *op,
                                 int64_t lanes) {
  SmallVector<Type> argTypes;
  for (auto [buffer, written] : ks.bindings) {
    auto type = cast<sm::BufferType>(buffer.getType());
    argTypes.push_back(sm::BufferType::get(
        type.getContext(), type.getLength(), type.getElementType(),
        written ? sm::Access::read_write : sm::Access::read_only));
  }
  std::string name = (graph.getSymName() + "_k" + Twine(kernelCount++) + "_" +
                      op->getName().stripDialect())
                         .str();
  b.setInsertionPoint(schedule);
  ks.kernel = sm::KernelOp::create(b, op->getLoc(), name, argTypes,
                                   {static_cast<int32_t>(lanes), 1, 1});
  if (shape.hostThreads > 0)
    ks.kernel.setHostThreadsAttr(b.getI32IntegerAttr(shape.hostThreads));
  if (shape.vectorBits > 0)
    ks.kernel.setVectorBitsAttr(b.getI32IntegerAttr(shape.vectorBits));
  Block &entry = ks.kernel.getBody().front();
  for (auto [i, binding] : llvm::enumerate(ks.bindings))
    ks.argOf[binding.first] = entry.getArgument(i);
  b.setInsertionPointToStart(&entry);
}

void GraphLowering::finishKernel(KernelState &ks, ArrayRef<int64_t> grid) {
  Location loc = ks.kernel.getLoc();
  b.setInsertionPointToEnd(&ks.kernel.getBody().front());
  sm::ReturnOp::create(b, loc);
  b.setInsertionPoint(schedule.getBody().front().getTerminator());
  SmallVector<Value> buffers;
  for (auto &binding : ks.bindings)
    buffers.push_back(binding.first);
  sm::LaunchOp::create(b, loc, ks.kernel.getSymName(), grid, buffers,
                       /*traffic=*/nullptr);
}

SmallVector<Value> GraphLowering::inlineBody(KernelState &ks, Region &body,
                                             ArrayRef<Value> args,
                                             ArrayRef<Value> wholeTensors) {
  Block &block = body.front();
  IRMapping mapping;
  DenseMap<Value, Value> wholeArg; // block argument -> kernel buffer
  for (auto [i, blockArg] : llvm::enumerate(block.getArguments())) {
    if (args[i])
      mapping.map(blockArg, args[i]);
    else
      wholeArg[blockArg] = arg(ks, wholeTensors[i]);
  }
  SmallVector<Value> yielded;
  IndexMath im(b, body.getLoc());
  for (Operation &op : block) {
    if (auto yield = dyn_cast<cir::YieldOp>(op)) {
      for (Value v : yield.getOperands())
        yielded.push_back(mapping.lookupOrDefault(v));
      break;
    }
    if (auto extract = dyn_cast<cir::ExtractOp>(op)) {
      // circuit.extract yields 0 for an index out of range (a gather fused
      // into its user relies on it): the load reads a clamped index and
      // the result is selected. The comparison is unsigned, so negative
      // indices are out of range too.
      Location loc = extract.getLoc();
      Value buffer = wholeArg.lookup(extract.getOperand(0));
      Value index = im.toIndex(mapping.lookupOrDefault(extract.getOperand(1)));
      int64_t size =
          cast<RankedTensorType>(extract.getTensor().getType()).getNumElements();
      Value valid = im.lt(index, im.c(size));
      Value safe = arith::SelectOp::create(b, loc, valid, index, im.c(0));
      Value v = loadElement(buffer, safe, loc);
      mapping.map(extract.getResult(),
                  arith::SelectOp::create(b, loc, valid, v,
                                          zeroOf(b, loc, v.getType())));
      continue;
    }
    b.clone(op, mapping);
  }
  return yielded;
}

void GraphLowering::loadInputs(KernelState &ks, Region *body,
                               unsigned leading, ValueRange inputs,
                               ArrayRef<int64_t> iteration, Value lane,
                               SmallVector<Value> &args,
                               SmallVector<Value> &whole) {
  IndexMath im(b, lane.getLoc());
  for (auto [k, input] : llvm::enumerate(inputs)) {
    bool isWhole = body && !body->empty() &&
                   body->front().getArgument(leading + k).getType() ==
                       input.getType();
    if (isWhole) {
      args.push_back(nullptr);
      whole.push_back(input);
      continue;
    }
    auto type = cast<RankedTensorType>(input.getType());
    Value index = im.broadcast(lane, type.getShape(), iteration);
    args.push_back(loadElement(arg(ks, input), index, input.getLoc()));
    whole.push_back(nullptr);
  }
}

//===----------------------------------------------------------------------===//
// The graph
//===----------------------------------------------------------------------===//

LogicalResult GraphLowering::run() {
  Location loc = graph.getLoc();
  SmallVector<Type> argTypes, resultTypes;
  for (Type t : graph.getArgumentTypes())
    argTypes.push_back(bufferTypeFor(cast<RankedTensorType>(t), false));
  for (Type t : graph.getResultTypes())
    resultTypes.push_back(bufferTypeFor(cast<RankedTensorType>(t), false));
  b.setInsertionPoint(graph);
  schedule = sm::ScheduleOp::create(b, loc, graph.getSymName(),
                                    b.getFunctionType(argTypes, resultTypes),
                                    ArrayAttr(), ArrayAttr());
  // Argument names (circuit.name) and other attributes carry over.
  if (ArrayAttr argAttrs = graph.getArgAttrsAttr())
    schedule.setArgAttrsAttr(argAttrs);
  if (ArrayAttr resAttrs = graph.getResAttrsAttr())
    schedule.setResAttrsAttr(resAttrs);
  Block *entry = new Block();
  schedule.getBody().push_back(entry);
  Block &body = graph.getBody().front();
  for (auto [arg, type] : llvm::zip(body.getArguments(), argTypes))
    bufferOf[arg] = entry->addArgument(type, arg.getLoc());
  b.setInsertionPointToEnd(entry);
  auto output = sm::OutputOp::create(b, loc, ValueRange{});

  const KernelShape targetShape = shape;
  for (Operation &op : body.without_terminator()) {
    // An op's knobs (from a tuning plan) reshape its kernel alone.
    shape = targetShape.withKnobs(
        op.getAttrOfType<DictionaryAttr>(cir::kKnobsAttrName));
    Operation *before = output->getPrevNode();
    LogicalResult status =
        llvm::TypeSwitch<Operation *, LogicalResult>(&op)
            .Case([&](cir::ZerosOp z) { return lowerZeros(z); })
            .Case<cir::MapOp, cir::GatherOp, cir::ScatterOp,
                  cir::ScatterMultiOp>(
                [&](Operation *e) { return lowerElementwise(e); })
            .Case([&](cir::ScatterAddOp s) { return lowerScatterAdd(s); })
            .Case([&](cir::ReduceOp r) {
              return lowerReduce(r, r.getKind(), r.getInputs(),
                                 r.getPrologue(), nullptr, nullptr);
            })
            .Case([&](cir::ReduceEpilogueOp r) {
              return lowerReduce(r, r.getKind(), r.getInputs(),
                                 r.getPrologue(), &r.getEpilogue(), nullptr);
            })
            .Case([&](cir::ReduceScatterEpilogueOp r) {
              return lowerReduce(r, r.getKind(), r.getInputs(),
                                 r.getPrologue(), &r.getEpilogue(),
                                 r.getDest());
            })
            .Case([&](cir::QuantizeOp q) { return lowerQuantize(q); })
            .Case([&](cir::WriteRowsOp w) { return lowerWriteRows(w); })
            .Case([&](cir::AttentionOp a) { return lowerAttention(a); })
            .Case([&](cir::MatmulOp mm) {
              Region *epilogue = &mm.getEpilogue();
              return lowerMatmul(mm, mm.getX(), {mm.getWeight()}, {epilogue},
                                 mm.getInputs());
            })
            .Case([&](cir::GatedMatmulOp gm) {
              return lowerMatmul(gm, gm.getX(), {gm.getGate(), gm.getUp()},
                                 {nullptr, nullptr}, ValueRange{},
                                 &gm.getCombine());
            })
            .Case([&](cir::ExpertMatmulOp em) {
              SmallVector<Value> weights(em.getWeights());
              SmallVector<Region *> epilogues(weights.size(), nullptr);
              bool gated = weights.size() == 2;
              bool perSlot =
                  em.getX().getType().getRank() ==
                  cast<RankedTensorType>(em.getIds().getType()).getRank() + 1;
              return lowerMatmul(em, em.getX(), weights, epilogues,
                                 ValueRange{},
                                 gated ? &em.getCombine() : nullptr,
                                 em.getIds(), perSlot);
            })
            .Case([&](cir::MultiMatmulOp mm) {
              SmallVector<Value> weights(mm.getWeights());
              SmallVector<Region *> epilogues;
              for (Region &r : mm.getEpilogues())
                epilogues.push_back(&r);
              return lowerMatmul(mm, mm.getX(), weights, epilogues,
                                 ValueRange{});
            })
            .Default([](Operation *other) {
              return other->emitOpError(
                  "is not supported by convert-circuit-to-shaderm yet");
            });
    if (failed(status))
      return failure();
    // The op's traffic goes on its first launch (an op lowered to several
    // kernels counts its inputs and outputs once).
    for (Operation *o = before ? before->getNextNode() : &entry->front();
         o != output; o = o->getNextNode())
      if (auto launch = dyn_cast<sm::LaunchOp>(o)) {
        launch.setTrafficAttr(b.getDenseI64ArrayAttr(opTraffic(&op)));
        break;
      }
  }

  SmallVector<Value> results;
  for (Value v : cast<cir::OutputOp>(body.getTerminator()).getResults())
    results.push_back(bufferOf.lookup(v));
  output->setOperands(results);
  graph.erase();
  return success();
}

} // namespace hesper::lowering

using namespace mlir;
using namespace hesper::lowering;

namespace {
struct ConvertCircuitToShaderMPass
    : hesper::impl::ConvertCircuitToShaderMPassBase<
          ConvertCircuitToShaderMPass> {
  using ConvertCircuitToShaderMPassBase::ConvertCircuitToShaderMPassBase;
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<cir::GraphOp> graphs(module.getOps<cir::GraphOp>());
    KernelShape shape = singleLane ? KernelShape::single()
                                     : KernelShape::gpu(subgroupSize);
    if (matrixUnits && singleLane) {
      module.emitError("convert-circuit-to-shaderm: matrix-units needs "
                       "workgroups of many lanes (not single-lane)");
      return signalPassFailure();
    }
    shape.matrixUnits = matrixUnits;
    shape.wideLoads = wideLoads;
    shape.doubleBuffer = doubleBuffer;
    if (gemmSlice != 16 && gemmSlice != 32) {
      module.emitError("convert-circuit-to-shaderm: gemm-slice must be 16 "
                       "or 32, not ")
          << static_cast<int64_t>(gemmSlice);
      return signalPassFailure();
    }
    shape.gemmSlice = gemmSlice;
    // The mutant comes from the option or, so that a whole compile
    // pipeline can be run with one, from the module's `hesper.mutant`.
    std::string chosen = mutant;
    if (auto attr = module->getAttrOfType<StringAttr>("hesper.mutant"))
      chosen = attr.str();
    static const char *const kMutants[] = {
        "", "drop-scale", "short-reduction", "unmasked-tail",
        "guard-off-by-one", "block-size", "tile-layout"};
    if (!llvm::is_contained(kMutants, StringRef(chosen))) {
      module.emitError("convert-circuit-to-shaderm: unknown mutant '")
          << chosen << "'";
      return signalPassFailure();
    }
    shape.mutant = chosen;
    for (cir::GraphOp graph : graphs)
      if (failed(GraphLowering(module, graph, shape).run()))
        return signalPassFailure();
  }
};
} // namespace
