//===- GraphBuilder.cpp - C++ API for building Circuit graphs ------------===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//

#include "Hesper/Dialect/Circuit/Builder/GraphBuilder.h"

#include "mlir/IR/Verifier.h"

#include <cmath>

using namespace mlir;
using namespace hesper;
using namespace hesper::circuit;
using hesper::exp::CmpPredicate;
using hesper::exp::ExpBuilder;

static RankedTensorType tensorOf(Value v) {
  return cast<RankedTensorType>(v.getType());
}

GraphBuilder::GraphBuilder(MLIRContext *context, StringRef name)
    : context(context), builder(context), loc(UnknownLoc::get(context)) {
  context->getOrLoadDialect<CircuitDialect>();
  context->getOrLoadDialect<exp::ExpDialect>();
  loc = NameLoc::get(builder.getStringAttr(name));
  module = ModuleOp::create(loc);
  builder.setInsertionPointToEnd(module->getBody());
  graph = GraphOp::create(builder, loc, name, builder.getFunctionType({}, {}));
  builder.setInsertionPointToEnd(&graph.getBody().front());
}

GraphBuilder::~GraphBuilder() = default;

Type GraphBuilder::f32() const { return Float32Type::get(context); }
Type GraphBuilder::f16() const { return Float16Type::get(context); }
Type GraphBuilder::i32() const { return IntegerType::get(context, 32); }

RankedTensorType GraphBuilder::tensorType(ArrayRef<int64_t> shape,
                                          Type element) const {
  return RankedTensorType::get(shape, element);
}

//===----------------------------------------------------------------------===//
// Graph structure
//===----------------------------------------------------------------------===//

Value GraphBuilder::external(StringRef name, ArrayRef<int64_t> shape,
                             Type element, ArgRole role) {
  Block &entry = graph.getBody().front();
  Type type = tensorType(shape, element);
  Value arg = entry.addArgument(type, loc);
  SmallVector<Type> inputs(entry.getArgumentTypes());
  graph.setFunctionTypeAttr(TypeAttr::get(
      builder.getFunctionType(inputs, graph.getFunctionType().getResults())));
  // Rebuild the whole argument attribute array: it must have one entry per
  // argument, including the one just added.
  SmallVector<DictionaryAttr> argAttrs;
  for (unsigned i = 0, e = entry.getNumArguments() - 1; i < e; ++i) {
    DictionaryAttr attrs = graph.getArgAttrDict(i);
    argAttrs.push_back(attrs ? attrs : builder.getDictionaryAttr({}));
  }
  SmallVector<NamedAttribute> attrs{
      builder.getNamedAttr("circuit.name", builder.getStringAttr(name))};
  if (role != ArgRole::Input)
    attrs.push_back(builder.getNamedAttr(
        kArgRoleAttr, builder.getStringAttr(stringifyArgRole(role))));
  argAttrs.push_back(builder.getDictionaryAttr(attrs));
  graph.setAllArgAttrs(argAttrs);
  return arg;
}

Value GraphBuilder::externalIndices(StringRef name, ArrayRef<int64_t> shape,
                                    ArgRole role, int64_t bound) {
  Value arg = external(name, shape, i32(), role);
  graph.setArgAttr(cast<BlockArgument>(arg).getArgNumber(), kArgBoundAttr,
                   builder.getI64IntegerAttr(bound));
  return arg;
}

Value GraphBuilder::externalWeight(StringRef name, ArrayRef<int64_t> shape,
                                   Type element, StringRef tensor,
                                   std::optional<int64_t> firstRow) {
  Value arg = external(name, shape, element, ArgRole::Weight);
  unsigned index = cast<BlockArgument>(arg).getArgNumber();
  graph.setArgAttr(index, kArgTensorAttr, builder.getStringAttr(tensor));
  if (firstRow)
    graph.setArgAttr(index, kArgRowsAttr,
                     builder.getDenseI64ArrayAttr(
                         {*firstRow, rowsOfLastDimension(shape)}));
  return arg;
}

Value GraphBuilder::zeros(ArrayRef<int64_t> shape, Type element) {
  return ZerosOp::create(builder, loc, tensorType(shape, element));
}

