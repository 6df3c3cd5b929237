//===- Json.h - The versioned JSON files of plans and reports --*- C++ -*-===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//
//
// What tuning plans, the tuning cache (lib/Target/Plan.cpp) and eval
// reports (lib/Tuning/Eval.cpp) share: a versioned top-level object, knobs
// as JSON objects, the printing.
//
//===----------------------------------------------------------------------===//

#ifndef HESPER_SUPPORT_JSON_H
#define HESPER_SUPPORT_JSON_H

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"

#include <string>

namespace hesper::tune::json {

/// The deepest nesting of arrays and objects the tools read. llvm::json's
/// parser recurses once per level with no limit, so some tens of thousands
/// of `[` overflow the stack; plans and reports nest 4 levels deep.
inline constexpr unsigned kMaxJsonDepth = 64;

/// Checks, before parsing, that `text` nests arrays and objects at most
/// `maxDepth` deep (brackets inside strings do not count); otherwise sets
/// `error` to a one-line message with the byte offset and returns false.
inline bool checkNesting(llvm::StringRef text, std::string &error,
                         unsigned maxDepth = kMaxJsonDepth) {
  unsigned depth = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (c == '"') {
      for (++i; i < text.size() && text[i] != '"'; ++i)
        if (text[i] == '\\')
          ++i;
    } else if (c == '[' || c == '{') {
      if (++depth > maxDepth) {
        error = "arrays and objects nested more than " +
                std::to_string(maxDepth) + " levels deep (at byte " +
                std::to_string(i) + ")";
        return false;
      }
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return true;
}

/// Parses `text` into `storage` and returns its top-level object when it
/// holds `"<versionKey>": 1`; otherwise null, with `error` saying why (one
/// line; `what` names the format: "plan", "report").
inline const llvm::json::Object *parseVersioned(llvm::json::Value &storage,
                                                llvm::StringRef text,
                                                llvm::StringRef versionKey,
                                                llvm::StringRef what,
                                                std::string &error) {
  if (!checkNesting(text, error)) {
    error = "not a " + what.str() + ": " + error;
    return nullptr;
  }
  llvm::Expected<llvm::json::Value> parsed = llvm::json::parse(text);
  if (!parsed) {
    error = "not JSON: " + llvm::toString(parsed.takeError());
    return nullptr;
  }
  storage = std::move(*parsed);
  const llvm::json::Object *root = storage.getAsObject();
  if (!root || root->getInteger(versionKey) != 1) {
    error = ("not a " + what + ": expects an object with \"" + versionKey +
             "\": 1")
                .str();
    return nullptr;
  }
  return root;
}

/// Knobs (integers and booleans) as a JSON object.
inline llvm::json::Object knobsToJson(mlir::DictionaryAttr knobs) {
  llvm::json::Object out;
  for (mlir::NamedAttribute knob : knobs) {
    if (auto flag = llvm::dyn_cast<mlir::BoolAttr>(knob.getValue()))
      out[knob.getName().getValue()] = flag.getValue();
    else if (auto n = llvm::dyn_cast<mlir::IntegerAttr>(knob.getValue()))
      out[knob.getName().getValue()] = n.getInt();
  }
  return out;
}

/// The knobs of a JSON object; a value that is neither an integer nor a
/// boolean is left out, and the first such key is stored in `badKey`.
inline mlir::DictionaryAttr knobsFromJson(const llvm::json::Object &object,
                                          mlir::Builder &b,
                                          std::string &badKey) {
  llvm::SmallVector<mlir::NamedAttribute> attrs;
  for (const auto &[key, knob] : object) {
    if (auto flag = knob.getAsBoolean())
      attrs.push_back(b.getNamedAttr(key, b.getBoolAttr(*flag)));
    else if (auto n = knob.getAsInteger())
      attrs.push_back(b.getNamedAttr(key, b.getI64IntegerAttr(*n)));
    else if (badKey.empty())
      badKey = key.str();
  }
  return b.getDictionaryAttr(attrs);
}

/// Indented JSON text with a final newline, as the files are written.
inline std::string print(const llvm::json::Value &value) {
  return llvm::formatv("{0:2}", value).str() + "\n";
}

} // namespace hesper::tune::json

#endif // HESPER_SUPPORT_JSON_H
