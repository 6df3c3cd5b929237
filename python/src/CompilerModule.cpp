//===- CompilerModule.cpp - The compiler from Python ----------------------===//
//
// Part of the Hesper project.
//
//===----------------------------------------------------------------------===//
//
// Bindings of the Circuit GraphBuilder, the compiler and the reference
// interpreter (docs/Python.md, "Kernels"):
//
//   Graph      a circuit.graph under construction (each in its own MLIR
//              context): externals, primitives and composites, as the C++
//              GraphBuilder has them; or a graph parsed from MLIR text
//   Tensor     a value of a graph (shape, dtype)
//   Lane       a symbolic per-lane value while a Python body traces: its
//              operators and the functions of hesper.exp emit exp ops
//   Program    a graph compiled for a device: kernels, the fused IR, run
//
// Every builder call is one transaction: the ops it appends are verified
// at once and, when they fail (or the Python body raises), erased again
// before the error reaches Python as a ValueError with the verifier's
// message, so a graph never holds a half-built op.
//
//===----------------------------------------------------------------------===//

#include "CompilerModule.h"

#include "Hesper/Dialect/Circuit/Builder/GraphBuilder.h"
#include "Hesper/Dialect/Circuit/IR/ArgRoles.h"
#include "Hesper/Dialect/Circuit/Transforms/Passes.h"
#include "Hesper/Execution/Execution.h"
#include "Hesper/Execution/GraphRun.h"
#include "Hesper/InitAllDialects.h"
#include "Hesper/Interpreter/Interpreter.h"

#include "mlir/AsmParser/AsmParser.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"

#include "llvm/ADT/StringSet.h"

#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <mutex>

namespace py = pybind11;
using namespace hesper;
using namespace mlir;
using circuit::GraphBuilder;
using exp::ExpBuilder;

namespace {

//===----------------------------------------------------------------------===//
// Graphs, tensors, lanes
//===----------------------------------------------------------------------===//

/// Collects the diagnostics a context emits while it lives, as lines.
class Diagnostics {
public:
  explicit Diagnostics(MLIRContext *context)
      : handler(context, [this](Diagnostic &d) {
          if (!text.empty())
            text += "\n";
          // Parse errors say where (line:column of the text).
          if (auto at = dyn_cast<FileLineColLoc>(d.getLocation()))
            text += "line " + std::to_string(at.getLine()) + ":" +
                    std::to_string(at.getColumn()) + ": ";
          text += d.str();
          for (const Diagnostic &note : d.getNotes())
            text += "\n  note: " + note.str();
          return success();
        }) {}
  std::string take(llvm::StringRef fallback) {
    return text.empty() ? fallback.str() : std::move(text);
  }

private:
  std::string text;
  ScopedDiagnosticHandler handler;
};

/// A graph: its own context, the builder while it grows, the module once
/// it is finished (by compile, interpret, or parsing).
struct GraphState {
  std::unique_ptr<MLIRContext> context;
  std::unique_ptr<GraphBuilder> builder;
  OwningOpRef<ModuleOp> module;
  circuit::GraphOp graph;
  bool hasOutput = false;
  llvm::StringSet<> names;
  /// Compiles and interpreter runs of one graph take turns (they share its
  /// diagnostics); take it with lockWithoutGil.
  std::mutex compileMutex;

  static std::unique_ptr<MLIRContext> newContext() {
    DialectRegistry registry;
    registerAllDialects(registry);
    auto context = std::make_unique<MLIRContext>(registry);
    context->loadAllAvailableDialects();
    // Errors become one-line Python messages, without the op printed.
    context->printOpOnDiagnostic(false);
    return context;
  }

  bool finished() const { return !builder; }

  /// Finishes the graph (verifies it; the builder goes).
  void finish() {
    if (finished())
      return;
    Diagnostics diags(context.get());
    OwningOpRef<ModuleOp> done = builder->finish();
    if (!done)
      throw py::value_error(diags.take("the graph does not verify"));
    module = std::move(done);
    builder.reset();
  }

  std::string print(Operation *op) const {
    std::string text;
    llvm::raw_string_ostream os(text);
    op->print(os);
    return text;
  }
};

/// Takes `m`, waiting for it without the GIL: its holder may need the GIL
/// back (after compiling or running with it released) before it lets go.
std::unique_lock<std::mutex> lockWithoutGil(std::mutex &m) {
  std::unique_lock<std::mutex> lock(m, std::defer_lock);
  if (!lock.try_lock()) {
    py::gil_scoped_release release;
    lock.lock();
  }
  return lock;
}

/// The context of the body being traced: lanes made in it are valid while
/// it runs.
struct Trace {
  ExpBuilder *e;
  bool active = true;
};

struct PyLane {
  std::shared_ptr<Trace> trace;
  Value value;

  ExpBuilder &builder() const {
    if (!trace->active)
      throw py::value_error("a lane value is used outside the body that "
                            "traced it (bodies must not keep lane values)");
    return *trace->e;
  }
  Type type() const { return value.getType(); }
};

struct PyTensor {
  std::shared_ptr<GraphState> graph;
  Value value;

