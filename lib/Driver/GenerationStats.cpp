//===- GenerationStats.cpp - tgc stats --program=generate -----------------===//

#include "tgc/Driver/GenerationStats.h"

#include "tgc/Dialect/TG/Analysis/MemoryPlan.h"
#include "tgc/Dialect/TG/Analysis/TrainingStats.h"
#include "tgc/Dialect/TG/IR/TGDialect.h"
#include "tgc/Dialect/TG/IR/TGOps.h"
#include "tgc/Driver/Compile.h"
#include "tgc/Driver/Generation.h"
#include "tgc/Support/Format.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"

using namespace mlir;
using namespace tgc;

namespace {

/// What one call of a generation function does and reads (besides the KV
/// caches, which it reads whole: attention at given positions scores every
/// cached position, masked where it must not look; tg.attention's cost).
struct CallStats {
  tg::OpCost cost;
  /// Weight bytes the call reads: every parameter, except tables that only
  /// an embedding reads (one row per token).
  int64_t weightBytesRead = 0;
};

CallStats callStats(func::FuncOp function, int64_t tokens) {
  CallStats stats;
  function.walk([&](Operation *op) {
    tg::OpCost cost = tg::getOpCost(op);
    stats.cost.flops += cost.flops;
    stats.cost.matmulMultiplications += cost.matmulMultiplications;
  });
  for (BlockArgument arg : function.getArguments()) {
    if (!function.getArgAttr(arg.getArgNumber(), tg::TGDialect::kParamAttrName))
      continue;
    bool tableOnly =
        !arg.use_empty() && llvm::all_of(arg.getUsers(), [](Operation *user) {
          return isa<tg::EmbeddingOp>(user);
        });
    int64_t bytes = tg::getValueBytes(arg);
    int64_t rows = cast<RankedTensorType>(arg.getType()).getDimSize(0);
    stats.weightBytesRead +=
        tableOnly ? std::min(tokens, rows) * (bytes / rows) : bytes;
  }
  return stats;
}

/// What the program holds: its parameters (those stored narrow apart) and
/// its KV caches.
struct Holdings {
  int64_t parameters = 0, parameterBytes = 0;
  int64_t narrowParameters = 0, narrowParameterBytes = 0;
  int64_t cacheBytes = 0;
};

Holdings holdingsOf(func::FuncOp function) {
  Holdings h;
  for (BlockArgument arg : function.getArguments()) {
    unsigned i = arg.getArgNumber();
    int64_t bytes = tg::getValueBytes(arg);
    if (function.getArgAttr(i, tg::TGDialect::kStateAttrName))
      h.cacheBytes += bytes;
    if (!function.getArgAttr(i, tg::TGDialect::kParamAttrName))
      continue;
    auto type = cast<RankedTensorType>(arg.getType());
    h.parameters += type.getNumElements();
    h.parameterBytes += bytes;
    if (type.getElementTypeBitWidth() < 32) {
      h.narrowParameters += type.getNumElements();
      h.narrowParameterBytes += bytes;
    }
  }
  return h;
}

} // namespace

llvm::Error tgc::runGenerationStats(MLIRContext &context,
                                    const ModelConfig &model,
                                    const GenerationStatsRequest &request) {
  llvm::Expected<GenerationProgram> program = buildGenerationProgram(
      context, model, request.input, request.prefillTokens);
  if (!program)
    return program.takeError();
  auto prefill = program->module->lookupSymbol<func::FuncOp>("prefill");
  auto decode = program->module->lookupSymbol<func::FuncOp>("decode");
  Holdings held = holdingsOf(decode);
  CallStats prefillStats = callStats(prefill, program->prefillTokens);
  CallStats decodeStats = callStats(decode, 1);
  std::string precision =
      tg::stringifyPrecision(model.training.precision).str();

  return writeOutputFile(request.output, [&](llvm::raw_ostream &os) {
    if (request.json) {
      auto call = [&](const CallStats &s, int64_t tokens) {
        return llvm::json::Object{
            {"tokens", tokens},
            {"flops", s.cost.flops},
            {"matmul_multiplications", s.cost.matmulMultiplications},
            {"weight_bytes_read", s.weightBytesRead},
            {"cache_bytes_read", held.cacheBytes},
        };
      };
      llvm::json::Object root{
          {"input", request.input},
          {"program", "generate"},
          {"model_type", model.modelType},
          {"precision", precision},
          {"cache_length", program->cacheLength},
          {"parameters", held.parameters},
          {"parameter_bytes", held.parameterBytes},
          {"narrow_parameters", held.narrowParameters},
          {"narrow_parameter_bytes", held.narrowParameterBytes},
          {"cache_bytes", held.cacheBytes},
          {"prefill", call(prefillStats, program->prefillTokens)},
          {"decode", call(decodeStats, 1)},
      };
      os << llvm::formatv("{0:2}", llvm::json::Value(std::move(root))) << "\n";
      return;
    }
    os << "Model        " << request.input << " (" << model.modelType
       << "), generation: a cache of " << program->cacheLength
       << " positions, prefill chunks of " << program->prefillTokens
       << " tokens, " << precision << "\n";
    os << "Parameters   " << withCommas(held.parameters);
    if (held.narrowParameters)
      os << " (the products' " << withCommas(held.narrowParameters) << " in "
         << (precision == "fp16-mixed" ? "f16" : "bf16") << ")";
    os << "\n\n";
    os << llvm::formatv(
        "{0,-30}{1,22}{2,22}\n", "One call",
        llvm::formatv("prefill ({0} tokens)", program->prefillTokens).str(),
        "decode (1 token)");
    os << llvm::formatv("{0,-30}{1,22}{2,22}\n", "matmul multiplications",
                        withCommas(prefillStats.cost.matmulMultiplications),
                        withCommas(decodeStats.cost.matmulMultiplications));
    os << llvm::formatv("{0,-30}{1,22}{2,22}\n", "FLOPs",
                        humanCount(prefillStats.cost.flops),
                        humanCount(decodeStats.cost.flops));
    os << llvm::formatv("{0,-30}{1,22}{2,22}\n", "weights read",
                        formatBytes(prefillStats.weightBytesRead),
                        formatBytes(decodeStats.weightBytesRead));
    os << llvm::formatv("{0,-30}{1,22}{2,22}\n", "KV caches read (whole)",
                        formatBytes(held.cacheBytes),
                        formatBytes(held.cacheBytes));
    os << "\nMemory\n";
    os << llvm::formatv("  {0,-28}{1,16}\n", "parameters",
                        formatBytes(held.parameterBytes));
    os << llvm::formatv("  {0,-28}{1,16}   ({2} positions, f32)\n", "KV caches",
                        formatBytes(held.cacheBytes), program->cacheLength);
  });
}
