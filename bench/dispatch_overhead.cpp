//===- dispatch_overhead.cpp - Replay cost of a recorded step -------------===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//
//
// hesper-bench-dispatch: what it costs the host to replay a recorded step of
// K tiny dispatches through Hesper's CommandList, against a hand-written
// Vulkan loop doing the same work directly.
//
//   hesper  one CommandList recorded once with K dispatches of the `tick`
//           kernel (one workgroup of one invocation each), then submit()
//           R x M times.
//   raw     its own instance, device, pipeline and one command buffer,
//           recorded with the same commands Hesper records (the same
//           barriers before, between and after the dispatches, a pipeline
//           and descriptor-set bind per dispatch), then vkQueueSubmit with a
//           fence, vkWaitForFences and vkResetFences R x M times.
//
// Both run in this process on the same physical device. Each of R rounds
// submits M steps per side, the sides taking turns every B steps (and the
// first side alternating between rounds), so that a busy machine slows both
// alike. Every submission is timed on its own: wall time (steady_clock, from
// the submission to the fence) and the submitting thread's CPU time
// (CLOCK_THREAD_CPUTIME_ID: the host work of recording-free replay, without
// the waiting). The figures are medians over all rounds, with the 10th
// percentiles and the per-round ratios as a measure of the noise. The kernel
// increments a counter, so after the run each side's counter must equal the
// number of dispatches it submitted, which is checked.
//
// The benchmark never fails on time: it exits non-zero only on errors (no
// device, a Vulkan call failing, a wrong counter).
//
// The hand-written Vulkan side is in dispatch_raw_vulkan.cpp; this file holds
// the options, the timing and the measurement.
//
//===----------------------------------------------------------------------===//

#include "hesper/runtime/Runtime.h"

#include "dispatch_raw_vulkan.h"

#include <sched.h>
#include <time.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

using namespace hesper::rt;
using namespace hesper::bench;