  RankedTensorType type() const {
    return cast<RankedTensorType>(value.getType());
  }
};

/// The name Python uses for an element type: f32, f16, i32, i1, or the
/// quantized format's (q8_0, q4_k, ...).
std::string dtypeName(Type type) {
  if (type.isF32())
    return "f32";
  if (type.isF16())
    return "f16";
  if (auto i = dyn_cast<IntegerType>(type))
    return "i" + std::to_string(i.getWidth());
  std::string text;
  llvm::raw_string_ostream os(text);
  type.print(os);
  llvm::StringRef name(text);
  name.consume_front("!circuit.");
  return name.str();
}

/// An element type from a name ("f32", "q8_0") or a NumPy dtype.
Type parseDtype(MLIRContext *context, const py::object &spec) {
  std::string name;
  if (py::isinstance<py::str>(spec)) {
    name = spec.cast<std::string>();
  } else {
    py::dtype dt = py::dtype::from_args(spec);
    char kind = dt.kind();
    if (kind == 'f' && dt.itemsize() == 4)
      name = "f32";
    else if (kind == 'f' && dt.itemsize() == 2)
      name = "f16";
    else if (kind == 'i' && dt.itemsize() == 4)
      name = "i32";
    else
      throw py::value_error("dtype " + py::str(dt).cast<std::string>() +
                            " has no Circuit element type (float32, "
                            "float16, int32)");
  }
  if (name == "f32" || name == "float32")
    return Float32Type::get(context);
  if (name == "f16" || name == "float16")
    return Float16Type::get(context);
  if (name == "i32" || name == "int32")
    return IntegerType::get(context, 32);
  Type quant;
  {
    Diagnostics quiet(context);
    quant = parseType("!circuit." + name, context);
  }
  if (!quant || !circuit::isQuantized(quant))
    throw py::value_error("unknown dtype '" + name +
                          "': f32, f16, i32 or a quantized format "
                          "(q8_0, q4_0, q4_1, q5_0, q4_k, q5_k, q6_k, q8_1, ...)");
  return quant;
}

std::vector<int64_t> checkShape(const std::vector<int64_t> &shape,
                                const char *what) {
  if (shape.empty())
    throw py::value_error(std::string(what) +
                          ": a shape needs at least one dimension");
  for (int64_t d : shape)
    if (d < 1)
      throw py::value_error(std::string(what) +
                            ": dimensions must be positive, got " +
                            std::to_string(d));
  return shape;
}

/// The graph a set of tensors belongs to (all the same one).
GraphState &graphOf(const std::shared_ptr<GraphState> &self,
                    const std::vector<PyTensor> &tensors) {
  for (const PyTensor &t : tensors)
    if (t.graph != self)
      throw py::value_error("a tensor of another graph is used here");
  return *self;
}

/// One tensor, or a sequence of them.
std::vector<PyTensor> tensorList(const py::object &obj) {
  if (py::isinstance<PyTensor>(obj))
    return {obj.cast<PyTensor>()};
  return obj.cast<std::vector<PyTensor>>();
}

std::vector<Value> valuesOf(const std::vector<PyTensor> &tensors) {
  std::vector<Value> out;
  for (const PyTensor &t : tensors)
    out.push_back(t.value);
  return out;
}

/// One builder call: runs `build`, verifies the ops it appended, and on a
/// failure (a verifier error, or an exception a Python body raised) erases
/// them and raises.
template <typename Fn>
auto transaction(GraphState &g, Fn &&build, std::exception_ptr &bodyError) {
  if (g.finished())
    throw py::value_error("the graph is finished (compiled, interpreted or "
                          "parsed): build a new Graph to add to it");
  Block &body = g.graph.getBody().front();
  Operation *before = body.empty() ? nullptr : &body.back();
  Diagnostics diags(g.context.get());
  auto result = build();
  std::vector<Operation *> added;
  for (Operation &op : llvm::make_range(
           before ? std::next(before->getIterator()) : body.begin(),
           body.end()))
    added.push_back(&op);
  auto rollback = [&] {
    for (Operation *op : llvm::reverse(added)) {
      op->dropAllUses();
      op->erase();
    }
  };
  if (bodyError) {
    rollback();
    std::rethrow_exception(bodyError);
  }
  for (Operation *op : added)
    if (failed(verify(op))) {
      std::string message = diags.take("the op does not verify");
      rollback();
      throw py::value_error(message);
    }
  return result;
}

/// A Python value as an exp value of `type`: a lane of that type, or a
/// number made a constant.
Value toValue(ExpBuilder &e, const std::shared_ptr<Trace> &trace,
              py::handle obj, Type type, const char *what) {
  if (py::isinstance<PyLane>(obj)) {
    const PyLane &lane = obj.cast<const PyLane &>();
    if (lane.trace != trace)
      throw py::value_error("a lane value of another body is used here");
    if (lane.type() != type)
      throw py::value_error(std::string(what) + " is " +
                            dtypeName(lane.type()) + ", " +
                            dtypeName(type) +
                            " is expected (convert with hesper.exp." +
                            dtypeName(type) + ")");
    return lane.value;
  }
  if (py::isinstance<py::bool_>(obj) || py::isinstance<py::int_>(obj) ||
      py::isinstance<py::float_>(obj)) {
    double v = obj.cast<double>();
    if (isa<IntegerType>(type) && v != std::floor(v))
      throw py::value_error(std::string(what) + " is the number " +
                            py::str(obj).cast<std::string>() + ", " +
                            dtypeName(type) + " is expected");
    return e.constant(type, v);
  }
  throw py::value_error(std::string(what) + " must be a lane value or a "
                        "number, got " +
                        py::str(py::type::of(obj)).cast<std::string>());
}

/// Calls a Python body with lane values for `args` and converts what it
/// returns to `types` (one value, or a tuple of as many). A failure is kept
/// in `error` and zero constants stand in, so that the C++ builder can
/// finish the op the transaction then erases.
SmallVector<Value> traceBody(ExpBuilder &e, const py::function &fn,
                             ArrayRef<Value> args, ArrayRef<Type> types,
                             std::exception_ptr &error) {
  auto trace = std::make_shared<Trace>(Trace{&e});
  SmallVector<Value> out;
  if (!error) {
    try {
      py::tuple lanes(args.size());
      for (auto [i, v] : llvm::enumerate(args))
        lanes[i] = py::cast(PyLane{trace, v});
      py::object result = fn(*lanes);
      if (types.size() == 1) {
        out.push_back(toValue(e, trace, result, types[0], "the body's result"));
      } else {
        py::tuple tuple;
        if (py::isinstance<py::tuple>(result) ||
            py::isinstance<py::list>(result))
          tuple = py::tuple(result);
        if (tuple.size() != types.size())
          throw py::value_error("the body must return " +
                                std::to_string(types.size()) +
                                " values, got " +
                                py::repr(result).cast<std::string>());
        for (size_t i = 0; i < types.size(); ++i)
          out.push_back(toValue(e, trace, tuple[i], types[i],
                                ("the body's result #" + std::to_string(i))
                                    .c_str()));
      }
    } catch (...) {
      error = std::current_exception();
      out.clear();
    }
  }
  trace->active = false;
  if (out.empty())
    for (Type t : types)
      out.push_back(e.constant(t, 0));
  return out;
}

/// The `whole` flags of a body's inputs (the inputs it reads whole, with
/// t[i], instead of element by element).
SmallVector<bool> wholeFlags(const py::object &whole, size_t inputs) {
  SmallVector<bool> out(inputs, false);
  if (whole.is_none())
    return out;
  std::vector<bool> given = whole.cast<std::vector<bool>>();
  if (given.size() != inputs)
    throw py::value_error("whole= has " + std::to_string(given.size()) +
                          " flags for " + std::to_string(inputs) + " inputs");
  out.assign(given.begin(), given.end());
  return out;
}

circuit::ReduceKind reduceKind(const std::string &name) {
  auto kind = circuit::symbolizeReduceKind(name);
  if (!kind)
    throw py::value_error("reduction must be 'sum', 'sum_sq' or 'max', got '" +
                          name + "'");
  return *kind;
}

circuit::ArgRole argRole(const std::string &name) {
  auto role = circuit::symbolizeArgRole(name);
  if (!role)
    throw py::value_error("unknown role '" + name + "' (input, cache, "
                          "tokens, position, ...)");
  return *role;
}

/// The graph object Python holds.
struct PyGraph {
  std::shared_ptr<GraphState> state;

  explicit PyGraph(const std::string &name) : state(new GraphState) {
    if (name.empty())
      throw py::value_error("a graph needs a name");
    state->context = GraphState::newContext();
    state->builder =
        std::make_unique<GraphBuilder>(state->context.get(), name);
    state->graph = state->builder->getGraph();
  }
  PyGraph(std::shared_ptr<GraphState> s) : state(std::move(s)) {}

  GraphBuilder &b() { return *state->builder; }
  PyTensor wrap(Value v) { return PyTensor{state, v}; }
  std::vector<PyTensor> wrapAll(ArrayRef<Value> vs) {
    std::vector<PyTensor> out;
    for (Value v : vs)
      out.push_back(wrap(v));
    return out;
  }

  template <typename Fn> PyTensor op(Fn &&build) {
    std::exception_ptr error;
    return wrap(transaction(*state, [&] { return build(error); }, error));
  }
  template <typename Fn> PyTensor op0(Fn &&build) {
    std::exception_ptr error;
    return wrap(transaction(*state, build, error));
  }

