//===- GenerateOptions.h - the generation executable's flags ----*- C++ -*-===//
//
// The command line of an executable `tgc MODEL --program=generate -o EXE`
// produces (docs/runtime.md, Generation executables).
//
//===----------------------------------------------------------------------===//
#ifndef TGC_RUNTIME_GENERATE_GENERATEOPTIONS_H
#define TGC_RUNTIME_GENERATE_GENERATEOPTIONS_H

#include "tgc/Runtime/GenerateABI.h"

#include <cstdint>
#include <string>

namespace tgc::rt {

struct GenerateOptions {
  std::string init, tokenizer;
  /// Where the prompt comes from: exactly one of --prompt TEXT, --prompt-ids
  /// "1 2 3" and --prompt-file FILE (its text is read into `prompt`).
  enum class PromptKind { None, Text, Ids, File } promptKind = PromptKind::None;
  std::string prompt, promptFile;
  int64_t maxNewTokens = 64;
  double temperature = 1.0; // 0: greedy
  int64_t topK = 0;         // 0: off
  double topP = 1.0;        // in (0, 1]; 1: off
  bool seedGiven = false;
  uint64_t seed = 0;
  bool printIds = false;
  /// --dump-logits FILE: each sampled step's logits (f32, vocab_size each,
  /// before the soft cap), appended in order.
  std::string dumpLogits;
  bool quiet = false;
  int64_t threads = 0; // 0: OpenMP's default
};

/// Parses the command line; a bad flag or value stops the program with a
/// message naming it. --help prints the usage and exits.
GenerateOptions parseGenerateOptions(int argc, char **argv,
                                     const tgc_generate_info &m);

} // namespace tgc::rt

#endif // TGC_RUNTIME_GENERATE_GENERATEOPTIONS_H
