//===- CircuitOps.cpp - Circuit op verifiers and interfaces --------------===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//

#include "Hesper/Dialect/Circuit/IR/ArgRoles.h"

#include "Hesper/Dialect/Circuit/IR/Circuit.h"
#include "OpVerification.h"

#include "mlir/IR/Builders.h"
#include "mlir/Interfaces/FunctionImplementation.h"
#include "llvm/ADT/STLExtras.h"

#include <cmath>
#include <limits>

using namespace mlir;
using namespace hesper::circuit;
using namespace hesper::circuit::detail;

//===----------------------------------------------------------------------===//
// Shared helpers
//===----------------------------------------------------------------------===//

static int64_t product(ArrayRef<int64_t> shape) {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

bool hesper::circuit::isBroadcastCompatible(ArrayRef<int64_t> input,
                                            ArrayRef<int64_t> iteration) {
  // A flat read at the lane index.
  if (product(input) == product(iteration))
    return true;
  // NumPy-style broadcasting: align the trailing dimensions; each input
  // dimension equals the iteration's or is 1.
  if (input.size() > iteration.size())
    return false;
  ArrayRef<int64_t> tail = iteration.take_back(input.size());
  for (auto [in, it] : llvm::zip(input, tail))
    if (in != it && in != 1)
      return false;
  return true;
}

SmallVector<int64_t> hesper::circuit::getReductionIteration(Operation *op) {
  auto over = op->getAttrOfType<DenseI64ArrayAttr>("over");
  if (over)
    return SmallVector<int64_t>(over.asArrayRef());
  Value first = op->getOperand(0);
  return SmallVector<int64_t>(
      cast<RankedTensorType>(first.getType()).getShape());
}

bool hesper::circuit::isInPlaceWriter(Operation *op) {
  return isa<ScatterOp, ScatterMultiOp, ReduceScatterEpilogueOp, WriteRowsOp>(
      op);
}

bool hesper::circuit::isDispatchOp(Operation *op) {
  return isa<MapOp, GatherOp, ScatterOp, ScatterMultiOp, ScatterAddOp, ReduceOp,
             ReduceEpilogueOp, ReduceScatterEpilogueOp, MatmulOp, MultiMatmulOp,
             QuantizeOp, AttentionOp, GatedMatmulOp, ExpertMatmulOp,
             WriteRowsOp>(op);
}

std::string hesper::circuit::mapVectorObstacle(Operation *op, int64_t width) {
  auto map = dyn_cast<MapOp>(op);
  if (!map)
    return "only circuit.map takes several elements per lane";
  if (width != 1 && width != 2 && width != 4)
    return "vector_width = " + std::to_string(width) + " must be 1, 2 or 4";
  RankedTensorType result = map.getType();
  if (result.getNumElements() % width != 0)
    return "vector_width = " + std::to_string(width) +
           " does not divide the " + std::to_string(result.getNumElements()) +
           " elements";
  auto narrow = [](Type t) {
    return t.isIntOrFloat() && t.getIntOrFloatBitWidth() >= 8 &&
           t.getIntOrFloatBitWidth() <= 32;
  };
  if (!narrow(result.getElementType()))
    return "the result's elements are not integers or floats of 8 to 32 "
           "bits";
  Block &body = map.getBody().front();
  for (auto [k, input] : llvm::enumerate(map.getInputs())) {
    auto type = cast<RankedTensorType>(input.getType());
    if (type.getShape() != result.getShape() ||
        isa<RankedTensorType>(body.getArgument(k + 1).getType()))
      return "input #" + std::to_string(k) +
             " is not read one element per result element";
    if (!narrow(type.getElementType()))
      return "input #" + std::to_string(k) +
             " has elements that are not integers or floats of 8 to 32 bits";
  }
  WalkResult lanes = map.getBody().walk([](Operation *inner) {
    if (isa<exp::LaneIdOp, exp::SubgroupSizeOp, exp::SubgroupReduceOp,
            exp::ShuffleXorOp, exp::BroadcastFirstOp>(inner))
      return WalkResult::interrupt();
    return WalkResult::advance();
  });
  if (lanes.wasInterrupted())
    return "the body has subgroup operations";
  return "";
}

Value hesper::circuit::getWrittenBufferRoot(Value dest) {
  while (Operation *def = dest.getDefiningOp()) {
    if (auto s = dyn_cast<ScatterOp>(def))
      dest = s.getDest();
    else if (auto s = dyn_cast<ReduceScatterEpilogueOp>(def))
      dest = s.getDest();
    else if (auto s = dyn_cast<WriteRowsOp>(def))
      dest = s.getDest();
    else if (auto s = dyn_cast<ScatterMultiOp>(def))
      dest = s.getDests()[cast<OpResult>(dest).getResultNumber()];
    else
      break;
  }
  return dest;
}

//===----------------------------------------------------------------------===//
// GraphOp / OutputOp
//===----------------------------------------------------------------------===//

void GraphOp::build(OpBuilder &builder, OperationState &state, StringRef name,
                    FunctionType type) {
  state.addAttribute(getSymNameAttrName(state.name),
                     builder.getStringAttr(name));
  state.addAttribute(getFunctionTypeAttrName(state.name), TypeAttr::get(type));
  Region *body = state.addRegion();
  Block *block = new Block();
  body->push_back(block);
  for (Type t : type.getInputs())
    block->addArgument(t, state.location);
}

ParseResult GraphOp::parse(OpAsmParser &parser, OperationState &result) {
  auto buildType = [](Builder &builder, ArrayRef<Type> args,
                      ArrayRef<Type> results,
                      function_interface_impl::VariadicFlag, std::string &) {
    return builder.getFunctionType(args, results);
  };
  return function_interface_impl::parseFunctionOp(
      parser, result, /*allowVariadic=*/false,
      getFunctionTypeAttrName(result.name), buildType,
      getArgAttrsAttrName(result.name), getResAttrsAttrName(result.name));
}

void GraphOp::print(OpAsmPrinter &p) {
  function_interface_impl::printFunctionOp(
      p, *this, /*isVariadic=*/false, getFunctionTypeAttrName(),
      getArgAttrsAttrName(), getResAttrsAttrName());
}

LogicalResult GraphOp::verify() {
  auto check = [&](Type type, StringRef what, size_t index) -> LogicalResult {
    auto tensor = dyn_cast<RankedTensorType>(type);
    if (!tensor || !tensor.hasStaticShape())
      return emitOpError("expects ")
             << what << " #" << index << " to be a statically shaped tensor, "
             << "got " << type;
    return verifyQuantizedShape(*this, type, what);
  };
  for (auto [i, t] : llvm::enumerate(getArgumentTypes()))
    if (failed(check(t, "argument", i)))
      return failure();
  for (auto [i, t] : llvm::enumerate(getResultTypes()))
    if (failed(check(t, "result", i)))
      return failure();
  for (unsigned i = 0, e = getNumArguments(); i < e; ++i)
    if (failed(verifyArgRoles(*this, i)))
      return failure();
  Block &entry = getBody().front();
  if (entry.getArgumentTypes() != getArgumentTypes())
    return emitOpError("expects block arguments matching the signature");
  if (entry.empty() || !isa<OutputOp>(entry.back()))
    return emitOpError("expects the body to end in 'circuit.output'");
  return success();
}

LogicalResult OutputOp::verify() {
  auto graph = cast<GraphOp>((*this)->getParentOp());
  ArrayRef<Type> want = graph.getResultTypes();
  if (getResults().size() != want.size())
    return emitOpError("expects ")
           << want.size() << " results for the graph, got "
           << getResults().size();
  for (auto [i, w, v] : llvm::enumerate(want, getResults().getTypes()))
    if (w != v)
      return emitOpError("expects result #")
             << i << " of type " << w << ", got " << v;
  return success();
}

//===----------------------------------------------------------------------===//
// MapOp / GatherOp
//===----------------------------------------------------------------------===//

LogicalResult MapOp::verifyRegions() {
  auto result = getType();
  if (failed(verifyLaneCount(*this, result.getNumElements())))
    return failure();
  if (failed(verifyBroadcasts(*this, getInputs(), result.getShape(),
                              {{&getBody(), 1}})))
    return failure();
  Type i32 = IntegerType::get(getContext(), 32);
  return verifyBody(*this, getBody(), "body", {i32}, getInputs(),
                    {result.getElementType()});
}

LogicalResult GatherOp::verify() {
  Type source = elementOf(getSource());
  if (isQuantized(source)) {
    if (!isa<Q8_0Type, Q4_0Type, Q4_1Type, Q5_0Type, Q5_1Type, IQ4_NLType,
             IQ4_XSType, Q2_KType, Q3_KType, Q4_KType, Q5_KType, Q6_KType,
             TQ1_0Type, TQ2_0Type, BFloat16Type>(source))
      return emitOpError("expects a scalar, bf16, q8_0, q4_0, q4_1, q5_0, "
                         "q5_1, iq4_nl, iq4_xs, q2_k, q3_k, q4_k, q5_k, "
                         "q6_k, tq1_0 or tq2_0 source, got ")
             << source;
    if (!getType().getElementType().isF32())
      return emitOpError("expects an f32 result for a quantized source, got ")
             << getType().getElementType();
  } else if (source != getType().getElementType())
    return emitOpError("expects the result element type to be the source's ")
           << elementOf(getSource()) << ", got " << getType().getElementType();
  return verifyBroadcasts(*this, getInputs(), getType().getShape(),
                          {{&getBody(), 1}});
}

LogicalResult GatherOp::verifyRegions() {
  Type i32 = IntegerType::get(getContext(), 32);
  return verifyBody(*this, getBody(), "body", {i32}, getInputs(), {i32});
}

//===----------------------------------------------------------------------===//
// ScatterAddOp
//===----------------------------------------------------------------------===//

LogicalResult ScatterAddOp::verify() {
  ArrayRef<int64_t> source = shapeOf(getSource()),
                    indices = shapeOf(getIndices()),
                    result = getType().getShape();
  if (source.size() != 2 || indices.size() != 1 || result.size() != 2)
    return emitOpError("expects a [S, D] source, [S] indices and an [R, D] "
                       "result, got ranks ")
           << source.size() << ", " << indices.size() << " and "
           << result.size();
  if (indices[0] != source[0])
    return emitOpError("expects one index per source row (")
           << source[0] << "), got " << indices[0];
  if (result[1] != source[1])
    return emitOpError("expects result rows as long as the source's (")
           << source[1] << "), got " << result[1];
  return verifyLaneCount(*this, product(result));
}

//===----------------------------------------------------------------------===//
// ScatterOp / ScatterMultiOp
//===----------------------------------------------------------------------===//

/// Writers into one destination declare it as their last operand; the result
/// is its updated value, of the same type.
static LogicalResult inferDestinationType(ValueRange operands,
                                          SmallVectorImpl<Type> &inferred) {
  if (operands.empty())
    return failure();
  inferred.push_back(operands.back().getType());
  return success();
}

LogicalResult ScatterOp::inferReturnTypes(MLIRContext *,
                                          std::optional<Location>,
                                          ValueRange operands, DictionaryAttr,
                                          OpaqueProperties, RegionRange,
                                          SmallVectorImpl<Type> &inferred) {
  return inferDestinationType(operands, inferred);
}

LogicalResult ScatterOp::verify() {
  if (failed(verifyLaneCount(*this, static_cast<int64_t>(getGrid()))))
    return failure();
  if (failed(verifyBroadcasts(*this, getInputs(),
                              {static_cast<int64_t>(getGrid())},
                              {{&getBody(), 1}})))
    return failure();
  return verifyDestination(*this, getDest());
}

LogicalResult ScatterOp::verifyRegions() {
  Type i32 = IntegerType::get(getContext(), 32);
  return verifyBody(*this, getBody(), "body", {i32}, getInputs(),
                    {i32, elementOf(getDest())});
}

void ScatterOp::getEffects(
    SmallVectorImpl<SideEffects::EffectInstance<MemoryEffects::Effect>>
        &effects) {
  addInPlaceWriteEffect(getDestMutable(), effects);
}

LogicalResult ScatterMultiOp::inferReturnTypes(
    MLIRContext *, std::optional<Location>, ValueRange operands, DictionaryAttr,
    OpaqueProperties properties, RegionRange, SmallVectorImpl<Type> &inferred) {
  // One result per destination, of its type.
  ScatterMultiOp::Adaptor adaptor(operands, nullptr, properties, {});
  for (Value dest : adaptor.getDests())
    inferred.push_back(dest.getType());
  return success();
}

LogicalResult ScatterMultiOp::verify() {
  if (getDests().empty())
    return emitOpError("expects at least one destination");
  if (failed(verifyLaneCount(*this, static_cast<int64_t>(getGrid()))))
    return failure();
  if (failed(verifyBroadcasts(*this, getInputs(),
                              {static_cast<int64_t>(getGrid())},
                              {{&getBody(), 1}})))
    return failure();
  for (Value dest : getDests())
    if (failed(verifyDestination(*this, dest)))
      return failure();
  return success();
}

LogicalResult ScatterMultiOp::verifyRegions() {
  Type i32 = IntegerType::get(getContext(), 32);
  SmallVector<Type> yields;
  for (Value dest : getDests()) {
    yields.push_back(i32);
    yields.push_back(elementOf(dest));
  }
  return verifyBody(*this, getBody(), "body", {i32}, getInputs(), yields);
}

void ScatterMultiOp::getEffects(
    SmallVectorImpl<SideEffects::EffectInstance<MemoryEffects::Effect>>
        &effects) {
  for (OpOperand &dest : getDestsMutable())
    addInPlaceWriteEffect(dest, effects);
}

//===----------------------------------------------------------------------===//
// WriteRowsOp
//===----------------------------------------------------------------------===//

LogicalResult WriteRowsOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location>,
                                            ValueRange operands, DictionaryAttr,
                                            OpaqueProperties, RegionRange,
                                            SmallVectorImpl<Type> &inferred) {
  return inferDestinationType(operands, inferred);
}

