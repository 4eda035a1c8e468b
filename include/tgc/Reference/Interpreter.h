//===- Interpreter.h - reference interpreter for tg IR ----------*- C++ -*-===//
//
// Runs a function of tg ops on host tensors in double precision, one op at a
// time, straight from each op's documented semantics. It is the numeric
// oracle of the test suite: finite-difference checks of every gradient rule,
// comparisons with PyTorch, and the reference the compiled code must match.
// It is written for clarity, not speed.
//
//===----------------------------------------------------------------------===//
#ifndef TGC_REFERENCE_INTERPRETER_H
#define TGC_REFERENCE_INTERPRETER_H

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include "llvm/Support/Error.h"

#include <cstdint>
#include <vector>

namespace tgc::ref {

/// A dense row-major tensor. Integer tensors (ids) hold exact integers.
struct Tensor {
  std::vector<int64_t> shape;
  std::vector<double> data;

  Tensor() = default;
  explicit Tensor(std::vector<int64_t> shape, double fill = 0.0);
  int64_t numElements() const { return static_cast<int64_t>(data.size()); }
  double &operator[](int64_t i) { return data[i]; }
  double operator[](int64_t i) const { return data[i]; }
};

/// How the interpreter stores each op's results.
struct InterpretOptions {
  /// Round every f32 result to f32 (nearest even), as compiled code stores
  /// it; the arithmetic inside an op stays f64. It measures how far two
  /// evaluations that round at the same bf16/f16 points drift apart when
  /// they differ only by f32-sized errors: the floor of any comparison
  /// between compiled mixed-precision code and the f64 oracle.
  bool storeF32 = false;
};

/// Runs `func` on `args` and returns its results. Errors name the op that
/// could not be run (an op the interpreter does not know, a bad argument).
llvm::Expected<std::vector<Tensor>>
interpret(mlir::func::FuncOp func, const std::vector<Tensor> &args,
          const InterpretOptions &options = {});

} // namespace tgc::ref

#endif // TGC_REFERENCE_INTERPRETER_H
