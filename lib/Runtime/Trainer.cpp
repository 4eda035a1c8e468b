//===- Trainer.cpp - the training loop ------------------------------------===//

#include "Trainer.h"
#include "Checkpoints.h"
#include "Device.h"
#include "Distributed.h"
#include "Fatal.h"
#include "StopSignals.h"
#include "tgc/Runtime/Json.h"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>

using namespace tgc::rt;

/// A loss scale in messages.
static std::string formatScale(float scale) {
  char text[32];
  std::snprintf(text, sizeof text, "%.9g", scale);
  return text;
}

/// A loss scale in the log: whole scales (powers of two times a whole
/// first scale) in full, so that a reader gets the very value.
static void writeLossScale(json::Writer &w, float scale) {
  if (scale >= 1.0f && scale < 1e15f && std::floor(scale) == scale)
    w.integer(static_cast<int64_t>(scale));
  else
    w.number(scale, 9);
}

static double peakRssMiB() {
  struct rusage usage;
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_maxrss / 1024.0;
}

Trainer::~Trainer() {
  for (size_t k = 0; k < scratch.size(); ++k) {
    if (scratchDevice[k] != scratch[k])
      tgc_device_free(scratchDevice[k]);
    std::free(scratch[k]);
  }
}

void Trainer::runStep(int64_t step, void **args) {
  *static_cast<float *>(s.buffers[s.lr].data) = static_cast<float>(lr);
  *static_cast<float *>(s.buffers[s.step].data) = static_cast<float>(step + 1);
  upload(s.buffers[s.lr]);
  upload(s.buffers[s.step]);
  tgc_train_step(args);
  tgc_device_synchronize();
  download(s.buffers[s.loss]);
  download(s.buffers[s.norm]);
  if (s.auxLoss >= 0)
    download(s.buffers[s.auxLoss]);
  if (s.dpWeight >= 0 && tgc_dist_size() > 1) {
    // Each process's loss is its own slice's: the job's is their
    // weighted sum (the gradients were summed inside the step). The same
    // sum counts the processes that caught SIGINT or SIGTERM, so that all
    // stop after the same step (none waits in a collective for the others).
    float *loss = static_cast<float *>(s.buffers[s.loss].data);
    int caught = caughtStopSignal();
    double weight = static_cast<double>(s.scalar(s.dpWeight));
    float *aux = s.auxLoss >= 0
                     ? static_cast<float *>(s.buffers[s.auxLoss].data)
                     : nullptr;
    double global[4] = {*loss * weight, caught == SIGINT ? 1.0 : 0.0,
                        caught == SIGTERM ? 1.0 : 0.0,
                        aux ? *aux * weight : 0.0};
    tgc_dist_sum(global, 4);
    *loss = static_cast<float>(global[0]);
    if (aux)
      *aux = static_cast<float>(global[3]);
    if (!stopSignal && (global[1] > 0 || global[2] > 0))
      stopSignal = global[2] > 0 ? SIGTERM : SIGINT;
  }
}

bool Trainer::stopRequested() {
  // One process reads its own flag; a job's processes take the signal the
  // step's loss sum agreed on (runStep).
  if (tgc_dist_size() == 1)
    stopSignal = caughtStopSignal();
  return stopSignal != 0;
}

std::string Trainer::nonFiniteGradients() const {
  std::vector<std::string> names;
  for (int i : s.gradSumSquares) {
    download(s.buffers[i]);
    if (!std::isfinite(*static_cast<const double *>(s.buffers[i].data)))
      names.push_back(std::string(s.buffers[i].info->name)
                          .substr(std::strlen("grad_sumsq.")));
  }
  if (names.empty())
    return "";
  std::string text = "; not finite: the gradients of ";
  const size_t shown = 5;
  for (size_t k = 0; k < names.size() && k < shown; ++k)
    text += (k ? ", " : "") + names[k];
  if (names.size() > shown)
    text += " (and " + std::to_string(names.size() - shown) + " more of " +
            std::to_string(s.gradSumSquares.size()) + ")";
  return text;
}

