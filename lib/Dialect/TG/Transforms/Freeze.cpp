//===- Freeze.cpp - tg-freeze: frozen parameters by name ------------------===//
//
// Marks the forward function's parameters whose names match a regular
// expression with `tg.frozen`. See Passes.td.
//
//===----------------------------------------------------------------------===//

#include "tgc/Dialect/TG/Transforms/Freeze.h"
#include "tgc/Dialect/TG/IR/TGOps.h"
#include "tgc/Dialect/TG/Transforms/Passes.h"
#include "tgc/Support/NamePattern.h"

#include "llvm/Support/FormatVariadic.h"

namespace mlir::tg {
#define GEN_PASS_DEF_TGFREEZEPASS
#include "tgc/Dialect/TG/Transforms/Passes.h.inc"
} // namespace mlir::tg

using namespace mlir;
using namespace mlir::tg;

llvm::Error mlir::tg::freezeParameters(func::FuncOp forward,
                                       StringRef pattern) {
  llvm::Expected<tgc::NamePattern> re = tgc::NamePattern::compile(pattern);
  if (!re)
    return re.takeError();
  SmallVector<unsigned> params, matched;
  for (unsigned i = 0, e = forward.getNumArguments(); i < e; ++i)
    if (auto name = forward.getArgAttrOfType<StringAttr>(
            i, TGDialect::kParamAttrName)) {
      params.push_back(i);
      if (re->matches(name.getValue()))
        matched.push_back(i);
    }
  if (matched.empty()) {
    std::string example =
        params.empty()
            ? std::string()
            : llvm::formatv(" (it must match a whole name, such as "
                            "'{0}')",
                            forward
                                .getArgAttrOfType<StringAttr>(
                                    params.front(), TGDialect::kParamAttrName)
                                .getValue())
                  .str();
    return llvm::createStringError(
        llvm::formatv("the pattern '{0}' matches none of the {1} parameters "
                      "of @{2}{3}",
                      pattern, params.size(), forward.getName(), example)
            .str());
  }
  if (matched.size() == params.size())
    return llvm::createStringError(
        llvm::formatv("the pattern '{0}' freezes all {1} parameters of @{2}: "
                      "nothing to train",
                      pattern, params.size(), forward.getName())
            .str());
  for (unsigned i : matched)
    forward.setArgAttr(i, TGDialect::kFrozenAttrName,
                       UnitAttr::get(forward.getContext()));
  return llvm::Error::success();
}

namespace {

struct TGFreezePass : tg::impl::TGFreezePassBase<TGFreezePass> {
  using Base::Base;

  void runOnOperation() override {
    if (pattern.empty())
      return;
    ModuleOp module = getOperation();
    auto forward = module.lookupSymbol<func::FuncOp>(forwardName);
    if (!forward) {
      module.emitError() << "tg-freeze: no function @" << forwardName;
      return signalPassFailure();
    }
    if (llvm::Error err = freezeParameters(forward, pattern)) {
      forward.emitError() << "tg-freeze: " << llvm::toString(std::move(err));
      return signalPassFailure();
    }
  }
};

} // namespace