LogicalResult WriteRowsOp::verify() {
  auto values = getValues().getType();
  auto dest = cast<RankedTensorType>(getDest().getType());
  if (values.getRank() != 2)
    return emitOpError("expects values of rank 2 ([rows, D]), got ") << values;
  int64_t rows = values.getDimSize(0), width = values.getDimSize(1);
  if (width == 0 || rows == 0)
    return emitOpError("expects values with rows, got ") << values;
  if (dest.getRank() != 1 || dest.getNumElements() == 0 ||
      dest.getNumElements() % width != 0)
    return emitOpError("expects a destination of rank 1 holding whole rows "
                       "of ")
           << width << " values, got " << dest;
  if (isa<Q8_0Type>(dest.getElementType()) && width % 32 != 0)
    return emitOpError("stores rows of ")
           << width << " values into q8_0, not a multiple of its 32-value "
           << "block";
  int64_t positions = getPos().getType().getNumElements();
  if (positions != 1 && positions != rows)
    return emitOpError("expects pos of one element or one per row (")
           << rows << "), got " << getPos().getType();
  return verifyDestination(*this, getDest());
}

void WriteRowsOp::getEffects(
    SmallVectorImpl<SideEffects::EffectInstance<MemoryEffects::Effect>>
        &effects) {
  addInPlaceWriteEffect(getDestMutable(), effects);
}

