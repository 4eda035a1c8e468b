//===- Trainer.h - the training loop ----------------------------*- C++ -*-===//
//
// Runs the compiled step over the data: each step's batch, its loss and
// gradient norm checked, the updated parameters swapped in, progress, the
// --log records, periodic checkpoints and evaluation, and the summary.
// SIGINT and SIGTERM stop it after the step in progress.
//
//===----------------------------------------------------------------------===//
#ifndef TGC_RUNTIME_TRAINER_H
#define TGC_RUNTIME_TRAINER_H

#include "Batches.h"
#include "Buffers.h"
#include "Options.h"
#include "StopSignals.h"

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

namespace tgc::rt {

/// The training loop's state and its progress output.
class Trainer {
public:
  Trainer(const tgc_model_info &m, StepBuffers &s, const Dataset &d,
          const Options &opt, uint64_t seed, double lr)
      : m(m), s(s), d(d), opt(opt), seed(seed), lr(lr) {}
  ~Trainer();

  /// Runs up to `steps` steps and returns how many it ran: fewer when
  /// SIGINT or SIGTERM asked it to stop (stoppedBy()). Each --log record is
  /// flushed as its step finishes.
  int64_t run(int64_t firstStep, int64_t steps);
  /// The signal that stopped run() early, or 0. A data-parallel job agrees
  /// on it (and so on the last step) in every step's loss sum.
  int stoppedBy() const { return stopSignal; }
  /// Every process takes part (the peak RSS is the job's largest).
  void printSummary() const;

private:
  void runStep(int64_t step, void **args);
  /// Whether a stop signal ended the step just run (sets stopSignal).
  bool stopRequested();
  double evaluate();
  /// "; not finite: the gradients of a, b (and N more)" from the step's
  /// per-gradient sums of squares, when it returns them.
  std::string nonFiniteGradients() const;
  /// The loss scale the step computed for the next one.
  float newLossScale() const;
  /// The updated parameters and state become the next step's inputs.
  void swapUpdates();

  const tgc_model_info &m;
  StepBuffers &s;
  const Dataset &d;
  const Options &opt;
  uint64_t seed;
  double lr;
  // Evaluation runs the step without keeping its update: with in-place
  // updates, into scratch buffers (allocated on the first evaluation).
  std::vector<void *> scratch, scratchDevice;
  std::vector<double> times;
  // Per step: time blocked in the step's collectives, and their time from
  // start to end (communication hidden behind compute = the difference).
  std::vector<double> waitMs, inFlightMs;
  double rssBeforeStepsMiB = 0, lastLoss = NAN, lastEvalLoss = NAN;
  int64_t lastSavedStep = 0; // the step of the last --save-every checkpoint
  int64_t lastEvalStep = 0;
  int stopSignal = 0;
};

} // namespace tgc::rt

#endif // TGC_RUNTIME_TRAINER_H