void GraphBuilder::output(ValueRange results) {
  assert(!hasOutput && "graph output set twice");
  hasOutput = true;
  OutputOp::create(builder, loc, results);
  SmallVector<Type> inputs(graph.getBody().front().getArgumentTypes());
  graph.setFunctionTypeAttr(TypeAttr::get(
      builder.getFunctionType(inputs, TypeRange(results.getTypes()))));
}

OwningOpRef<ModuleOp> GraphBuilder::finish() {
  if (!hasOutput)
    output({});
  if (failed(verify(*module)))
    return nullptr;
  return std::move(module);
}

//===----------------------------------------------------------------------===//
// Primitives
//===----------------------------------------------------------------------===//

void GraphBuilder::buildBody(
    Region &region, ArrayRef<Type> leading, ValueRange inputs,
    function_ref<SmallVector<Value>(ExpBuilder &, Block *)> fill,
    ArrayRef<bool> whole) {
  OpBuilder::InsertionGuard guard(builder);
  SmallVector<Type> types(leading);
  for (auto [k, input] : llvm::enumerate(inputs))
    types.push_back(k < whole.size() && whole[k]
                        ? input.getType()
                        : tensorOf(input).getElementType());
  SmallVector<Location> locs(types.size(), loc);
  Block *block = builder.createBlock(&region, {}, types, locs);
  ExpBuilder e(builder, loc);
  SmallVector<Value> yields = fill(e, block);
  YieldOp::create(builder, loc, yields);
}

Value GraphBuilder::map(ValueRange inputs, ArrayRef<int64_t> shape,
                        Type element, LaneFn body) {
  return map(inputs, /*whole=*/{}, shape, element, body);
}

Value GraphBuilder::map(ValueRange inputs, ArrayRef<bool> whole,
                        ArrayRef<int64_t> shape, Type element, LaneFn body) {
  auto op = MapOp::create(builder, loc, tensorType(shape, element), inputs);
  buildBody(
      op.getBody(), {i32()}, inputs,
      [&](ExpBuilder &e, Block *block) {
        return SmallVector<Value>{
            body(e, block->getArgument(0), block->getArguments().drop_front())};
      },
      whole);
  return op;
}

Value GraphBuilder::extract(ExpBuilder &e, Value tensor, Value index) {
  return ExtractOp::create(e.builder(), e.location(), tensor, index);
}

Value GraphBuilder::map(Value x, function_ref<Value(ExpBuilder &, Value)> fn) {
  RankedTensorType type = tensorOf(x);
  return map(
      ValueRange{x}, type.getShape(), type.getElementType(),
      [&](ExpBuilder &e, Value, ValueRange args) { return fn(e, args[0]); });
}

Value GraphBuilder::zip(Value a, Value b,
                        function_ref<Value(ExpBuilder &, Value, Value)> fn) {
  RankedTensorType type = tensorOf(a);
  return map(ValueRange{a, b}, type.getShape(), type.getElementType(),
             [&](ExpBuilder &e, Value, ValueRange args) {
               return fn(e, args[0], args[1]);
             });
}

Value GraphBuilder::gather(Value source, ValueRange inputs,
                           ArrayRef<int64_t> shape, LaneFn address) {
  return gather(source, inputs, /*whole=*/{}, shape, address);
}

Value GraphBuilder::gather(Value source, ValueRange inputs,
                           ArrayRef<bool> whole, ArrayRef<int64_t> shape,
                           LaneFn address) {
  // A quantized source is read dequantized: the result is f32.
  Type element = tensorOf(source).getElementType();
  if (isQuantized(element))
    element = f32();
  auto op = GatherOp::create(builder, loc, tensorType(shape, element), source,
                             inputs);
  buildBody(
      op.getBody(), {i32()}, inputs,
      [&](ExpBuilder &e, Block *block) {
        return SmallVector<Value>{address(e, block->getArgument(0),
                                          block->getArguments().drop_front())};
      },
      whole);
  return op;
}