namespace {

//===----------------------------------------------------------------------===//
// Options
//===----------------------------------------------------------------------===//

struct Options {
  /// Dispatches per step; one measurement per entry.
  std::vector<uint32_t> dispatchCounts = {1, 32};
  /// Timed submissions per round and per side.
  uint32_t steps = 200;
  /// Rounds; each side runs `steps` submissions per round.
  uint32_t rounds = 10;
  /// Steps a side runs before the other side takes over, within a round.
  uint32_t block = 10;
  /// Untimed submissions per side before the first round.
  uint32_t warmup = 20;
  /// Index of the Vulkan device (as in listDevices); -1 for Hesper's pick.
  int device = -1;
  /// The Khronos validation layer on both sides.
  bool validation = false;
  /// A second raw loop in Hesper's place (an A/A run: the noise floor).
  bool control = false;
  /// CPU to pin the process to before any device is opened (-1: none).
  int pin = -1;
  std::string kernelPath = HESPER_BENCH_KERNEL_DIR "/tick.spv";
};

void printUsage(const char *argv0) {
  std::printf(
      "usage: %s [options]\n"
      "Host cost of replaying K tiny dispatches: Hesper's CommandList against\n"
      "a hand-written Vulkan submit loop on the same device.\n"
      "  --dispatches=K1,K2,..  dispatches per step (default 1,32)\n"
      "  --steps=M              timed submissions per round (default 200)\n"
      "  --rounds=R             rounds, alternating which side goes first\n"
      "                         (default 10)\n"
      "  --block=B              steps a side runs before the other takes\n"
      "                         over within a round (default 10)\n"
      "  --warmup=W             untimed submissions first (default 20)\n"
      "  --device=I             Vulkan device index (default: Hesper's pick)\n"
      "  --validation           Khronos validation layer on both sides\n"
      "  --control              a second raw loop (own device) in Hesper's\n"
      "                         place: what two identical sides measure\n"
      "  --pin=CPU              run the process, and the driver threads it\n"
      "                         starts, on one CPU (steadier on lavapipe)\n"
      "  --kernel=PATH          the assembled tick kernel (default %s)\n",
      argv0, HESPER_BENCH_KERNEL_DIR "/tick.spv");
}

/// Parses a positive 32-bit number; false when `text` is not one.
bool parseCount(const char *text, uint32_t &out) {
  char *end = nullptr;
  unsigned long long v = std::strtoull(text, &end, 10);
  if (!*text || *end || v == 0 || v > 0xffffffffull)
    return false;
  out = static_cast<uint32_t>(v);
  return true;
}

/// Parses the command line; on error prints why and returns false.
bool parseOptions(int argc, char **argv, Options &opts, bool &help) {
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    auto value = [&](const char *flag) -> const char * {
      size_t n = std::strlen(flag);
      if (arg.compare(0, n, flag) == 0 && arg.size() > n && arg[n] == '=')
        return argv[i] + n + 1;
      return nullptr;
    };
    const char *v = nullptr;
    if (arg == "--help" || arg == "-h") {
      help = true;
    } else if (arg == "--validation") {
      opts.validation = true;
    } else if (arg == "--control") {
      opts.control = true;
    } else if ((v = value("--steps"))) {
      if (!parseCount(v, opts.steps))
        return std::fprintf(stderr, "error: bad --steps '%s'\n", v), false;
    } else if ((v = value("--rounds"))) {
      if (!parseCount(v, opts.rounds))
        return std::fprintf(stderr, "error: bad --rounds '%s'\n", v), false;
    } else if ((v = value("--block"))) {
      if (!parseCount(v, opts.block))
        return std::fprintf(stderr, "error: bad --block '%s'\n", v), false;
    } else if ((v = value("--warmup"))) {
      if (!parseCount(v, opts.warmup))
        return std::fprintf(stderr, "error: bad --warmup '%s'\n", v), false;
    } else if ((v = value("--device"))) {
      uint32_t index = 0;
      if (std::strcmp(v, "0") != 0 && !parseCount(v, index))
        return std::fprintf(stderr, "error: bad --device '%s'\n", v), false;
      opts.device = static_cast<int>(index);
    } else if ((v = value("--pin"))) {
      uint32_t cpu = 0;
      if (std::strcmp(v, "0") != 0 && !parseCount(v, cpu))
        return std::fprintf(stderr, "error: bad --pin '%s'\n", v), false;
      opts.pin = static_cast<int>(cpu);
    } else if ((v = value("--kernel"))) {
      opts.kernelPath = v;
    } else if ((v = value("--dispatches"))) {
      opts.dispatchCounts.clear();
      std::string list = v;
      size_t start = 0;
      while (start <= list.size()) {
        size_t comma = list.find(',', start);
        if (comma == std::string::npos)
          comma = list.size();
        std::string item = list.substr(start, comma - start);
        uint32_t k = 0;
        if (!parseCount(item.c_str(), k))
          return std::fprintf(stderr, "error: bad --dispatches '%s'\n", v),
                 false;
        opts.dispatchCounts.push_back(k);
        start = comma + 1;
      }
    } else {
      std::fprintf(stderr, "error: unknown argument '%s' (see --help)\n",
                   argv[i]);
      return false;
    }
  }
  return true;
}

//===----------------------------------------------------------------------===//
// Timing
//===----------------------------------------------------------------------===//

using Clock = std::chrono::steady_clock;

double microsecondsSince(Clock::time_point start) {
  return std::chrono::duration<double, std::micro>(Clock::now() - start)
      .count();
}

/// CPU time consumed so far by the calling thread, in microseconds.
double threadCpuMicroseconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

double median(std::vector<double> values) {
  if (values.empty())
    return 0;
  size_t mid = values.size() / 2;
  std::nth_element(values.begin(), values.begin() + mid, values.end());
  double upper = values[mid];
  if (values.size() % 2)
    return upper;
  double lower = *std::max_element(values.begin(), values.begin() + mid);
  return (lower + upper) / 2;
}

/// The q-quantile (0 <= q <= 1) by nearest rank.
double quantile(std::vector<double> values, double q) {
  if (values.empty())
    return 0;
  size_t rank = static_cast<size_t>(q * (values.size() - 1) + 0.5);
  std::nth_element(values.begin(), values.begin() + rank, values.end());
  return values[rank];
}

/// Reads a whole binary file; an error when it cannot be read or is empty.
Result<std::vector<uint8_t>> readFile(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return Status::error(path + ": cannot open (build the kernels, or pass "
                                "--kernel=PATH)");
  std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)),
                             std::istreambuf_iterator<char>());
  if (bytes.empty() || bytes.size() % 4)
    return Status::error(path + ": not a SPIR-V binary");
  return bytes;
}

