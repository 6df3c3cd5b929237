//===- hesper-bundle-run.cpp - Run a compiled bundle without MLIR ---------===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//
//
// The runtime-only half of ahead-of-time use: hesper-run compiles a graph
// and saves it with --save-bundle (on a machine with the toolchain); this
// tool, which links only the runtime, loads the bundle on a machine with a
// GPU driver, binds .npy files to the program's arguments by name, runs the
// recorded step and writes the results.
//
//   hesper-bundle-run prog.hbundle --input x=x.npy --output 0=y.npy
//       [--device N] [--repeat N] [--validation]
//
// The bundle records buffer sizes, not element types: an input must have
// exactly the argument's size in bytes; results are written as u8 .npy
// unless --output-dtype says otherwise.
//
//===----------------------------------------------------------------------===//

#include "hesper/runtime/Npy.h"
#include "hesper/runtime/Program.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>

using namespace hesper::rt;

static int fail(const std::string &message) {
  std::fprintf(stderr, "error: %s\n", message.c_str());
  return 1;
}

static bool parseDType(const std::string &s, DType &t) {
  for (DType d : {DType::F32, DType::F16, DType::I32, DType::U8})
    if (s == dtypeName(d)) {
      t = d;
      return true;
    }
  return false;
}

int main(int argc, char **argv) {
  std::string bundlePath;
  std::map<std::string, std::string> inputs, outputs;
  DeviceOptions deviceOptions;
  unsigned repeat = 1;
  DType outputType = DType::F32;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    auto value = [&](const char *flag) -> const char * {
      size_t n = std::strlen(flag);
      if (arg.compare(0, n, flag) == 0 && arg.size() > n && arg[n] == '=')
        return argv[i] + n + 1;
      if (arg == flag && i + 1 < argc)
        return argv[++i];
      return nullptr;
    };
    auto binding = [&](const char *v, std::map<std::string, std::string> &m) {
      std::string b = v;
      size_t eq = b.find('=');
      if (eq == std::string::npos || eq == 0 || eq + 1 == b.size())
        return false;
      m[b.substr(0, eq)] = b.substr(eq + 1);
      return true;
    };
    if (const char *v = value("--input")) {
      if (!binding(v, inputs))
        return fail("expects --input NAME=file.npy, got '" + std::string(v) +
                    "'");
    } else if (const char *v = value("--output")) {
      if (!binding(v, outputs))
        return fail("expects --output N=file.npy, got '" + std::string(v) +
                    "'");
    } else if (const char *v = value("--output-dtype")) {
      if (!parseDType(v, outputType))
        return fail("--output-dtype takes f32, f16, i32 or u8");
    } else if (const char *v = value("--device")) {
      deviceOptions.index = std::atoi(v);
    } else if (const char *v = value("--repeat")) {
      repeat = static_cast<unsigned>(std::max(1, std::atoi(v)));
    } else if (arg == "--validation") {
      deviceOptions.validation = true;
    } else if (arg == "--help" || arg == "-h") {
      std::printf("usage: hesper-bundle-run BUNDLE [--input NAME=file.npy]... "
                  "[--output N=file.npy]... [--output-dtype f32|f16|i32|u8] "
                  "[--device N] [--repeat N] [--validation]\n");
      return 0;
    } else if (!arg.empty() && arg[0] != '-' && bundlePath.empty()) {
      bundlePath = arg;
    } else {
      return fail("unknown argument '" + arg + "'");
    }
  }
  if (bundlePath.empty())
    return fail("expects a bundle file (see --help)");

  auto program = loadBundle(bundlePath);
  if (!program)
    return fail(program.status().message());
  auto device = openDevice(program->backend, deviceOptions);
  if (!device)
    return fail(device.status().message());
  auto runner = ProgramRunner::create(**device, *program, /*timing=*/true);
  if (!runner)
    return fail(runner.status().message());

  for (uint32_t i = 0; i < program->numArguments; ++i) {
    const ProgramBuffer &b = program->buffers[i];
    auto it = inputs.find(b.name);
    if (it == inputs.end())
      return fail("argument '" + b.name + "' has no --input");
    auto array = readNpy(it->second);
    if (!array)
      return fail("--input " + b.name + ": " + array.status().message());
    std::vector<uint8_t> bytes = array->data;
    // Quantized arguments are padded to whole words on the device.
    if (bytes.size() <= b.bytes && b.bytes - bytes.size() < 4)
      bytes.resize(b.bytes, 0);
    if (Status s = (*runner)->setArgument(i, bytes.data(), bytes.size()); !s)
      return fail("--input " + b.name + ": " + s.message());
    inputs.erase(it);
  }
  if (!inputs.empty())
    return fail("--input " + inputs.begin()->first +
                ": the program has no argument of that name");

  double best = 1e300;
  for (unsigned r = 0; r < repeat; ++r) {
    auto start = std::chrono::steady_clock::now();
    if (Status s = (*runner)->run(); !s)
      return fail(s.message());
    double us = std::chrono::duration<double, std::micro>(
                    std::chrono::steady_clock::now() - start)
                    .count();
    best = std::min(best, us);
  }
  std::printf("device: %s (%s)\nprogram %s: %zu launches; step: best %.1f us "
              "of %u runs\n",
              (*device)->info().name.c_str(),
              backendName((*device)->info().backend), program->name.c_str(),
              program->launches.size(), best, repeat);

  for (auto &[name, path] : outputs) {
    char *end = nullptr;
    unsigned long index = std::strtoul(name.c_str(), &end, 10);
    if (name.empty() || *end != '\0' || index >= program->results.size())
      return fail("--output " + name + ": the program has " +
                  std::to_string(program->results.size()) + " results");
    std::vector<uint8_t> bytes;
    if (Status s = (*runner)->readResult(index, bytes); !s)
      return fail(s.message());
    NpyArray array;
    array.dtype = outputType;
    array.shape = {static_cast<int64_t>(bytes.size() / dtypeBytes(outputType))};
    bytes.resize(array.shape[0] * dtypeBytes(outputType));
    array.data = std::move(bytes);
    if (Status s = writeNpy(path, array); !s)
      return fail(s.message());
  }
  runner->reset();
  device->reset();
  if (uint64_t messages = validationMessageCount())
    return fail("the Vulkan validation layer reported " +
                std::to_string(messages) + " message(s)");
  return 0;
}
