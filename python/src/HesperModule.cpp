//===- HesperModule.cpp - The Python module's C++ half --------------------===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//
//
// hesper._hesper: bindings over the model library, nothing reimplemented.
// python/hesper/__init__.py builds llama-cpp-python's shapes (Llama,
// completion dicts, streams) on these classes:
//
//   Model       a loaded GGUF file: metadata, the tokenizer, the chat
//               template's family
//   Session     a model compiled for a device: eval (prompt chunks or one
//               token), the last logits as a NumPy array, reset, rewind
//   Generator   one generation over a session: next() samples a token with
//               hesper-run's sampler chain and feeds it, in C++
//
// The GIL is released while compiling and while a step runs; errors are
// Python exceptions with the library's message (FileNotFoundError,
// ValueError, RuntimeError).
//
//===----------------------------------------------------------------------===//

#include "CompilerModule.h"

#include "Hesper/Execution/GraphRun.h"
#include "Hesper/Models/Chat.h"
#include "Hesper/Models/Model.h"
#include "Hesper/Models/Sampler.h"
#include "Hesper/Models/Session.h"

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <filesystem>

namespace py = pybind11;
using namespace hesper;
using namespace hesper::models;

namespace {

[[noreturn]] void raise(const rt::Status &status) {
  throw std::runtime_error(status.message());
}

/// The backend of a device name ("auto": none).
std::optional<rt::Backend> backendOf(const std::string &name) {
  if (name == "auto")
    return std::nullopt;
  if (name == "cpu")
    return rt::Backend::Cpu;
  if (name == "vulkan")
    return rt::Backend::Vulkan;
  if (name == "cuda")
    return rt::Backend::Cuda;
  throw py::value_error("device must be 'auto', 'cpu', 'vulkan' or 'cuda', "
                        "got '" + name + "'");
}

/// A loaded model; sessions keep it alive.
struct PyModel {
  std::unique_ptr<Model> model;
  std::string path;

  explicit PyModel(const std::string &path) : path(path) {
    if (!std::filesystem::exists(path)) {
      PyErr_SetString(PyExc_FileNotFoundError,
                      ("no such model file: " + path).c_str());
      throw py::error_already_set();
    }
    rt::Result<std::unique_ptr<Model>> loaded = rt::Status::error("");
    {
      py::gil_scoped_release release;
      loaded = Model::load(path);
    }
    if (!loaded)
      throw py::value_error(loaded.status().message());
    model = std::move(*loaded);
  }

  const Tokenizer &tokenizer() const {
    if (!model->tokenizer())
      throw py::value_error(path + " has no tokenizer");
    return *model->tokenizer();
  }
};

/// A model compiled for one device.
struct PySession {
  std::shared_ptr<PyModel> model;
  std::unique_ptr<rt::Device> device;
  std::unique_ptr<Session> session;
  std::vector<float> logits; ///< of the last token fed

  PySession(std::shared_ptr<PyModel> m, const std::string &deviceName,
            int64_t nCtx, int64_t nBatch, unsigned threads, bool cache,
            const std::string &typeK, const std::string &typeV,
            std::optional<bool> quantizeActivations)
      : model(std::move(m)) {
    CacheTypes cacheTypes;
    if (std::string e = parseCacheTypes(typeK, typeV, cacheTypes); !e.empty())
      throw py::value_error("type_k/type_v: " + e.substr(e.find(": ") + 2));
    if (nCtx < 0)
      throw py::value_error("n_ctx must not be negative, got " +
                            std::to_string(nCtx));
    if (nBatch < 0)
      throw py::value_error("n_batch must not be negative, got " +
                            std::to_string(nBatch));
    exec::DeviceModeOptions opts;
    opts.backend = backendOf(deviceName);
    opts.threads = threads;
    py::gil_scoped_release release;
    if (deviceName != "interp") {
      device = exec::openRequestedDevice(opts);
      if (!device && opts.backend) {
        py::gil_scoped_acquire acquire;
        throw std::runtime_error("cannot open a " + deviceName + " device");
      }
    }
    SessionOptions options;
    options.contextSize = nCtx;
    options.batchSize = nBatch;
    options.allLogits = false;
    options.programCache = cache;
    options.cacheTypes = cacheTypes;
    options.quantizedActivations = quantizeActivations;
    auto created = Session::create(*model->model, device.get(), options);
    if (!created) {
      py::gil_scoped_acquire acquire;
      raise(created.status());
    }
    session = std::move(*created);
  }

  /// Feeds `ids` from the current position; keeps the last one's logits.
  void eval(const std::vector<int32_t> &ids) {
    if (ids.empty())
      return;
    const int64_t vocab = model->model->hparams().vocab;
    for (int32_t id : ids)
      if (id < 0 || id >= vocab)
        throw py::value_error("token id " + std::to_string(id) +
                              " is outside the vocabulary of " +
                              std::to_string(vocab));
    if (session->position() + int64_t(ids.size()) > session->contextSize())
      throw py::value_error(
          "the tokens do not fit the context: " +
          std::to_string(session->position()) + " + " +
          std::to_string(ids.size()) + " > " +
          std::to_string(session->contextSize()) + " (n_ctx)");
    rt::Status status;
    {
      py::gil_scoped_release release;
      std::vector<std::vector<float>> rows;
      status = session->feedMany(ids, &rows, /*allRows=*/false);
      if (status)
        logits = std::move(rows.back());
    }
    if (!status)
      raise(status);
  }