Value GraphBuilder::gatherRows(Value table, Value indices) {
  int64_t width = tensorOf(table).getShape().back();
  int64_t count = tensorOf(indices).getNumElements();
  // The form laneRowGather (circuit-autodiff) matches:
  // indices[lane div D] * D + lane rem D.
  return gather(table, ValueRange{indices}, {true}, {count, width},
                [&](ExpBuilder &e, Value lane, ValueRange args) {
                  Value row = extract(e, args[0], e.divConst(lane, width));
                  return e.add(e.mul(row, e.i32(width)),
                               e.remConst(lane, width));
                });
}

Value GraphBuilder::scatterAdd(Value source, Value indices, int64_t rows) {
  int64_t width = tensorOf(source).getShape().back();
  return ScatterAddOp::create(builder, loc, tensorType({rows, width}, f32()),
                              source, indices);
}

Value GraphBuilder::scatter(Value dest, int64_t grid, ValueRange inputs,
                            ScatterFn body) {
  auto op = ScatterOp::create(builder, loc, dest.getType(),
                              builder.getI64IntegerAttr(grid), inputs, dest);
  buildBody(op.getBody(), {i32()}, inputs, [&](ExpBuilder &e, Block *block) {
    auto [addr, value] =
        body(e, block->getArgument(0), block->getArguments().drop_front());
    return SmallVector<Value>{addr, value};
  });
  return op;
}

SmallVector<Value> GraphBuilder::scatterMulti(ValueRange dests, int64_t grid,
                                              ValueRange inputs,
                                              MultiScatterFn body) {
  return scatterMulti(dests, grid, inputs, {}, body);
}

SmallVector<Value> GraphBuilder::scatterMulti(ValueRange dests, int64_t grid,
                                              ValueRange inputs,
                                              ArrayRef<bool> whole,
                                              MultiScatterFn body) {
  auto op =
      ScatterMultiOp::create(builder, loc, TypeRange(dests.getTypes()),
                             builder.getI64IntegerAttr(grid), inputs, dests);
  buildBody(
      op.getBody(), {i32()}, inputs,
      [&](ExpBuilder &e, Block *block) {
        return body(e, block->getArgument(0),
                    block->getArguments().drop_front());
      },
      whole);
  return SmallVector<Value>(op.getResults());
}

Value GraphBuilder::writeSlice(Value dest, Value src, int64_t offset) {
  int64_t n = tensorOf(src).getNumElements();
  return scatter(dest, n, src, [&](ExpBuilder &e, Value lane, ValueRange args) {
    return std::make_pair(e.add(lane, e.i32(offset)), args[0]);
  });
}

/// The [rows..., 1] shape a reduction over the last axis produces.
static SmallVector<int64_t> reducedShape(Value x) {
  SmallVector<int64_t> shape(tensorOf(x).getShape());
  shape.back() = 1;
  return shape;
}

Value GraphBuilder::reduce(ReduceKind kind, Value x) {
  auto op = ReduceOp::create(builder, loc, tensorType(reducedShape(x), f32()),
                             kind, ValueRange{x}, DenseI64ArrayAttr());
  return op;
}

Value GraphBuilder::reduce(ReduceKind kind, ValueRange inputs,
                           LaneFn prologue) {
  return reduce(kind, inputs, /*whole=*/{}, prologue);
}

Value GraphBuilder::reduce(ReduceKind kind, ValueRange inputs,
                           ArrayRef<bool> whole, LaneFn prologue) {
  return buildReduce(kind, reducedShape(inputs[0]), inputs, whole,
                     DenseI64ArrayAttr(), prologue);
}

Value GraphBuilder::reduceOver(ReduceKind kind, ArrayRef<int64_t> over,
                               ValueRange inputs, ArrayRef<bool> whole,
                               LaneFn prologue) {
  SmallVector<int64_t> shape(over);
  shape.back() = 1;
  return buildReduce(kind, shape, inputs, whole,
                     builder.getDenseI64ArrayAttr(over), prologue);
}

