//===- StatsReport.cpp - printing `tgc stats` -----------------------------===//

#include "tgc/Driver/StatsReport.h"

#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"

using namespace tgc;
using mlir::tg::TrainingStats;

namespace {

/// 124439808 → "124,439,808".
std::string withCommas(int64_t n) {
  std::string digits = std::to_string(n), out;
  int count = 0;
  for (auto it = digits.rbegin(); it != digits.rend(); ++it) {
    if (count && count % 3 == 0 && *it != '-')
      out.insert(out.begin(), ',');
    out.insert(out.begin(), *it);
    ++count;
  }
  return out;
}

std::string humanBytes(int64_t bytes) {
  const char *units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(bytes);
  int u = 0;
  while (v >= 1024 && u < 4) {
    v /= 1024;
    ++u;
  }
  return llvm::formatv("{0:F2} {1}", v, units[u]).str();
}

std::string humanCount(int64_t n) {
  double v = static_cast<double>(n);
  if (v >= 1e12)
    return llvm::formatv("{0:F2} T", v / 1e12).str();
  if (v >= 1e9)
    return llvm::formatv("{0:F2} G", v / 1e9).str();
  if (v >= 1e6)
    return llvm::formatv("{0:F2} M", v / 1e6).str();
  return withCommas(n);
}

} // namespace

void tgc::printStatsTable(llvm::raw_ostream &os, const StatsContext &c,
                          const TrainingStats &s) {
  os << "Model        " << c.input;
  if (!c.modelType.empty())
    os << " (" << c.modelType << "), batch " << c.batchSize << " x seq "
       << c.seqLen << ", " << c.dtype << ", " << c.optimizer;
  os << "\n";
  os << "Parameters   " << withCommas(s.parameters) << "\n\n";
  os << llvm::formatv("{0,-30}{1,22}{2,22}{3,22}\n", "One training step", "forward",
                      "backward", "optimizer");
  os << llvm::formatv("{0,-30}{1,22}{2,22}{3,22}\n", "matmul multiplications",
                      withCommas(s.forward.matmulMultiplications),
                      withCommas(s.backward.matmulMultiplications), "-");
  os << llvm::formatv("{0,-30}{1,22}{2,22}{3,22}\n", "FLOPs",
                      humanCount(s.forward.flops), humanCount(s.backward.flops),
                      humanCount(s.optimizer.flops));
  os << "\nMemory\n";
  os << llvm::formatv("  {0,-28}{1,16}\n", "parameters", humanBytes(s.parameterBytes));
  os << llvm::formatv("  {0,-28}{1,16}\n", "gradients", humanBytes(s.parameterBytes));
  os << llvm::formatv("  {0,-28}{1,16}\n", "optimizer state",
                      humanBytes(s.optimizerStateBytes));
  os << llvm::formatv("  {0,-28}{1,16}   ({2} elements)\n", "saved activations",
                      humanBytes(s.savedActivationBytes),
                      withCommas(s.savedActivationElements));
}

void tgc::printStatsJson(llvm::raw_ostream &os, const StatsContext &c,
                         const TrainingStats &s) {
  llvm::json::Object root{
      {"input", c.input},
      {"parameters", s.parameters},
      {"matmul_multiplications",
       llvm::json::Object{{"forward", s.forward.matmulMultiplications},
                          {"backward", s.backward.matmulMultiplications}}},
      {"flops", llvm::json::Object{{"forward", s.forward.flops},
                                   {"backward", s.backward.flops},
                                   {"optimizer", s.optimizer.flops}}},
      {"memory", llvm::json::Object{{"parameters", s.parameterBytes},
                                    {"gradients", s.parameterBytes},
                                    {"optimizer_state", s.optimizerStateBytes},
                                    {"saved_activations", s.savedActivationBytes}}},
      {"saved_activation_elements", s.savedActivationElements},
  };
  if (!c.modelType.empty()) {
    root["model_type"] = c.modelType;
    root["batch_size"] = c.batchSize;
    root["seq_len"] = c.seqLen;
    root["dtype"] = c.dtype;
    root["optimizer"] = c.optimizer;
  }
  os << llvm::formatv("{0:2}", llvm::json::Value(std::move(root))) << "\n";
}