//===----------------------------------------------------------------------===//
// Reductions
//===----------------------------------------------------------------------===//

/// Checks the inputs of a reduction and returns the iteration shape (the
/// `over` attribute's, else the first input's).
static FailureOr<SmallVector<int64_t>>
verifyReductionInputs(Operation *op, ValueRange inputs, Region &prologue,
                      Region *epilogue = nullptr) {
  auto over = op->getAttrOfType<DenseI64ArrayAttr>("over");
  if (inputs.empty() && !over)
    return op->emitOpError("expects at least one input, or an 'over' shape");
  SmallVector<Body> bodies{{&prologue, 1}};
  if (epilogue)
    bodies.push_back({epilogue, 2});
  if (over) {
    SmallVector<int64_t> iteration(over.asArrayRef());
    if (iteration.empty() ||
        llvm::any_of(iteration, [](int64_t d) { return d <= 0; }))
      return op->emitOpError("expects a non-empty 'over' shape of positive "
                             "sizes");
    if (prologue.empty())
      return op->emitOpError("expects a prologue with an explicit 'over' "
                             "shape");
    if (failed(verifyLaneCount(op, product(iteration))) ||
        failed(verifyBroadcasts(op, inputs, iteration, bodies)))
      return failure();
    return iteration;
  }
  SmallVector<int64_t> iteration(shapeOf(inputs.front()));
  if (iteration.empty())
    return op->emitOpError("expects a first input of rank 1 or more");
  // An empty row has no value for max, and the lowerings divide by the row
  // length: a reduction needs at least one element per row.
  if (llvm::is_contained(iteration, 0))
    return op->emitOpError("expects a first input with no empty dimension "
                           "(a reduction needs at least one element per "
                           "row), got ")
           << inputs.front().getType();
  if (failed(verifyBroadcasts(op, inputs.drop_front(), iteration, bodies, 1)))
    return failure();
  if (readsWhole(bodies, 0, inputs.front().getType()))
    return op->emitOpError("expects the first input, which sets the "
                           "iteration shape, to be read element by element");
  if (prologue.empty()) {
    if (!isa<FloatType>(elementOf(inputs.front())))
      return op->emitOpError("expects a float first input to reduce without "
                             "a prologue, got ")
             << elementOf(inputs.front());
  }
  return iteration;
}

