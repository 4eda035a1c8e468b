//===- Main.cpp - the training executable around a compiled step ---------===//
//
// Linked into every executable `tgc MODEL -o EXE` produces: checks the job,
// binds the buffers the compiled `tgc_train_step` describes (tgc_model),
// loads weights and data, trains, and saves. The pieces: Options (flags),
// Buffers, Checkpoints, Batches, Trainer. SIGINT or SIGTERM ends the run
// after its step in progress, saved, with status 128 + the signal's number.
// See docs/runtime.md.
//
//===----------------------------------------------------------------------===//

#include "Adapters.h"
#include "Batches.h"
#include "Buffers.h"
#include "Checkpoints.h"
#include "Distributed.h"
#include "Fatal.h"
#include "Options.h"
#include "TileState.h"
#include "Trainer.h"
#include "tgc/Runtime/ABI.h"

#include <malloc.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

using namespace tgc::rt;

/// A data-parallel job runs one program: every process must have the same
/// executable (its step's buffer table) and the same settings, or their
/// collectives would mix different things. Only rank 0 writes (logs,
/// checkpoints, dumps, progress): the others' parameters are the same.
static void checkJob(Options &opt) {
  if (tgc_dist_size() == 1)
    return;
  uint64_t hash = 1469598103934665603ull; // FNV-1a
  auto mixBytes = [&](const void *data, size_t n) {
    for (size_t i = 0; i < n; ++i) {
      hash ^= static_cast<const unsigned char *>(data)[i];
      hash *= 1099511628211ull;
    }
  };
  auto mixString = [&](const std::string &text) {
    mixBytes(text.data(), text.size() + 1);
  };
  const tgc_model_info &m = tgc_model;
  for (int i = 0; i < m.num_buffers; ++i) {
    const tgc_buffer_info &b = m.buffers[i];
    mixString(b.name);
    mixBytes(&b.role, sizeof b.role);
    mixBytes(&b.dtype, sizeof b.dtype);
    mixBytes(b.shape, sizeof(int64_t) * b.rank);
  }
  mixBytes(&m.batch_size, sizeof m.batch_size);
  mixBytes(&m.seq_len, sizeof m.seq_len);
  for (const std::string *text :
       {&opt.data, &opt.evalData, &opt.init, &opt.resume, &opt.initAdapter})
    mixString(*text);
  mixBytes(&opt.seed, sizeof opt.seed);
  mixBytes(&opt.lr, sizeof opt.lr);
  mixBytes(&opt.steps, sizeof opt.steps);
  // Evaluation runs the step (and its collectives) on every process.
  mixBytes(&opt.evalEvery, sizeof opt.evalEvery);
  mixBytes(&opt.order, sizeof opt.order);
  if (!tgc_dist_all_equal(hash))
    die("the processes of this job run different executables or settings "
        "(model, batch, data, --data-order, --init/--resume/--init-adapter, "
        "--seed, --lr, --steps, --eval-every): start every rank with the same "
        "command");
  if (tgc_dist_rank() != 0) {
    // --save stays: with ZeRO every process sends its shards.
    opt.quiet = true;
    opt.log.clear();
    opt.writes = false;
    opt.dumpGrads.clear();
  }
}

// libomp (linked into every executable) runs the matmuls' parallel tiles.
extern "C" void omp_set_num_threads(int);

int main(int argc, char **argv) {
  if (argc > 0)
    setProgramName(argv[0]);
  requestTileState();
  tgc_dist_init(&argc, &argv);
  Options opt = parseOptions(argc, argv);
  checkJob(opt);
  if (opt.threads > 0)
    omp_set_num_threads(static_cast<int>(opt.threads));
  // The compiled step allocates its intermediates afresh each call: keep
  // freed blocks in the heap instead of returning them to the kernel, so
  // later steps reuse mapped pages instead of faulting them in again.
  mallopt(M_MMAP_THRESHOLD, 1 << 30);
  mallopt(M_TRIM_THRESHOLD, 1 << 30);
  const tgc_model_info &m = tgc_model;
  uint64_t seed = opt.seedGiven ? opt.seed : m.seed;
  double lr = opt.lr > 0 ? opt.lr : m.lr;
  int64_t steps = opt.steps >= 0 ? opt.steps : m.steps;

  StepBuffers buffers;
  bindBuffers(m, buffers);
  // mpirun's environment says how many processes it started, also to an
  // executable without MPI (which would otherwise train N separate models).
  int processes = tgc_dist_size();
  for (const char *name : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE"})
    if (const char *value = std::getenv(name))
      processes = std::max(processes, std::atoi(value));
  if (processes > 1 && buffers.dpWeight < 0)
    die("started as one of " + std::to_string(processes) +
        " processes, but this executable was compiled without "
        "--data-parallel: its gradients would not be summed (compile it with "
        "tgc --data-parallel)");
  bool shardsParameters =
      std::any_of(buffers.params.begin(), buffers.params.end(),
                  [&](int i) { return m.buffers[i].shard_numel > 0; });
  if (m.zero_processes > 0 && processes != m.zero_processes)
    die(std::string("this executable was compiled with --zero=") +
        (shardsParameters ? "3" : "1") + " --processes=" +
        std::to_string(m.zero_processes) + " (its " +
        (shardsParameters ? "parameters and optimizer state are"
                          : "optimizer state is") +
        " sharded " + std::to_string(m.zero_processes) + " ways) but runs as " +
        std::to_string(processes) + " process" + (processes == 1 ? "" : "es") +
        ": start it with mpirun -np " + std::to_string(m.zero_processes) +
        ", or compile it for " + std::to_string(processes));
  int64_t firstStep = loadWeights(buffers, opt, seed);
  upload(buffers, buffers.params);
  upload(buffers, buffers.states);
  Dataset data = loadData(m, opt, seed);
  Trainer trainer(m, buffers, data, opt, seed, lr);
  int64_t done = trainer.run(firstStep, steps);
  if (!opt.save.empty())
    saveCheckpoint(m, buffers, opt.save, firstStep + done, opt.saveDtype,
                   opt.writes);
  if (!opt.mergeTo.empty())
    writeMergedWeights(m, buffers, opt.mergeTo, firstStep + done, opt.saveDtype,
                       opt.writes);
  if (int signo = trainer.stoppedBy(); signo && tgc_dist_rank() == 0) {
    std::string saved = opt.save.empty() ? ""
                                         : "; " + opt.save + " holds step " +
                                               std::to_string(firstStep + done);
    std::fprintf(stderr, "%s: %s: stopped after step %lld of %lld%s\n",
                 programName(), signo == SIGINT ? "SIGINT" : "SIGTERM",
                 (long long)(firstStep + done), (long long)(firstStep + steps),
                 saved.c_str());
  }
  trainer.printSummary();
  tgc_dist_finalize();
  // As a shell reports a process the signal ended: 130 for SIGINT, 143 for
  // SIGTERM (also when it came after the last step).
  int signo = trainer.stoppedBy() ? trainer.stoppedBy() : caughtStopSignal();
  return signo ? 128 + signo : 0;
}