Value GraphBuilder::buildReduce(ReduceKind kind, ArrayRef<int64_t> shape,
                                ValueRange inputs, ArrayRef<bool> whole,
                                DenseI64ArrayAttr over, LaneFn prologue) {
  auto op = ReduceOp::create(builder, loc, tensorType(shape, f32()), kind,
                             inputs, over);
  buildBody(
      op.getPrologue(), {i32()}, inputs,
      [&](ExpBuilder &e, Block *block) {
        return SmallVector<Value>{prologue(e, block->getArgument(0),
                                           block->getArguments().drop_front())};
      },
      whole);
  return op;
}

Value GraphBuilder::reduceEpilogue(ReduceKind kind, ValueRange inputs,
                                   Type element, EpilogueFn epilogue) {
  auto op = ReduceEpilogueOp::create(
      builder, loc, tensorType(tensorOf(inputs[0]).getShape(), element), kind,
      inputs, DenseI64ArrayAttr());
  buildBody(op.getEpilogue(), {i32(), f32()}, inputs,
            [&](ExpBuilder &e, Block *block) {
              return SmallVector<Value>{
                  epilogue(e, block->getArgument(0), block->getArgument(1),
                           block->getArguments().drop_front(2))};
            });
  return op;
}

/// [N] for a rank-1 x, [M, N] for a rank-2 x.
static SmallVector<int64_t> matmulShape(Value x, Value weight) {
  SmallVector<int64_t> shape;
  if (tensorOf(x).getRank() == 2)
    shape.push_back(tensorOf(x).getDimSize(0));
  shape.push_back(tensorOf(weight).getDimSize(0));
  return shape;
}

Value GraphBuilder::matmul(Value x, Value weight) {
  return MatmulOp::create(builder, loc,
                          tensorType(matmulShape(x, weight), f32()), x, weight,
                          ValueRange{});
}

Value GraphBuilder::matmul(Value x, Value weight, ValueRange extra,
                           EpilogueFn epilogue) {
  auto op =
      MatmulOp::create(builder, loc, tensorType(matmulShape(x, weight), f32()),
                       x, weight, extra);
  buildBody(op.getEpilogue(), {i32(), f32()}, extra,
            [&](ExpBuilder &e, Block *block) {
              return SmallVector<Value>{
                  epilogue(e, block->getArgument(0), block->getArgument(1),
                           block->getArguments().drop_front(2))};
            });
  return op;
}

Value GraphBuilder::expertMatmul(Value x, Value ids, Value weight) {
  SmallVector<int64_t> shape(tensorOf(ids).getShape());
  shape.push_back(tensorOf(weight).getDimSize(1));
  return ExpertMatmulOp::create(builder, loc, tensorType(shape, f32()), x, ids,
                                ValueRange{weight});
}

Value GraphBuilder::quantize(Value x, Type quantElement) {
  return QuantizeOp::create(
      builder, loc, tensorType(tensorOf(x).getShape(), quantElement), x);
}

Value GraphBuilder::writeRows(Value values, Value pos, Value dest) {
  return WriteRowsOp::create(builder, loc, values, pos, dest);
}

//===----------------------------------------------------------------------===//
// Composites
//===----------------------------------------------------------------------===//

/// Composites compute in f32 whatever the element type: these convert an
/// f16 element in and out (and leave f32 alone).
static Value widen(ExpBuilder &e, Value v) {
  return v.getType().isF32() ? v : e.toF32(v);
}
static Value narrow(ExpBuilder &e, Value v, Type element) {
  return element == v.getType() ? v : e.convert(v, element);
}

Value GraphBuilder::rmsNorm(Value x, Value weight, double eps) {
  RankedTensorType type = tensorOf(x);
  Type element = type.getElementType();
  double d = static_cast<double>(type.getShape().back());
  Value sumSq = reduce(ReduceKind::sum_sq, x);
  Value mean =
      map(sumSq, [&](ExpBuilder &e, Value s) { return e.div(s, e.f32(d)); });
  Value scale = map(mean, [&](ExpBuilder &e, Value m) {
    return e.rsqrt(e.add(m, e.f32(eps)));
  });
  if (!weight)
    return map(ValueRange{x, scale}, type.getShape(), element,
               [&](ExpBuilder &e, Value, ValueRange args) {
                 return narrow(e, e.mul(widen(e, args[0]), args[1]), element);
               });
  return map(ValueRange{x, scale, weight}, type.getShape(), element,
             [&](ExpBuilder &e, Value, ValueRange args) {
               Value y =
                   e.mul(e.mul(widen(e, args[0]), args[1]), widen(e, args[2]));
               return narrow(e, y, element);
             });
}

