//===- Main.cpp - the training executable around a compiled step ---------===//
//
// Linked into every executable `tgc MODEL -o EXE` produces: allocates the
// buffers the compiled `tgc_train_step` describes (tgc_model), initialises
// or loads weights, feeds batches, swaps parameters/state with their updated
// copies after each step, and logs, saves and dumps. See docs/runtime.md.
//
//===----------------------------------------------------------------------===//

#include "Data.h"
#include "tgc/Runtime/ABI.h"
#include "tgc/Runtime/SafeTensors.h"

#include <malloc.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <vector>

using namespace tgc::rt;

namespace {

const char *kProgram = "train";

[[noreturn]] void die(const std::string &message) {
  std::fprintf(stderr, "%s: error: %s\n", kProgram, message.c_str());
  std::exit(1);
}

struct Options {
  std::string data, init, save, resume, dumpGrads, log;
  int64_t steps = -1;
  bool seedGiven = false;
  uint64_t seed = 0;
  double lr = -1;
  DataOrder order = DataOrder::Sequential;
  int64_t evalEvery = 0;
  int64_t threads = 0; // 0: OpenMP's default (OMP_NUM_THREADS or every core)
  bool quiet = false;
};

void usage() {
  std::printf(
      "usage: %s [options]\n\n"
      "Trains the compiled model (%s, batch %lld x seq %lld, %s).\n\n"
      "  --data FILE            training data: a text file (read as bytes) or a .bin of\n"
      "                         uint16 token ids for language models; CSV rows\n"
      "                         'label,f1,...' for the MLP. Default: /usr/share/common-\n"
      "                         licenses/GPL-3 (language models) or a synthetic data set (MLP)\n"
      "  --steps N              training steps (default %lld)\n"
      "  --seed S               seed of weight init and random data order (default %llu)\n"
      "  --lr X                 learning rate (default %g)\n"
      "  --init FILE            load weights by Hugging Face name (.safetensors)\n"
      "  --save FILE            save weights and optimizer state at the end (.safetensors,\n"
      "                         written atomically; state as 'optimizer.<name>')\n"
      "  --resume FILE          continue from a file --save wrote (same losses as an\n"
      "                         uninterrupted run)\n"
      "  --dump-grads FILE      write the first step's gradients by parameter name\n"
      "  --data-order ORDER     sequential (default) or random\n"
      "  --eval-every N         every N steps, report the loss on held-out data (the last\n"
      "                         10%% of the data)\n"
      "  --log FILE             one JSON object per step (step, loss, grad_norm, ms, tokens_per_s)\n"
      "  --threads N            threads of the step (default: OMP_NUM_THREADS, or every core)\n"
      "  --quiet                no progress output\n"
      "  --help                 this text\n",
      kProgram, tgc_model.model_type, (long long)tgc_model.batch_size,
      (long long)tgc_model.seq_len, tgc_model.optimizer, (long long)tgc_model.steps,
      (unsigned long long)tgc_model.seed, tgc_model.lr);
}

int64_t parseInt(const std::string &flag, const char *text, int64_t min) {
  char *end = nullptr;
  errno = 0;
  long long v = std::strtoll(text, &end, 10);
  if (!*text || *end || errno || v < min)
    die(flag + ": expected an integer >= " + std::to_string(min) + ", got '" + text + "'");
  return v;
}

double parsePositive(const std::string &flag, const char *text) {
  char *end = nullptr;
  double v = std::strtod(text, &end);
  if (!*text || *end || !(v > 0) || !std::isfinite(v))
    die(flag + ": expected a positive number, got '" + text + "'");
  return v;
}

Options parseOptions(int argc, char **argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i], value;
    bool hasInline = false;
    if (size_t eq = arg.find('='); arg.rfind("--", 0) == 0 && eq != std::string::npos) {
      value = arg.substr(eq + 1);
      arg = arg.substr(0, eq);
      hasInline = true;
    }
    auto next = [&]() -> const char * {
      if (hasInline)
        return value.c_str();
      if (i + 1 >= argc)
        die(arg + ": missing value");
      return argv[++i];
    };
    if (arg == "--help" || arg == "-h") {
      usage();
      std::exit(0);
    } else if (arg == "--data") o.data = next();
    else if (arg == "--init") o.init = next();
    else if (arg == "--save") o.save = next();
    else if (arg == "--resume") o.resume = next();
    else if (arg == "--dump-grads") o.dumpGrads = next();
    else if (arg == "--log") o.log = next();
    else if (arg == "--steps") o.steps = parseInt(arg, next(), 0);
    else if (arg == "--seed") { o.seed = parseInt(arg, next(), 0); o.seedGiven = true; }
    else if (arg == "--lr") o.lr = parsePositive(arg, next());
    else if (arg == "--eval-every") o.evalEvery = parseInt(arg, next(), 1);
    else if (arg == "--threads") o.threads = parseInt(arg, next(), 1);
    else if (arg == "--quiet") o.quiet = true;
    else if (arg == "--data-order") {
      std::string v = next();
      if (v == "sequential") o.order = DataOrder::Sequential;
      else if (v == "random") o.order = DataOrder::Random;
      else die("--data-order: expected 'sequential' or 'random', got '" + v + "'");
    } else die("unknown option '" + std::string(argv[i]) + "' (see --help)");
  }
  if (!o.init.empty() && !o.resume.empty())
    die("--init and --resume both give the weights: use one");
  return o;
}