//===----------------------------------------------------------------------===//
// The measurement
//===----------------------------------------------------------------------===//

/// Per-submission times of one side.
struct Samples {
  std::vector<double> wallUs; ///< submit to fence, steady_clock
  std::vector<double> cpuUs;  ///< CPU time of the submitting thread

  void append(const Samples &other) {
    wallUs.insert(wallUs.end(), other.wallUs.begin(), other.wallUs.end());
    cpuUs.insert(cpuUs.end(), other.cpuUs.begin(), other.cpuUs.end());
  }
};

/// What one configuration (one K) measured.
struct Measurement {
  uint32_t dispatches = 0;
  /// The side under test (Hesper, or raw2 in a control run) and the raw loop.
  Samples hesper, raw;
  /// Per round: the median tested step over the median raw step of that
  /// round (wall time; a paired comparison under the same machine load).
  std::vector<double> roundRatios;
};

/// Runs `count` submissions of `submit`, appending each one's times to
/// `samples` when `samples` is given.
template <typename SubmitFn>
Status runSteps(SubmitFn &&submit, uint32_t count, Samples *samples) {
  for (uint32_t i = 0; i < count; ++i) {
    double cpuStart = threadCpuMicroseconds();
    Clock::time_point start = Clock::now();
    Status s = submit();
    double wall = microsecondsSince(start);
    double cpu = threadCpuMicroseconds() - cpuStart;
    if (!s)
      return s;
    if (samples) {
      samples->wallUs.push_back(wall);
      samples->cpuUs.push_back(cpu);
    }
  }
  return Status();
}

/// One side of the comparison: a step of K dispatches that can be submitted
/// again and again, and the counter its dispatches increment.
class Side {
public:
  virtual ~Side() = default;
  virtual const char *name() const = 0;
  /// Zeroes the counter and records a step of `dispatches` dispatches.
  virtual Status prepare(uint32_t dispatches) = 0;
  /// Submits the recorded step and waits for it.
  virtual Status submit() = 0;
  virtual Result<uint32_t> readCounter() = 0;
};

/// Hesper: a CommandList on a HAL device.
class HesperSide final : public Side {
public:
  HesperSide(Device &device, Kernel &kernel, Buffer &counter)
      : device(device), kernel(kernel), counter(counter) {}
  const char *name() const override { return "hesper"; }

  Status prepare(uint32_t dispatches) override {
    list.reset();
    const uint32_t zero = 0;
    if (Status s = device.upload(counter, &zero, 4); !s)
      return s;
    Result<std::unique_ptr<CommandList>> created = device.createCommandList();
    if (!created)
      return created.status();
    list = std::move(*created);
    std::vector<Dispatch> step(dispatches);
    for (Dispatch &d : step) {
      d.kernel = &kernel;
      d.bindings = {&counter};
    }
    return list->record(step);
  }

  Status submit() override { return list->submit(); }

  Result<uint32_t> readCounter() override {
    uint32_t value = 0;
    if (Status s = device.download(counter, &value, 4); !s)
      return s;
    return value;
  }

private:
  Device &device;
  Kernel &kernel;
  Buffer &counter;
  std::unique_ptr<CommandList> list;
};

/// The hand-written loop on its own Vulkan device.
class RawSide final : public Side {
public:
  RawSide(RawVulkan &vk, const char *label) : vk(vk), label(label) {}
  const char *name() const override { return label; }

  Status prepare(uint32_t dispatches) override {
    step.reset();
    if (Status s = vk.resetCounter(); !s)
      return s;
    step = std::make_unique<RawStep>(vk);
    return step->record(dispatches);
  }

  Status submit() override { return step->submit(); }
  Result<uint32_t> readCounter() override { return vk.readCounter(); }

private:
  RawVulkan &vk;
  const char *label;
  std::unique_ptr<RawStep> step;
};