  PyTensor external(const std::string &name, std::vector<int64_t> shape,
                    const py::object &dtype, const std::string &role,
                    int64_t bound) {
    if (state->finished())
      throw py::value_error("the graph is finished: build a new Graph");
    checkShape(shape, ("external '" + name + "'").c_str());
    if (name.empty())
      throw py::value_error("an external needs a name");
    if (state->names.contains(name))
      throw py::value_error("the graph already has an external named '" +
                            name + "'");
    Type element = parseDtype(state->context.get(), dtype);
    circuit::ArgRole r = argRole(role);
    state->names.insert(name);
    if (bound > 0) {
      if (!element.isInteger(32) ||
          (r != circuit::ArgRole::Tokens && r != circuit::ArgRole::Targets))
        throw py::value_error("bound= applies to i32 externals of role "
                              "'tokens' or 'targets'");
      return wrap(b().externalIndices(name, shape, r, bound));
    }
    return wrap(b().external(name, shape, element, r));
  }

  PyTensor zeros(std::vector<int64_t> shape, const py::object &dtype) {
    checkShape(shape, "zeros");
    Type element = parseDtype(state->context.get(), dtype);
    return op0([&] { return b().zeros(shape, element); });
  }

  PyTensor map(const py::function &fn, const py::object &inputList,
               std::optional<std::vector<int64_t>> shape,
               const py::object &dtype, const py::object &whole, bool lane) {
    std::vector<PyTensor> inputs = tensorList(inputList);
    graphOf(state, inputs);
    if (!shape && inputs.empty())
      throw py::value_error("map with no inputs needs shape=");
    std::vector<int64_t> resultShape =
        shape ? checkShape(*shape, "map")
              : std::vector<int64_t>(inputs[0].type().getShape());
    Type element = dtype.is_none() ? (inputs.empty()
                                          ? Float32Type::get(
                                                state->context.get())
                                          : inputs[0].type().getElementType())
                                   : parseDtype(state->context.get(), dtype);
    SmallVector<bool> flags = wholeFlags(whole, inputs.size());
    std::vector<Value> values = valuesOf(inputs);
    return op([&](std::exception_ptr &error) {
      return b().map(values, flags, resultShape, element,
                     [&](ExpBuilder &e, Value l, ValueRange args) {
                       SmallVector<Value> all;
                       if (lane)
                         all.push_back(l);
                       all.append(args.begin(), args.end());
                       return traceBody(e, fn, all, {element}, error)[0];
                     });
    });
  }

  PyTensor gather(const PyTensor &source, const py::function &fn,
                  const py::object &inputList, std::vector<int64_t> shape,
                  const py::object &whole) {
    std::vector<PyTensor> inputs = tensorList(inputList);
    graphOf(state, inputs);
    graphOf(state, {source});
    checkShape(shape, "gather");
    SmallVector<bool> flags = wholeFlags(whole, inputs.size());
    std::vector<Value> values = valuesOf(inputs);
    Type i32 = IntegerType::get(state->context.get(), 32);
    return op([&](std::exception_ptr &error) {
      return b().gather(source.value, values, flags, shape,
                        [&](ExpBuilder &e, Value l, ValueRange args) {
                          SmallVector<Value> all{l};
                          all.append(args.begin(), args.end());
                          return traceBody(e, fn, all, {i32}, error)[0];
                        });
    });
  }

  PyTensor scatter(const PyTensor &dest, int64_t grid, const py::function &fn,
                   const py::object &inputList) {
    std::vector<PyTensor> inputs = tensorList(inputList);
    graphOf(state, inputs);
    graphOf(state, {dest});
    if (grid < 1)
      throw py::value_error("scatter: grid must be positive");
    std::vector<Value> values = valuesOf(inputs);
    Type i32 = IntegerType::get(state->context.get(), 32);
    Type element = dest.type().getElementType();
    return op([&](std::exception_ptr &error) {
      return b().scatter(dest.value, grid, values,
                         [&](ExpBuilder &e, Value l, ValueRange args) {
                           SmallVector<Value> all{l};
                           all.append(args.begin(), args.end());
                           SmallVector<Value> pair =
                               traceBody(e, fn, all, {i32, element}, error);
                           return std::make_pair(pair[0], pair[1]);
                         });
    });
  }

  PyTensor reduce(const std::string &kind, const py::object &inputList,
                  const py::object &prologue, const py::object &whole,
                  std::optional<std::vector<int64_t>> over) {
    std::vector<PyTensor> inputs = tensorList(inputList);
    graphOf(state, inputs);
    circuit::ReduceKind k = reduceKind(kind);
    if (inputs.empty())
      throw py::value_error("reduce needs an input");
    if (prologue.is_none()) {
      if (inputs.size() != 1 || over)
        throw py::value_error("reduce without a prologue takes one input "
                              "and no over=");
      return op0([&] { return b().reduce(k, inputs[0].value); });
    }
    py::function fn = prologue.cast<py::function>();
    SmallVector<bool> flags = wholeFlags(whole, inputs.size());
    std::vector<Value> values = valuesOf(inputs);
    Type f32 = Float32Type::get(state->context.get());
    auto body = [&](std::exception_ptr &error) {
      return [&](ExpBuilder &e, Value l, ValueRange args) {
        SmallVector<Value> all{l};
        all.append(args.begin(), args.end());
        return traceBody(e, fn, all, {f32}, error)[0];
      };
    };
    if (over) {
      checkShape(*over, "reduce over=");
      return op([&](std::exception_ptr &error) {
        return b().reduceOver(k, *over, values, flags, body(error));
      });
    }
    return op([&](std::exception_ptr &error) {
      return b().reduce(k, values, flags, body(error));
    });
  }

  PyTensor reduceEpilogue(const std::string &kind, const py::object &inputList,
                          const py::function &fn, const py::object &dtype) {
    std::vector<PyTensor> inputs = tensorList(inputList);
    graphOf(state, inputs);
    circuit::ReduceKind k = reduceKind(kind);
    if (inputs.empty())
      throw py::value_error("reduce_epilogue needs an input");
    Type element = dtype.is_none() ? inputs[0].type().getElementType()
                                   : parseDtype(state->context.get(), dtype);
    std::vector<Value> values = valuesOf(inputs);
    return op([&](std::exception_ptr &error) {
      return b().reduceEpilogue(
          k, values, element,
          [&](ExpBuilder &e, Value l, Value acc, ValueRange args) {
            SmallVector<Value> all{l, acc};
            all.append(args.begin(), args.end());
            return traceBody(e, fn, all, {element}, error)[0];
          });
    });
  }

  PyTensor matmul(const PyTensor &x, const PyTensor &w,
                  const py::object &epilogue, const py::object &extraList) {
    std::vector<PyTensor> extra = tensorList(extraList);
    graphOf(state, {x, w});
    graphOf(state, extra);
    if (w.type().getRank() != 2)
      throw py::value_error("matmul: the weight must be [N, K], got rank " +
                            std::to_string(w.type().getRank()));
    if (x.type().getRank() > 2)
      throw py::value_error("matmul: x must be [K] or [M, K]");
    if (epilogue.is_none()) {
      if (!extra.empty())
        throw py::value_error("matmul: extra= needs an epilogue");
      return op0([&] { return b().matmul(x.value, w.value); });
    }
    py::function fn = epilogue.cast<py::function>();
    std::vector<Value> values = valuesOf(extra);
    Type f32 = Float32Type::get(state->context.get());
    return op([&](std::exception_ptr &error) {
      return b().matmul(
          x.value, w.value, values,
          [&](ExpBuilder &e, Value l, Value acc, ValueRange args) {
            SmallVector<Value> all{l, acc};
            all.append(args.begin(), args.end());
            return traceBody(e, fn, all, {f32}, error)[0];
          });
    });
  }

