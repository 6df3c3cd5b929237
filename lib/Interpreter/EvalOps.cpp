//===- EvalOps.cpp - Reference evaluation of each Circuit op --------------===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//
//
// How the reference interpreter evaluates each kind of op: the ops with
// per-lane bodies (map, gather, scatter, the reductions), the matmuls,
// quantize and attention. Reductions and dot products accumulate in double
// and round to f32 once, so the oracle is more accurate than any order of
// f32 sums a device uses.
//
//===----------------------------------------------------------------------===//

#include "Hesper/Interpreter/Interpreter.h"

#include "GraphEvaluator.h"

#include <algorithm>
#include <cmath>
#include <limits>

using namespace mlir;
using namespace hesper;
using namespace hesper::circuit;
using namespace hesper::interp;

LogicalResult GraphEvaluator::evalMap(MapOp op) {
  auto program = compile(op.getBody());
  if (failed(program))
    return failure();
  auto result = fresh(op.getType());
  LaneInputs inputs =
      bindInputs(op.getInputs(), op.getType().getShape(), &op.getBody(), 1);
  program->run(
      result->getNumElements(),
      [&](int64_t lane, Val *args) {
        args[0] = Val::ofInt(lane);
        inputs.fill(lane, args, 1);
      },
      [&](int64_t lane, const Val *out) { write(*result, lane, out[0]); });
  env[op] = result;
  return success();
}

LogicalResult GraphEvaluator::evalGather(GatherOp op) {
  auto program = compile(op.getBody());
  if (failed(program))
    return failure();
  auto result = fresh(op.getType());
  const HostTensor &source = *env[op.getSource()];
  int64_t sourceElements = source.getNumElements();
  LaneInputs inputs =
      bindInputs(op.getInputs(), op.getType().getShape(), &op.getBody(), 1);
  // A quantized source is read dequantized, a row at a time (cached).
  bool quantized = isQuantized(source.getElementType());
  int64_t rowLength = source.getType().getShape().back();
  int64_t cachedRow = -1;
  std::vector<float> rowValues;
  bool decodeFailed = false;
  auto readSource = [&](int64_t addr) -> Val {
    if (!quantized)
      return read(source, addr);
    int64_t row = addr / rowLength;
    if (row != cachedRow) {
      rowValues.clear();
      decodeFailed |= failed(dequantizeRow(source, row, rowValues));
      cachedRow = row;
    }
    return Val::ofFloat(rowValues.empty() ? 0.0f : rowValues[addr % rowLength]);
  };
  program->run(
      result->getNumElements(),
      [&](int64_t lane, Val *args) {
        args[0] = Val::ofInt(lane);
        inputs.fill(lane, args, 1);
      },
      [&](int64_t lane, const Val *out) {
        int64_t addr = out[0].i;
        if (addr >= 0 && addr < sourceElements)
          write(*result, lane, readSource(addr));
        else
          noteOutOfRange(lane, addr, sourceElements);
      });
  if (decodeFailed)
    return op.emitOpError("reference interpreter: cannot decode ")
           << source.getElementType();
  if (failed(reportBounds(op, "reads")))
    return failure();
  env[op] = result;
  return success();
}

LogicalResult GraphEvaluator::evalScatter(Operation *op, ValueRange inputs,
                                          ValueRange dests, int64_t grid,
                                          Region &body) {
  auto program = compile(body);
  if (failed(program))
    return failure();
  SmallVector<TensorRef> outs;
  for (Value dest : dests)
    outs.push_back(destinationFor(dest));
  LaneInputs bound = bindInputs(inputs, {grid}, &body, 1);
  program->run(
      grid,
      [&](int64_t lane, Val *args) {
        args[0] = Val::ofInt(lane);
        bound.fill(lane, args, 1);
      },
      [&](int64_t lane, const Val *out) {
        for (size_t d = 0; d < outs.size(); ++d) {
          int64_t addr = out[2 * d].i;
          if (addr >= 0 && addr < outs[d]->getNumElements())
            write(*outs[d], addr, out[2 * d + 1]);
          else
            noteOutOfRange(lane, addr, outs[d]->getNumElements());
        }
      });
  if (failed(reportBounds(op, "writes")))
    return failure();
  for (auto [result, out] : llvm::zip(op->getResults(), outs))
    env[result] = out;
  return success();
}

