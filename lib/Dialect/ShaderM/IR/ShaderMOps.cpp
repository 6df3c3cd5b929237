//===- ShaderMOps.cpp - ShaderM op verifiers and custom syntax -----------===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//

#include "Hesper/Dialect/ShaderM/IR/ShaderM.h"

#include "mlir/IR/Builders.h"
#include "mlir/Interfaces/FunctionImplementation.h"

using namespace mlir;
using namespace hesper::shaderm;

/// Ops that only make sense while a kernel runs must be nested in one.
static LogicalResult verifyInsideKernel(Operation *op) {
  if (!op->getParentOfType<KernelOp>())
    return op->emitOpError("expects to be nested in a 'shaderm.kernel'");
  return success();
}

//===----------------------------------------------------------------------===//
// KernelOp
//===----------------------------------------------------------------------===//

void KernelOp::build(OpBuilder &builder, OperationState &state, StringRef name,
                     TypeRange argTypes, ArrayRef<int32_t> workgroupSize) {
  state.addAttribute(getSymNameAttrName(state.name),
                     builder.getStringAttr(name));
  state.addAttribute(getFunctionTypeAttrName(state.name),
                     TypeAttr::get(builder.getFunctionType(argTypes, {})));
  state.addAttribute(getWorkgroupSizeAttrName(state.name),
                     builder.getDenseI32ArrayAttr(workgroupSize));
  Region *body = state.addRegion();
  Block *block = new Block();
  body->push_back(block);
  for (Type type : argTypes)
    block->addArgument(type, state.location);
}

ParseResult KernelOp::parse(OpAsmParser &parser, OperationState &result) {
  Builder &builder = parser.getBuilder();
  StringAttr name;
  if (parser.parseSymbolName(name, getSymNameAttrName(result.name),
                             result.attributes))
    return failure();

  SMLoc signatureLoc = parser.getCurrentLocation();
  SmallVector<OpAsmParser::Argument> args;
  SmallVector<Type> resultTypes;
  SmallVector<DictionaryAttr> resultAttrs;
  bool isVariadic = false;
  if (function_interface_impl::parseFunctionSignatureWithArguments(
          parser, /*allowVariadic=*/false, args, isVariadic, resultTypes,
          resultAttrs))
    return failure();
  if (!resultTypes.empty())
    return parser.emitError(signatureLoc, "expects a kernel without results, "
                                          "got ")
           << resultTypes.size();
  SmallVector<Type> argTypes;
  for (auto &arg : args)
    argTypes.push_back(arg.type);
  result.addAttribute(getFunctionTypeAttrName(result.name),
                      TypeAttr::get(builder.getFunctionType(argTypes, {})));
  call_interface_impl::addArgAndResultAttrs(
      builder, result, args, resultAttrs, getArgAttrsAttrName(result.name),
      getResAttrsAttrName(result.name));

  SmallVector<int32_t, 3> sizes;
  if (parser.parseKeyword("workgroup_size") ||
      parser.parseCommaSeparatedList(
          OpAsmParser::Delimiter::Paren, [&]() -> ParseResult {
            int32_t v;
            if (parser.parseInteger(v))
              return failure();
            sizes.push_back(v);
            return success();
          }))
    return failure();
  result.addAttribute(getWorkgroupSizeAttrName(result.name),
                      builder.getDenseI32ArrayAttr(sizes));

  if (parser.parseOptionalAttrDictWithKeyword(result.attributes))
    return failure();
  Region *body = result.addRegion();
  return parser.parseRegion(*body, args);
}

void KernelOp::print(OpAsmPrinter &p) {
  p << ' ';
  p.printSymbolName(getSymName());
  function_interface_impl::printFunctionSignature(
      p, *this, getArgumentTypes(), /*isVariadic=*/false, {});
  p << " workgroup_size(";
  llvm::interleaveComma(getWorkgroupSize(), p);
  p << ')';
  function_interface_impl::printFunctionAttributes(
      p, *this,
      {getSymNameAttrName(), getFunctionTypeAttrName(), getArgAttrsAttrName(),
       getResAttrsAttrName(), getWorkgroupSizeAttrName()});
  p << ' ';
  p.printRegion(getBody(), /*printEntryBlockArgs=*/false,
                /*printBlockTerminators=*/true);
}

int64_t KernelOp::getWorkgroupLanes() {
  int64_t lanes = 1;
  for (int32_t s : getWorkgroupSize())
    lanes *= s;
  return lanes;
}

int64_t KernelOp::getSharedMemoryBytes() {
  int64_t bytes = 0;
  walk([&](SharedAllocOp alloc) {
    SharedType type = alloc.getType();
    bytes += type.getLength() * getElementByteSize(type.getElementType());
  });
  return bytes;
}

