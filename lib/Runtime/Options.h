//===- Options.h - the training executable's flags --------------*- C++ -*-===//
//
// The command line of an executable `tgc MODEL -o EXE` produces; the
// compiled step's own settings (batch, steps, lr, seed) are its defaults.
//
//===----------------------------------------------------------------------===//
#ifndef TGC_RUNTIME_OPTIONS_H
#define TGC_RUNTIME_OPTIONS_H

#include "Data.h"
#include "Flags.h"
#include "tgc/Runtime/SafeTensors.h"

#include <cstdint>
#include <string>

namespace tgc::rt {

struct Options {
  std::string data, init, save, resume, dumpGrads, log;
  /// --tokenizer: a tokenizer.json (or its directory) that turns --data's
  /// text into ids.
  std::string tokenizer;
  /// --eval-data: the held-out data of --eval-every, read as --data is;
  /// all of --data then trains. Empty: the last 10% of --data is held out.
  std::string evalData;
  /// LoRA executables (tgc --lora-r): --init-adapter, adapters PEFT or
  /// --save wrote; --merge-to, the base weights merged with the adapters,
  /// written at the end.
  std::string initAdapter, mergeTo;
  /// --save-dtype: f32 saves a checkpoint to resume from; bf16/f16 export
  /// the parameters alone, for inference.
  DType saveDtype = DType::F32;
  int64_t steps = -1;
  bool seedGiven = false;
  uint64_t seed = 0;
  double lr = -1;
  DataOrder order = DataOrder::Sequential;
  int64_t evalEvery = 0;
  int64_t saveEvery = 0; // also write --save every N steps
  int64_t threads = 0;   // 0: OpenMP's default (OMP_NUM_THREADS or every core)
  bool quiet = false;
  /// This process writes checkpoints (rank 0; the others take part in
  /// gathering ZeRO-1 state shards).
  bool writes = true;
};


/// Parses the command line; a bad flag stops the program with a message
/// naming it. --help prints the usage and exits.
Options parseOptions(int argc, char **argv);


} // namespace tgc::rt

#endif // TGC_RUNTIME_OPTIONS_H