LogicalResult GraphEvaluator::evalScatterAdd(ScatterAddOp op) {
  auto result = fresh(op.getType());
  const HostTensor &source = *env[op.getSource()];
  const HostTensor &indices = *env[op.getIndices()];
  int64_t rows = op.getType().getShape()[0];
  int64_t width = op.getType().getShape()[1];
  // Row by row in source order, each sum rounded to the tensor's storage:
  // f32 as every backend's kernel adds, f64 in a gradient check.
  for (int64_t s = 0; s < indices.getNumElements(); ++s) {
    int64_t r = indices.getInt(s);
    if (r < 0 || r >= rows) {
      noteOutOfRange(s, r, rows);
      continue;
    }
    for (int64_t d = 0; d < width; ++d)
      result->setDouble(r * width + d, result->getDouble(r * width + d) +
                                           source.getDouble(s * width + d));
  }
  if (failed(reportBounds(op, "adds into")))
    return failure();
  env[op] = result;
  return success();
}

LogicalResult GraphEvaluator::evalReduce(Operation *op, ReduceKind kind,
                                         ValueRange inputs, Region &prologue,
                                         Region *epilogue, Value scatterDest) {
  SmallVector<int64_t> iteration = getReductionIteration(op);
  int64_t rowLength = iteration.back();
  int64_t total = 1;
  for (int64_t d : iteration)
    total *= d;
  int64_t rows = total / rowLength;

  LaneInputs bound = bindInputs(inputs, iteration, &prologue, 1);

  // The value each lane contributes.
  std::vector<double> values(total);
  if (prologue.empty()) {
    for (int64_t lane = 0; lane < total; ++lane)
      values[lane] = bound.tensors[0]->getDouble(bound.indexers[0](lane));
  } else {
    auto program = compile(prologue);
    if (failed(program))
      return failure();
    program->run(
        total,
        [&](int64_t lane, Val *args) {
          args[0] = Val::ofInt(lane);
          bound.fill(lane, args, 1);
        },
        [&](int64_t lane, const Val *out) { values[lane] = out[0].f; });
  }

  // Sums accumulate in double along each row and round to f32 once, so the
  // oracle is more accurate than any f32 summation order a device uses.
  std::vector<double> reduced(rows);
  for (int64_t row = 0; row < rows; ++row) {
    double acc = kind == ReduceKind::max
                     ? -std::numeric_limits<double>::infinity()
                     : 0.0;
    for (int64_t k = 0; k < rowLength; ++k) {
      double v = values[row * rowLength + k];
      if (kind == ReduceKind::sum)
        acc += v;
      else if (kind == ReduceKind::sum_sq)
        acc += v * v;
      else
        acc = std::fmax(acc, v);
    }
    reduced[row] = finish(acc);
  }

  if (!epilogue) {
    auto result = fresh(op->getResult(0).getType());
    for (int64_t row = 0; row < rows; ++row)
      result->setDouble(row, reduced[row]);
    env[op->getResult(0)] = result;
    return success();
  }

  auto program = compile(*epilogue);
  if (failed(program))
    return failure();
  LaneInputs epilogueInputs = bindInputs(inputs, iteration, epilogue, 2);
  auto setEpilogueArgs = [&](int64_t lane, Val *args) {
    args[0] = Val::ofInt(lane);
    args[1] = Val::ofFloat(reduced[lane / rowLength]);
    epilogueInputs.fill(lane, args, 2);
  };
  if (scatterDest) {
    TensorRef out = destinationFor(scatterDest);
    program->run(total, setEpilogueArgs, [&](int64_t lane, const Val *res) {
      int64_t addr = res[0].i;
      if (addr >= 0 && addr < out->getNumElements())
        write(*out, addr, res[1]);
      else
        noteOutOfRange(lane, addr, out->getNumElements());
    });
    if (failed(reportBounds(op, "writes")))
      return failure();
    env[op->getResult(0)] = out;
    return success();
  }
  auto resultType = cast<RankedTensorType>(op->getResult(0).getType());
  auto result = fresh(resultType);
  if (isQuantized(resultType.getElementType())) {
    // Quantized as stored: evaluate in f32, then encode the blocks.
    std::vector<float> epilogueValues(total);
    program->run(total, setEpilogueArgs, [&](int64_t lane, const Val *res) {
      epilogueValues[lane] = static_cast<float>(res[0].f);
    });
    std::vector<uint8_t> bytes;
    quantizeBlocks(epilogueValues, isa<Q8_1Type>(resultType.getElementType()),
                   bytes);
    result->bytes() = std::move(bytes);
  } else {
    program->run(total, setEpilogueArgs, [&](int64_t lane, const Val *res) {
      write(*result, lane, res[0]);
    });
  }
  env[op->getResult(0)] = result;
  return success();
}