float Trainer::newLossScale() const {
  for (size_t k = 0; k < s.states.size(); ++k)
    if (s.states[k] == s.lossScale) {
      download(s.buffers[s.newStates[k]]);
      return s.scalar(s.newStates[k]);
    }
  return 1.0f;
}

double Trainer::evaluate() {
  std::vector<void *> evalPointers = s.pointers;
  if (s.inPlace) {
    std::vector<int> updated(s.newParams);
    updated.insert(updated.end(), s.newStates.begin(), s.newStates.end());
    for (size_t k = 0; k < updated.size(); ++k) {
      int i = updated[k];
      if (scratch.size() <= k) {
        scratch.push_back(
            allocateAligned(s.buffers[i].bytes, "evaluation buffers"));
        scratchDevice.push_back(
            tgc_device_alloc(s.buffers[i].bytes, scratch.back()));
      }
      evalPointers[i] = scratchDevice[k];
    }
  }
  double total = 0;
  int batches = 4;
  for (int k = 0; k < batches; ++k) {
    fillBatch(m, d, s, opt, seed, k, /*eval=*/true);
    runStep(0, evalPointers.data());
    total += s.scalar(s.loss);
  }
  double waiting, inFlight; // not the training steps' figures
  int64_t count;
  tgc_dist_take_times(&waiting, &inFlight, &count);
  return total / batches;
}

void Trainer::swapUpdates() {
  if (s.inPlace)
    return;
  auto swapBuffers = [&](int a, int b) {
    std::swap(s.buffers[a].data, s.buffers[b].data);
    std::swap(s.buffers[a].device, s.buffers[b].device);
    s.pointers[a] = s.buffers[a].device;
    s.pointers[b] = s.buffers[b].device;
  };
  for (auto [param, updated] : s.paramUpdates)
    swapBuffers(param, updated);
  for (size_t k = 0; k < s.states.size(); ++k)
    swapBuffers(s.states[k], s.newStates[k]);
}

