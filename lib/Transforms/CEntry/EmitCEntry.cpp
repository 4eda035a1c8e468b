//===- EmitCEntry.cpp - the stable C entry point of a compiled step -------===//
//
// After func → LLVM lowering with bare-pointer memrefs, `train_step` takes
// one pointer per argument and out-parameter. Its C entry point takes them
// as one array, so the runtime (and any C program) can call any model
// through the same signature: `void tgc_train_step(void **buffers)`.
//
//===----------------------------------------------------------------------===//

#include "tgc/Conversion/Passes.h"
#include "tgc/Transforms/Passes.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/Builders.h"

namespace mlir::tg {
#define GEN_PASS_DEF_TGCEMITCENTRYPASS
#include "tgc/Transforms/Passes.h.inc"
} // namespace mlir::tg

using namespace mlir;

namespace {
struct TGCEmitCEntryPass : tg::impl::TGCEmitCEntryPassBase<TGCEmitCEntryPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    // Outlined loop nests stay functions of their own (see
    // tgc-outline-loop-nests); inlining them back would undo it.
    module.walk([](LLVM::LLVMFuncOp func) {
      if (func->hasAttr(tg::kOutlinedAttrName)) {
        func.setNoInline(true);
        func.setLinkage(LLVM::Linkage::Internal);
      }
    });
    for (const std::string &name : functions) {
      auto callee = module.lookupSymbol<LLVM::LLVMFuncOp>(name);
      if (!callee) {
        module.emitError() << "tgc-emit-c-entry: no LLVM function @" << name;
        return signalPassFailure();
      }
      LLVM::LLVMFunctionType type = callee.getFunctionType();
      auto ptr = LLVM::LLVMPointerType::get(&getContext());
      if (!llvm::isa<LLVM::LLVMVoidType>(type.getReturnType()) ||
          llvm::any_of(type.getParams(), [&](Type t) { return t != ptr; })) {
        callee.emitError(
            "tgc-emit-c-entry: expected only pointer arguments and "
            "no results (bare-pointer memrefs, results as out-parameters)");
        return signalPassFailure();
      }
      OpBuilder b(module.getBodyRegion());
      b.setInsertionPointToEnd(module.getBody());
      Location loc = callee.getLoc();
      auto entry = LLVM::LLVMFuncOp::create(
          b, loc, "tgc_" + name,
          LLVM::LLVMFunctionType::get(LLVM::LLVMVoidType::get(&getContext()),
                                      {ptr}));
      Block *body = entry.addEntryBlock(b);
      b.setInsertionPointToStart(body);
      SmallVector<Value> args;
      for (unsigned i = 0; i < type.getNumParams(); ++i) {
        Value slot = LLVM::GEPOp::create(
            b, loc, ptr, ptr, body->getArgument(0),
            ArrayRef<LLVM::GEPArg>{static_cast<int32_t>(i)});
        args.push_back(LLVM::LoadOp::create(b, loc, ptr, slot));
      }
      LLVM::CallOp::create(b, loc, callee, args);
      LLVM::ReturnOp::create(b, loc, ValueRange{});
    }
  }
};
} // namespace