/// Measures one K: records both sides, warms them up, runs the rounds and
/// checks the counters. `a` is the side under test (Hesper), `b` the
/// baseline.
Status measure(Side &a, Side &b, const Options &opts, uint32_t k,
               Measurement &m) {
  m.dispatches = k;
  for (Side *side : {&a, &b}) {
    if (Status s = side->prepare(k); !s)
      return Status::error(std::string(side->name()) + ": " + s.message());
    if (Status s =
            runSteps([&] { return side->submit(); }, opts.warmup, nullptr);
        !s)
      return s;
  }
  for (uint32_t round = 0; round < opts.rounds; ++round) {
    // Blocks of `block` steps, the sides taking turns, the first side
    // alternating from round to round.
    bool aNext = round % 2 == 0;
    Samples aRound, bRound;
    uint32_t aLeft = opts.steps, bLeft = opts.steps;
    while (aLeft + bLeft > 0) {
      bool useA = aNext ? aLeft > 0 : bLeft == 0;
      Side &side = useA ? a : b;
      uint32_t &left = useA ? aLeft : bLeft;
      uint32_t n = std::min(left, opts.block);
      if (Status s = runSteps([&] { return side.submit(); }, n,
                              useA ? &aRound : &bRound);
          !s)
        return s;
      left -= n;
      aNext = !useA;
    }
    m.roundRatios.push_back(median(aRound.wallUs) / median(bRound.wallUs));
    m.hesper.append(aRound);
    m.raw.append(bRound);
  }

  // Every dispatch incremented its side's counter once.
  uint64_t expected =
      uint64_t(k) * (opts.warmup + uint64_t(opts.rounds) * opts.steps);
  for (Side *side : {&a, &b}) {
    Result<uint32_t> got = side->readCounter();
    if (!got)
      return got.status();
    if (*got != expected)
      return Status::error(std::string(side->name()) + " counter is " +
                           std::to_string(*got) + ", expected " +
                           std::to_string(expected));
  }
  return Status();
}

int fail(const Status &s) {
  std::fprintf(stderr, "error: %s\n", s.message().c_str());
  return 1;
}

} // namespace