/// Appends row `row` of `t` (rows of `rowLength`) as doubles: a wide
/// tensor's exactly, any other decoded.
static LogicalResult readRow(const HostTensor &t, int64_t row,
                             int64_t rowLength, std::vector<double> &out) {
  if (t.isWide()) {
    for (int64_t k = 0; k < rowLength; ++k)
      out.push_back(t.getDouble(row * rowLength + k));
    return success();
  }
  std::vector<float> decoded;
  if (failed(dequantizeRow(t, row, decoded)))
    return failure();
  out.insert(out.end(), decoded.begin(), decoded.end());
  return success();
}

/// Computes x · wᵀ (row-major [M, N]) after decoding both operands, each dot
/// product accumulated in double and rounded to f32 once (unless `wide`).
static FailureOr<std::vector<double>> product(Operation *op, Value xValue,
                                              const HostTensor &x, Value wValue,
                                              const HostTensor &w, bool wide) {
  auto xType = cast<RankedTensorType>(xValue.getType());
  auto wType = cast<RankedTensorType>(wValue.getType());
  int64_t k = xType.getShape().back();
  int64_t m = xType.getRank() == 2 ? xType.getDimSize(0) : 1;
  int64_t n = wType.getDimSize(0);
  std::vector<double> xs, ws;
  for (int64_t row = 0; row < m; ++row)
    if (failed(readRow(x, row, k, xs)))
      return op->emitOpError("reference interpreter: cannot decode ")
             << xType.getElementType() << " activations";
  for (int64_t row = 0; row < n; ++row)
    if (failed(readRow(w, row, k, ws)))
      return op->emitOpError("reference interpreter: cannot decode ")
             << wType.getElementType() << " weights";
  std::vector<double> acc(m * n);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double sum = 0.0;
      for (int64_t kk = 0; kk < k; ++kk)
        sum += xs[i * k + kk] * ws[j * k + kk];
      acc[i * n + j] = wide ? sum : static_cast<float>(sum);
    }
  return acc;
}

LogicalResult GraphEvaluator::evalMatmul(MatmulOp op) {
  auto accOr = product(op, op.getX(), *env[op.getX()], op.getWeight(),
                       *env[op.getWeight()], options.wide);
  if (failed(accOr))
    return failure();
  std::vector<double> &acc = *accOr;
  int64_t total = op.getType().getNumElements();
  auto result = fresh(op.getType());
  if (op.getEpilogue().empty()) {
    for (int64_t i = 0; i < total; ++i)
      result->setDouble(i, acc[i]);
  } else {
    auto program = compile(op.getEpilogue());
    if (failed(program))
      return failure();
    LaneInputs bound = bindInputs(op.getInputs(), op.getType().getShape(),
                                  &op.getEpilogue(), 2);
    program->run(
        total,
        [&](int64_t lane, Val *args) {
          args[0] = Val::ofInt(lane);
          args[1] = Val::ofFloat(acc[lane]);
          bound.fill(lane, args, 2);
        },
        [&](int64_t lane, const Val *out) {
          result->setDouble(lane, out[0].f);
        });
  }
  env[op] = result;
  return success();
}

