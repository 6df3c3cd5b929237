//===- Traffic.cpp - The bytes a Circuit op must move ---------------------===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//
//
// What a dispatch-level op reads and writes at the least -- every input once,
// every output once -- in the form of rt::LaunchTraffic: bytes at every
// run, and bytes per cached position attended. `hesper-run --kernel-times`
// divides it by the kernel's time to say how close a kernel runs to the
// device's bandwidth. The counts follow the ops' semantics, not their
// lowering: a gather reads the rows it gathers, not its table; a scatter or
// write_rows writes the elements it stores and reads nothing of its
// destination; an expert matmul reads the experts its slots can select;
// attention reads the positions up to the step's last row (the window's, with
// one). A body that reads a whole tensor through circuit.extract counts all
// of it.
//
//===----------------------------------------------------------------------===//

#include "GraphLowering.h"

namespace hesper::lowering {

namespace {
/// Bytes of `count` elements of `type`'s storage (blocks of a quantized
/// type pro rata).
int64_t bytesOf(Type type, int64_t count) {
  auto tensor = cast<RankedTensorType>(type);
  int64_t elements = std::max<int64_t>(tensor.getNumElements(), 1);
  int64_t all = cir::getStorageBytes(tensor);
  return count >= elements
             ? all
             : all / elements * count + all % elements * count / elements;
}
int64_t bytesOf(Value v) { return bytesOf(v.getType(), INT64_MAX); }
int64_t elementsOf(Value v) {
  return cast<RankedTensorType>(v.getType()).getNumElements();
}
} // namespace

std::array<int64_t, 5> opTraffic(Operation *op) {
  int64_t read = 0, written = 0, perPosition = 0, window = 0, positions = 0;
  // Operands counted apart (destinations, tables, caches, experts).
  llvm::SmallPtrSet<Value, 4> apart;
  llvm::TypeSwitch<Operation *>(op)
      .Case([&](cir::GatherOp g) {
        apart.insert(g.getSource());
        read += bytesOf(g.getSource().getType(), elementsOf(g.getResult()));
      })
      .Case([&](cir::ScatterOp s) {
        apart.insert(s.getDest());
        written += bytesOf(s.getDest().getType(), s.getGrid());
      })
      .Case([&](cir::ScatterMultiOp s) {
        for (Value dest : s.getDests()) {
          apart.insert(dest);
          written += bytesOf(dest.getType(), s.getGrid());
        }
      })
      .Case([&](cir::ReduceScatterEpilogueOp s) {
        apart.insert(s.getDest());
        written +=
            bytesOf(s.getDest().getType(), elementsOf(s.getInputs().front()));
      })
      .Case([&](cir::WriteRowsOp w) {
        apart.insert(w.getDest());
        written += bytesOf(w.getDest().getType(), elementsOf(w.getValues()));
      })
      .Case([&](cir::AttentionOp a) {
        int64_t row = a.getKvHeads() * a.getHeadDim();
        positions = elementsOf(a.getKCache()) / std::max<int64_t>(row, 1);
        for (Value cache : {a.getKCache(), a.getVCache()}) {
          apart.insert(cache);
          perPosition += bytesOf(cache.getType(), row);
        }
        window = a.getWindow().value_or(0);
        // A cache of several sequences: a row attends within its own.
        if (std::optional<uint64_t> seq = a.getSeqLen())
          positions = std::min<int64_t>(positions, *seq);
      })
      .Case([&](cir::ExpertMatmulOp e) {
        int64_t slots = elementsOf(e.getIds());
        for (Value w : e.getWeights()) {
          apart.insert(w);
          int64_t experts = cast<RankedTensorType>(w.getType()).getDimSize(0);
          read += bytesOf(w) / std::max<int64_t>(experts, 1) *
                  std::min(slots, experts);
        }
      });
  llvm::SmallPtrSet<Value, 8> seen;
  for (Value v : op->getOperands())
    if (!apart.contains(v) && seen.insert(v).second)
      read += bytesOf(v);
  // Results that alias a destination were counted with it.
  bool inPlace = isa<cir::ScatterOp, cir::ScatterMultiOp,
                     cir::ReduceScatterEpilogueOp, cir::WriteRowsOp>(op);
  if (!inPlace)
    for (Value r : op->getResults())
      written += bytesOf(r);
  return {read, written, perPosition, window, positions};
}

} // namespace hesper::lowering