LogicalResult KernelOp::verify() {
  ArrayRef<int32_t> sizes = getWorkgroupSize();
  if (sizes.size() != 3)
    return emitOpError("expects 3 workgroup sizes (x, y, z), got ")
           << sizes.size();
  for (int32_t s : sizes)
    if (s <= 0)
      return emitOpError("expects positive workgroup sizes, got ") << s;
  if (getWorkgroupLanes() > kMaxWorkgroupLanes)
    return emitOpError("expects at most ")
           << kMaxWorkgroupLanes << " lanes per workgroup, got "
           << getWorkgroupLanes();
  if (!getFunctionType().getResults().empty())
    return emitOpError("expects a kernel without results, got ")
           << getFunctionType().getNumResults();
  for (auto [i, type] : llvm::enumerate(getArgumentTypes()))
    if (!isa<BufferType>(type) && !type.isInteger(32) && !type.isF32())
      return emitOpError("expects binding #")
             << i << " to be a !shaderm.buffer, i32 or f32, got " << type;
  if (IntegerAttr sg = getSubgroupSizeAttr()) {
    int64_t v = sg.getValue().getSExtValue();
    if (v <= 0 || (v & (v - 1)) != 0)
      return emitOpError("expects a power-of-two subgroup_size, got ") << v;
  }
  if (IntegerAttr minWg = getMinWorkgroupsPerSmAttr()) {
    int64_t v = minWg.getValue().getSExtValue();
    if (v <= 0)
      return emitOpError("expects a positive min_workgroups_per_sm, got ")
             << v;
  }
  if (IntegerAttr threads = getHostThreadsAttr()) {
    int64_t v = threads.getValue().getSExtValue();
    if (v <= 0)
      return emitOpError("expects a positive host_threads, got ") << v;
  }
  if (IntegerAttr bits = getVectorBitsAttr()) {
    int64_t v = bits.getValue().getSExtValue();
    if (v != 128 && v != 256 && v != 512)
      return emitOpError("expects vector_bits of 128, 256 or 512, got ") << v;
  }
  Block &entry = getBody().front();
  if (entry.empty() || !isa<ReturnOp>(entry.back()))
    return emitOpError("expects the body to end in 'shaderm.return'");
  return success();
}

LogicalResult KernelOp::verifyRegions() {
  Block &entry = getBody().front();
  if (entry.getNumArguments() != getArgumentTypes().size())
    return emitOpError("expects ")
           << getArgumentTypes().size() << " block arguments, got "
           << entry.getNumArguments();
  for (auto [arg, type] : llvm::zip(entry.getArguments(), getArgumentTypes()))
    if (arg.getType() != type)
      return emitOpError("expects block argument of type ")
             << type << ", got " << arg.getType();
  return success();
}

//===----------------------------------------------------------------------===//
// Builtin ids and shared memory
//===----------------------------------------------------------------------===//

LogicalResult GlobalIdOp::verify() { return verifyInsideKernel(*this); }
LogicalResult LocalIdOp::verify() { return verifyInsideKernel(*this); }
LogicalResult WorkgroupIdOp::verify() { return verifyInsideKernel(*this); }
LogicalResult NumWorkgroupsOp::verify() { return verifyInsideKernel(*this); }
LogicalResult SubgroupIdOp::verify() { return verifyInsideKernel(*this); }
LogicalResult SharedAllocOp::verify() { return verifyInsideKernel(*this); }
LogicalResult BarrierOp::verify() { return verifyInsideKernel(*this); }
LogicalResult SubgroupBarrierOp::verify() { return verifyInsideKernel(*this); }

//===----------------------------------------------------------------------===//
// Memory access
//===----------------------------------------------------------------------===//

static Type getMemoryElementType(Type memory) {
  if (auto buffer = dyn_cast<BufferType>(memory))
    return buffer.getElementType();
  return cast<SharedType>(memory).getElementType();
}

/// A load or store moves one element, or a vector of the element type.
static LogicalResult verifyAccessType(Operation *op, Type memory,
                                      Type valueType) {
  Type element = getMemoryElementType(memory);
  Type scalar = valueType;
  if (auto vec = dyn_cast<VectorType>(valueType))
    scalar = vec.getElementType();
  if (scalar != element)
    return op->emitOpError("expects the value type to be the memory's "
                           "element type ")
           << element << " or a vector of it, got " << valueType;
  return success();
}

LogicalResult LoadOp::verify() {
  if (failed(verifyInsideKernel(*this)))
    return failure();
  return verifyAccessType(*this, getMemory().getType(), getType());
}

