//===- LaneAddresses.h - The addresses a lane-only gather reads -*- C++ -*-===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//
//
// Private to lib/Dialect/Circuit/Transforms.
//
//===----------------------------------------------------------------------===//

#ifndef HESPER_LIB_CIRCUIT_TRANSFORMS_LANEADDRESSES_H
#define HESPER_LIB_CIRCUIT_TRANSFORMS_LANEADDRESSES_H

#include "Hesper/Dialect/Circuit/IR/Circuit.h"

#include <optional>
#include <vector>

namespace hesper::circuit {

/// The address every lane of `op` reads, when its body computes it from the
/// lane alone with integer ops the analysis evaluates (LaneAddresses.cpp);
/// std::nullopt when it reads inputs, uses another op, or is undefined for
/// some lane.
std::optional<std::vector<int32_t>> laneOnlyAddresses(GatherOp op);

/// The indices of a row gather, `result[s, :] = source[indices[s], :]` of
/// an [R, D] source and [S] i32 indices read whole: the body
/// GraphBuilder::gatherRows builds, `indices[lane div D] * D + lane rem D`
/// (the operands of the add and the mul in either order). Null for any other
/// gather.
mlir::Value rowGatherIndices(GatherOp op);

} // namespace hesper::circuit

#endif // HESPER_LIB_CIRCUIT_TRANSFORMS_LANEADDRESSES_H