LogicalResult GraphEvaluator::evalGatedMatmul(GatedMatmulOp op) {
  auto gate = product(op, op.getX(), *env[op.getX()], op.getGate(),
                      *env[op.getGate()], options.wide);
  auto up = product(op, op.getX(), *env[op.getX()], op.getUp(),
                    *env[op.getUp()], options.wide);
  if (failed(gate) || failed(up))
    return failure();
  auto program = compile(op.getCombine());
  if (failed(program))
    return failure();
  auto result = fresh(op.getType());
  program->run(
      op.getType().getNumElements(),
      [&](int64_t lane, Val *args) {
        args[0] = Val::ofInt(lane);
        args[1] = Val::ofFloat((*gate)[lane]);
        args[2] = Val::ofFloat((*up)[lane]);
      },
      [&](int64_t lane, const Val *out) { result->setDouble(lane, out[0].f); });
  env[op] = result;
  return success();
}

LogicalResult GraphEvaluator::evalExpertMatmul(ExpertMatmulOp op) {
  auto xType = cast<RankedTensorType>(op.getX().getType());
  auto idsType = cast<RankedTensorType>(op.getIds().getType());
  auto wType = cast<RankedTensorType>(op.getWeights()[0].getType());
  const int64_t k = xType.getShape().back();
  const int64_t experts = wType.getDimSize(0), n = wType.getDimSize(1);
  const int64_t slots = idsType.getShape().back();
  const int64_t rows = idsType.getNumElements();
  const bool perSlot = xType.getRank() == idsType.getRank() + 1;
  const HostTensor &x = *env[op.getX()], &ids = *env[op.getIds()];
  // Each result row: its x row, its expert's rows of each weight (only the
  // chosen experts are decoded), one f32 rounding per dot product.
  std::vector<std::vector<double>> acc(op.getWeights().size(),
                                       std::vector<double>(rows * n));
  std::vector<double> xs, ws;
  for (int64_t r = 0; r < rows; ++r) {
    xs.clear();
    if (failed(readRow(x, perSlot ? r : r / slots, k, xs)))
      return op.emitOpError("reference interpreter: cannot decode ")
             << xType.getElementType() << " activations";
    const int64_t expert =
        std::clamp<int64_t>(ids.getInt(r), 0, experts - 1);
    for (auto [w, weight] : llvm::enumerate(op.getWeights())) {
      ws.clear();
      for (int64_t j = 0; j < n; ++j)
        if (failed(readRow(*env[weight], expert * n + j, k, ws)))
          return op.emitOpError("reference interpreter: cannot decode ")
                 << cast<RankedTensorType>(weight.getType()).getElementType()
                 << " weights";
      for (int64_t j = 0; j < n; ++j) {
        double sum = 0.0;
        for (int64_t kk = 0; kk < k; ++kk)
          sum += xs[kk] * ws[j * k + kk];
        acc[w][r * n + j] = options.wide ? sum : static_cast<float>(sum);
      }
    }
  }
  auto result = fresh(op.getType());
  if (op.getWeights().size() == 1) {
    for (int64_t i = 0; i < rows * n; ++i)
      result->setDouble(i, acc[0][i]);
  } else {
    auto program = compile(op.getCombine());
    if (failed(program))
      return failure();
    program->run(
        rows * n,
        [&](int64_t lane, Val *args) {
          args[0] = Val::ofInt(lane);
          args[1] = Val::ofFloat(acc[0][lane]);
          args[2] = Val::ofFloat(acc[1][lane]);
        },
        [&](int64_t lane, const Val *out) {
          result->setDouble(lane, out[0].f);
        });
  }
  env[op] = result;
  return success();
}