static LogicalResult verifyPrologue(Operation *op, Region &prologue,
                                    ValueRange inputs) {
  if (prologue.empty())
    return success();
  Builder b(op->getContext());
  return verifyBody(op, prologue, "prologue", {b.getI32Type()}, inputs,
                    {b.getF32Type()});
}

LogicalResult ReduceOp::verify() {
  auto iteration = verifyReductionInputs(*this, getInputs(), getPrologue());
  if (failed(iteration))
    return failure();
  if (getPrologue().empty() && getInputs().size() > 1)
    return emitOpError("expects a prologue to combine ")
           << getInputs().size() << " inputs";
  SmallVector<int64_t> rows(*iteration);
  rows.back() = 1;
  if (getType().getShape() != ArrayRef<int64_t>(rows) ||
      !getType().getElementType().isF32())
    return emitOpError("expects result type ")
           << RankedTensorType::get(rows, Float32Type::get(getContext()))
           << ", got " << getType();
  return success();
}

LogicalResult ReduceOp::verifyRegions() {
  return verifyPrologue(*this, getPrologue(), getInputs());
}

LogicalResult ReduceEpilogueOp::verify() {
  auto iteration =
      verifyReductionInputs(*this, getInputs(), getPrologue(), &getEpilogue());
  if (failed(iteration))
    return failure();
  if (getType().getShape() != ArrayRef<int64_t>(*iteration))
    return emitOpError("expects the result to have the iteration shape, got ")
           << getType();
  Type element = getType().getElementType();
  if (isQuantized(element) && !isa<Q8_0Type, Q8_1Type>(element))
    return emitOpError("expects a q8_0 or q8_1 result when quantizing, got ")
           << element;
  return verifyQuantizedShape(*this, getType(), "the result");
}