int64_t Trainer::run(int64_t firstStep, int64_t steps) {
  catchStopSignals();
  std::FILE *log = nullptr;
  if (!opt.log.empty() && !(log = std::fopen(opt.log.c_str(), "w")))
    die(opt.log + ": cannot write: " + std::strerror(errno));
  bool tty = isatty(STDERR_FILENO) && !opt.quiet;
  if (!opt.quiet)
    std::fprintf(
        stderr,
        "%s: %s, batch %lld x seq %lld, %lld steps from step %lld, data %s\n",
        programName(), m.model_type, (long long)m.batch_size,
        (long long)m.seq_len, (long long)steps, (long long)firstStep,
        d.description().c_str());
  if (!opt.quiet && *tgc_device_description())
    std::fprintf(stderr, "%s: on %s\n", programName(),
                 tgc_device_description());
  if (!opt.quiet && *tgc_dist_description())
    std::fprintf(stderr,
                 "%s: data parallel over %s, global batch %lld (%lld per "
                 "process)\n",
                 programName(), tgc_dist_description(),
                 (long long)(m.batch_size * tgc_dist_size()),
                 (long long)m.batch_size);

  // Weights, state, data and the program: what the steps add is the plan's.
  rssBeforeStepsMiB = peakRssMiB();
  int64_t tokensPerStep = m.batch_size * m.seq_len * tgc_dist_size();
  int64_t every = std::max<int64_t>(1, steps / 20);
  int64_t done = 0;
  for (int64_t step = firstStep; step < firstStep + steps; ++step) {
    // Asked during the last step's evaluation: no further step.
    if (done && stopRequested())
      break;
    fillBatch(m, d, s, opt, seed, step, /*eval=*/false);
    // The scale this step's loss is multiplied by (its state is updated in
    // the step).
    if (s.lossScale >= 0)
      download(s.buffers[s.lossScale]);
    float scale = s.lossScale >= 0 ? s.scalar(s.lossScale) : 1.0f;
    auto t0 = std::chrono::steady_clock::now();
    runStep(s.updatesApplied, s.pointers.data());
    auto t1 = std::chrono::steady_clock::now();
    double ms = std::chrono::duration<double, std::milli>(t1 - t0).count();
    times.push_back(ms);
    double waiting = 0, inFlight = 0;
    int64_t collectives = 0;
    tgc_dist_take_times(&waiting, &inFlight, &collectives);
    waitMs.push_back(waiting * 1000);
    inFlightMs.push_back(inFlight * 1000);
    float loss = s.scalar(s.loss);
    float norm = s.scalar(s.norm);
    lastLoss = loss;
    // With dynamic loss scaling, gradients that overflow (a finite loss, a
    // norm that is not) are expected now and then: the step skipped its
    // update and halved the scale. A static scale (it did not change) or
    // one below 1 does not explain them: stop, with the weights of the
    // step before (the skip flag guarded the in-place update). So does a
    // non-finite norm in a step guarded without loss scaling.
    bool scaled = s.lossScale >= 0;
    float nextScale = scaled ? newLossScale() : 1.0f;
    bool skipped = scaled && std::isfinite(loss) && !std::isfinite(norm) &&
                   scale >= 1.0f && nextScale < scale;
    if (skipped && !opt.quiet)
      std::fprintf(stderr,
                   "%sstep %lld: gradients overflowed at loss scale %g: update "
                   "skipped, scale now %g\n",
                   isatty(STDERR_FILENO) ? "\n" : "", (long long)(step + 1),
                   scale, nextScale);
    if (!skipped && (!std::isfinite(loss) || !std::isfinite(norm))) {
      std::string kept = lastSavedStep ? "; " + opt.save + " holds step " +
                                             std::to_string(lastSavedStep)
                                       : "";
      // The step skipped its updates when its norm was not finite.
      std::string weightsKept =
          "the step skipped its update: the weights are those of step " +
          std::to_string(step);
      std::string guard;
      if (scaled && std::isfinite(loss))
        guard = " at loss scale " + formatScale(scale) +
                " (not an overflow of dynamic loss scaling; " + weightsKept +
                ")";
      else if (s.guarded() && !std::isfinite(norm))
        guard = " (" + weightsKept + ")";
      die(std::string(std::isfinite(loss) ? "the gradient norm" : "the loss") +
          " became " + std::to_string(std::isfinite(loss) ? norm : loss) +
          " at step " + std::to_string(step + 1) + guard + " (lower --lr?)" +
          kept + nonFiniteGradients());
    }
    if (!skipped)
      ++s.updatesApplied;
    if (step == firstStep && !opt.dumpGrads.empty())
      dumpGradients(s, opt.dumpGrads);
    swapUpdates();

    done = step - firstStep + 1;
    double tokPerS = tokensPerStep / (ms / 1000.0);
    if (log) {
      json::Writer record(json::Writer::Spaced);
      record.beginObject();
      record.key("step").integer(step + 1);
      record.key("loss").fixed(loss, 6);
      record.key("grad_norm").fixed(norm, 6);
      if (s.auxLoss >= 0)
        record.key("aux_loss").fixed(s.scalar(s.auxLoss), 6);
      record.key("ms").fixed(ms, 3);
      record.key("tokens_per_s").fixed(tokPerS, 1);
      if (s.lossScale >= 0) {
        writeLossScale(record.key("loss_scale"), scale);
        if (skipped)
          record.key("skipped").boolean(true);
      }
      record.endObject();
      std::fprintf(log, "%s\n", record.str().c_str());
      std::fflush(log); // a run watched, or killed, has every step so far
    }
    // SIGINT or SIGTERM: this step is the last; main saves it.
    bool last = stopRequested();
    // The last step's checkpoint is main's (after the summary's figures).
    if (!last && opt.saveEvery && (step + 1) % opt.saveEvery == 0 &&
        step + 1 < firstStep + steps) {
      saveCheckpoint(m, s, opt.save, step + 1, opt.saveDtype, opt.writes);
      lastSavedStep = step + 1;
    }
    if (!last && opt.evalEvery && (step + 1) % opt.evalEvery == 0) {
      double evalLoss = evaluate();
      lastEvalLoss = evalLoss;
      lastEvalStep = step + 1;
      if (!opt.quiet)
        std::fprintf(stderr, "%sstep %lld eval loss %.4f\n", tty ? "\n" : "",
                     (long long)(step + 1), evalLoss);
      if (log) {
        json::Writer record(json::Writer::Spaced);
        record.beginObject();
        record.key("step").integer(step + 1);
        record.key("eval_loss").fixed(evalLoss, 6);
        record.endObject();
        std::fprintf(log, "%s\n", record.str().c_str());
        std::fflush(log);
      }
    }
    if (!opt.quiet &&
        (tty || done % every == 0 || done == steps || done == 1 || last)) {
      double mean = 0;
      for (double t : times)
        mean += t;
      mean /= times.size();
      double eta = mean * (steps - done) / 1000.0;
      std::fprintf(
          stderr,
          "%sstep %lld/%lld loss %.4f grad_norm %.3f %.0f tok/s ETA %.0fs%s",
          tty ? "\r" : "", (long long)(step + 1),
          (long long)(firstStep + steps), loss, norm, tokPerS, eta,
          tty ? "   " : "\n");
    }
    if (last)
      break;
  }
  if (tty)
    std::fprintf(stderr, "\n");
  if (log && std::fclose(log) != 0)
    die(opt.log + ": cannot write: " + std::strerror(errno));
  return done;
}