LogicalResult GraphEvaluator::evalMultiMatmul(MultiMatmulOp op) {
  for (auto [weight, resultValue, epilogue] :
       llvm::zip(op.getWeights(), op.getResults(), op.getEpilogues())) {
    auto accOr = product(op, op.getX(), *env[op.getX()], weight, *env[weight],
                         options.wide);
    if (failed(accOr))
      return failure();
    std::vector<double> &acc = *accOr;
    auto result = fresh(resultValue.getType());
    if (epilogue.empty()) {
      for (size_t i = 0; i < acc.size(); ++i)
        result->setDouble(i, acc[i]);
    } else {
      auto program = compile(epilogue);
      if (failed(program))
        return failure();
      program->run(
          static_cast<int64_t>(acc.size()),
          [&](int64_t lane, Val *args) {
            args[0] = Val::ofInt(lane);
            args[1] = Val::ofFloat(acc[lane]);
          },
          [&](int64_t lane, const Val *out) {
            result->setDouble(lane, out[0].f);
          });
    }
    env[resultValue] = result;
  }
  return success();
}

LogicalResult GraphEvaluator::evalQuantize(QuantizeOp op) {
  const HostTensor &input = *env[op.getInput()];
  auto result = std::make_shared<HostTensor>(op.getType());
  std::vector<float> values;
  for (int64_t i = 0, e = input.getNumElements(); i < e; ++i)
    values.push_back(static_cast<float>(input.getDouble(i)));
  std::vector<uint8_t> bytes;
  quantizeBlocks(values, isa<Q8_1Type>(op.getType().getElementType()), bytes);
  result->bytes() = std::move(bytes);
  env[op] = result;
  return success();
}

LogicalResult GraphEvaluator::evalWriteRows(WriteRowsOp op) {
  const HostTensor &values = *env[op.getValues()];
  const HostTensor &pos = *env[op.getPos()];
  TensorRef out = destinationFor(op.getDest());
  const int64_t rows = op.getValues().getType().getDimSize(0);
  const int64_t width = op.getValues().getType().getDimSize(1);
  const int64_t positions = out->getNumElements() / width;
  const bool q8 = isa<Q8_0Type>(out->getElementType());
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t at = pos.getNumElements() == 1
                           ? int64_t(pos.getInt(0)) + r
                           : int64_t(pos.getInt(r));
    if (at < 0 || at >= positions)
      continue;
    if (!q8) {
      for (int64_t i = 0; i < width; ++i)
        out->setDouble(at * width + i, values.getDouble(r * width + i));
      continue;
    }
    std::vector<float> row;
    for (int64_t i = 0; i < width; ++i)
      row.push_back(static_cast<float>(values.getDouble(r * width + i)));
    std::vector<uint8_t> blocks;
    quantizeBlocks(row, /*withSums=*/false, blocks);
    std::copy(blocks.begin(), blocks.end(),
              out->bytes().begin() + at * int64_t(blocks.size()));
  }
  env[op.getResult()] = out;
  return success();
}

/// A q8_0 cache decoded to f32 (whole: its 1-D type is one row); empty
/// for f32 and f16 caches, which are read in place.
static std::vector<float> decodedCache(const HostTensor &cache) {
  std::vector<float> values;
  if (isa<Q8_0Type>(cache.getElementType()) &&
      failed(dequantizeRow(cache, 0, values)))
    llvm_unreachable("q8_0 always decodes");
  return values;
}

/// Follows the schedule of the attention kernel (convert-circuit-to-shaderm):
/// positions in tiles of kAttentionTile, an online softmax whose running
/// maximum and sum are rescaled once per tile, every sum in index order. As
/// in the other reductions, scores, sums and the weighted values accumulate
/// in double; the output rounds to f32 once.
static constexpr int64_t kAttentionTile = 64;