LogicalResult ReduceEpilogueOp::verifyRegions() {
  if (failed(verifyPrologue(*this, getPrologue(), getInputs())))
    return failure();
  Builder b(getContext());
  // A quantized result is quantized from the f32 values the epilogue yields.
  Type stored = getType().getElementType();
  if (isQuantized(stored))
    stored = b.getF32Type();
  return verifyBody(*this, getEpilogue(), "epilogue",
                    {b.getI32Type(), b.getF32Type()}, getInputs(), {stored});
}

LogicalResult ReduceScatterEpilogueOp::inferReturnTypes(
    MLIRContext *, std::optional<Location>, ValueRange operands, DictionaryAttr,
    OpaqueProperties, RegionRange, SmallVectorImpl<Type> &inferred) {
  return inferDestinationType(operands, inferred);
}

LogicalResult ReduceScatterEpilogueOp::verify() {
  if (failed(verifyReductionInputs(*this, getInputs(), getPrologue(),
                                   &getEpilogue())))
    return failure();
  return verifyDestination(*this, getDest());
}

LogicalResult ReduceScatterEpilogueOp::verifyRegions() {
  if (failed(verifyPrologue(*this, getPrologue(), getInputs())))
    return failure();
  Builder b(getContext());
  return verifyBody(*this, getEpilogue(), "epilogue",
                    {b.getI32Type(), b.getF32Type()}, getInputs(),
                    {b.getI32Type(), elementOf(getDest())});
}

void ReduceScatterEpilogueOp::getEffects(
    SmallVectorImpl<SideEffects::EffectInstance<MemoryEffects::Effect>>
        &effects) {
  addInPlaceWriteEffect(getDestMutable(), effects);
}

//===----------------------------------------------------------------------===//
// MatmulOp / QuantizeOp
//===----------------------------------------------------------------------===//

