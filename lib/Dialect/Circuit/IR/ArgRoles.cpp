//===- ArgRoles.cpp - What a graph argument is for ------------------------===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//

#include "Hesper/Dialect/Circuit/IR/ArgRoles.h"

#include "llvm/ADT/StringSwitch.h"

using namespace hesper::circuit;

llvm::StringRef hesper::circuit::stringifyArgRole(ArgRole role) {
  switch (role) {
  case ArgRole::Input:
    return "input";
  case ArgRole::Weight:
    return "weight";
  case ArgRole::Tokens:
    return "tokens";
  case ArgRole::Position:
    return "position";
  case ArgRole::LastRow:
    return "last_row";
  case ArgRole::RopeFreqs:
    return "rope_freqs";
  case ArgRole::RopeFreqsSwa:
    return "rope_freqs_swa";
  case ArgRole::Cache:
    return "cache";
  case ArgRole::Targets:
    return "targets";
  }
  return "input";
}

std::optional<ArgRole> hesper::circuit::symbolizeArgRole(llvm::StringRef name) {
  return llvm::StringSwitch<std::optional<ArgRole>>(name)
      .Case("input", ArgRole::Input)
      .Case("weight", ArgRole::Weight)
      .Case("tokens", ArgRole::Tokens)
      .Case("position", ArgRole::Position)
      .Case("last_row", ArgRole::LastRow)
      .Case("rope_freqs", ArgRole::RopeFreqs)
      .Case("rope_freqs_swa", ArgRole::RopeFreqsSwa)
      .Case("cache", ArgRole::Cache)
      .Case("targets", ArgRole::Targets)
      .Default(std::nullopt);
}