/// An op that writes memory: inside a kernel, and not to a read_only
/// buffer.
static LogicalResult verifyWrite(Operation *op, Type memory) {
  if (failed(verifyInsideKernel(op)))
    return failure();
  if (auto buffer = dyn_cast<BufferType>(memory))
    if (buffer.isReadOnly())
      return op->emitOpError("expects a writable buffer, got read_only ")
             << buffer;
  return success();
}

LogicalResult StoreOp::verify() {
  if (failed(verifyWrite(*this, getMemory().getType())))
    return failure();
  return verifyAccessType(*this, getMemory().getType(),
                          getValue().getType());
}

//===----------------------------------------------------------------------===//
// Matrix tiles
//===----------------------------------------------------------------------===//

/// The tiles the matrix ops take: 16 x 16, of the `operand` kind.
static LogicalResult verifyTile(Operation *op, gpu::MMAMatrixType type,
                                StringRef operand, StringRef what) {
  if (type.getShape() != ArrayRef<int64_t>{16, 16})
    return op->emitOpError("expects 16 x 16 tiles, got ") << type;
  if (!operand.empty() && type.getOperand() != operand)
    return op->emitOpError("expects ")
           << what << " of kind \"" << operand << "\", got " << type;
  return success();
}

/// A tile's row stride in memory: at least a row, in whole 16-byte units.
static LogicalResult verifyLead(Operation *op, int64_t lead, Type element) {
  int64_t bytes = element.getIntOrFloatBitWidth() / 8;
  if (lead < 16 || (lead * bytes) % 16 != 0)
    return op->emitOpError("expects a lead of at least 16 elements and a "
                           "multiple of 16 bytes, got ")
           << lead;
  return success();
}

LogicalResult MatrixLoadOp::verify() {
  if (failed(verifyInsideKernel(*this)))
    return failure();
  auto type = cast<gpu::MMAMatrixType>(getType());
  Type element = getMemoryElementType(getMemory().getType());
  if (failed(verifyTile(*this, type, "", "")))
    return failure();
  if (type.getElementType() != element)
    return emitOpError("expects a tile of the memory's element type ")
           << element << ", got " << type;
  return verifyLead(*this, getLead(), element);
}

LogicalResult MatrixMmaOp::verify() {
  auto a = cast<gpu::MMAMatrixType>(getA().getType());
  auto b = cast<gpu::MMAMatrixType>(getB().getType());
  auto acc = cast<gpu::MMAMatrixType>(getAcc().getType());
  if (failed(verifyTile(*this, a, "AOp", "a")) ||
      failed(verifyTile(*this, b, "BOp", "b")) ||
      failed(verifyTile(*this, acc, "COp", "the accumulator")))
    return failure();
  Type in = a.getElementType(), out = acc.getElementType();
  if (b.getElementType() != in)
    return emitOpError("expects a and b of one element type, got ")
           << a << " and " << b;
  bool halves = in.isF16() && (out.isF32() || out.isF16());
  bool bytes = in.isInteger(8) && out.isInteger(32);
  if (!halves && !bytes)
    return emitOpError("expects f16 tiles accumulated in f32 or f16, or i8 "
                       "tiles in i32, got ")
           << a << " into " << acc;
  // The layouts named here must be those the operands were loaded with.
  auto checkLayout = [&](Value v, bool transposed,
                         StringRef name) -> LogicalResult {
    auto load = v.getDefiningOp<MatrixLoadOp>();
    if (!load || load.getTranspose() == transposed)
      return success();
    return emitOpError("expects ")
           << name << "_transpose to match the matrix_load of " << name;
  };
  if (failed(checkLayout(getA(), getATranspose(), "a")) ||
      failed(checkLayout(getB(), getBTranspose(), "b")))
    return failure();
  return success();
}

LogicalResult MatrixFillOp::verify() {
  auto type = cast<gpu::MMAMatrixType>(getType());
  if (failed(verifyTile(*this, type, "COp", "the result")))
    return failure();
  if (type.getElementType() != getValue().getType())
    return emitOpError("expects a value of the tile's element type, got ")
           << getValue().getType();
  return success();
}

LogicalResult MatrixStoreOp::verify() {
  if (failed(verifyWrite(*this, getMemory().getType())))
    return failure();
  auto type = cast<gpu::MMAMatrixType>(getValue().getType());
  if (failed(verifyTile(*this, type, "COp", "the value")))
    return failure();
  Type element = getMemoryElementType(getMemory().getType());
  if (type.getElementType() != element)
    return emitOpError("expects a tile of the memory's element type ")
           << element << ", got " << type;
  return verifyLead(*this, getLead(), element);
}

