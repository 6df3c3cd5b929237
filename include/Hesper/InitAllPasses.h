//===- InitAllPasses.h - Register Hesper and upstream passes -----*- C++ -*-===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//

#ifndef HESPER_INITALLPASSES_H
#define HESPER_INITALLPASSES_H

namespace hesper {

/// Registers Hesper's passes and pipelines and the upstream passes that a
/// Hesper pipeline can be built from on the command line (canonicalize, cse,
/// the gpu, nvvm and spirv conversions and target attachment, ...).
void registerAllPasses();

} // namespace hesper

#endif // HESPER_INITALLPASSES_H