int main(int argc, char **argv) {
  Options opts;
  bool help = false;
  if (!parseOptions(argc, argv, opts, help))
    return 2;
  if (help) {
    printUsage(argv[0]);
    return 0;
  }

  Result<std::vector<uint8_t>> spirv = readFile(opts.kernelPath);
  if (!spirv)
    return fail(spirv.status());

  // Before any device exists, so that the driver's threads inherit it.
  if (opts.pin >= CPU_SETSIZE)
    return fail(
        Status::error("--pin=" + std::to_string(opts.pin) + ": no such CPU"));
  if (opts.pin >= 0) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(opts.pin, &set);
    if (sched_setaffinity(0, sizeof(set), &set) != 0)
      return fail(Status::error("--pin=" + std::to_string(opts.pin) + ": " +
                                std::strerror(errno)));
  }

  DeviceOptions deviceOpts;
  deviceOpts.index = opts.device;
  deviceOpts.validation = opts.validation;
  Result<std::unique_ptr<Device>> device =
      openDevice(Backend::Vulkan, deviceOpts);
  if (!device)
    return fail(device.status());
  const DeviceInfo &info = (*device)->info();

  KernelDesc desc;
  desc.name = "main";
  desc.binary = *spirv;
  desc.numBindings = 1;
  Result<std::unique_ptr<Kernel>> kernel = (*device)->createKernel(desc);
  if (!kernel)
    return fail(kernel.status());
  Result<std::unique_ptr<Buffer>> counter = (*device)->createBuffer(4);
  if (!counter)
    return fail(counter.status());

  RawVulkan raw;
  if (Status s = raw.init(*spirv, info.name, opts.validation); !s)
    return fail(s);
  HesperSide hesperSide(**device, **kernel, **counter);
  RawSide rawSide(raw, "raw");
  // --control: a second hand-written loop on a device of its own takes
  // Hesper's place, so the ratios show what two identical sides measure.
  RawVulkan control;
  RawSide controlSide(control, "raw2");
  if (opts.control) {
    if (Status s = control.init(*spirv, info.name, opts.validation); !s)
      return fail(s);
  }
  Side &tested = opts.control ? static_cast<Side &>(controlSide) : hesperSide;

  std::string pinned =
      opts.pin >= 0 ? ", pinned to CPU " + std::to_string(opts.pin) : "";
  std::printf("hesper-bench-dispatch: %s (%s)%s%s\n", info.name.c_str(),
              deviceTypeName(info.type), pinned.c_str(),
              opts.control ? ", control run: raw2 (a second raw loop) in "
                             "Hesper's place"
                           : "");
  if (opts.pin < 0 && info.type == DeviceType::Cpu)
    std::printf("note: a CPU device's threads move between cores; --pin=CPU "
                "gives steadier figures (see bench/README.md)\n");
  std::printf("each side: %u warm-up steps, then %u rounds of %u timed steps, "
              "the sides taking turns every %u steps\n",
              opts.warmup, opts.rounds, opts.steps, opts.block);

  std::vector<Measurement> results;
  for (uint32_t k : opts.dispatchCounts) {
    Measurement m;
    if (Status s = measure(tested, rawSide, opts, k, m); !s)
      return fail(s);
    results.push_back(std::move(m));
  }

  // The wall-clock medians are the headline. On a shared machine
  // interference only adds time and comes and goes; the 10th percentiles, the
  // per-round ratios (each round's two sides ran interleaved, under the same
  // load) and the submitting thread's CPU time (which leaves out the time
  // spent waiting for a core) show how much of a difference is noise.
  std::printf("\n%-4s %-7s %14s %12s %12s %12s %12s\n", "K", "side",
              "median us/step", "us/dispatch", "p10 us/step", "min us/step",
              "cpu us/step");
  for (const Measurement &m : results) {
    for (bool hesper : {true, false}) {
      const Samples &t = hesper ? m.hesper : m.raw;
      double step = median(t.wallUs);
      std::printf("%-4u %-7s %14.2f %12.3f %12.2f %12.2f %12.2f\n",
                  m.dispatches, hesper ? tested.name() : "raw", step,
                  step / m.dispatches, quantile(t.wallUs, 0.1),
                  *std::min_element(t.wallUs.begin(), t.wallUs.end()),
                  median(t.cpuUs));
    }
  }
  std::printf("\nratio %s/raw (target <= 1.1, on the median wall time)\n",
              tested.name());
  std::printf("%-8s %8s %8s %8s   %s\n", "", "median", "p10", "cpu",
              "per-round medians: median [range]");
  for (const Measurement &m : results) {
    double med = median(m.hesper.wallUs) / median(m.raw.wallUs);
    double p10 = quantile(m.hesper.wallUs, 0.1) / quantile(m.raw.wallUs, 0.1);
    double cpu = median(m.hesper.cpuUs) / median(m.raw.cpuUs);
    auto [lo, hi] =
        std::minmax_element(m.roundRatios.begin(), m.roundRatios.end());
    std::printf("K = %-4u %8.3f %8.3f %8.3f   %.3f [%.3f .. %.3f]  %s\n",
                m.dispatches, med, p10, cpu, median(m.roundRatios), *lo, *hi,
                med <= 1.1 ? "met" : "NOT met");
  }
  if (results.size() >= 2) {
    // The cost of one more dispatch in a step, from the smallest and the
    // largest K: the per-dispatch figure with the fixed cost of a submission
    // taken out.
    const Measurement &lo = results.front(), &hi = results.back();
    if (hi.dispatches != lo.dispatches) {
      double extra = hi.dispatches - lo.dispatches;
      auto marginal = [&](bool hesper, bool cpu) {
        const Samples &a = hesper ? lo.hesper : lo.raw;
        const Samples &b = hesper ? hi.hesper : hi.raw;
        return cpu ? (median(b.cpuUs) - median(a.cpuUs)) / extra
                   : (median(b.wallUs) - median(a.wallUs)) / extra;
      };
      std::printf("\none more dispatch in a step (medians, K=%u vs K=%u): "
                  "wall %s %.3f us, raw %.3f us; cpu %s %.3f us, raw %.3f "
                  "us\n",
                  hi.dispatches, lo.dispatches, tested.name(),
                  marginal(true, false), marginal(false, false), tested.name(),
                  marginal(true, true), marginal(false, true));
    }
  }

  if (opts.validation) {
    uint64_t messages = validationMessageCount() + rawValidationMessages;
    std::printf("validation: %llu messages\n",
                static_cast<unsigned long long>(messages));
    if (messages)
      return 1;
  }
  return 0;
}