  void output(const std::vector<PyTensor> &results) {
    graphOf(state, results);
    if (state->hasOutput)
      throw py::value_error("the graph's outputs are already set");
    std::vector<Value> values = valuesOf(results);
    std::exception_ptr error;
    transaction(
        *state,
        [&] {
          b().output(values);
          return 0;
        },
        error);
    state->hasOutput = true;
  }

  std::string mlir() const {
    Operation *op = state->module ? state->module->getOperation()
                                  : state->graph->getParentOp();
    return state->print(op);
  }
};

/// Parses MLIR text into a finished graph: `name`, or the module's only
/// graph.
PyGraph parseGraph(const std::string &text, const std::string &name) {
  auto state = std::make_shared<GraphState>();
  state->context = GraphState::newContext();
  Diagnostics diags(state->context.get());
  state->module = parseSourceString<ModuleOp>(text, state->context.get());
  if (!state->module)
    throw py::value_error(diags.take("the text does not parse"));
  std::vector<circuit::GraphOp> graphs;
  state->module->walk([&](circuit::GraphOp g) { graphs.push_back(g); });
  for (circuit::GraphOp g : graphs)
    if (name.empty() ? graphs.size() == 1 : g.getSymName() == name)
      state->graph = g;
  if (!state->graph) {
    std::string names;
    for (circuit::GraphOp g : graphs)
      names += (names.empty() ? "@" : ", @") + g.getSymName().str();
    if (graphs.empty())
      throw py::value_error("the module has no circuit.graph");
    throw py::value_error(
        (name.empty() ? "the module has several graphs, name one: "
                      : "the module has no graph @" + name + ": ") +
        names);
  }
  state->hasOutput = true;
  return PyGraph(std::move(state));
}

//===----------------------------------------------------------------------===//
// Arguments and results as NumPy arrays
//===----------------------------------------------------------------------===//

/// The NumPy dtype that holds elements of `type` (quantized: their bytes).
py::dtype numpyDtype(Type element) {
  if (element.isF32())
    return py::dtype::of<float>();
  if (element.isF16())
    return py::dtype("float16");
  if (element.isInteger(32))
    return py::dtype::of<int32_t>();
  return py::dtype::of<uint8_t>();
}

/// The graph's arguments from keyword arrays, in argument order, with their
/// dtypes and shapes checked.
std::vector<interp::HostTensor> bindArguments(circuit::GraphOp graph,
                                              const py::kwargs &arrays) {
  Block &entry = graph.getBody().front();
  llvm::StringSet<> names;
  std::vector<interp::HostTensor> args;
  for (BlockArgument arg : entry.getArguments()) {
    std::string name = circuit::argumentName(graph, arg.getArgNumber());
    names.insert(name);
    auto type = cast<RankedTensorType>(arg.getType());
    if (!arrays.contains(name.c_str()))
      throw py::value_error("missing input '" + name + "' (" +
                            dtypeName(type.getElementType()) + " " +
                            exec::shapeString(type.getShape()) + ")");
    py::array array = py::array::ensure(arrays[name.c_str()]);
    if (!array)
      throw py::value_error("input '" + name + "' is not an array");
    py::dtype want = numpyDtype(type.getElementType());
    if (array.dtype().kind() != want.kind() ||
        array.dtype().itemsize() != want.itemsize())
      throw py::value_error(
          "input '" + name + "': dtype " +
          py::str(array.dtype()).cast<std::string>() + ", the graph's " +
          dtypeName(type.getElementType()) + " argument needs " +
          py::str(want).cast<std::string>());
    interp::HostTensor t(type);
    bool quantized = circuit::isQuantized(type.getElementType());
    if (quantized) {
      if (size_t(array.nbytes()) != t.bytes().size())
        throw py::value_error("input '" + name + "': " +
                              dtypeName(type.getElementType()) + " " +
                              exec::shapeString(type.getShape()) + " takes " +
                              std::to_string(t.bytes().size()) +
                              " bytes of blocks, got " +
                              std::to_string(array.nbytes()));
    } else {
      std::vector<int64_t> shape(array.shape(),
                                 array.shape() + array.ndim());
      if (llvm::ArrayRef<int64_t>(shape) != type.getShape())
        throw py::value_error("input '" + name + "': shape " +
                              exec::shapeString(shape) + ", the graph's argument is " +
                              exec::shapeString(type.getShape()));
    }
    py::array contiguous = py::array::ensure(
        array, py::array::c_style | py::array::forcecast);
    std::memcpy(t.bytes().data(), contiguous.data(), t.bytes().size());
    args.push_back(std::move(t));
  }
  for (auto item : arrays) {
    std::string key = item.first.cast<std::string>();
    if (!names.contains(key))
      throw py::value_error("the graph has no argument '" + key + "'");
  }
  std::string outOfBounds = exec::checkIndexBounds(graph, args);
  if (!outOfBounds.empty())
    throw py::value_error(outOfBounds);
  return args;
}

py::array toArray(RankedTensorType type, const std::vector<uint8_t> &bytes) {
  Type element = type.getElementType();
  std::vector<py::ssize_t> shape;
  if (circuit::isQuantized(element))
    shape.push_back(py::ssize_t(circuit::getStorageBytes(type)));
  else
    for (int64_t d : type.getShape())
      shape.push_back(d);
  py::array out(numpyDtype(element), shape);
  std::memcpy(out.mutable_data(), bytes.data(),
              std::min(bytes.size(), size_t(out.nbytes())));
  return out;
}

/// One array for one result; a tuple for several (or none).
py::object packResults(std::vector<py::array> results) {
  if (results.size() == 1)
    return results[0];
  py::tuple out(results.size());
  for (size_t i = 0; i < results.size(); ++i)
    out[i] = results[i];
  return out;
}

py::object interpret(PyGraph &g, const py::kwargs &arrays) {
  GraphState &s = *g.state;
  std::unique_lock<std::mutex> lock = lockWithoutGil(s.compileMutex);
  s.finish();
  std::vector<interp::HostTensor> args = bindArguments(s.graph, arrays);
  FailureOr<std::vector<interp::HostTensor>> results;
  std::string error;
  {
    py::gil_scoped_release release;
    Diagnostics diags(s.context.get());
    results = interp::runGraph(s.graph, args);
    if (failed(results))
      error = diags.take("the interpreter failed");
  }
  if (failed(results))
    throw std::runtime_error(error);
  std::vector<py::array> out;
  for (interp::HostTensor &t : *results)
    out.push_back(toArray(t.getType(), t.bytes()));
  return packResults(std::move(out));
}

//===----------------------------------------------------------------------===//
// Programs
//===----------------------------------------------------------------------===//

double nowMs() {
  return std::chrono::duration<double, std::milli>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

struct PyProgram {
  std::shared_ptr<GraphState> graph;
  std::unique_ptr<rt::Device> device;
  rt::Program program;
  std::unique_ptr<rt::ProgramRunner> runner;
  std::string fusedMlir;
  double compileMs = 0, lastRunMs = 0;
  std::vector<double> kernelNs;
  /// Runs of one program take turns (one set of device buffers).
  std::mutex runMutex;

  PyProgram(std::shared_ptr<GraphState> g, const std::string &deviceName,
            bool fuse, unsigned threads)
      : graph(std::move(g)) {
    exec::DeviceModeOptions opts;
    llvm::StringRef spec(deviceName);
    auto [backend, index] = spec.split(':');
    if (backend == "cpu")
      opts.backend = rt::Backend::Cpu;
    else if (backend == "vulkan")
      opts.backend = rt::Backend::Vulkan;
    else if (backend == "cuda")
      opts.backend = rt::Backend::Cuda;
    else if (backend != "auto")
      throw py::value_error("device must be 'auto', 'cpu', 'vulkan' or "
                            "'cuda' (optionally ':INDEX'), got '" +
                            deviceName + "'");
    if (!index.empty() && index.getAsInteger(10, opts.deviceIndex))
      throw py::value_error("bad device index in '" + deviceName + "'");
    opts.threads = threads;
    GraphState &s = *graph;
    std::unique_lock<std::mutex> lock = lockWithoutGil(s.compileMutex);
    s.finish();
    {
      // The check's own error names the tensor and its size.
      Diagnostics diags(s.context.get());
      if (failed(exec::checkTensorSizes(s.graph, exec::hostMemoryBytes(),
                                        "this machine's memory")))
        throw py::value_error(diags.take("a tensor of the graph is larger "
                                         "than this machine's memory"));
    }
    std::string error;
    {
      py::gil_scoped_release release;
      Diagnostics diags(s.context.get());
      device = exec::openRequestedDevice(opts);
      if (!device) {
        error = "cannot open a " + deviceName +
                " device (hesper.devices() lists them; hesper.interpret "
                "runs the reference interpreter)";
      } else {
        double start = nowMs();
        // Fused once here: the IR `mlir` shows is the one the kernels are
        // made from (lowered without fusing again).
        OwningOpRef<ModuleOp> fused = s.module->clone();
        PassManager pm(s.context.get());
        if (fuse)
          circuit::buildHesperFusePipeline(pm);
        if (failed(pm.run(*fused)))
          error = diags.take("fusion failed");
        else
          fusedMlir = s.print(fused->getOperation());
        CompileOptions compile;
        compile.fuse = false;
        FailureOr<rt::Program> compiled = failure();
        if (error.empty())
          compiled = compileForDevice(*fused, s.graph.getSymName(),
                                      device->info(), compile);
        if (failed(compiled)) {
          if (error.empty())
            error = diags.take("compilation failed");
        } else {
          program = std::move(*compiled);
          compileMs = nowMs() - start;
          auto created = rt::ProgramRunner::create(
              *device, program, device->info().timestampPeriodNs > 0);
          if (!created)
            error = created.status().message();
          else
            runner = std::move(*created);
        }
      }
    }
    if (!error.empty())
      throw std::runtime_error(error);
  }

  py::object run(const py::kwargs &arrays) {
    GraphState &s = *graph;
    std::vector<interp::HostTensor> args = bindArguments(s.graph, arrays);
    std::vector<exec::HostData> data;
    for (interp::HostTensor &t : args)
      data.push_back({t.getType(), std::move(t.bytes())});
    std::vector<std::vector<uint8_t>> results(program.results.size());
    std::unique_lock<std::mutex> lock = lockWithoutGil(runMutex);
    rt::Status status;
    {
      py::gil_scoped_release release;
      status = exec::uploadArguments(*runner, data);
      double start = nowMs();
      if (status)
        status = runner->run();
      lastRunMs = nowMs() - start;
      if (status)
        kernelNs = runner->lastKernelTimesNs();
      for (size_t i = 0; status && i < results.size(); ++i)
        status = runner->readResult(i, results[i]);
    }
    if (!status)
      throw std::runtime_error(status.message());
    std::vector<py::array> out;
    for (auto [i, type] : llvm::enumerate(s.graph.getResultTypes()))
      out.push_back(toArray(cast<RankedTensorType>(type), results[i]));
    return packResults(std::move(out));
  }

  std::vector<std::string> kernels() const {
    std::vector<std::string> out;
    for (const rt::ProgramLaunch &launch : program.launches)
      out.push_back(program.kernels[launch.kernel].name);
    return out;
  }

  py::dict timings() {
    std::unique_lock<std::mutex> lock = lockWithoutGil(runMutex);
    py::dict out;
    out["compile_ms"] = compileMs;
    out["run_ms"] = lastRunMs;
    py::list kernels;
    for (size_t k = 0; k < kernelNs.size() && k < program.launches.size();
         ++k)
      kernels.append(py::make_tuple(
          program.kernels[program.launches[k].kernel].name,
          kernelNs[k] / 1000.0));
    out["kernels_us"] = kernels;
    return out;
  }
};

//===----------------------------------------------------------------------===//
// Lane operators and hesper.exp
//===----------------------------------------------------------------------===//

/// The lanes' common type for a binary op: a lane's, a number taking it.
std::pair<Value, Value> operands(const PyLane &self, py::handle other,
                                 const char *op, bool reversed) {
  ExpBuilder &e = self.builder();
  Value a = self.value;
  Value b = toValue(e, self.trace, other, self.type(),
                    (std::string("the other operand of ") + op).c_str());
  return reversed ? std::make_pair(b, a) : std::make_pair(a, b);
}

bool isFloat(Type t) { return isa<FloatType>(t); }

PyLane binary(const PyLane &self, py::handle other, const char *op,
              bool reversed) {
  auto [a, b] = operands(self, other, op, reversed);
  ExpBuilder &e = self.builder();
  llvm::StringRef name(op);
  Value r;
  if (name == "+")
    r = e.add(a, b);
  else if (name == "-")
    r = e.sub(a, b);
  else if (name == "*")
    r = e.mul(a, b);
  else if (name == "/") {
    if (!isFloat(a.getType()))
      throw py::value_error("'/' divides floats; i32 lanes divide with '//' "
                            "(truncating, as C)");
    r = e.div(a, b);
  } else if (name == "//") {
    if (isFloat(a.getType()))
      throw py::value_error("'//' divides i32 lanes; floats divide with '/'");
    r = e.div(a, b);
  } else if (name == "%") {
    r = e.rem(a, b);
  } else {
    if (isFloat(a.getType()))
      throw py::value_error(std::string("'") + op + "' needs integer lanes");
    OpBuilder &ob = e.builder();
    Location loc = e.location();
    if (name == "&")
      r = exp::AndOp::create(ob, loc, a, b);
    else if (name == "|")
      r = exp::OrOp::create(ob, loc, a, b);
    else if (name == "^")
      r = exp::XorOp::create(ob, loc, a, b);
    else if (name == "<<")
      r = exp::ShlOp::create(ob, loc, a, b);
    else
      r = exp::ShrSOp::create(ob, loc, a, b);
  }
  return PyLane{self.trace, r};
}

PyLane compare(const PyLane &self, py::handle other, exp::CmpPredicate p) {
  auto [a, b] = operands(self, other, "a comparison", false);
  return PyLane{self.trace, self.builder().cmp(p, a, b)};
}

/// A unary exp function of hesper.exp.
template <typename OpT> PyLane unary(const PyLane &x, bool floatOnly) {
  if (floatOnly && !isFloat(x.type()))
    throw py::value_error(std::string(OpT::getOperationName()) +
                          " needs a float lane, got " + dtypeName(x.type()));
  ExpBuilder &e = x.builder();
  return PyLane{x.trace, OpT::create(e.builder(), e.location(), x.value)};
}

/// The lane among `args` that fixes the type of numbers beside it.
const PyLane &firstLane(std::initializer_list<py::handle> args,
                        const char *fn) {
  for (py::handle h : args)
    if (py::isinstance<PyLane>(h))
      return h.cast<const PyLane &>();
  throw py::value_error(std::string("hesper.exp.") + fn +
                        " needs at least one lane value");
}

void bindExp(py::module_ &m) {
  py::module_ ex = m.def_submodule(
      "exp", "Per-lane functions for traced bodies (the exp dialect).");
#define HESPER_UNARY(NAME, OP, FLOAT, DOC)                                     \
  ex.def(                                                                     \
      NAME, [](const PyLane &x) { return unary<exp::OP>(x, FLOAT); },          \
      py::arg("x"), DOC)
  HESPER_UNARY("exp", ExpOp, true, "e**x (exp.exp)");
  HESPER_UNARY("log", LogOp, true, "natural logarithm (exp.log)");
  HESPER_UNARY("sqrt", SqrtOp, true, "square root (exp.sqrt)");
  HESPER_UNARY("rsqrt", RsqrtOp, true, "1/sqrt(x) (exp.rsqrt)");
  HESPER_UNARY("tanh", TanhOp, true, "hyperbolic tangent (exp.tanh)");
  HESPER_UNARY("sin", SinOp, true, "sine (exp.sin)");
  HESPER_UNARY("cos", CosOp, true, "cosine (exp.cos)");
  HESPER_UNARY("floor", FloorOp, true, "round toward -inf (exp.floor)");
  HESPER_UNARY("round", RoundOp, true,
               "round half away from zero (exp.round)");
  HESPER_UNARY("sigmoid", SigmoidOp, true, "1/(1+e**-x) (exp.sigmoid)");
  HESPER_UNARY("silu", SiluOp, true, "x*sigmoid(x) (exp.silu)");
  HESPER_UNARY("gelu", GeluOp, true, "GELU, tanh form (exp.gelu)");
  HESPER_UNARY("abs", AbsOp, false, "|x| (exp.abs)");
#undef HESPER_UNARY

  auto two = [&](const char *name, auto build, const char *doc) {
    ex.def(
        name,
        [name, build](py::object a, py::object b) {
          const PyLane &lane = firstLane({a, b}, name);
          ExpBuilder &e = lane.builder();
          Value x = toValue(e, lane.trace, a, lane.type(), name);
          Value y = toValue(e, lane.trace, b, lane.type(), name);
          return PyLane{lane.trace, build(e, x, y)};
        },
        py::arg("x"), py::arg("y"), doc);
  };
  two(
      "min", [](ExpBuilder &e, Value x, Value y) { return e.min(x, y); },
      "the smaller of x and y (exp.min)");
  two(
      "max", [](ExpBuilder &e, Value x, Value y) { return e.max(x, y); },
      "the larger of x and y (exp.max)");
  two(
      "pow",
      [](ExpBuilder &e, Value x, Value y) {
        if (!isFloat(x.getType()))
          throw py::value_error("exp.pow needs float lanes");
        return e.pow(x, y);
      },
      "x**y for floats (exp.pow)");

  auto three = [&](const char *name, auto build, const char *doc,
                   const char *a0, const char *a1, const char *a2) {
    ex.def(
        name,
        [name, build](py::object a, py::object b, py::object c) {
          const PyLane &lane = firstLane({a, b, c}, name);
          ExpBuilder &e = lane.builder();
          Value x = toValue(e, lane.trace, a, lane.type(), name);
          Value y = toValue(e, lane.trace, b, lane.type(), name);
          Value z = toValue(e, lane.trace, c, lane.type(), name);
          return PyLane{lane.trace, build(e, x, y, z)};
        },
        py::arg(a0), py::arg(a1), py::arg(a2), doc);
  };
  three(
      "fma",
      [](ExpBuilder &e, Value x, Value y, Value z) { return e.fma(x, y, z); },
      "x*y + z, rounded once (exp.fma)", "x", "y", "z");
  three(
      "clamp",
      [](ExpBuilder &e, Value x, Value lo, Value hi) {
        return e.clamp(x, lo, hi);
      },
      "x limited to [lo, hi] (exp.clamp)", "x", "lo", "hi");

  ex.def(
      "select",
      [](const PyLane &cond, py::object a, py::object b) {
        if (!cond.type().isInteger(1))
          throw py::value_error("select's condition must be a comparison "
                                "(an i1 lane), got " +
                                dtypeName(cond.type()));
        const PyLane &lane = [&]() -> const PyLane & {
          for (py::handle h : {a, b})
            if (py::isinstance<PyLane>(h))
              return h.cast<const PyLane &>();
          throw py::value_error("select needs a lane value among its "
                                "choices (to know their type)");
        }();
        ExpBuilder &e = cond.builder();
        Value x = toValue(e, cond.trace, a, lane.type(), "select");
        Value y = toValue(e, cond.trace, b, lane.type(), "select");
        return PyLane{cond.trace, e.select(cond.value, x, y)};
      },
      py::arg("cond"), py::arg("if_true"), py::arg("if_false"),
      "if_true where cond holds, else if_false (exp.select)");

  auto convert = [&](const char *name, auto typeOf) {
    ex.def(
        name,
        [typeOf](const PyLane &x) {
          ExpBuilder &e = x.builder();
          Type to = typeOf(e.builder().getContext());
          if (x.type() == to)
            return x;
          return PyLane{x.trace, e.convert(x.value, to)};
        },
        py::arg("x"),
        (std::string("x converted to ") + name + " (exp.convert)").c_str());
  };
  convert("f32", [](MLIRContext *c) -> Type { return Float32Type::get(c); });
  convert("f16", [](MLIRContext *c) -> Type { return Float16Type::get(c); });
  convert("i32",
          [](MLIRContext *c) -> Type { return IntegerType::get(c, 32); });
}

} // namespace

void hesper::python::bindCompiler(py::module_ &m) {
  bindExp(m);

  py::class_<PyLane>(
      m, "Lane",
      "A per-lane value while a body traces (an exp SSA value). Arithmetic "
      "(+ - * / // % -x), comparisons, bit ops on i32 and t[i] on a tensor "
      "the body reads whole emit exp ops; numbers beside a lane become "
      "constants of its type. Valid only inside the body that made it.")
      .def_property_readonly("dtype",
                             [](const PyLane &l) { return dtypeName(l.type()); })
      .def("__add__", [](const PyLane &a, py::object b) { return binary(a, b, "+", false); })
      .def("__radd__", [](const PyLane &a, py::object b) { return binary(a, b, "+", true); })
      .def("__sub__", [](const PyLane &a, py::object b) { return binary(a, b, "-", false); })
      .def("__rsub__", [](const PyLane &a, py::object b) { return binary(a, b, "-", true); })
      .def("__mul__", [](const PyLane &a, py::object b) { return binary(a, b, "*", false); })
      .def("__rmul__", [](const PyLane &a, py::object b) { return binary(a, b, "*", true); })
      .def("__truediv__", [](const PyLane &a, py::object b) { return binary(a, b, "/", false); })
      .def("__rtruediv__", [](const PyLane &a, py::object b) { return binary(a, b, "/", true); })
      .def("__floordiv__", [](const PyLane &a, py::object b) { return binary(a, b, "//", false); })
      .def("__rfloordiv__", [](const PyLane &a, py::object b) { return binary(a, b, "//", true); })
      .def("__mod__", [](const PyLane &a, py::object b) { return binary(a, b, "%", false); })
      .def("__rmod__", [](const PyLane &a, py::object b) { return binary(a, b, "%", true); })
      .def("__and__", [](const PyLane &a, py::object b) { return binary(a, b, "&", false); })
      .def("__rand__", [](const PyLane &a, py::object b) { return binary(a, b, "&", true); })
      .def("__or__", [](const PyLane &a, py::object b) { return binary(a, b, "|", false); })
      .def("__ror__", [](const PyLane &a, py::object b) { return binary(a, b, "|", true); })
      .def("__xor__", [](const PyLane &a, py::object b) { return binary(a, b, "^", false); })
      .def("__rxor__", [](const PyLane &a, py::object b) { return binary(a, b, "^", true); })
      .def("__lshift__", [](const PyLane &a, py::object b) { return binary(a, b, "<<", false); })
      .def("__rshift__", [](const PyLane &a, py::object b) { return binary(a, b, ">>", false); })
      .def("__neg__",
           [](const PyLane &a) {
             return PyLane{a.trace, a.builder().neg(a.value)};
           })
      .def("__lt__", [](const PyLane &a, py::object b) { return compare(a, b, exp::CmpPredicate::lt); })
      .def("__le__", [](const PyLane &a, py::object b) { return compare(a, b, exp::CmpPredicate::le); })
      .def("__gt__", [](const PyLane &a, py::object b) { return compare(a, b, exp::CmpPredicate::gt); })
      .def("__ge__", [](const PyLane &a, py::object b) { return compare(a, b, exp::CmpPredicate::ge); })
      .def("__eq__", [](const PyLane &a, py::object b) { return compare(a, b, exp::CmpPredicate::eq); })
      .def("__ne__", [](const PyLane &a, py::object b) { return compare(a, b, exp::CmpPredicate::ne); })
      .def("__bool__",
           [](const PyLane &) -> bool {
             throw py::value_error(
                 "a lane value has no truth value while tracing: use "
                 "hesper.exp.select(cond, a, b) instead of if/and/or");
           })
      .def("__getitem__",
           [](const PyLane &t, py::object index) {
             if (!isa<RankedTensorType>(t.type()))
               throw py::value_error("only an input the body reads whole "
                                     "(whole=[...]) can be indexed");
             ExpBuilder &e = t.builder();
             Value i = toValue(e, t.trace, index,
                               e.builder().getI32Type(), "an index");
             return PyLane{t.trace, GraphBuilder::extract(e, t.value, i)};
           })
      .def("__repr__", [](const PyLane &l) {
        return "<hesper.Lane " + dtypeName(l.type()) + ">";
      });

  py::class_<PyTensor>(m, "Tensor", "A value of a graph: shape and dtype.")
      .def_property_readonly("shape",
                             [](const PyTensor &t) {
                               py::tuple out(t.type().getRank());
                               for (int64_t i = 0; i < t.type().getRank(); ++i)
                                 out[i] = t.type().getDimSize(i);
                               return out;
                             })
      .def_property_readonly("dtype",
                             [](const PyTensor &t) {
                               return dtypeName(t.type().getElementType());
                             })
      .def("__repr__", [](const PyTensor &t) {
        std::vector<int64_t> shape(t.type().getShape());
        return "<hesper.Tensor " + dtypeName(t.type().getElementType()) + " " +
               exec::shapeString(shape) + ">";
      });

  py::class_<PyGraph>(m, "Graph",
                      "A Circuit graph: externals and primitives whose "
                      "per-lane bodies are Python functions that trace into "
                      "exp ops.")
      .def(py::init<const std::string &>(), py::arg("name") = "main",
           "An empty graph @name, built with the methods below (the C++ "
           "GraphBuilder's), then compiled with hesper.compile or run with "
           "hesper.interpret. Bodies are Python functions over Lane values.")
      .def_property_readonly(
          "name",
          [](const PyGraph &g) { return g.state->graph.getSymName().str(); })
      .def_property_readonly("mlir", &PyGraph::mlir)
      .def_property_readonly("finished",
                             [](const PyGraph &g) { return g.state->finished(); })
      .def("external", &PyGraph::external, py::arg("name"), py::arg("shape"),
           py::arg("dtype") = "f32", py::arg("role") = "input",
           py::arg("bound") = 0,
           "A new graph argument: the array passed as NAME to run/interpret. "
           "dtype: f32, f16, i32, a quantized format (its bytes as uint8) or "
           "a NumPy dtype; role: input, cache (written in place), ...; "
           "bound: the i32 elements index something of that many entries.")
      .def("zeros", &PyGraph::zeros, py::arg("shape"), py::arg("dtype") = "f32",
           "A fresh zero-filled tensor (a destination for scatter).")
      .def("map", &PyGraph::map, py::arg("fn"), py::arg("inputs"),
           py::arg("shape") = py::none(), py::arg("dtype") = py::none(),
           py::arg("whole") = py::none(), py::arg("lane") = false,
           "A tensor computed per element: fn(*elements) (fn(lane, "
           "*elements) with lane=True) returns the element. inputs: a Tensor "
           "or a list; an input of shape [1], [D] or [rows, 1] broadcasts. "
           "shape and dtype default to the first input's; whole=[...] flags "
           "inputs the body reads whole, t[i].")
      .def("gather", &PyGraph::gather, py::arg("source"), py::arg("fn"),
           py::arg("inputs"), py::arg("shape"), py::arg("whole") = py::none(),
           "Elements of source at addresses: fn(lane, *elements) returns an "
           "i32 flat address (out of range reads 0).")
      .def("gather_rows",
           [](PyGraph &g, const PyTensor &table, const PyTensor &indices) {
             graphOf(g.state, {table, indices});
             if (!indices.type().getElementType().isInteger(32))
               throw py::value_error("gather_rows: indices must be i32");
             return g.op0(
                 [&] { return g.b().gatherRows(table.value, indices.value); });
           },
           py::arg("table"), py::arg("indices"),
           "Rows indices[s] of a [R, D] table: a [S, D] embedding lookup.")
      .def("scatter", &PyGraph::scatter, py::arg("dest"), py::arg("grid"),
           py::arg("fn"), py::arg("inputs") = py::tuple(),
           "dest with grid lanes written: fn(lane, *elements) returns "
           "(address, value).")
      .def("scatter_add",
           [](PyGraph &g, const PyTensor &source, const PyTensor &indices,
              int64_t rows) {
             graphOf(g.state, {source, indices});
             if (rows < 1)
               throw py::value_error("scatter_add: rows must be positive");
             return g.op0([&] {
               return g.b().scatterAdd(source.value, indices.value, rows);
             });
           },
           py::arg("source"), py::arg("indices"), py::arg("rows"),
           "The [rows, D] sums of source's [S, D] rows into rows "
           "indices[s].")
      .def("write_slice",
           [](PyGraph &g, const PyTensor &dest, const PyTensor &src,
              int64_t offset) {
             graphOf(g.state, {dest, src});
             return g.op0([&] {
               return g.b().writeSlice(dest.value, src.value, offset);
             });
           },
           py::arg("dest"), py::arg("src"), py::arg("offset"),
           "dest with src (flattened) written from element offset on.")
      .def("reduce", &PyGraph::reduce, py::arg("kind"), py::arg("inputs"),
           py::arg("prologue") = py::none(), py::arg("whole") = py::none(),
           py::arg("over") = py::none(),
           "Reduces the last axis ('sum', 'sum_sq', 'max'); the result is "
           "[rows..., 1] f32. With prologue(lane, *elements) the values "
           "reduced are computed; over=[..., n] reduces an explicit "
           "iteration shape.")
      .def("reduce_epilogue", &PyGraph::reduceEpilogue, py::arg("kind"),
           py::arg("inputs"), py::arg("fn"), py::arg("dtype") = py::none(),
           "Reduces each row of inputs[0], then computes every element of "
           "the row: fn(lane, reduced, *elements).")
      .def("matmul", &PyGraph::matmul, py::arg("x"), py::arg("weight"),
           py::arg("epilogue") = py::none(),
           py::arg("extra") = py::tuple(),
           "x . weight^T for x [K] or [M, K] and weight [N, K] (f32, f16 or "
           "quantized), f32 out; epilogue(lane, acc, *extra_elements) "
           "post-processes each output.")
      .def("quantize",
           [](PyGraph &g, const PyTensor &x, const py::object &dtype) {
             graphOf(g.state, {x});
             Type element = parseDtype(g.state->context.get(), dtype);
             return g.op0([&] { return g.b().quantize(x.value, element); });
           },
           py::arg("x"), py::arg("dtype") = "q8_1",
           "x quantized to a block format (q8_1, q8_0).")
      .def("rms_norm",
           [](PyGraph &g, const PyTensor &x, std::optional<PyTensor> w,
              double eps) {
             graphOf(g.state, {x});
             if (w)
               graphOf(g.state, {*w});
             return g.op0([&] {
               return g.b().rmsNorm(x.value, w ? w->value : Value(), eps);
             });
           },
           py::arg("x"), py::arg("weight") = py::none(),
           py::arg("eps") = 1e-6,
           "x * rsqrt(mean(x^2) + eps) * weight over the last axis.")
      .def("layer_norm",
           [](PyGraph &g, const PyTensor &x, const PyTensor &w,
              const PyTensor &bias, double eps) {
             graphOf(g.state, {x, w, bias});
             return g.op0([&] {
               return g.b().layerNorm(x.value, w.value, bias.value, eps);
             });
           },
           py::arg("x"), py::arg("weight"), py::arg("bias"),
           py::arg("eps") = 1e-5,
           "(x - mean) * rsqrt(var + eps) * weight + bias over the last axis.")
      .def("softmax",
           [](PyGraph &g, const PyTensor &x) {
             graphOf(g.state, {x});
             return g.op0([&] { return g.b().softmax(x.value); });
           },
           py::arg("x"), "Numerically stable softmax over the last axis.")
      .def("rope",
           [](PyGraph &g, const PyTensor &x, const PyTensor &pos,
              int64_t headDim, double base, const std::string &style,
              std::optional<PyTensor> factors) {
             graphOf(g.state, {x, pos});
             if (factors)
               graphOf(g.state, {*factors});
             if (style != "neox" && style != "normal")
               throw py::value_error("rope style must be 'neox' or "
                                     "'normal', got '" + style + "'");
             if (headDim < 2 || headDim % 2 ||
                 x.type().getNumElements() % headDim)
               throw py::value_error("rope: head_dim must be even and "
                                     "divide x's elements");
             return g.op0([&] {
               return g.b().rope(x.value, pos.value, headDim, base,
                                 style == "neox" ? circuit::RopeStyle::NeoX
                                                 : circuit::RopeStyle::Normal,
                                 factors ? factors->value : Value());
             });
           },
           py::arg("x"), py::arg("pos"), py::arg("head_dim"),
           py::arg("base") = 10000.0, py::arg("style") = "neox",
           py::arg("freq_factors") = py::none(),
           "Rotary embedding of x ([heads, head_dim] or flat) at the "
           "position in the i32 [1] tensor pos; style 'neox' or 'normal'.")
      .def("attention",
           [](PyGraph &g, const PyTensor &q, const PyTensor &k,
              const PyTensor &v, const PyTensor &pos, int64_t heads,
              int64_t kvHeads, int64_t headDim, std::optional<double> scale,
              double softcap, int64_t window) {
             graphOf(g.state, {q, k, v, pos});
             if (heads < 1 || kvHeads < 1 || headDim < 1 ||
                 heads % kvHeads)
               throw py::value_error("attention: heads must be a positive "
                                     "multiple of kv_heads");
             double s = scale ? *scale : 1.0 / std::sqrt(double(headDim));
             return g.op0([&] {
               return g.b().decodeAttention(q.value, k.value, v.value,
                                            pos.value, heads, kvHeads,
                                            headDim, s, softcap, window);
             });
           },
           py::arg("q"), py::arg("k_cache"), py::arg("v_cache"),
           py::arg("pos"), py::arg("heads"), py::arg("kv_heads"),
           py::arg("head_dim"), py::arg("scale") = py::none(),
           py::arg("softcap") = 0.0, py::arg("window") = 0,
           "One query token's attention over KV caches [max_seq, kv_heads, "
           "head_dim] valid up to position pos (i32 [1]) inclusive: one "
           "circuit.attention op. scale defaults to 1/sqrt(head_dim).")
      .def("transpose",
           [](PyGraph &g, const PyTensor &x) {
             graphOf(g.state, {x});
             if (x.type().getRank() != 2)
               throw py::value_error("transpose needs a [rows, cols] tensor");
             return g.op0([&] { return g.b().transpose(x.value); });
           },
           py::arg("x"), "The transpose of a [rows, cols] tensor.")
      .def("output",
           [](PyGraph &g, py::args results) {
             std::vector<PyTensor> tensors;
             for (py::handle h : results)
               tensors.push_back(h.cast<PyTensor>());
             g.output(tensors);
           },
           "Sets the graph's results (once).")
      .def("__repr__", [](const PyGraph &g) {
        return "<hesper.Graph @" + g.state->graph.getSymName().str() + ">";
      });

  m.def("parse", &parseGraph, py::arg("text"), py::arg("name") = "",
        "A graph from MLIR text: graph @name, or the module's only graph.");
  m.def("interpret", &interpret, py::arg("graph"),
        "Runs the reference interpreter: graph arguments by name as NumPy "
        "arrays (dtype and shape must match: ValueError otherwise); returns "
        "the result array, or a tuple of them.");

  py::class_<PyProgram>(m, "Program",
                        "A graph compiled for a device: kernels (the launches "
                        "in order), mlir (the IR after fusion), device, "
                        "timings (compile_ms, run_ms, kernels_us) and run().")
      .def(py::init([](PyGraph &g, const std::string &device, bool fuse,
                       unsigned threads) {
             return std::make_unique<PyProgram>(g.state, device, fuse,
                                                threads);
           }),
           py::arg("graph"), py::arg("device") = "auto",
           py::arg("fuse") = true, py::arg("threads") = 0,
           "Compiles graph for a device ('auto', 'cpu', 'vulkan', 'cuda', "
           "with ':INDEX'); the GIL is released while it compiles.")
      .def_property_readonly("kernels", &PyProgram::kernels)
      .def_property_readonly("mlir",
                             [](const PyProgram &p) { return p.fusedMlir; })
      .def_property_readonly(
          "device",
          [](const PyProgram &p) {
            const rt::DeviceInfo &d = p.device->info();
            return std::string(rt::backendName(d.backend)) + ": " + d.name;
          })
      .def_property_readonly("timings", &PyProgram::timings)
      .def("run", &PyProgram::run,
           "Runs the program once on arrays bound by argument name (dtype "
           "and shape checked: ValueError); returns the result array, or a "
           "tuple of them.");
}
