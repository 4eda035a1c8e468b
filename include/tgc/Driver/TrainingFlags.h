//===- TrainingFlags.h - command-line overrides of "training" ---*- C++ -*-===//
#ifndef TGC_DRIVER_TRAININGFLAGS_H
#define TGC_DRIVER_TRAININGFLAGS_H

#include "tgc/Frontend/ModelConfig.h"
#include "tgc/Pipelines/Pipelines.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/CommandLine.h"

#include <string>

namespace tgc {

/// The parser of an enum flag (cl::opt<T, false, EnumFlagParser<T>>): an
/// unknown value's error lists the accepted ones.
template <typename T> class EnumFlagParser : public llvm::cl::parser<T> {
public:
  using llvm::cl::parser<T>::parser;

  bool parse(llvm::cl::Option &option, llvm::StringRef argName,
             llvm::StringRef arg, T &value) {
    (void)argName;
    std::string expected;
    for (auto [i, info] : llvm::enumerate(this->Values)) {
      if (info.Name == arg) {
        value = info.V.getValue();
        return false;
      }
      if (i)
        expected += i + 1 == this->Values.size() ? " or " : ", ";
      expected += info.Name;
    }
    return option.error("unknown value '" + arg + "' (expected " + expected +
                        ")");
  }
};

/// The --help category of the training flags.
llvm::cl::OptionCategory &trainingFlagsCategory();

/// Applies the training flags given on the command line (they win over the
/// model file's "training" object) and re-validates the configuration.
llvm::Error applyTrainingFlags(ModelConfig &config);

/// Same, for inputs that carry no model file (tg IR).
llvm::Error applyTrainingFlags(TrainingConfig &training);

/// Checks --remat and --memory-budget (also done by applyTrainingFlags for
/// model files).
llvm::Error checkRematFlags(const TrainingConfig &training);

/// The training-graph pipeline options for these settings.
void setTrainingGraphOptions(TrainingGraphOptions &options,
                             const TrainingConfig &training);

} // namespace tgc

#endif // TGC_DRIVER_TRAININGFLAGS_H