  /// The last logits as a NumPy array that shares this session's storage
  /// (valid until the next eval; copy to keep).
  py::array_t<float> lastLogits(py::object self) {
    if (logits.empty())
      return py::array_t<float>(0);
    return py::array_t<float>({py::ssize_t(logits.size())}, {sizeof(float)},
                              logits.data(), self);
  }
};

/// One generation: sample with hesper-run's sampler chain, feed, repeat.
struct PyGenerator {
  std::shared_ptr<PySession> session;
  Sampler sampler;
  std::vector<int32_t> history;
  bool stopAtEnd = true;

  PyGenerator(std::shared_ptr<PySession> s, const SamplerParams &params,
              std::vector<int32_t> history, bool stopAtEnd)
      : session(std::move(s)), sampler(params), history(std::move(history)),
        stopAtEnd(stopAtEnd) {}

  /// Samples the next token from the session's last logits. Returns it and
  /// whether it ends generation (an end-of-generation token).
  std::pair<int32_t, bool> sample() {
    if (session->logits.empty())
      throw std::runtime_error("nothing evaluated yet: eval a prompt first");
    int32_t id;
    {
      py::gil_scoped_release release;
      id = sampler.sample(session->logits, history);
    }
    history.push_back(id);
    const Tokenizer *tok = session->model->model->tokenizer();
    return {id, stopAtEnd && tok && tok->isEog(id)};
  }
};

SamplerParams samplerParams(float temperature, int32_t topK, float topP,
                            float minP, float repeatPenalty,
                            int32_t repeatLastN, int64_t seed) {
  SamplerParams p;
  p.temperature = temperature;
  p.topK = topK;
  p.topP = topP;
  p.minP = minP;
  p.repeatPenalty = repeatPenalty;
  p.repeatLastN = repeatLastN;
  p.seed = seed < 0 ? std::random_device()() : uint32_t(seed);
  if (auto bad = checkSamplerParams(p))
    throw py::value_error(std::string(bad->param) + ": " + bad->message);
  return p;
}

} // namespace

