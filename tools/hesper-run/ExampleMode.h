//===- ExampleMode.h - hesper-run --example ---------------------*- C++ -*-===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//

#ifndef HESPER_TOOLS_HESPER_RUN_EXAMPLEMODE_H
#define HESPER_TOOLS_HESPER_RUN_EXAMPLEMODE_H

#include "Hesper/Models/ExampleGraphs.h"

namespace hesper::run {

/// Builds, prints, fuses and checks example graph `example`; returns the
/// process exit status.
int runExampleMode(models::ExampleGraph example,
                   const models::ExampleShape &shape, bool quiet);

} // namespace hesper::run

#endif // HESPER_TOOLS_HESPER_RUN_EXAMPLEMODE_H