/// Checks one product `x · weightᵀ -> result` of a matmul or multi_matmul.
static LogicalResult verifyProduct(Operation *op, Value x, Value weight,
                                   RankedTensorType result) {
  auto xType = cast<RankedTensorType>(x.getType());
  auto wType = cast<RankedTensorType>(weight.getType());
  Type xElt = xType.getElementType(), wElt = wType.getElementType();
  if (!xElt.isF32() && !xElt.isF16() && !isa<Q8_1Type>(xElt))
    return op->emitOpError("expects activations of f32, f16 or q8_1, got ")
           << xElt;
  if (wElt.isInteger(32) || isa<Q8_1Type>(wElt))
    return op->emitOpError("expects weights of f32, f16, bf16, q8_0, q4_0, "
                           "q4_1, q5_0, q5_1, iq4_nl, iq4_xs, q2_k, q3_k, "
                           "q4_k, q5_k, q6_k, tq1_0, tq2_0 or i2_s, got ")
           << wElt;
  if (isa<Q8_1Type>(xElt) && !isQuantized(wElt))
    return op->emitOpError("expects quantized weights with q8_1 "
                           "activations, got ")
           << wElt;
  if (xType.getRank() != 1 && xType.getRank() != 2)
    return op->emitOpError("expects activations of rank 1 or 2, got ") << xType;
  if (wType.getRank() != 2)
    return op->emitOpError("expects a rank-2 [N, K] weight, got ") << wType;
  int64_t k = xType.getShape().back();
  if (wType.getDimSize(1) != k)
    return op->emitOpError("expects the weight's K dimension to be ")
           << k << ", got " << wType.getDimSize(1);
  if (failed(verifyQuantizedShape(op, xType, "the activations")) ||
      failed(verifyQuantizedShape(op, wType, "the weight")))
    return failure();
  SmallVector<int64_t> want;
  if (xType.getRank() == 2)
    want.push_back(xType.getDimSize(0));
  want.push_back(wType.getDimSize(0));
  if (result.getShape() != ArrayRef<int64_t>(want))
    return op->emitOpError("expects a result of type ")
           << RankedTensorType::get(want, result.getElementType()) << ", got "
           << result;
  return success();
}

LogicalResult MatmulOp::verify() {
  if (failed(verifyProduct(*this, getX(), getWeight(), getType())))
    return failure();
  if (getEpilogue().empty() && !getInputs().empty())
    return emitOpError("expects an epilogue to use ")
           << getInputs().size() << " extra inputs";
  return verifyBroadcasts(*this, getInputs(), getType().getShape(),
                          {{&getEpilogue(), 2}});
}

LogicalResult MatmulOp::verifyRegions() {
  if (getEpilogue().empty())
    return success();
  Builder b(getContext());
  return verifyBody(*this, getEpilogue(), "epilogue",
                    {b.getI32Type(), b.getF32Type()}, getInputs(),
                    {getType().getElementType()});
}

LogicalResult MultiMatmulOp::verify() {
  if (getWeights().empty())
    return emitOpError("expects at least one weight");
  if (getResults().size() != getWeights().size() ||
      getEpilogues().size() != getWeights().size())
    return emitOpError("expects one result and one epilogue region per "
                       "weight, got ")
           << getWeights().size() << " weights, " << getResults().size()
           << " results and " << getEpilogues().size() << " epilogues";
  for (auto [weight, result] : llvm::zip(getWeights(), getResults()))
    if (failed(verifyProduct(*this, getX(), weight,
                             cast<RankedTensorType>(result.getType()))))
      return failure();
  return success();
}

LogicalResult MultiMatmulOp::verifyRegions() {
  Builder b(getContext());
  for (auto [region, result] : llvm::zip(getEpilogues(), getResults())) {
    if (region.empty())
      continue;
    if (failed(verifyBody(
            *this, region, "epilogue", {b.getI32Type(), b.getF32Type()}, {},
            {cast<RankedTensorType>(result.getType()).getElementType()})))
      return failure();
  }
  return success();
}

//===----------------------------------------------------------------------===//
// ExtractOp
//===----------------------------------------------------------------------===//

LogicalResult ExtractOp::inferReturnTypes(MLIRContext *,
                                          std::optional<Location>,
                                          ValueRange operands, DictionaryAttr,
                                          OpaqueProperties, RegionRange,
                                          SmallVectorImpl<Type> &inferred) {
  if (operands.empty())
    return failure();
  auto tensor = dyn_cast<RankedTensorType>(operands[0].getType());
  if (!tensor)
    return failure();
  inferred.push_back(tensor.getElementType());
  return success();
}