LogicalResult AtomicRMWOp::verify() {
  if (failed(verifyWrite(*this, getMemory().getType())))
    return failure();
  Type element = getMemoryElementType(getMemory().getType());
  if (getValue().getType() != element || getType() != element)
    return emitOpError("expects value and result of the memory's element "
                       "type ")
           << element << ", got " << getValue().getType() << " and "
           << getType();
  if (isa<FloatType>(element)) {
    AtomicKind kind = getKind();
    if (kind != AtomicKind::add && kind != AtomicKind::max &&
        kind != AtomicKind::min && kind != AtomicKind::exchange)
      return emitOpError("expects an integer element for atomic '")
             << stringifyAtomicKind(kind) << "', got " << element;
  }
  return success();
}

#define GET_OP_CLASSES
#include "Hesper/Dialect/ShaderM/IR/ShaderMOps.cpp.inc"

//===----------------------------------------------------------------------===//
// ScheduleOp, LaunchOp
//===----------------------------------------------------------------------===//

ParseResult ScheduleOp::parse(OpAsmParser &parser, OperationState &result) {
  auto buildType = [](Builder &builder, ArrayRef<Type> argTypes,
                      ArrayRef<Type> results,
                      function_interface_impl::VariadicFlag, std::string &) {
    return builder.getFunctionType(argTypes, results);
  };
  return function_interface_impl::parseFunctionOp(
      parser, result, /*allowVariadic=*/false,
      getFunctionTypeAttrName(result.name), buildType,
      getArgAttrsAttrName(result.name), getResAttrsAttrName(result.name));
}

void ScheduleOp::print(OpAsmPrinter &p) {
  function_interface_impl::printFunctionOp(
      p, *this, /*isVariadic=*/false, getFunctionTypeAttrName(),
      getArgAttrsAttrName(), getResAttrsAttrName());
}

LogicalResult ScheduleOp::verifyRegions() {
  Block &entry = getBody().front();
  if (entry.getArgumentTypes() != getArgumentTypes())
    return emitOpError("expects the entry block arguments to match the "
                       "function type");
  for (Type type : getArgumentTypes())
    if (!isa<BufferType>(type))
      return emitOpError("expects buffer arguments, got ") << type;
  auto output = dyn_cast<OutputOp>(entry.getTerminator());
  if (!output)
    return emitOpError("expects its body to end with 'shaderm.output'");
  if (output.getResults().getTypes() != getResultTypes())
    return output.emitOpError("expects the schedule's result types");
  return success();
}

/// A buffer binds to a kernel parameter of the same length and element type
/// unless the parameter is written and the buffer is read-only.
static bool bindsTo(BufferType actual, BufferType binding) {
  return actual.getLength() == binding.getLength() &&
         actual.getElementType() == binding.getElementType() &&
         (binding.isReadOnly() || !actual.isReadOnly());
}

LogicalResult LaunchOp::verify() {
  ArrayRef<int64_t> grid = getGrid();
  if (grid.size() != 3)
    return emitOpError("expects a grid of 3 dimensions, got ") << grid.size();
  for (int64_t g : grid)
    if (g <= 0)
      return emitOpError("expects a positive grid, got ") << g;
  if (std::optional<ArrayRef<int64_t>> traffic = getTraffic()) {
    if (traffic->size() != 5)
      return emitOpError("expects a traffic of 5 numbers (read, written, "
                         "per_position, window, positions), got ")
             << traffic->size();
    for (int64_t t : *traffic)
      if (t < 0)
        return emitOpError("expects a traffic of non-negative byte and "
                           "position counts, got ")
               << t;
  }
  return success();
}

LogicalResult
LaunchOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  // The kernel is a shaderm.kernel until it is lowered; afterwards the
  // schedule refers to the lowered function by the same name.
  Operation *module = (*this)->getParentOfType<ScheduleOp>()->getParentOp();
  Operation *symbol =
      symbolTable.lookupNearestSymbolFrom(module, getKernelAttr());
  if (!symbol)
    return success(); // Lowered: the kernel lives in the gpu module now.
  auto kernel = dyn_cast<KernelOp>(symbol);
  if (!kernel)
    return emitOpError("launches '")
           << getKernel() << "', which is a '" << symbol->getName()
           << "', not a 'shaderm.kernel'";
  ArrayRef<Type> params = kernel.getArgumentTypes();
  if (params.size() != getBindings().size())
    return emitOpError("binds ")
           << getBindings().size() << " buffers to '" << kernel.getSymName()
           << "', which takes " << params.size();
  for (auto [i, pair] : llvm::enumerate(llvm::zip(getBindings(), params))) {
    auto [value, param] = pair;
    auto binding = dyn_cast<BufferType>(param);
    if (!binding ||
        !bindsTo(cast<BufferType>(value.getType()), binding))
      return emitOpError("binding #")
             << i << " has type " << value.getType() << ", but '"
             << kernel.getSymName() << "' expects " << param;
  }
  return success();
}
