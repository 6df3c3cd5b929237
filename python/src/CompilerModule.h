//===- CompilerModule.h - The compiler's Python bindings --------*- C++ -*-===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//
//
// hesper._hesper's compiler half (CompilerModule.cpp): Graph, Tensor, Lane,
// Program, parse, interpret and the hesper.exp functions.
//
//===----------------------------------------------------------------------===//

#ifndef HESPER_PYTHON_COMPILERMODULE_H
#define HESPER_PYTHON_COMPILERMODULE_H

#include <pybind11/pybind11.h>

namespace hesper::python {

/// Adds the compiler's classes and functions to the module `m`.
void bindCompiler(pybind11::module_ &m);

} // namespace hesper::python

#endif // HESPER_PYTHON_COMPILERMODULE_H