LogicalResult ExtractOp::verify() {
  Operation *parent = (*this)->getParentOp();
  while (parent && !isDispatchOp(parent))
    parent = parent->getParentOp();
  if (!parent)
    return emitOpError("expects to be nested in the body of a circuit "
                       "primitive");
  return success();
}

LogicalResult QuantizeOp::verify() {
  auto in = getInput().getType();
  auto out = getType();
  if (!isa<Q8_1Type, Q8_0Type>(out.getElementType()))
    return emitOpError("expects a q8_1 or q8_0 result, got ")
           << out.getElementType();
  if (in.getShape() != out.getShape())
    return emitOpError("expects the result to have the input's shape, got ")
           << in << " and " << out;
  return verifyQuantizedShape(*this, out, "the result");
}

//===----------------------------------------------------------------------===//
// gated_matmul
//===----------------------------------------------------------------------===//

LogicalResult GatedMatmulOp::verify() {
  if (failed(verifyProduct(*this, getX(), getGate(), getType())) ||
      failed(verifyProduct(*this, getX(), getUp(), getType())))
    return failure();
  return success();
}

LogicalResult GatedMatmulOp::verifyRegions() {
  Builder b(getContext());
  return verifyBody(*this, getCombine(), "combine",
                    {b.getI32Type(), b.getF32Type(), b.getF32Type()},
                    ValueRange{}, {getType().getElementType()});
}

//===----------------------------------------------------------------------===//
// expert_matmul
//===----------------------------------------------------------------------===//

LogicalResult ExpertMatmulOp::verify() {
  auto xType = cast<RankedTensorType>(getX().getType());
  auto idsType = cast<RankedTensorType>(getIds().getType());
  Type xElt = xType.getElementType();
  if (!xElt.isF32() && !xElt.isF16())
    return emitOpError("expects activations of f32 or f16, got ") << xElt;
  if (idsType.getRank() != 1 && idsType.getRank() != 2)
    return emitOpError("expects ids of rank 1 ([S]) or 2 ([T, S]), got ")
           << idsType;
  // x has one row per token (the rank of ids) or one per slot (one more).
  const int64_t lead = xType.getRank() - 1;
  if (lead != idsType.getRank() - 1 && lead != idsType.getRank())
    return emitOpError("expects activations of one row per token or one "
                       "per slot of ids ")
           << idsType << ", got " << xType;
  for (int64_t d = 0; d < lead; ++d)
    if (xType.getDimSize(d) != idsType.getDimSize(d))
      return emitOpError("expects the activations' leading dimensions to "
                         "be those of ids ")
             << idsType << ", got " << xType;
  if (getWeights().size() != 1 && getWeights().size() != 2)
    return emitOpError("expects one weight, or two (gate and up), got ")
           << getWeights().size();
  const int64_t k = xType.getShape().back();
  ArrayRef<int64_t> first;
  for (Value w : getWeights()) {
    auto wType = cast<RankedTensorType>(w.getType());
    Type wElt = wType.getElementType();
    if (wElt.isInteger(32) || isa<Q8_1Type>(wElt))
      return emitOpError("expects weights in a weight format, got ") << wElt;
    if (wType.getRank() != 3)
      return emitOpError("expects rank-3 [E, N, K] weights, got ") << wType;
    if (wType.getDimSize(2) != k)
      return emitOpError("expects the weights' K dimension to be ")
             << k << ", got " << wType.getDimSize(2);
    if (!first.empty() && wType.getShape().take_front(2) != first)
      return emitOpError("expects gate and up of the same experts and rows, "
                         "got ")
             << getWeights()[0].getType() << " and " << wType;
    first = wType.getShape().take_front(2);
    if (failed(verifyQuantizedShape(*this, wType, "the weight")))
      return failure();
  }
  SmallVector<int64_t> want(idsType.getShape());
  want.push_back(first[1]);
  if (getType().getShape() != ArrayRef<int64_t>(want))
    return emitOpError("expects a result of type ")
           << RankedTensorType::get(want, getType().getElementType())
           << ", got " << getType();
  return success();
}