Value GraphBuilder::layerNorm(Value x, Value weight, Value bias, double eps) {
  RankedTensorType type = tensorOf(x);
  Type element = type.getElementType();
  double d = static_cast<double>(type.getShape().back());
  Value sum = reduce(ReduceKind::sum, x);
  Value mean =
      map(sum, [&](ExpBuilder &e, Value s) { return e.div(s, e.f32(d)); });
  Value centered = map(ValueRange{x, mean}, type.getShape(), f32(),
                       [&](ExpBuilder &e, Value, ValueRange args) {
                         return e.sub(widen(e, args[0]), args[1]);
                       });
  Value sumSq = reduce(ReduceKind::sum_sq, centered);
  Value scale = map(sumSq, [&](ExpBuilder &e, Value s) {
    return e.rsqrt(e.add(e.div(s, e.f32(d)), e.f32(eps)));
  });
  return map(ValueRange{centered, scale, weight, bias}, type.getShape(),
             element, [&](ExpBuilder &e, Value, ValueRange args) {
               Value y =
                   e.add(e.mul(e.mul(args[0], args[1]), widen(e, args[2])),
                         widen(e, args[3]));
               return narrow(e, y, element);
             });
}

Value GraphBuilder::softmax(Value x) {
  RankedTensorType type = tensorOf(x);
  Type element = type.getElementType();
  Value max = reduce(ReduceKind::max, x);
  Value exps = map(ValueRange{x, max}, type.getShape(), f32(),
                   [&](ExpBuilder &e, Value, ValueRange args) {
                     return e.exp(e.sub(widen(e, args[0]), args[1]));
                   });
  Value sum = reduce(ReduceKind::sum, exps);
  return map(ValueRange{exps, sum}, type.getShape(), element,
             [&](ExpBuilder &e, Value, ValueRange args) {
               return narrow(e, e.div(args[0], args[1]), element);
             });
}

Value GraphBuilder::rope(Value x, Value pos, int64_t headDim, double base,
                         RopeStyle style, Value freqFactors) {
  RankedTensorType type = tensorOf(x);
  ArrayRef<int64_t> shape = type.getShape();
  int64_t half = headDim / 2;

  // The element each lane rotates with.
  Value partner =
      gather(x, {}, shape, [&](ExpBuilder &e, Value lane, ValueRange) {
        Value d = e.remConst(lane, headDim);
        Value rowStart = e.sub(lane, d);
        Value other;
        if (style == RopeStyle::NeoX) {
          Value lower = e.cmp(CmpPredicate::lt, d, e.i32(half));
          other = e.select(lower, e.add(d, e.i32(half)), e.sub(d, e.i32(half)));
        } else {
          other = exp::XorOp::create(e.builder(), e.location(), d, e.i32(1));
        }
        return e.add(rowStart, other);
      });

  // Frequency pair index j of each lane: d mod half (NeoX) or d / 2.
  auto pairIndex = [&](ExpBuilder &e, Value lane) {
    Value d = e.remConst(lane, headDim);
    return style == RopeStyle::NeoX ? e.remConst(d, half) : e.divConst(d, 2);
  };

  SmallVector<Value> inputs{x, partner, pos};
  if (freqFactors) {
    inputs.push_back(gather(freqFactors, {}, shape,
                            [&](ExpBuilder &e, Value lane, ValueRange) {
                              return pairIndex(e, lane);
                            }));
  }
  double logBase = std::log(base);
  return map(inputs, shape, type.getElementType(),
             [&](ExpBuilder &e, Value lane, ValueRange args) {
               Value j = e.toF32(pairIndex(e, lane));
               // theta = pos * base^(-2j / headDim) [/ factor]
               Value invFreq = e.exp(e.mul(
                   j, e.f32(-2.0 * logBase / static_cast<double>(headDim))));
               Value theta = e.mul(e.toF32(args[2]), invFreq);
               if (freqFactors)
                 theta = e.div(theta, args[3]);
               Value c = e.cos(theta), s = e.sin(theta);
               Value self = widen(e, args[0]), other = widen(e, args[1]);
               Value d = e.remConst(lane, headDim);
               Value first =
                   style == RopeStyle::NeoX
                       ? e.cmp(CmpPredicate::lt, d, e.i32(half))
                       : e.cmp(CmpPredicate::eq, e.remConst(d, 2), e.i32(0));
               // first of a pair: x cos - x' sin; second: x cos + x' sin.
               Value xs = e.mul(other, s);
               Value xc = e.mul(self, c);
               return narrow(e, e.select(first, e.sub(xc, xs), e.add(xc, xs)),
                             type.getElementType());
             });
}

