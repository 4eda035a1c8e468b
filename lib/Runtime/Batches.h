//===- Batches.h - feeding the compiled step --------------------*- C++ -*-===//
//
// The data set of a run (--data, with --eval-every's held-out data: its
// last 10%, or --eval-data) and the batch each step reads, this process's
// slice of it in a data-parallel job.
//
//===----------------------------------------------------------------------===//
#ifndef TGC_RUNTIME_BATCHES_H
#define TGC_RUNTIME_BATCHES_H

#include "Buffers.h"
#include "Data.h"
#include "Options.h"

#include <cstdint>
#include <string>

namespace tgc::rt {

/// Training data and, with --eval-every, the held-out data: the last 10%
/// of the training data, or all of --eval-data (then the training data is
/// all of --data).
struct Dataset {
  bool lm = true;
  TokenData tokens, evalTokens;
  TableData table, evalTable;
  /// The training data, and the --eval-data file when there is one.
  std::string description() const {
    const std::string &held = lm ? evalTokens.description
                                 : evalTable.description;
    return (lm ? tokens.description : table.description) +
           (held.empty() ? "" : ", eval data " + held);
  }
};

Dataset loadData(const tgc_model_info &m, const Options &opt, uint64_t seed);

/// Writes batch `step` of the training (or held-out) data into the step's
/// input buffers.
void fillBatch(const tgc_model_info &m, const Dataset &d, StepBuffers &s,
               const Options &opt, uint64_t seed, int64_t step, bool eval);

} // namespace tgc::rt

#endif // TGC_RUNTIME_BATCHES_H