LogicalResult ExpertMatmulOp::verifyRegions() {
  if (getWeights().size() == 1) {
    if (!getCombine().empty())
      return emitOpError("expects no combine body with one weight");
    return success();
  }
  if (getCombine().empty())
    return emitOpError("expects a combine body with two weights");
  Builder b(getContext());
  return verifyBody(*this, getCombine(), "combine",
                    {b.getI32Type(), b.getF32Type(), b.getF32Type()},
                    ValueRange{}, {getType().getElementType()});
}

//===----------------------------------------------------------------------===//
// attention
//===----------------------------------------------------------------------===//

LogicalResult AttentionOp::verify() {
  int64_t heads = getHeads(), kvHeads = getKvHeads(), dim = getHeadDim();
  if (heads <= 0 || kvHeads <= 0 || dim <= 0)
    return emitOpError("expects positive heads, kv_heads and head_dim, got ")
           << heads << ", " << kvHeads << ", " << dim;
  if (heads % kvHeads != 0)
    return emitOpError("expects heads to be a multiple of kv_heads, got ")
           << heads << " and " << kvHeads;
  float scale = getScale().convertToFloat();
  if (!std::isfinite(scale) || scale <= 0)
    return emitOpError("expects a positive finite scale, got ") << scale;
  if (std::optional<APFloat> cap = getSoftcap()) {
    float c = cap->convertToFloat();
    if (!std::isfinite(c) || c <= 0)
      return emitOpError("expects a positive finite softcap, got ") << c;
  }
  if (std::optional<uint64_t> window = getWindow();
      window && (int64_t(*window) <= 0))
    return emitOpError("expects a positive window, got ") << int64_t(*window);
  for (auto [what, value] : {std::pair<const char *, Value>{"q", getQ()},
                             {"result", getResult()}}) {
    auto type = cast<RankedTensorType>(value.getType());
    if (!type.getElementType().isF32())
      return emitOpError("expects ") << what << " of f32, got " << type;
  }
  // The caches may be f32, f16 or q8_0 each (llama.cpp's -ctk/-ctv; the
  // operand types say so).
  auto qType = cast<RankedTensorType>(getQ().getType());
  if (qType.getNumElements() == 0 || qType.getNumElements() % (heads * dim))
    return emitOpError("expects q of a positive multiple of heads * "
                       "head_dim = ")
           << heads * dim << " elements, got " << qType;
  if (getResult().getType() != qType)
    return emitOpError("expects the result type to be q's ")
           << qType << ", got " << getResult().getType();
  if (getKCache().getType().getShape() != getVCache().getType().getShape())
    return emitOpError("expects k_cache and v_cache of one shape, got ")
           << getKCache().getType() << " and " << getVCache().getType();
  int64_t cache =
      cast<RankedTensorType>(getKCache().getType()).getNumElements();
  if (cache == 0 || cache % (kvHeads * dim) != 0)
    return emitOpError("expects caches of a positive multiple of kv_heads * "
                       "head_dim = ")
           << kvHeads * dim << " elements, got " << cache;
  for (Value c : {getKCache(), getVCache()})
    if (isa<Q8_0Type>(cast<RankedTensorType>(c.getType()).getElementType()) &&
        dim % 32 != 0)
      return emitOpError("expects a head_dim that is a multiple of 32 for a "
                         "q8_0 cache, got ")
             << dim;
  auto posType = cast<RankedTensorType>(getPos().getType());
  std::optional<uint64_t> seqLen = getSeqLen();
  if (!seqLen) {
    if (!posType.getElementType().isInteger(32) ||
        posType.getNumElements() != 1)
      return emitOpError("expects pos of one i32, got ") << posType;
    return success();
  }
  // Sequences: one global position per row.
  const int64_t positions = cache / (kvHeads * dim);
  const int64_t rows = qType.getNumElements() / (heads * dim);
  if (int64_t(*seqLen) <= 0 || positions % int64_t(*seqLen) != 0)
    return emitOpError("expects seq_len to divide the caches' ")
           << positions << " positions, got " << int64_t(*seqLen);
  if (!posType.getElementType().isInteger(32) ||
      posType.getNumElements() != rows)
    return emitOpError("with seq_len expects pos of one i32 per row (")
           << rows << "), got " << posType;
  return success();
}

#define GET_OP_CLASSES
#include "Hesper/Dialect/Circuit/IR/CircuitOps.cpp.inc"