Value GraphBuilder::transpose(Value x) {
  int64_t rows = tensorOf(x).getDimSize(0), cols = tensorOf(x).getDimSize(1);
  // out[c, r] = x[r, c], lane = c·rows + r.
  return gather(x, {}, {cols, rows},
                [&](ExpBuilder &e, Value lane, ValueRange) {
                  Value c = e.divConst(lane, rows);
                  Value r = e.remConst(lane, rows);
                  return e.add(e.mul(r, e.i32(cols)), c);
                });
}

Value GraphBuilder::crossEntropy(Value logits, Value targets) {
  int64_t rows = tensorOf(logits).getDimSize(0);
  int64_t vocab = tensorOf(logits).getDimSize(1);
  Value max = reduce(ReduceKind::max, logits);
  Value sumExp = reduce(ReduceKind::sum, ValueRange{logits, max},
                        [](ExpBuilder &e, Value, ValueRange args) {
                          return e.exp(e.sub(args[0], args[1]));
                        });
  Value picked = gather(logits, ValueRange{targets}, {rows},
                        [&](ExpBuilder &e, Value lane, ValueRange args) {
                          return e.add(e.mul(lane, e.i32(vocab)), args[0]);
                        });
  Value perRow = map(ValueRange{max, sumExp, picked}, {rows}, f32(),
                     [](ExpBuilder &e, Value, ValueRange args) {
                       return e.sub(e.add(args[0], e.log(args[1])), args[2]);
                     });
  return map(reduce(ReduceKind::sum, perRow), [&](ExpBuilder &e, Value v) {
    return e.div(v, e.f32(static_cast<double>(rows)));
  });
}

Value GraphBuilder::causalSelfAttention(Value q, Value k, Value v,
                                        int64_t heads) {
  const int64_t seq = tensorOf(q).getDimSize(0);
  const int64_t width = tensorOf(q).getDimSize(1);
  const int64_t hd = width / heads;
  const double scale = 1.0 / std::sqrt(static_cast<double>(hd));
  Value out = zeros({seq, width}, f32());
  for (int64_t h = 0; h < heads; ++h) {
    // Element (t, d) of head h in a [seq, width] tensor.
    auto at = [&, h](ExpBuilder &e, Value t, Value d) {
      return e.add(e.mul(t, e.i32(width)), e.add(d, e.i32(h * hd)));
    };
    auto slice = [&](Value x) {
      return gather(x, {}, {seq, hd},
                    [&](ExpBuilder &e, Value lane, ValueRange) {
                      return at(e, e.divConst(lane, hd), e.remConst(lane, hd));
                    });
    };
    Value scores = matmul(slice(q), slice(k)); // [seq, seq]
    Value masked = map(ValueRange{scores}, {seq, seq}, f32(),
                       [&](ExpBuilder &e, Value lane, ValueRange args) {
                         Value row = e.divConst(lane, seq);
                         Value col = e.remConst(lane, seq);
                         Value future = e.cmp(CmpPredicate::gt, col, row);
                         return e.select(future, e.f32(-1e30),
                                         e.mul(args[0], e.f32(scale)));
                       });
    Value probs = softmax(masked);
    Value vT =
        gather(v, {}, {hd, seq}, [&](ExpBuilder &e, Value lane, ValueRange) {
          return at(e, e.remConst(lane, seq), e.divConst(lane, seq));
        });
    Value head = matmul(probs, vT); // [seq, hd]
    out = scatter(out, seq * hd, ValueRange{head},
                  [&](ExpBuilder &e, Value lane, ValueRange args) {
                    return std::make_pair(
                        at(e, e.divConst(lane, hd), e.remConst(lane, hd)),
                        args[0]);
                  });
  }
  return out;
}

