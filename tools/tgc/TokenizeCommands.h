//===- TokenizeCommands.h - tgc tokenize / detokenize -----------*- C++ -*-===//
#ifndef TGC_TOOLS_TGC_TOKENIZECOMMANDS_H
#define TGC_TOOLS_TGC_TOKENIZECOMMANDS_H

#include "llvm/Support/CommandLine.h"

namespace tgc {
/// The options of `tgc tokenize` and `tgc detokenize`.
llvm::cl::OptionCategory &tokenizerCategory();
/// Whether the command line named one of the two subcommands.
bool tokenizeCommandGiven();
/// Runs it; the process exit status.
int runTokenizeCommand();
} // namespace tgc

#endif // TGC_TOOLS_TGC_TOKENIZECOMMANDS_H