size_t dtypeBytes(int32_t dtype) {
  switch (dtype) {
  case TGC_F64: case TGC_I64: return 8;
  case TGC_BF16: case TGC_F16: return 2;
  default: return 4;
  }
}

struct Buffer {
  const tgc_buffer_info *info;
  void *data;
  int64_t numel;
  size_t bytes;
  bool shared = false; // data belongs to another buffer (in-place update)
};

int64_t numelOf(const tgc_buffer_info &b) {
  int64_t n = 1;
  for (int i = 0; i < b.rank; ++i)
    n *= b.shape[i];
  return n;
}

std::vector<int64_t> shapeOf(const tgc_buffer_info &b) {
  return std::vector<int64_t>(b.shape, b.shape + b.rank);
}

std::string shapeText(const std::vector<int64_t> &shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

/// Deterministic per-tensor stream: the init of one tensor does not depend
/// on the order or number of the others.
uint64_t nameSeed(const std::string &name, uint64_t seed) {
  uint64_t h = 1469598103934665603ull;
  for (char c : name)
    h = (h ^ uint8_t(c)) * 1099511628211ull;
  return mix64(h ^ mix64(seed));
}

void initialise(Buffer &b, uint64_t seed) {
  float *p = static_cast<float *>(b.data);
  Rng rng(nameSeed(b.info->name, seed));
  for (int64_t i = 0; i < b.numel; ++i) {
    switch (b.info->init) {
    case TGC_INIT_NORMAL: p[i] = static_cast<float>(rng.normal() * b.info->init_scale); break;
    case TGC_INIT_ONES: p[i] = 1.0f; break;
    case TGC_INIT_UNIFORM:
      p[i] = static_cast<float>((2 * rng.uniform() - 1) * b.info->init_scale);
      break;
    default: p[i] = 0.0f;
    }
  }
}

void copyFrom(Buffer &b, const TensorData &t, const std::string &file) {
  if (t.shape != shapeOf(*b.info))
    die(file + ": tensor '" + b.info->name + "' has shape " + shapeText(t.shape) +
        " but the model needs " + shapeText(shapeOf(*b.info)));
  if (t.dtype != DType::F32 && t.dtype != DType::F64 && t.dtype != DType::BF16 &&
      t.dtype != DType::F16)
    die(file + ": tensor '" + b.info->name + "' has dtype " + dtypeName(t.dtype) +
        "; weights must be floating point");
  float *p = static_cast<float *>(b.data);
  for (int64_t i = 0; i < b.numel; ++i)
    p[i] = static_cast<float>(t.get(i));
}

TensorData toTensor(const Buffer &b) {
  TensorData t;
  t.dtype = DType::F32;
  t.shape = shapeOf(*b.info);
  t.bytes.assign(static_cast<uint8_t *>(b.data), static_cast<uint8_t *>(b.data) + b.bytes);
  return t;
}

double peakRssMiB() {
  struct rusage usage;
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_maxrss / 1024.0;
}

} // namespace

