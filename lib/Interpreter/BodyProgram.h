//===- BodyProgram.h - Lockstep evaluation of per-lane bodies ---*- C++ -*-===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//
//
// A per-lane body (a block of exp ops ending in circuit.yield) compiled into a
// flat list of instructions over numbered slots, then run for groups of
// `subgroupSize` lanes in lockstep so that lane-exchanging ops see all the
// lanes of their subgroup.
//
//===----------------------------------------------------------------------===//

#ifndef HESPER_LIB_INTERPRETER_BODYPROGRAM_H
#define HESPER_LIB_INTERPRETER_BODYPROGRAM_H

#include "mlir/IR/Block.h"
#include "mlir/Support/LLVM.h"
#include "llvm/ADT/SmallVector.h"

#include <cstdint>
#include <vector>

namespace hesper {
namespace interp {

class HostTensor;

/// One scalar value: floats in `f` (an f32 or f16 value, exactly; or, when
/// the program evaluates f32 in double precision, a double), integers
/// (sign-extended from their bit width; i1 as 0 or 1) in `i`.
struct Val {
  double f = 0.0;
  int64_t i = 0;
  /// A whole input tensor, for a body argument of tensor type.
  const HostTensor *t = nullptr;
  static Val ofFloat(double v) {
    Val r;
    r.f = v;
    return r;
  }
  static Val ofInt(int64_t v) {
    Val r;
    r.i = v;
    return r;
  }
  static Val ofTensor(const HostTensor *v) {
    Val r;
    r.t = v;
    return r;
  }
};

/// How a slot's type is evaluated.
enum class ValKind : uint8_t { F32, F16, Int, Tensor };

class BodyProgram {
public:
  /// Compiles `block`; fails (with a diagnostic) on an op the interpreter
  /// does not know. With `wide`, f32 values are computed in double
  /// precision and never rounded to single (f16 values still are).
  static mlir::FailureOr<BodyProgram> compile(mlir::Block &block,
                                              unsigned subgroupSize,
                                              bool wide = false);

  unsigned getNumArguments() const { return numArgs; }
  unsigned getNumResults() const { return yields.size(); }

  /// Runs lanes [0, numLanes): `setArgs(lane, args)` fills the block
  /// arguments of a lane, `take(lane, results)` receives its yielded values.
  void run(int64_t numLanes,
           llvm::function_ref<void(int64_t lane, Val *args)> setArgs,
           llvm::function_ref<void(int64_t lane, const Val *results)> take);

  struct Instr {
    unsigned opcode;
    unsigned result;
    llvm::SmallVector<unsigned, 4> operands;
    int64_t imm0 = 0, imm1 = 0;
    ValKind kind = ValKind::F32; // Of the result.
    unsigned width = 32;         // Integer width of the result.
    ValKind operandKind = ValKind::F32;
    unsigned operandWidth = 32;
  };

private:
  void step(const Instr &instr, unsigned lanes, const bool *active);

  unsigned numArgs = 0, numSlots = 0, subgroupSize = 32;
  bool wide = false;
  std::vector<Instr> instrs;
  std::vector<Val> constants; // Slot values of constants, set once.
  std::vector<unsigned> constantSlots;
  std::vector<unsigned> yields;
  std::vector<Val> regs; // subgroupSize x numSlots, lane-major.
};

} // namespace interp
} // namespace hesper

#endif // HESPER_LIB_INTERPRETER_BODYPROGRAM_H
