//===- ArgRoleNames.h - The roles of graph arguments, by name ---*- C++ -*-===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//
//
// The roles a graph argument may declare (ArgRoles.h explains the
// attributes) and their spellings, without any MLIR: a program's argument
// bindings travel with it by these names (a program cache entry's
// metadata), and the code that binds them (Session.cpp) runs in binaries
// that link no compiler.
//
//===----------------------------------------------------------------------===//

#ifndef HESPER_DIALECT_CIRCUIT_IR_ARGROLENAMES_H
#define HESPER_DIALECT_CIRCUIT_IR_ARGROLENAMES_H

#include "llvm/ADT/StringRef.h"

#include <optional>

namespace hesper::circuit {

enum class ArgRole {
  Input,        ///< bound by the caller (the default, without an attribute)
  Weight,       ///< a tensor of the model file (circuit.tensor, circuit.rows)
  Tokens,       ///< the token ids of the step
  Position,     ///< the position of the step's first token
  LastRow,      ///< the row of a chunk whose logits are computed
  RopeFreqs,    ///< the RoPE frequencies of the full-attention layers
  RopeFreqsSwa, ///< the RoPE frequencies of the sliding-window layers
  Cache,        ///< a KV cache, written in place
  Targets,      ///< the training targets of the step
};

namespace detail {
struct ArgRoleName {
  ArgRole role;
  llvm::StringLiteral name;
};
inline constexpr ArgRoleName kArgRoleNames[] = {
    {ArgRole::Input, "input"},
    {ArgRole::Weight, "weight"},
    {ArgRole::Tokens, "tokens"},
    {ArgRole::Position, "position"},
    {ArgRole::LastRow, "last_row"},
    {ArgRole::RopeFreqs, "rope_freqs"},
    {ArgRole::RopeFreqsSwa, "rope_freqs_swa"},
    {ArgRole::Cache, "cache"},
    {ArgRole::Targets, "targets"},
};
} // namespace detail

/// The attribute's spelling of `role` ("weight", "rope_freqs_swa", ...).
inline llvm::StringRef stringifyArgRole(ArgRole role) {
  for (const detail::ArgRoleName &n : detail::kArgRoleNames)
    if (n.role == role)
      return n.name;
  return "input";
}

/// The role an attribute spells; std::nullopt for an unknown one.
inline std::optional<ArgRole> symbolizeArgRole(llvm::StringRef name) {
  for (const detail::ArgRoleName &n : detail::kArgRoleNames)
    if (n.name == name)
      return n.role;
  return std::nullopt;
}

} // namespace hesper::circuit

#endif // HESPER_DIALECT_CIRCUIT_IR_ARGROLENAMES_H