// libomp (linked into every executable) runs the matmuls' parallel tiles.
extern "C" void omp_set_num_threads(int);

int main(int argc, char **argv) {
  if (argc > 0) {
    const char *slash = std::strrchr(argv[0], '/');
    kProgram = slash ? slash + 1 : argv[0];
  }
  Options opt = parseOptions(argc, argv);
  if (opt.threads > 0)
    omp_set_num_threads(static_cast<int>(opt.threads));
  // The compiled step allocates its intermediates afresh each call: keep
  // freed blocks in the heap instead of returning them to the kernel, so
  // later steps reuse mapped pages instead of faulting them in again.
  mallopt(M_MMAP_THRESHOLD, 1 << 30);
  mallopt(M_TRIM_THRESHOLD, 1 << 30);
  const tgc_model_info &m = tgc_model;
  bool lm = std::strcmp(m.model_type, "mlp") != 0;
  uint64_t seed = opt.seedGiven ? opt.seed : m.seed;
  double lr = opt.lr > 0 ? opt.lr : m.lr;
  int64_t steps = opt.steps >= 0 ? opt.steps : m.steps;

  // Buffers, in the order the compiled step takes them.
  std::vector<Buffer> buffers(m.num_buffers);
  std::vector<void *> pointers(m.num_buffers);
  std::map<std::string, int> byRoleName;
  std::vector<int> params, states, newParams, newStates, grads;
  int idsBuf = -1, targetsBuf = -1, featuresBuf = -1, labelsBuf = -1, lrBuf = -1,
      stepBuf = -1, lossBuf = -1, normBuf = -1;
  for (int i = 0; i < m.num_buffers; ++i) {
    const tgc_buffer_info &info = m.buffers[i];
    Buffer &b = buffers[i];
    b.info = &info;
    b.numel = numelOf(info);
    b.bytes = b.numel * dtypeBytes(info.dtype);
    // Updated in place: shares its input's buffer (below).
    bool sharesInput = m.update_in_place &&
                       (info.role == TGC_NEW_PARAM || info.role == TGC_NEW_STATE);
    if (!sharesInput) {
      b.data = std::aligned_alloc(64, std::max<size_t>(64, (b.bytes + 63) / 64 * 64));
      if (!b.data)
        die("out of memory allocating '" + std::string(info.name) + "'");
      std::memset(b.data, 0, b.bytes);
    }
    pointers[i] = b.data;
    std::string name = info.name;
    switch (info.role) {
    case TGC_PARAM: params.push_back(i); break;
    case TGC_STATE: states.push_back(i); break;
    case TGC_NEW_PARAM: newParams.push_back(i); break;
    case TGC_NEW_STATE: newStates.push_back(i); break;
    case TGC_GRAD: grads.push_back(i); break;
    case TGC_INPUT:
      if (name == "input_ids") idsBuf = i;
      else if (name == "targets") targetsBuf = i;
      else if (name == "features") featuresBuf = i;
      else if (name == "labels") labelsBuf = i;
      else if (name == "lr") lrBuf = i;
      else if (name == "step") stepBuf = i;
      break;
    case TGC_OUTPUT:
      if (name == "loss") lossBuf = i;
      else if (name == "grad_norm") normBuf = i;
      break;
    }
  }
  if (lrBuf < 0 || stepBuf < 0 || lossBuf < 0 || normBuf < 0 ||
      params.size() != newParams.size() || states.size() != newStates.size())
    die("the compiled step's buffer table is malformed (rebuild with this tgc)");
  for (int i : params)
    if (buffers[i].info->dtype != TGC_F32)
      die("only f32 parameters are supported by this runtime");
  // The compiled step updates parameters and state in place when it can:
  // one copy of each instead of two.
  bool inPlace = m.update_in_place != 0;
  if (inPlace) {
    auto share = [&](int from, int to) {
      buffers[to].data = buffers[from].data;
      buffers[to].shared = true;
      pointers[to] = buffers[to].data;
    };
    for (size_t k = 0; k < params.size(); ++k)
      share(params[k], newParams[k]);
    for (size_t k = 0; k < states.size(); ++k)
      share(states[k], newStates[k]);
  }

  // Weights: --resume, --init or the family's initialisation.
  int64_t firstStep = 0;
  if (!opt.resume.empty() || !opt.init.empty()) {
    const std::string &file = opt.resume.empty() ? opt.init : opt.resume;
    SafeTensorsFile st;
    std::string error;
    if (!readSafeTensors(file, st, error))
      die(error);
    std::map<std::string, bool> used;
    for (int i : params) {
      auto it = st.tensors.find(buffers[i].info->name);
      if (it == st.tensors.end())
        die(file + ": missing tensor '" + std::string(buffers[i].info->name) + "'");
      copyFrom(buffers[i], it->second, file);
      used[it->first] = true;
    }
    if (!opt.resume.empty()) {
      for (int i : states) {
        std::string key = std::string("optimizer.") + buffers[i].info->name;
        auto it = st.tensors.find(key);
        if (it == st.tensors.end())
          die(file + ": missing optimizer state '" + key + "' (--resume needs a file --save wrote)");
        copyFrom(buffers[i], it->second, file);
        used[key] = true;
      }
      auto step = st.metadata.find("step");
      if (step == st.metadata.end())
        die(file + ": no 'step' in its metadata (--resume needs a file --save wrote)");
      firstStep = parseInt(file + ": metadata 'step'", step->second.c_str(), 0);
    }
    for (auto &[name, t] : st.tensors)
      if (!used.count(name) && name.rfind("optimizer.", 0) != 0)
        die(file + ": tensor '" + name + "' is not a parameter of this model");
  } else {
    for (int i : params)
      initialise(buffers[i], seed);
  }

  // Data.
  TokenData tokens;
  TableData table;
  int64_t B = m.batch_size, S = m.seq_len;
  std::string error;
  if (lm) {
    std::string path = opt.data.empty() ? "/usr/share/common-licenses/GPL-3" : opt.data;
    if (!loadTokens(path, m.vocab_size, tokens, error))
      die(error);
    if (static_cast<int64_t>(tokens.tokens.size()) < S + 2)
      die(path + ": " + std::to_string(tokens.tokens.size()) + " tokens is too few for sequences of " +
          std::to_string(S) + " (need at least " + std::to_string(S + 2) + ")");
  } else if (!opt.data.empty()) {
    if (!loadCsv(opt.data, m.num_features, m.vocab_size, table, error))
      die(error);
  } else {
    table = syntheticTable(8192, m.num_features, m.vocab_size, seed);
  }
  // Held-out data for --eval-every: the last 10%.
  TokenData evalTokens;
  TableData evalTable;
  if (opt.evalEvery) {
    if (lm) {
      size_t cut = tokens.tokens.size() * 9 / 10;
      if (static_cast<int64_t>(tokens.tokens.size() - cut) < S + 2)
        die("--eval-every: the held-out 10% of the data is shorter than one sequence");
      evalTokens.tokens.assign(tokens.tokens.begin() + cut, tokens.tokens.end());
      tokens.tokens.resize(cut);
    } else {
      int64_t cut = table.rows() * 9 / 10;
      if (cut < 1 || table.rows() - cut < 1)
        die("--eval-every: too few rows to hold out 10%");
      evalTable.features = table.features;
      evalTable.y.assign(table.y.begin() + cut, table.y.end());
      evalTable.x.assign(table.x.begin() + cut * table.features, table.x.end());
      table.y.resize(cut);
      table.x.resize(cut * table.features);
    }
  }
  auto fillBatch = [&](int64_t step, bool eval) {
    if (lm)
      fillTokenBatch(eval ? evalTokens.tokens : tokens.tokens, B, S, step,
                     eval ? DataOrder::Sequential : opt.order, seed,
                     static_cast<int32_t *>(buffers[idsBuf].data),
                     static_cast<int32_t *>(buffers[targetsBuf].data));
    else
      fillTableBatch(eval ? evalTable : table, B, step,
                     eval ? DataOrder::Sequential : opt.order, seed,
                     static_cast<float *>(buffers[featuresBuf].data),
                     static_cast<int32_t *>(buffers[labelsBuf].data));
  };

  std::FILE *log = nullptr;
  if (!opt.log.empty() && !(log = std::fopen(opt.log.c_str(), "w")))
    die(opt.log + ": cannot write: " + std::strerror(errno));
  bool tty = isatty(STDERR_FILENO) && !opt.quiet;
  if (!opt.quiet)
    std::fprintf(stderr, "%s: %s, batch %lld x seq %lld, %lld steps from step %lld, data %s\n",
                 kProgram, m.model_type, (long long)B, (long long)S, (long long)steps,
                 (long long)firstStep, lm ? tokens.description.c_str() : table.description.c_str());

  auto runStep = [&](int64_t step, void **args) {
    *static_cast<float *>(buffers[lrBuf].data) = static_cast<float>(lr);
    *static_cast<float *>(buffers[stepBuf].data) = static_cast<float>(step + 1);
    tgc_train_step(args);
  };
  // Evaluation runs the step without keeping its update: with in-place
  // updates, into scratch buffers (allocated on the first evaluation).
  std::vector<void *> evalPointers;
  std::vector<void *> scratch;
  auto evaluate = [&]() {
    evalPointers = pointers;
    if (inPlace) {
      std::vector<int> updated(newParams);
      updated.insert(updated.end(), newStates.begin(), newStates.end());
      for (size_t k = 0; k < updated.size(); ++k) {
        int i = updated[k];
        if (scratch.size() <= k) {
          void *p = std::aligned_alloc(64, std::max<size_t>(64, (buffers[i].bytes + 63) / 64 * 64));
          if (!p)
            die("out of memory allocating evaluation buffers");
          scratch.push_back(p);
        }
        evalPointers[i] = scratch[k];
      }
    }
    double total = 0;
    int batches = 4;
    for (int k = 0; k < batches; ++k) {
      fillBatch(k, true);
      runStep(0, evalPointers.data());
      total += *static_cast<float *>(buffers[lossBuf].data);
    }
    return total / batches;
  };

  std::vector<double> times;
  // Weights, state, data and the program: what the steps add is the plan's.
  double rssBeforeStepsMiB = peakRssMiB();
  double lastLoss = NAN, lastEvalLoss = NAN;
  int64_t lastEvalStep = 0;
  int64_t tokensPerStep = B * S;
  int64_t every = std::max<int64_t>(1, steps / 20);
  for (int64_t step = firstStep; step < firstStep + steps; ++step) {
    fillBatch(step, false);
    auto t0 = std::chrono::steady_clock::now();
    runStep(step, pointers.data());
    auto t1 = std::chrono::steady_clock::now();
    double ms = std::chrono::duration<double, std::milli>(t1 - t0).count();
    times.push_back(ms);
    float loss = *static_cast<float *>(buffers[lossBuf].data);
    float norm = *static_cast<float *>(buffers[normBuf].data);
    lastLoss = loss;
    if (!std::isfinite(loss))
      die("the loss became " + std::to_string(loss) + " at step " + std::to_string(step + 1) +
          " (lower --lr?)");
    if (step == firstStep && !opt.dumpGrads.empty()) {
      if (grads.size() != params.size())
        die("--dump-grads: this executable was compiled without gradient outputs");
      SafeTensorsFile out;
      for (size_t k = 0; k < grads.size(); ++k)
        out.tensors[buffers[grads[k]].info->name] = toTensor(buffers[grads[k]]);
      out.tensors["loss"] = toTensor(buffers[lossBuf]);
      if (!writeSafeTensors(opt.dumpGrads, out, error))
        die(error);
    }
    // The updated parameters and state become the next step's inputs.
    auto swapBuffers = [&](int a, int b) {
      std::swap(buffers[a].data, buffers[b].data);
      pointers[a] = buffers[a].data;
      pointers[b] = buffers[b].data;
    };
    if (!inPlace) {
      for (size_t k = 0; k < params.size(); ++k)
        swapBuffers(params[k], newParams[k]);
      for (size_t k = 0; k < states.size(); ++k)
        swapBuffers(states[k], newStates[k]);
    }

    int64_t done = step - firstStep + 1;
    double tokPerS = tokensPerStep / (ms / 1000.0);
    if (log)
      std::fprintf(log,
                   "{\"step\": %lld, \"loss\": %.6f, \"grad_norm\": %.6f, \"ms\": %.3f, "
                   "\"tokens_per_s\": %.1f}\n",
                   (long long)(step + 1), loss, norm, ms, tokPerS);
    if (opt.evalEvery && (step + 1) % opt.evalEvery == 0) {
      double evalLoss = evaluate();
      lastEvalLoss = evalLoss;
      lastEvalStep = step + 1;
      if (!opt.quiet)
        std::fprintf(stderr, "%sstep %lld eval loss %.4f\n", tty ? "\n" : "",
                     (long long)(step + 1), evalLoss);
      if (log)
        std::fprintf(log, "{\"step\": %lld, \"eval_loss\": %.6f}\n", (long long)(step + 1), evalLoss);
    }
    if (!opt.quiet && (tty || done % every == 0 || done == steps || done == 1)) {
      double mean = 0;
      for (double t : times)
        mean += t;
      mean /= times.size();
      double eta = mean * (steps - done) / 1000.0;
      std::fprintf(stderr, "%sstep %lld/%lld loss %.4f grad_norm %.3f %.0f tok/s ETA %.0fs%s",
                   tty ? "\r" : "", (long long)(step + 1), (long long)(firstStep + steps), loss,
                   norm, tokPerS, eta, tty ? "   " : "\n");
    }
  }
  if (tty)
    std::fprintf(stderr, "\n");
  if (log)
    std::fclose(log);

  if (!opt.save.empty()) {
    SafeTensorsFile out;
    for (int i : params)
      out.tensors[buffers[i].info->name] = toTensor(buffers[i]);
    for (int i : states)
      out.tensors[std::string("optimizer.") + buffers[i].info->name] = toTensor(buffers[i]);
    out.metadata["step"] = std::to_string(firstStep + steps);
    out.metadata["model_type"] = m.model_type;
    out.metadata["format"] = "pt";
    if (!writeSafeTensors(opt.save, out, error))
      die(error);
  }

  if (!opt.quiet && !times.empty()) {
    std::vector<double> sorted = times;
    std::sort(sorted.begin(), sorted.end());
    double mean = 0;
    for (double t : times)
      mean += t;
    mean /= times.size();
    // The last step's loss is that of one training batch (noisy); the
    // held-out loss, when --eval-every ran, is the one to judge training by.
    char evalSummary[96] = "";
    if (lastEvalStep)
      std::snprintf(evalSummary, sizeof evalSummary, ", held-out eval loss %.4f (step %lld)",
                    lastEvalLoss, (long long)lastEvalStep);
    std::fprintf(stderr,
                 "done: %zu steps, mean %.2f ms/step (median %.2f), %.0f tok/s, "
                 "train loss of the last step's batch %.4f%s, "
                 "peak RSS %.1f MiB (%.1f MiB before the first step; planned arena %.1f MiB)\n",
                 times.size(), mean, sorted[sorted.size() / 2],
                 tokensPerStep / (sorted[sorted.size() / 2] / 1000.0), lastLoss, evalSummary,
                 peakRssMiB(), rssBeforeStepsMiB, tgc_model.arena_bytes / (1024.0 * 1024.0));
  }
  for (Buffer &b : buffers)
    if (!b.shared)
      std::free(b.data);
  for (void *p : scratch)
    std::free(p);
  return 0;
}
