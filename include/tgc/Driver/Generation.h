//===- Generation.h - tgc --program=generate --------------------*- C++ -*-===//
//
// A language model's generation program from the front end
// (buildGenerationModule: @prefill and @decode over KV caches) to each
// --emit level: tg, linalg, and through the target backend to an
// executable whose main is the runtime's generation loop.
//
//===----------------------------------------------------------------------===//
#ifndef TGC_DRIVER_GENERATION_H
#define TGC_DRIVER_GENERATION_H

#include "tgc/Driver/Compile.h"
#include "tgc/Frontend/ModelConfig.h"
#include "tgc/Target/TargetBackend.h"

#include "mlir/IR/BuiltinOps.h"

#include "llvm/Support/Error.h"

namespace tgc {

struct GenerationRequest {
  std::string input, output = "-";
  EmitLevel level = EmitLevel::TG;
  /// Tokens of one @prefill call (at most the cache).
  int64_t prefillTokens = 64;
};

/// The generation program of a model at the tg level: @prefill over a
/// prompt chunk and @decode over one token, reading and appending to KV
/// caches of `cacheLength` positions.
struct GenerationProgram {
  mlir::OwningOpRef<mlir::ModuleOp> module;
  int64_t cacheLength = 0;
  /// Tokens of one @prefill call (the request's, at most the cache).
  int64_t prefillTokens = 0;
};

/// Builds the generation program of `model` (a language model), with its
/// products' weights narrowed under --precision; errors name `input`.
llvm::Expected<GenerationProgram>
buildGenerationProgram(mlir::MLIRContext &context, const ModelConfig &model,
                       llvm::StringRef input, int64_t prefillTokens);

/// Builds and compiles the generation program of `model` (a language model)
/// for `target`; the cache holds the model's sequence length.
llvm::Error compileGeneration(mlir::MLIRContext &context,
                              const ModelConfig &model,
                              const GenerationRequest &request,
                              const TargetBackend &target);

} // namespace tgc

#endif // TGC_DRIVER_GENERATION_H
