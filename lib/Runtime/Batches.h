//===- Batches.h - feeding the compiled step --------------------*- C++ -*-===//
//
// The data set of a run (--data, with --eval-every's held-out 10%) and the
// batch each step reads, this process's slice of it in a data-parallel job.
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

/// Training data and, with --eval-every, the held-out last 10%.
struct Dataset {
  bool lm = true;
  TokenData tokens, evalTokens;
  TableData table, evalTable;
  std::string description() const {
    return lm ? tokens.description : table.description;
  }
};

Dataset loadData(const tgc_model_info &m, const Options &opt, uint64_t seed);

/// Writes batch `step` of the training (or held-out) data into the step's
/// input buffers.
void fillBatch(const tgc_model_info &m, const Dataset &d, StepBuffers &s,
               const Options &opt, uint64_t seed, int64_t step, bool eval);

} // namespace tgc::rt

#endif // TGC_RUNTIME_BATCHES_H
