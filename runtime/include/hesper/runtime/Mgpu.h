//===- Mgpu.h - Upstream MLIR's GPU runtime calls on the Hesper HAL -*- C++ -*-===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//
//
// Host code that upstream MLIR lowers from the gpu dialect (`gpu-to-llvm`
// and the gpu.binary translation) calls C functions named mgpu*:
// mgpuModuleLoad, mgpuModuleGetFunction, mgpuLaunchKernel, mgpuMemAlloc,
// mgpuMemcpy, mgpuMemHostRegisterMemRef, ... Upstream implements them per
// vendor (the CUDA and ROCm runtime wrappers, which Debian does not ship).
// This file implements them once, on a Hesper rt::Device, so that a program
// written for CUDA runs on Vulkan and the reverse.
//
// The kernels a gpu.binary object holds are a GpuModuleImage: the backend's
// binary (SPIR-V words or PTX) and, per kernel, its workgroup size and the
// signature of its arguments as the host passes them (a memref of rank r is
// 3 + 2r parameters: allocated and aligned pointers, offset, sizes,
// strides). The kernels themselves take one buffer per argument: a memref's
// data, or a scalar's value (the compiler turns scalar arguments into
// one-element buffers).
//
// Memory:
//   gpu.alloc            a device buffer; the pointer the host gets is a
//                        host shadow of the same size that names it (and,
//                        for host_shared allocations, holds its contents)
//                        -- or, on a device whose buffers are host memory
//                        (the CPU target), the buffer's own bytes.
//   gpu.host_register    host memory mirrored by a device buffer: uploaded
//                        before every launch that uses it, read back after,
//                        so the host's copy is current between launches.
//   gpu.memcpy/memset    between any of these and plain host memory.
//
// Streams: launches, copies, fills and frees are queued on their stream and
// done in its order when something waits for it (mgpuStreamSynchronize, an
// event); the waiting thread does the work, and other streams with work
// waiting get threads of their own then, so kernels of two streams run at
// the same time. Events are record numbers a stream reaches. A program
// that waits for each call (the lowering of synchronous gpu ops) does every
// call on the host code's thread, in order, and starts no thread; results
// are as deterministic as the kernels.
//
// A call that cannot be carried out prints `error: ...` and exits with
// status 1: the generated host code has no way to receive an error.
//
//===----------------------------------------------------------------------===//

#ifndef HESPER_RUNTIME_MGPU_H
#define HESPER_RUNTIME_MGPU_H

#include "hesper/runtime/Runtime.h"

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace hesper::rt {

/// One kernel argument as the host passes it.
struct GpuKernelArg {
  enum Kind : uint32_t { MemRef = 0, Scalar = 1 };
  Kind kind = MemRef;
  /// MemRef: its rank; Scalar: 0.
  uint32_t rank = 0;
  /// MemRef: bytes per element; Scalar: bytes of the value.
  uint32_t bytes = 0;
  /// MemRef of dynamic shape on a target that binds a buffer as a pointer
  /// alone (CUDA, the CPU target): its `rank` sizes follow it as one more
  /// binding of i64s, from which the kernel rebuilds the view.
  uint32_t passSizes = 0;
};

/// One gpu.printf of a kernel that prints into a buffer (Vulkan): its
/// format and the kinds of its argument words, "f" (f32 bits), "i" (an
/// i32) or "l" (an i64 as two words, low first).
struct GpuPrintFormat {
  std::string format;
  std::string kinds;
};

struct GpuKernelImage {
  std::string name;
  /// The block size it was compiled for; all zero for a kernel compiled at
  /// launch (its launches' block sizes are not compile-time constants): the
  /// module's `source` is compiled for each block size it is launched
  /// with, once (setMgpuKernelCompiler).
  uint32_t workgroupSize[3] = {1, 1, 1};
  /// Workgroup memory the runtime provides (KernelDesc::sharedMemoryBytes;
  /// 0 where the kernel declares its own, as SPIR-V and PTX do).
  uint32_t sharedBytes = 0;
  std::vector<GpuKernelArg> args;
  /// A kernel that prints into a buffer takes it as one more binding after
  /// its arguments, of `printWords` 32-bit words: word 0 counts the words
  /// written, then records [format index, workgroup, thread, argument
  /// words] (lib/Target/SPIRV/PrintfToBuffer.cpp). 0: it prints nothing.
  uint32_t printWords = 0;
  std::vector<GpuPrintFormat> printFormats;
};

/// The text of the printf records in `words` (a print buffer as a kernel
/// left it, word 0 its count) in a fixed order: workgroup, then each
/// thread's n-th record, then thread; each formatted by C's printf rules
/// with its arguments. Records that did not fit are counted at the end
/// ("N printf records did not fit in the buffer").
std::string formatPrintRecords(const std::vector<GpuPrintFormat> &formats,
                               const std::vector<uint32_t> &words);

/// The contents of one gpu.binary object.
struct GpuModuleImage {
  /// KernelDesc::format of `binary` ("spirv", "ptx").
  std::string format;
  std::vector<uint8_t> binary;
  std::vector<GpuKernelImage> kernels;
  /// The kernels' gpu.module as MLIR text, where some are compiled at
  /// launch; empty otherwise.
  std::string source;
};

std::vector<uint8_t> encodeGpuModuleImage(const GpuModuleImage &image);
Result<GpuModuleImage> decodeGpuModuleImage(const uint8_t *data, size_t size);

/// The device the mgpu* functions run on (not owned; must outlive every
/// call, the JIT'd module's destructors included). Null: none, and every
/// call is an error.
void setMgpuDevice(Device *device);

/// Compiles kernel `kernel` of `source` (GpuModuleImage::source) for one
/// block size: a module image holding that kernel with `block` as its
/// workgroup size.
using GpuKernelCompiler = std::function<Result<GpuModuleImage>(
    const std::string &source, const std::string &kernel,
    const uint32_t block[3])>;

/// Print, after each launch, the lines upstream's Vulkan runtime prints:
/// "Compute shader execution time", "Command buffer submit time" and
/// "Wait idle time".
void setMgpuLaunchTimes(bool print);

/// The compiler of kernels compiled at launch (empty: none, and launching
/// one is an error). Each block size is compiled once per loaded module.
void setMgpuKernelCompiler(GpuKernelCompiler compiler);

/// Every mgpu* function this runtime implements, by name, for a JIT's
/// symbol table.
std::vector<std::pair<const char *, void *>> mgpuSymbols();

} // namespace hesper::rt

#endif // HESPER_RUNTIME_MGPU_H