PYBIND11_MODULE(_hesper, m) {
  m.doc() = "Hesper's C++ libraries (see the `hesper` package)";
  hesper::python::bindCompiler(m);

  m.def(
      "devices",
      [] {
        py::list out;
        for (rt::Backend b :
             {rt::Backend::Vulkan, rt::Backend::Cuda, rt::Backend::Cpu}) {
          auto devices = rt::listDevices(b);
          if (!devices)
            continue;
          for (size_t i = 0; i < devices->size(); ++i) {
            const rt::DeviceInfo &d = (*devices)[i];
            py::dict info;
            info["backend"] = rt::backendName(b);
            info["index"] = i;
            info["name"] = d.name;
            info["type"] = rt::deviceTypeName(d.type);
            info["subgroup_size"] = d.subgroupSize;
            info["shared_memory_bytes"] = d.maxSharedMemoryBytes;
            info["threads"] = d.threads;
            out.append(info);
          }
        }
        return out;
      },
      "The devices the runtime finds (what hesper-run --list-devices "
      "prints), as dicts: backend, index, name, type, subgroup_size, "
      "shared_memory_bytes, threads.");

  m.def("reusable_prefix", &reusablePrefix, py::arg("cached"),
        py::arg("prompt"),
        "How many cached tokens a new prompt keeps (Session.h): the common "
        "prefix, never the whole prompt.");

  py::class_<PyModel, std::shared_ptr<PyModel>>(
      m, "Model", "A GGUF model file, loaded (mapped, checked) but not compiled.")
      .def(py::init<const std::string &>(), py::arg("path"))
      .def_readonly("path", &PyModel::path)
      .def_property_readonly(
          "n_vocab", [](const PyModel &m) { return m.model->hparams().vocab; })
      .def_property_readonly(
          "n_ctx_train",
          [](const PyModel &m) { return m.model->hparams().contextLength; })
      .def_property_readonly(
          "arch", [](const PyModel &m) { return m.model->hparams().arch; })
      .def_property_readonly(
          "n_params",
          [](const PyModel &m) { return m.model->hparams().parameterCount(); })
      .def_property_readonly(
          "metadata",
          [](const PyModel &m) {
            py::dict out;
            for (const auto &[key, value] : m.model->file().metadata()) {
              if (value.type == rt::GgufType::String)
                out[py::str(key)] = value.str;
              else if (value.type == rt::GgufType::Bool)
                out[py::str(key)] = value.i ? "true" : "false";
              else if (value.isInteger())
                out[py::str(key)] = std::to_string(value.i);
              else if (value.isFloat())
                out[py::str(key)] = std::to_string(value.f);
            }
            return out;
          },
          "The file's metadata whose values are strings or numbers, as "
          "strings (llama-cpp-python's Llama.metadata).")
      .def("has_tokenizer",
           [](const PyModel &m) { return m.model->tokenizer() != nullptr; })
      .def(
          "tokenize",
          [](const PyModel &m, py::bytes text, bool addBos, bool special) {
            std::string s = text;
            return m.tokenizer().encode(s, addBos, special);
          },
          py::arg("text"), py::arg("add_bos") = true,
          py::arg("special") = false)
      .def(
          "detokenize",
          [](const PyModel &m, const std::vector<int32_t> &ids) {
            const int32_t vocab = int32_t(m.model->hparams().vocab);
            std::string out;
            for (int32_t id : ids) {
              if (id < 0 || id >= vocab)
                throw py::value_error("token id " + std::to_string(id) +
                                      " is outside the vocabulary of " +
                                      std::to_string(vocab));
              out += m.tokenizer().decodeToken(id);
            }
            return py::bytes(out);
          },
          py::arg("tokens"), "The bytes of the tokens' pieces.")
      .def("token_is_eog",
           [](const PyModel &m, int32_t id) {
             return m.model->tokenizer() && m.model->tokenizer()->isEog(id);
           })
      .def(
          "chat_format",
          [](const PyModel &m, const std::string &name) -> py::object {
            std::optional<ChatFormat> format;
            if (!name.empty()) {
              format = chatFormatByName(name);
              if (!format)
                throw py::value_error("unknown chat template '" + name +
                                      "' (" + chatFormatNames() + ")");
            } else if (auto text = m.model->file().getString(
                           "tokenizer.chat_template")) {
              format = detectChatFormat(*text);
            }
            if (!format)
              return py::none();
            return py::str(chatFormatName(*format));
          },
          py::arg("name") = "",
          "The chat template family: `name` checked, or the file's "
          "recognized; None when there is none.")
      .def(
          "format_chat",
          [](const PyModel &m, const std::string &format,
             const std::vector<std::pair<std::string, std::string>> &msgs) {
            auto f = chatFormatByName(format);
            if (!f)
              throw py::value_error("unknown chat template '" + format + "'");
            std::vector<ChatMessage> messages;
            for (const auto &[role, content] : msgs) {
              if (role != "system" && role != "user" && role != "assistant")
                throw py::value_error("a message's role must be 'system', "
                                      "'user' or 'assistant', not '" +
                                      role + "'");
              messages.push_back({role, content});
            }
            return formatChat(*f, messages, true);
          });

  py::class_<PySession, std::shared_ptr<PySession>>(
      m, "Session", "A model compiled for one device, with its KV cache.")
      .def(py::init<std::shared_ptr<PyModel>, const std::string &, int64_t,
                    int64_t, unsigned, bool, const std::string &,
                    const std::string &, std::optional<bool>>(),
           py::arg("model"), py::arg("device") = "auto", py::arg("n_ctx") = 0,
           py::arg("n_batch") = 0, py::arg("n_threads") = 0,
           py::arg("program_cache") = true, py::arg("type_k") = "f16",
           py::arg("type_v") = "f16",
           py::arg("quantize_activations") = std::optional<bool>())
      .def("eval", &PySession::eval, py::arg("tokens"),
           "Feeds the tokens from the current position (in prompt chunks).")
      .def("logits", &PySession::lastLogits, py::arg("self_ref"))
      .def("reset", [](PySession &s) {
        s.session->reset();
        s.logits.clear();
      })
      .def("rewind", [](PySession &s, int64_t p) { s.session->rewind(p); })
      .def_property_readonly("n_ctx",
                             [](const PySession &s) {
                               return s.session->contextSize();
                             })
      .def_property_readonly(
          "position", [](const PySession &s) { return s.session->position(); })
      .def_property_readonly("device", [](const PySession &s) {
        return s.device ? s.device->info().name + " (" +
                              rt::backendName(s.device->info().backend) + ")"
                        : std::string("reference interpreter");
      });

  py::class_<PyGenerator>(m, "Generator",
                          "Samples tokens from a session's logits.")
      .def(py::init([](std::shared_ptr<PySession> s, float temperature,
                       int32_t topK, float topP, float minP,
                       float repeatPenalty, int32_t repeatLastN, int64_t seed,
                       std::vector<int32_t> history, bool stopAtEnd) {
             return PyGenerator(std::move(s),
                                samplerParams(temperature, topK, topP, minP,
                                              repeatPenalty, repeatLastN,
                                              seed),
                                std::move(history), stopAtEnd);
           }),
           py::arg("session"), py::arg("temperature") = 0.8f,
           py::arg("top_k") = 40, py::arg("top_p") = 0.95f,
           py::arg("min_p") = 0.05f, py::arg("repeat_penalty") = 1.0f,
           py::arg("repeat_last_n") = 64, py::arg("seed") = -1,
           py::arg("history") = std::vector<int32_t>(),
           py::arg("stop_at_eog") = true)
      .def("sample", &PyGenerator::sample,
           "The next token from the session's last logits, and whether it "
           "ends generation.");
}
