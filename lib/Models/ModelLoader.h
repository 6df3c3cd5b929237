//===- ModelLoader.h - Reading a model's GGUF metadata ----------*- C++ -*-===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//
//
// The loader that reads a model's hyperparameters from its GGUF metadata and
// checks its tensors. Model.cpp holds the architecture-independent part and
// the llama / qwen2 / qwen3 checks; ModelArchitectures.cpp the Gemma,
// Gemma 4 and BitNet branches.
//
//===----------------------------------------------------------------------===//

#ifndef HESPER_LIB_MODELS_MODELLOADER_H
#define HESPER_LIB_MODELS_MODELLOADER_H

#include "Hesper/Models/Model.h"

#include <cstdint>
#include <string>
#include <vector>

namespace hesper::models::loader {

/// Reads and checks one file's hyperparameters and tensors.
class Loader {
public:
  Loader(const rt::GgufFile &file, LlamaHParams &hp) : file(file), hp(hp) {}

  rt::Status fail(const std::string &what) {
    return rt::Status::error(file.path() + ": " + what);
  }

  /// `{arch}.key` as a positive integer; `fallback` when absent (0: the key
  /// is required).
  rt::Status integer(const std::string &key, int64_t &out, int64_t fallback);

  /// `{arch}.key` as a positive number; `out` keeps its default when the
  /// key is absent.
  rt::Status real(const std::string &key, double &out);

  /// A table rows are looked up from by token id (circuit.gather): a type
  /// the gather decodes, and element indices that fit its 32-bit lanes.
  rt::Status lookupTable(const std::string &name);

  /// Checks that tensor `name` exists with ggml dims `dims` (row length
  /// first) and, for a matrix, a type the kernels read.
  rt::Status expect(const std::string &name, std::vector<int64_t> dims);

  /// Reads the hyperparameters into `hp` and checks the tensors.
  rt::Status run();

private:
  /// `{arch}.key` as a positive integer, or, when it is an array of one per
  /// layer, `out` = the first and `perLayerValues` = all of them.
  rt::Status perLayer(const std::string &key, int64_t &out, int64_t fallback,
                      std::vector<int64_t> &perLayerValues);

  /// A bool, or an integer standing for one.
  static bool isFlag(const rt::GgufValue &v) {
    return v.type == rt::GgufType::Bool || v.isInteger();
  }

  /// expert_count, expert_used_count, expert_feed_forward_length and
  /// expert_weights_scale of a mixture-of-experts file (qwen3moe, llama).
  rt::Status experts();
  /// Checks expert_used_count and expert_count once both are read.
  rt::Status expertCounts();

  /// gemma4's own hyperparameters: sliding-window layers with their own
  /// head size, rotary size and RoPE base; layers sharing an earlier
  /// layer's KV cache; per-layer embeddings; the MoE variant's expert
  /// counts and width.
  rt::Status gemma4();

  /// The tensors gemma4 needs, with each layer's shapes.
  rt::Status gemma4Tensors();

  /// bitnet.hidden_activation: SiLU when absent (what llama.cpp's bitnet
  /// graph was written for), ReLU² for "relu2" (bitnet-b1.58-2B-4T, which
  /// needs it; later llama.cpp versions and Microsoft's fork read it).
  rt::Status bitnetActivation();

  /// gemma, gemma2 or gemma3 (gemma4 has branches of its own).
  bool isGemma() const {
    return hp.arch == "gemma" || hp.arch == "gemma2" || hp.arch == "gemma3";
  }

  /// `{arch}.key` as a non-negative integer, or `fallback` when absent.
  rt::Status count(const std::string &key, int64_t &out, int64_t fallback);

  /// What the Gemma versions add, as llama.cpp's loaders set it: the
  /// embedding scale, the attention scale of the 27B models, soft-capping
  /// (gemma2), and sliding-window layers with their own RoPE base.
  rt::Status gemma();

  /// `{arch}.key` as a soft-cap: a positive number, or 0 for none; `out`
  /// keeps its default when the key is absent.
  rt::Status softcap(const std::string &key, double &out);

  const rt::GgufFile &file;
  LlamaHParams &hp;
};

} // namespace hesper::models::loader

#endif // HESPER_LIB_MODELS_MODELLOADER_H