Value GraphBuilder::attention(Value q, Value kCache, Value vCache, Value pos,
                              int64_t heads, int64_t kvHeads, int64_t headDim,
                              int64_t maxSeq) {
  const int64_t group = heads / kvHeads;
  const int64_t rowStride = kvHeads * headDim; // One cache position.
  // The cache element of (position t, query head h, dimension d).
  auto cacheIndex = [&](ExpBuilder &e, Value h, Value t, Value d) {
    Value kvHead = group == 1 ? h : e.divConst(h, group);
    return e.add(
        e.add(e.mul(t, e.i32(rowStride)), e.mul(kvHead, e.i32(headDim))), d);
  };

  // scores[h, t] = q[h] . k[t] / sqrt(headDim), over [heads, maxSeq,
  // headDim]; q and the K cache are read whole, in their own layouts.
  double scale = 1.0 / std::sqrt(static_cast<double>(headDim));
  Value scores = reduceOver(
      ReduceKind::sum, {heads, maxSeq, headDim}, ValueRange{q, kCache},
      {true, true}, [&](ExpBuilder &e, Value lane, ValueRange args) {
        Value h = e.divConst(lane, maxSeq * headDim);
        Value t = e.remConst(e.divConst(lane, headDim), maxSeq);
        Value d = e.remConst(lane, headDim);
        Value qv = extract(e, args[0], e.add(e.mul(h, e.i32(headDim)), d));
        Value kv = extract(e, args[1], cacheIndex(e, h, t, d));
        return e.mul(e.mul(qv, kv), e.f32(scale));
      });
  // Causal mask: positions after `pos` do not exist yet.
  Value masked = map(ValueRange{scores, pos}, {heads, maxSeq}, f32(),
                     [&](ExpBuilder &e, Value lane, ValueRange args) {
                       Value t = e.remConst(lane, maxSeq);
                       Value future = e.cmp(exp::CmpPredicate::gt, t, args[1]);
                       return e.select(future, e.f32(-INFINITY), args[0]);
                     });
  Value probs = softmax(masked);
  // out[h, d] = sum_t p[h, t] v[t, h, d], over [heads, headDim, maxSeq].
  Value out = reduceOver(
      ReduceKind::sum, {heads, headDim, maxSeq}, ValueRange{probs, vCache},
      {true, true}, [&](ExpBuilder &e, Value lane, ValueRange args) {
        Value h = e.divConst(lane, headDim * maxSeq);
        Value d = e.remConst(e.divConst(lane, maxSeq), headDim);
        Value t = e.remConst(lane, maxSeq);
        Value p = extract(e, args[0], e.add(e.mul(h, e.i32(maxSeq)), t));
        Value v = extract(e, args[1], cacheIndex(e, h, t, d));
        return e.mul(p, v);
      });
  // [heads, headDim, 1] read flat as [heads * headDim].
  return map(out, {heads * headDim}, f32(),
             [](ExpBuilder &, Value, ValueRange args) { return args[0]; });
}

Value GraphBuilder::decodeAttention(Value q, Value kCache, Value vCache,
                                    Value pos, int64_t heads, int64_t kvHeads,
                                    int64_t headDim, double scale,
                                    double softcap, int64_t window,
                                    int64_t seqLen) {
  return AttentionOp::create(
      builder, loc, tensorOf(q), q, kCache, vCache, pos,
      builder.getI64IntegerAttr(heads), builder.getI64IntegerAttr(kvHeads),
      builder.getI64IntegerAttr(headDim), builder.getF32FloatAttr(scale),
      softcap > 0 ? builder.getF32FloatAttr(softcap) : FloatAttr(),
      window > 0 ? builder.getI64IntegerAttr(window) : IntegerAttr(),
      seqLen > 0 ? builder.getI64IntegerAttr(seqLen) : IntegerAttr());
}
