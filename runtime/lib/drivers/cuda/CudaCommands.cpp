//===- CudaCommands.cpp - Command lists of the CUDA driver ----------------===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//
//
// CudaCommandList: dispatches checked against their kernels and this
// device's objects, captured into a CUDA graph and replayed with one graph
// launch per submission, or launched one by one (without graphs, or with
// event timing).
//
//===----------------------------------------------------------------------===//

#include "CudaInternal.h"

#include <cstring>

namespace hesper::rt::detail::cuda {

//===----------------------------------------------------------------------===//
// Command lists
//===----------------------------------------------------------------------===//

/// Enqueues one dispatch on the device's stream. Bindings become one
/// CUdeviceptr parameter each, push constants one 32-bit parameter per 4
/// bytes, in that order.
static CUresult launch(const CudaContext &c, const Dispatch &d) {
  auto *k = static_cast<CudaKernel *>(d.kernel);
  const KernelDesc &kd = k->desc();
  std::vector<CUdeviceptr> pointers;
  pointers.reserve(d.bindings.size());
  for (Buffer *b : d.bindings)
    pointers.push_back(static_cast<CudaBuffer *>(b)->ptr);
  std::vector<uint32_t> words(d.pushConstants.size() / 4);
  if (!words.empty())
    std::memcpy(words.data(), d.pushConstants.data(), words.size() * 4);
  std::vector<void *> params;
  params.reserve(pointers.size() + words.size());
  for (CUdeviceptr &p : pointers)
    params.push_back(&p);
  for (uint32_t &w : words)
    params.push_back(&w);
  return c.api->cuLaunchKernel(
      k->function, d.grid[0], d.grid[1], d.grid[2], kd.workgroupSize[0],
      kd.workgroupSize[1], kd.workgroupSize[2], kd.sharedMemoryBytes, c.stream,
      params.empty() ? nullptr : params.data(), nullptr);
}

static std::string dispatchName(size_t i, const Dispatch &d) {
  return "dispatch " + std::to_string(i) + " (kernel '" +
         d.kernel->desc().name + "')";
}

CudaCommandList::~CudaCommandList() {
  ContextScope scope(*ctx);
  dropGraph();
  for (CUevent e : events)
    ctx->api->cuEventDestroy(e);
}

Status CudaCommandList::record(const std::vector<Dispatch> &dispatches) {
  Status st = state.validate(dispatches);
  if (!st)
    return st;
  std::vector<uint64_t> newSerials;
  for (size_t i = 0; i < dispatches.size(); ++i) {
    const Dispatch &d = dispatches[i];
    uint64_t s = ctx->serial<Kernel>(ctx->kernels, d.kernel);
    if (!s)
      return Status::error("dispatch " + std::to_string(i) +
                           ": the kernel is not one of this CUDA "
                           "device's");
    newSerials.push_back(s);
    for (size_t b = 0; b < d.bindings.size(); ++b) {
      s = ctx->serial<Buffer>(ctx->buffers, d.bindings[b]);
      if (!s)
        return Status::error("dispatch " + std::to_string(i) + ": binding " +
                             std::to_string(b) +
                             " is not a buffer of this CUDA device");
      newSerials.push_back(s);
    }
  }
  st = state.record(dispatches);
  if (!st)
    return st;
  serials = std::move(newSerials);
  times.clear();
  return Status();
}

Status CudaCommandList::submit() {
  times.clear();
  Status st = state.checkSubmit();
  if (!st)
    return st;
  if (st = checkAlive(); !st)
    return st;
  if (!state.dispatches().empty()) {
    ContextScope scope(*ctx);
    if (!scope.status())
      return scope.status();
    if (timing)
      st = runTimed();
    else if (ctx->api->haveGraphs())
      st = runGraph();
    else
      st = runDirect();
    if (!st)
      return st;
  }
  state.countSubmission();
  return Status();
}

Status CudaCommandList::checkAlive() {
  size_t k = 0;
  const std::vector<Dispatch> &list = state.dispatches();
  for (size_t i = 0; i < list.size(); ++i) {
    const Dispatch &d = list[i];
    if (ctx->serial<Kernel>(ctx->kernels, d.kernel) != serials[k++])
      return Status::error("submit: dispatch " + std::to_string(i) +
                           ": its kernel has been destroyed");
    for (size_t b = 0; b < d.bindings.size(); ++b)
      if (ctx->serial<Buffer>(ctx->buffers, d.bindings[b]) != serials[k++])
        return Status::error("submit: dispatch " + std::to_string(i) +
                             ": buffer of binding " + std::to_string(b) +
                             " has been destroyed");
  }
  return Status();
}

Status CudaCommandList::launchAll() {
  const std::vector<Dispatch> &list = state.dispatches();
  for (size_t i = 0; i < list.size(); ++i)
    if (CUresult r = launch(*ctx, list[i]); r != CUDA_SUCCESS)
      return ctx->api->fail("submit: " + dispatchName(i, list[i]),
                            "cuLaunchKernel", r);
  return Status();
}

Status CudaCommandList::synchronize() {
  if (CUresult r = ctx->api->cuStreamSynchronize(ctx->stream);
      r != CUDA_SUCCESS)
    return ctx->api->fail("submit", "cuStreamSynchronize", r);
  return Status();
}

Status CudaCommandList::runDirect() {
  Status st = launchAll();
  return st ? synchronize() : st;
}

void CudaCommandList::dropGraph() {
  const CudaApi &a = *ctx->api;
  if (exec)
    a.cuGraphExecDestroy(exec);
  if (graph)
    a.cuGraphDestroy(graph);
  exec = nullptr;
  graph = nullptr;
}

Status CudaCommandList::capture() {
  const CudaApi &a = *ctx->api;
  dropGraph();
  if (CUresult r = a.cuStreamBeginCapture(ctx->stream,
                                          CU_STREAM_CAPTURE_MODE_THREAD_LOCAL);
      r != CUDA_SUCCESS)
    return a.fail("submit", "cuStreamBeginCapture", r);
  Status launched = launchAll();
  CUgraph g = nullptr;
  CUresult r = a.cuStreamEndCapture(ctx->stream, &g);
  if (!launched || r != CUDA_SUCCESS) {
    if (g)
      a.cuGraphDestroy(g);
    return launched ? a.fail("submit", "cuStreamEndCapture", r) : launched;
  }
  CUgraphExec e = nullptr;
  r = a.cuGraphInstantiateWithFlags
          ? a.cuGraphInstantiateWithFlags(&e, g, 0)
          : a.cuGraphInstantiate(&e, g, nullptr, nullptr, 0);
  if (r != CUDA_SUCCESS) {
    a.cuGraphDestroy(g);
    return a.fail("submit", "cuGraphInstantiate", r);
  }
  graph = g;
  exec = e;
  return Status();
}

Status CudaCommandList::runGraph() {
  if (state.needsCapture() || !exec) {
    if (Status st = capture(); !st)
      return st;
    state.markCaptured();
  }
  if (CUresult r = ctx->api->cuGraphLaunch(exec, ctx->stream);
      r != CUDA_SUCCESS)
    return ctx->api->fail("submit", "cuGraphLaunch", r);
  return synchronize();
}

Status CudaCommandList::runTimed() {
  const CudaApi &a = *ctx->api;
  const std::vector<Dispatch> &list = state.dispatches();
  while (events.size() < list.size() + 1) {
    CUevent e = nullptr;
    if (CUresult r = a.cuEventCreate(&e, CU_EVENT_DEFAULT); r != CUDA_SUCCESS)
      return a.fail("submit", "cuEventCreate", r);
    events.push_back(e);
  }
  if (CUresult r = a.cuEventRecord(events[0], ctx->stream); r != CUDA_SUCCESS)
    return a.fail("submit", "cuEventRecord", r);
  for (size_t i = 0; i < list.size(); ++i) {
    if (CUresult r = launch(*ctx, list[i]); r != CUDA_SUCCESS)
      return a.fail("submit: " + dispatchName(i, list[i]), "cuLaunchKernel", r);
    if (CUresult r = a.cuEventRecord(events[i + 1], ctx->stream);
        r != CUDA_SUCCESS)
      return a.fail("submit", "cuEventRecord", r);
  }
  if (Status st = synchronize(); !st)
    return st;
  std::vector<double> result(list.size());
  for (size_t i = 0; i < list.size(); ++i) {
    float ms = 0;
    if (CUresult r = a.cuEventElapsedTime(&ms, events[i], events[i + 1]);
        r != CUDA_SUCCESS)
      return a.fail("submit", "cuEventElapsedTime", r);
    result[i] = static_cast<double>(ms) * 1e6;
  }
  times = std::move(result);
  return Status();
}

} // namespace hesper::rt::detail::cuda