void Trainer::printSummary() const {
  // Collective first: every process calls it, quiet or not.
  double peakRss[1] = {peakRssMiB()};
  tgc_dist_max(peakRss, 1);
  if (opt.quiet || times.empty())
    return;
  std::vector<double> sorted = times;
  std::sort(sorted.begin(), sorted.end());
  double mean = 0;
  for (double t : times)
    mean += t;
  mean /= times.size();
  int64_t tokensPerStep = m.batch_size * m.seq_len * tgc_dist_size();
  // The last step's loss is that of one training batch (noisy); the
  // held-out loss, when --eval-every ran, is the one to judge training by.
  char evalSummary[96] = "";
  if (lastEvalStep)
    std::snprintf(evalSummary, sizeof evalSummary,
                  ", held-out eval loss %.4f (step %lld)", lastEvalLoss,
                  (long long)lastEvalStep);
  // On a GPU: the device and the device memory in use.
  char deviceSummary[512] = "";
  if (*tgc_device_description())
    std::snprintf(deviceSummary, sizeof deviceSummary,
                  "; on %s, %.1f MiB of device memory in use",
                  tgc_device_description(),
                  tgc_device_bytes_in_use() / (1024.0 * 1024.0));
  // Data parallel: processes, and how much communication the backward
  // pass hid (medians per step).
  char distSummary[256] = "";
  if (*tgc_dist_description()) {
    auto median = [](std::vector<double> v) {
      std::sort(v.begin(), v.end());
      return v.empty() ? 0.0 : v[v.size() / 2];
    };
    double waiting = median(waitMs), inFlight = median(inFlightMs);
    std::snprintf(distSummary, sizeof distSummary,
                  "; %s (peak RSS of the largest), collectives in flight "
                  "%.2f ms/step of which %.2f waited for (%.0f%% hidden)",
                  tgc_dist_description(), inFlight, waiting,
                  inFlight > 0 ? 100.0 * (1 - waiting / inFlight) : 0.0);
  }
  std::fprintf(stderr,
               "done: %zu steps, mean %.2f ms/step (median %.2f), %.0f tok/s, "
               "train loss of the last step's batch %.4f%s, "
               "peak RSS %.1f MiB (%.1f MiB before the first step; planned "
               "arena %.1f MiB%s)%s\n",
               times.size(), mean, sorted[sorted.size() / 2],
               tokensPerStep / (sorted[sorted.size() / 2] / 1000.0), lastLoss,
               evalSummary, peakRss[0], rssBeforeStepsMiB,
               m.arena_bytes / (1024.0 * 1024.0), deviceSummary, distSummary);
}