LogicalResult GraphEvaluator::evalAttention(AttentionOp op) {
  const HostTensor &q = *env[op.getQ()];
  const HostTensor &kc = *env[op.getKCache()];
  const HostTensor &vc = *env[op.getVCache()];
  // q8_0 caches are decoded once; f32 and f16 ones (and widened ones, in
  // gradient checks) are read in place.
  const std::vector<float> kDecoded = decodedCache(kc);
  const std::vector<float> vDecoded = decodedCache(vc);
  auto kAt = [&](int64_t i) {
    return kDecoded.empty() ? kc.getDouble(i) : double(kDecoded[i]);
  };
  auto vAt = [&](int64_t i) {
    return vDecoded.empty() ? vc.getDouble(i) : double(vDecoded[i]);
  };
  const int64_t heads = op.getHeads(), kvHeads = op.getKvHeads(),
                dim = op.getHeadDim(), group = heads / kvHeads;
  const int64_t rowStride = kvHeads * dim;
  const int64_t positions = kc.getNumElements() / rowStride;
  const int64_t rows = q.getNumElements() / (heads * dim);
  const float scale = op.getScale().convertToFloat();
  const double softcap =
      op.getSoftcap() ? op.getSoftcap()->convertToFloat() : 0.0;
  const int64_t window = op.getWindow() ? int64_t(*op.getWindow()) : 0;
  const int64_t seqLen = op.getSeqLen() ? int64_t(*op.getSeqLen()) : 0;
  auto out = fresh(op.getType());
  std::vector<double> scores(kAttentionTile), acc(dim);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t h = 0; h < heads; ++h) {
      // Row r is the token at pos + r: it sees positions 0 .. pos + r.
      // With sequences, it is at pos[r] and sees its sequence's positions
      // up to there.
      const HostTensor &pos = *env[op.getPos()];
      const int64_t last = std::clamp<int64_t>(
          seqLen > 0 ? int64_t(pos.getInt(r)) : int64_t(pos.getInt(0)) + r, 0,
          positions - 1);
      const int64_t start = seqLen > 0 ? last / seqLen * seqLen : 0;
      // A window of W keeps positions last - W + 1 .. last; the tiles start
      // at the first of them, as the kernels' do.
      const int64_t first =
          window > 0 ? std::max<int64_t>(start, last + 1 - window) : start;
      const int64_t qh = (r * heads + h) * dim;
      const int64_t kvBase = (h / group) * dim;
      double m = -std::numeric_limits<double>::max(), sum = 0;
      std::fill(acc.begin(), acc.end(), 0.0);
      for (int64_t tile = first; tile <= last; tile += kAttentionTile) {
        const int64_t n = std::min(kAttentionTile, last + 1 - tile);
        double tileMax = -std::numeric_limits<double>::max();
        for (int64_t i = 0; i < n; ++i) {
          const int64_t row = (tile + i) * rowStride + kvBase;
          double dot = 0;
          for (int64_t d = 0; d < dim; ++d)
            dot += q.getDouble(qh + d) * kAt(row + d);
          scores[i] = dot * scale;
          if (softcap > 0)
            scores[i] = softcap * std::tanh(scores[i] / softcap);
          tileMax = std::max(tileMax, scores[i]);
        }
        const double mNew = std::max(m, tileMax);
        const double correction = std::exp(m - mNew);
        double tileSum = 0;
        for (int64_t d = 0; d < dim; ++d)
          acc[d] *= correction;
        for (int64_t i = 0; i < n; ++i) {
          const double p = std::exp(scores[i] - mNew);
          tileSum += p;
          const int64_t row = (tile + i) * rowStride + kvBase;
          for (int64_t d = 0; d < dim; ++d)
            acc[d] += p * vAt(row + d);
        }
        sum = sum * correction + tileSum;
        m = mNew;
      }
      for (int64_t d = 0; d < dim; ++d)
        out->setDouble(qh + d, finish(acc[d] / sum));
    }
  env[op.getResult()] = std::move(out);
  return success();
}
