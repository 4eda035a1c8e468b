//===- Main.cpp - the training executable around a compiled step ---------===//
//
// Linked into every executable `tgc MODEL -o EXE` produces: allocates the
// buffers the compiled `tgc_train_step` describes (tgc_model), initialises
// or loads weights, feeds batches, swaps parameters/state with their updated
// copies after each step, and logs, saves and dumps. See docs/runtime.md.
//
//===----------------------------------------------------------------------===//

#include "Data.h"
#include "Device.h"
#include "Distributed.h"
#include "tgc/Runtime/ABI.h"
#include "tgc/Runtime/SafeTensors.h"

#include <malloc.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
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
  if (tgc_dist_size() > 1)
    std::fprintf(stderr, "%s: error (rank %d): %s\n", kProgram, tgc_dist_rank(),
                 message.c_str());
  else
    std::fprintf(stderr, "%s: error: %s\n", kProgram, message.c_str());
  // In a data-parallel job the others would wait for this process forever.
  tgc_dist_abort(1);
  std::exit(1);
}

/// Marks files --save-dtype exported (parameters only, rounded).
constexpr const char *kExportKey = "tgc_export";

struct Options {
  std::string data, init, save, resume, dumpGrads, log;
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

void usage() {
  std::printf("usage: %s [options]\n\n"
              "Trains the compiled model (%s, batch %lld x seq %lld, %s).\n\n"
              "  --data FILE            training data: a text file (read as "
              "bytes) or a .bin of\n"
              "                         uint16 token ids for language models; "
              "CSV rows\n"
              "                         'label,f1,...' for the MLP. Default: "
              "/usr/share/common-\n"
              "                         licenses/GPL-3 (language models) or a "
              "synthetic data set (MLP)\n"
              "  --steps N              training steps (default %lld)\n"
              "  --seed S               seed of weight init and random data "
              "order (default %llu)\n"
              "  --lr X                 learning rate (default %g)\n"
              "  --init PATH            load weights by Hugging Face name: a "
              ".safetensors file,\n"
              "                         a sharded checkpoint's "
              "model.safetensors.index.json,\n"
              "                         or a model directory with either\n"
              "  --save FILE            save weights and optimizer state at "
              "the end (.safetensors,\n"
              "                         written atomically; state as "
              "'optimizer.<name>')\n"
              "  --save-dtype T         f32 (default); bf16 or f16: save only "
              "the parameters,\n"
              "                         rounded, as inference weights (--init "
              "loads them;\n"
              "                         nothing to --resume from)\n"
              "  --resume FILE          continue from a file --save wrote "
              "(same losses as an\n"
              "                         uninterrupted run)\n"
              "  --dump-grads FILE      write the first step's gradients by "
              "parameter name\n"
              "  --data-order ORDER     sequential (default) or random\n"
              "  --save-every N         also write --save every N steps "
              "(each written atomically:\n"
              "                         a run that fails keeps the last one)\n"
              "  --eval-every N         every N steps, report the loss on "
              "held-out data (the last\n"
              "                         10%% of the data)\n"
              "  --log FILE             one JSON object per step (step, loss, "
              "grad_norm, ms, tokens_per_s)\n"
              "  --threads N            threads of the step (default: "
              "OMP_NUM_THREADS, or every core)\n"
              "  --quiet                no progress output\n"
              "  --help                 this text\n"
              "\nExecutables compiled with tgc --data-parallel also run as "
              "the processes of\nan Open MPI job (mpirun -np N %s ...; "
              "batch per process; docs/distributed.md).\n",
              kProgram, tgc_model.model_type, (long long)tgc_model.batch_size,
              (long long)tgc_model.seq_len, tgc_model.optimizer,
              (long long)tgc_model.steps, (unsigned long long)tgc_model.seed,
              tgc_model.lr, kProgram);
}

int64_t parseInt(const std::string &flag, const char *text, int64_t min) {
  char *end = nullptr;
  errno = 0;
  long long v = std::strtoll(text, &end, 10);
  if (!*text || *end || errno || v < min)
    die(flag + ": expected an integer >= " + std::to_string(min) + ", got '" +
        text + "'");
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
    if (size_t eq = arg.find('=');
        arg.rfind("--", 0) == 0 && eq != std::string::npos) {
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
    } else if (arg == "--data")
      o.data = next();
    else if (arg == "--init")
      o.init = next();
    else if (arg == "--save")
      o.save = next();
    else if (arg == "--resume")
      o.resume = next();
    else if (arg == "--save-dtype") {
      std::string v = next();
      if (v == "f32")
        o.saveDtype = DType::F32;
      else if (v == "bf16")
        o.saveDtype = DType::BF16;
      else if (v == "f16")
        o.saveDtype = DType::F16;
      else
        die("--save-dtype: expected f32, bf16 or f16, got '" + v + "'");
    } else if (arg == "--dump-grads")
      o.dumpGrads = next();
    else if (arg == "--log")
      o.log = next();
    else if (arg == "--steps")
      o.steps = parseInt(arg, next(), 0);
    else if (arg == "--seed") {
      o.seed = parseInt(arg, next(), 0);
      o.seedGiven = true;
    } else if (arg == "--lr")
      o.lr = parsePositive(arg, next());
    else if (arg == "--eval-every")
      o.evalEvery = parseInt(arg, next(), 1);
    else if (arg == "--save-every")
      o.saveEvery = parseInt(arg, next(), 1);
    else if (arg == "--threads")
      o.threads = parseInt(arg, next(), 1);
    else if (arg == "--quiet")
      o.quiet = true;
    else if (arg == "--data-order") {
      std::string v = next();
      if (v == "sequential")
        o.order = DataOrder::Sequential;
      else if (v == "random")
        o.order = DataOrder::Random;
      else
        die("--data-order: expected 'sequential' or 'random', got '" + v + "'");
    } else
      die("unknown option '" + std::string(argv[i]) + "' (see --help)");
  }
  if (!o.init.empty() && !o.resume.empty())
    die("--init and --resume both give the weights: use one");
  if (o.saveDtype != DType::F32 && o.save.empty())
    die("--save-dtype needs --save FILE");
  if (o.saveEvery && o.save.empty())
    die("--save-every needs --save FILE");
  return o;
}

size_t dtypeBytes(int32_t dtype) {
  switch (dtype) {
  case TGC_F64:
  case TGC_I64:
    return 8;
  case TGC_BF16:
  case TGC_F16:
    return 2;
  default:
    return 4;
  }
}

struct Buffer {
  const tgc_buffer_info *info;
  void *data = nullptr;   // the host copy
  void *device = nullptr; // what the step reads (== data on the CPU)
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
    case TGC_INIT_NORMAL:
      p[i] = static_cast<float>(rng.normal() * b.info->init_scale);
      break;
    case TGC_INIT_ONES:
      p[i] = 1.0f;
      break;
    case TGC_INIT_UNIFORM:
      p[i] = static_cast<float>((2 * rng.uniform() - 1) * b.info->init_scale);
      break;
    case TGC_INIT_CONSTANT:
      p[i] = static_cast<float>(b.info->init_scale);
      break;
    default:
      p[i] = 0.0f;
    }
  }
}

void copyFrom(Buffer &b, const TensorData &t, const std::string &file) {
  if (t.shape != shapeOf(*b.info))
    die(file + ": tensor '" + b.info->name + "' has shape " +
        shapeText(t.shape) + " but the model needs " +
        shapeText(shapeOf(*b.info)));
  if (t.dtype != DType::F32 && t.dtype != DType::F64 &&
      t.dtype != DType::BF16 && t.dtype != DType::F16)
    die(file + ": tensor '" + b.info->name + "' has dtype " +
        dtypeName(t.dtype) + "; weights must be floating point");
  float *p = static_cast<float *>(b.data);
  for (int64_t i = 0; i < b.numel; ++i)
    p[i] = static_cast<float>(t.get(i));
}

/// ZeRO-1 state: this process's shard of the whole state in `t`, which has
/// the shape of its parameter `param` (checkpoints hold whole tensors, so
/// they resume at any process count).
void copyShardFrom(Buffer &b, const Buffer &param, const TensorData &t,
                   const std::string &file) {
  if (t.shape != shapeOf(*param.info))
    die(file + ": tensor 'optimizer." + b.info->name + "' has shape " +
        shapeText(t.shape) + " but the model needs " +
        shapeText(shapeOf(*param.info)));
  float *p = static_cast<float *>(b.data);
  int64_t first = tgc_dist_rank() * b.numel;
  int64_t n =
      tgc::runtime::shardElements(param.numel, b.numel, tgc_dist_rank());
  for (int64_t i = 0; i < b.numel; ++i)
    p[i] = i < n ? static_cast<float>(t.get(first + i)) : 0.0f;
}

TensorData toTensor(const Buffer &b) {
  TensorData t;
  t.dtype = DType::F32;
  t.shape = shapeOf(*b.info);
  t.bytes.assign(static_cast<uint8_t *>(b.data),
                 static_cast<uint8_t *>(b.data) + b.bytes);
  return t;
}

double peakRssMiB() {
  struct rusage usage;
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_maxrss / 1024.0;
}

void *allocateAligned(size_t bytes, const std::string &what) {
  void *p =
      std::aligned_alloc(64, std::max<size_t>(64, (bytes + 63) / 64 * 64));
  if (!p)
    die("out of memory allocating " + what);
  return p;
}

/// The compiled step's buffers, in the order it takes them, by role.
struct StepBuffers {
  std::vector<Buffer> buffers;
  std::vector<void *> pointers; // what tgc_train_step is called with
  std::vector<int> params, states, newParams, newStates, grads;
  int ids = -1, targets = -1, features = -1, labels = -1, lr = -1, step = -1,
      loss = -1, norm = -1;
  /// tgc --data-parallel: this process's share of the global mean.
  int dpWeight = -1;
  /// Loss scaling: the state holding the scale (-1 without). Each
  /// gradient's sum of squares (outputs grad_sumsq.<parameter>): the step
  /// has a skip flag guarding its updates (loss scaling's, or tgc
  /// --guard-update's).
  int lossScale = -1;
  std::vector<int> gradSumSquares;
  bool guarded() const { return !gradSumSquares.empty(); }
  /// Optimizer updates applied so far (AdamW's step count: a step whose
  /// scaled gradients overflowed is skipped and does not count).
  int64_t updatesApplied = 0;
  /// New parameters and state share their inputs' storage.
  bool inPlace = false;

  float scalar(int i) const { return *static_cast<float *>(buffers[i].data); }

  ~StepBuffers() {
    for (Buffer &b : buffers)
      if (!b.shared) {
        if (b.device != b.data)
          tgc_device_free(b.device);
        std::free(b.data);
      }
  }
};

/// Host copy → device (nothing to do on the CPU).
void upload(const Buffer &b) {
  if (b.device != b.data)
    tgc_device_upload(b.device, b.data, b.bytes);
}
void upload(const StepBuffers &s, const std::vector<int> &which) {
  for (int i : which)
    upload(s.buffers[i]);
}
/// Device → host copy.
void download(const Buffer &b) {
  if (b.device != b.data)
    tgc_device_download(b.data, b.device, b.bytes);
}
void download(const StepBuffers &s, const std::vector<int> &which) {
  for (int i : which)
    download(s.buffers[i]);
}

/// Allocates (zeroed) and classifies every buffer of the model table;
/// updated values share their inputs' storage when the step allows it.
void bindBuffers(const tgc_model_info &m, StepBuffers &s) {
  s.buffers.resize(m.num_buffers);
  s.pointers.resize(m.num_buffers);
  s.inPlace = m.update_in_place != 0;
  for (int i = 0; i < m.num_buffers; ++i) {
    const tgc_buffer_info &info = m.buffers[i];
    Buffer &b = s.buffers[i];
    b.info = &info;
    b.numel = numelOf(info);
    b.bytes = b.numel * dtypeBytes(info.dtype);
    bool sharesInput =
        s.inPlace && (info.role == TGC_NEW_PARAM || info.role == TGC_NEW_STATE);
    if (!sharesInput) {
      b.data = allocateAligned(b.bytes, "'" + std::string(info.name) + "'");
      std::memset(b.data, 0, b.bytes);
      b.device = tgc_device_alloc(b.bytes, b.data);
    }
    s.pointers[i] = b.device;
    std::string name = info.name;
    switch (info.role) {
    case TGC_PARAM:
      s.params.push_back(i);
      break;
    case TGC_STATE:
      s.states.push_back(i);
      if (name == "loss_scale")
        s.lossScale = i;
      break;
    case TGC_NEW_PARAM:
      s.newParams.push_back(i);
      break;
    case TGC_NEW_STATE:
      s.newStates.push_back(i);
      break;
    case TGC_GRAD:
      s.grads.push_back(i);
      break;
    case TGC_INPUT:
      if (name == "input_ids")
        s.ids = i;
      else if (name == "targets")
        s.targets = i;
      else if (name == "features")
        s.features = i;
      else if (name == "labels")
        s.labels = i;
      else if (name == "lr")
        s.lr = i;
      else if (name == "step")
        s.step = i;
      else if (name == "dp_weight")
        s.dpWeight = i;
      break;
    case TGC_OUTPUT:
      if (name == "loss")
        s.loss = i;
      else if (name == "grad_norm")
        s.norm = i;
      else if (name.rfind("grad_sumsq.", 0) == 0)
        s.gradSumSquares.push_back(i);
      break;
    }
  }
  if (s.lr < 0 || s.step < 0 || s.loss < 0 || s.norm < 0 ||
      s.params.size() != s.newParams.size() ||
      s.states.size() != s.newStates.size())
    die("the compiled step's buffer table is malformed (rebuild with this "
        "tgc)");
  for (int i : s.params)
    if (s.buffers[i].info->dtype != TGC_F32)
      die("only f32 parameters are supported by this runtime");
  if (s.inPlace) {
    auto share = [&](int from, int to) {
      s.buffers[to].data = s.buffers[from].data;
      s.buffers[to].device = s.buffers[from].device;
      s.buffers[to].shared = true;
      s.pointers[to] = s.buffers[to].device;
    };
    for (size_t k = 0; k < s.params.size(); ++k)
      share(s.params[k], s.newParams[k]);
    for (size_t k = 0; k < s.states.size(); ++k)
      share(s.states[k], s.newStates[k]);
  }
}

/// Weights from --resume (with optimizer state; returns the step to go on
/// from), --init, or the model family's initialisation (returns 0).
int64_t loadWeights(StepBuffers &s, const Options &opt, uint64_t seed) {
  // State that does not start at zero (the loss scale), unless resumed.
  for (int i : s.states)
    if (s.buffers[i].info->init != TGC_INIT_NONE)
      initialise(s.buffers[i], seed);
  if (opt.resume.empty() && opt.init.empty()) {
    for (int i : s.params)
      initialise(s.buffers[i], seed);
    return 0;
  }
  const std::string &file = opt.resume.empty() ? opt.init : opt.resume;
  SafeTensorsFile st;
  std::string error;
  if (!readCheckpoint(file, st, error))
    die(error);
  std::map<std::string, bool> used;
  for (int i : s.params) {
    auto it = st.tensors.find(s.buffers[i].info->name);
    if (it == st.tensors.end())
      die(file + ": missing tensor '" + std::string(s.buffers[i].info->name) +
          "'");
    copyFrom(s.buffers[i], it->second, file);
    used[it->first] = true;
  }
  int64_t firstStep = 0;
  if (!opt.resume.empty()) {
    auto exported = st.metadata.find(kExportKey);
    if (exported != st.metadata.end())
      die(file + ": inference weights exported with --save-dtype (" +
          exported->second +
          "; no optimizer state, no f32 masters): --init can load them, "
          "--resume needs a file --save wrote without --save-dtype");
    for (int i : s.states) {
      std::string key = std::string("optimizer.") + s.buffers[i].info->name;
      auto it = st.tensors.find(key);
      // A checkpoint without loss scaling: the scale starts afresh.
      if (it == st.tensors.end() && s.buffers[i].info->init != TGC_INIT_NONE)
        continue;
      if (it == st.tensors.end())
        die(file + ": missing optimizer state '" + key +
            "' (--resume needs a file --save wrote)");
      if (s.buffers[i].info->shard_of >= 0)
        copyShardFrom(s.buffers[i], s.buffers[s.buffers[i].info->shard_of],
                      it->second, file);
      else
        copyFrom(s.buffers[i], it->second, file);
      used[key] = true;
    }
    auto step = st.metadata.find("step");
    if (step == st.metadata.end())
      die(file +
          ": no 'step' in its metadata (--resume needs a file --save wrote)");
    firstStep = parseInt(file + ": metadata 'step'", step->second.c_str(), 0);
    auto updates = st.metadata.find("optimizer_step");
    s.updatesApplied = updates == st.metadata.end()
                           ? firstStep
                           : parseInt(file + ": metadata 'optimizer_step'",
                                      updates->second.c_str(), 0);
  }
  for (auto &[name, t] : st.tensors)
    if (!used.count(name) && name.rfind("optimizer.", 0) != 0)
      die(file + ": tensor '" + name + "' is not a parameter of this model");
  return firstStep;
}

/// Training data and, with --eval-every, the held-out last 10%.
struct Dataset {
  bool lm = true;
  TokenData tokens, evalTokens;
  TableData table, evalTable;
  std::string description() const {
    return lm ? tokens.description : table.description;
  }
};

Dataset loadData(const tgc_model_info &m, const Options &opt, uint64_t seed) {
  Dataset d;
  d.lm = std::strcmp(m.model_type, "mlp") != 0;
  int64_t S = m.seq_len;
  std::string error;
  if (d.lm) {
    std::string path =
        opt.data.empty() ? "/usr/share/common-licenses/GPL-3" : opt.data;
    if (!loadTokens(path, m.vocab_size, d.tokens, error))
      die(error);
    if (static_cast<int64_t>(d.tokens.tokens.size()) < S + 2)
      die(path + ": " + std::to_string(d.tokens.tokens.size()) +
          " tokens is too few for sequences of " + std::to_string(S) +
          " (need at least " + std::to_string(S + 2) + ")");
  } else if (!opt.data.empty()) {
    if (!loadCsv(opt.data, m.num_features, m.vocab_size, d.table, error))
      die(error);
  } else {
    d.table = syntheticTable(8192, m.num_features, m.vocab_size, seed);
  }
  if (!opt.evalEvery)
    return d;
  if (d.lm) {
    std::vector<int32_t> &all = d.tokens.tokens;
    size_t cut = all.size() * 9 / 10;
    if (static_cast<int64_t>(all.size() - cut) < S + 2)
      die("--eval-every: the held-out 10% of the data is shorter than one "
          "sequence");
    d.evalTokens.tokens.assign(all.begin() + cut, all.end());
    all.resize(cut);
  } else {
    TableData &t = d.table;
    int64_t cut = t.rows() * 9 / 10;
    if (cut < 1 || t.rows() - cut < 1)
      die("--eval-every: too few rows to hold out 10%");
    d.evalTable.features = t.features;
    d.evalTable.y.assign(t.y.begin() + cut, t.y.end());
    d.evalTable.x.assign(t.x.begin() + cut * t.features, t.x.end());
    t.y.resize(cut);
    t.x.resize(cut * t.features);
  }
  return d;
}

/// Writes batch `step` of the training (or held-out) data into the step's
/// input buffers.
void fillBatch(const tgc_model_info &m, const Dataset &d, StepBuffers &s,
               const Options &opt, uint64_t seed, int64_t step, bool eval) {
  DataOrder order = eval ? DataOrder::Sequential : opt.order;
  // Each process of a data-parallel job takes its slice of the global
  // batch: together they see what one process with all of it would.
  int64_t globalBatch = m.batch_size * tgc_dist_size();
  int64_t firstRow = m.batch_size * tgc_dist_rank();
  int32_t *targets = nullptr;
  int64_t count = m.batch_size;
  if (d.lm) {
    targets = static_cast<int32_t *>(s.buffers[s.targets].data);
    count *= m.seq_len;
    fillTokenBatch(eval ? d.evalTokens.tokens : d.tokens.tokens, m.batch_size,
                   m.seq_len, step, order, seed,
                   static_cast<int32_t *>(s.buffers[s.ids].data), targets,
                   globalBatch, firstRow);
  } else {
    targets = static_cast<int32_t *>(s.buffers[s.labels].data);
    fillTableBatch(eval ? d.evalTable : d.table, m.batch_size, step, order,
                   seed, static_cast<float *>(s.buffers[s.features].data),
                   targets, globalBatch, firstRow);
  }
  if (s.dpWeight >= 0) {
    // The loss is a mean over the global count of targets that are class
    // ids (an ignore_index, outside [0, vocab), counts for no process).
    double counts[1] = {0};
    for (int64_t i = 0; i < count; ++i)
      counts[0] += targets[i] >= 0 && targets[i] < m.vocab_size;
    double local = counts[0];
    tgc_dist_sum(counts, 1);
    *static_cast<float *>(s.buffers[s.dpWeight].data) =
        counts[0] > 0 ? static_cast<float>(local / counts[0])
                      : 1.0f / tgc_dist_size();
    upload(s.buffers[s.dpWeight]);
  }
  for (int i : {s.ids, s.targets, s.features, s.labels})
    if (i >= 0)
      upload(s.buffers[i]);
}

void dumpGradients(const StepBuffers &s, const std::string &path) {
  if (s.grads.size() != s.params.size())
    die("--dump-grads: this executable was compiled without gradient outputs "
        "(compile it with tgc --return-gradients)");
  download(s, s.grads);
  SafeTensorsFile out;
  for (int i : s.grads)
    out.tensors[s.buffers[i].info->name] = toTensor(s.buffers[i]);
  out.tensors["loss"] = toTensor(s.buffers[s.loss]);
  std::string error;
  if (!writeSafeTensors(path, out, error))
    die(error);
}

/// Parameters, optimizer state (as optimizer.<name>) and the step reached;
/// with a narrower `dtype`, the parameters alone, rounded (an export).
void saveCheckpoint(const tgc_model_info &m, const StepBuffers &s,
                    const std::string &path, int64_t step, DType dtype,
                    bool writes) {
  if (!writes && dtype != DType::F32)
    return;
  download(s, s.params);
  SafeTensorsFile out;
  out.metadata["model_type"] = m.model_type;
  out.metadata["format"] = "pt";
  if (dtype != DType::F32) {
    // Inference weights under their Hugging Face names: no optimizer state
    // and no f32 masters, so nothing to resume training from.
    for (int i : s.params) {
      const Buffer &b = s.buffers[i];
      out.tensors[b.info->name] = narrowFloats(
          static_cast<const float *>(b.data), b.numel, shapeOf(*b.info), dtype);
    }
    out.metadata[kExportKey] = std::string(dtypeName(dtype)) +
                               " parameters at step " + std::to_string(step);
    std::string error;
    if (!writeSafeTensors(path, out, error))
      die(error);
    return;
  }
  download(s, s.states);
  for (int i : s.params)
    out.tensors[s.buffers[i].info->name] = toTensor(s.buffers[i]);
  for (int i : s.states) {
    const Buffer &b = s.buffers[i];
    TensorData t = toTensor(b);
    if (b.info->shard_of >= 0) {
      // ZeRO-1: every process's shard, gathered whole on rank 0, under the
      // names and shape of the unsharded state.
      const Buffer &param = s.buffers[b.info->shard_of];
      t.shape = shapeOf(*param.info);
      t.bytes.assign(param.bytes, 0);
      tgc_dist_gather_shards(static_cast<const float *>(b.data), b.numel,
                             reinterpret_cast<float *>(t.bytes.data()),
                             param.numel);
    }
    out.tensors[std::string("optimizer.") + b.info->name] = std::move(t);
  }
  if (!writes)
    return;
  out.metadata["step"] = std::to_string(step);
  out.metadata["optimizer_step"] = std::to_string(s.updatesApplied);
  std::string error;
  if (!writeSafeTensors(path, out, error))
    die(error);
}

/// A loss scale for the log (JSON has no infinities; scales are finite).
std::string formatScale(float scale) {
  char text[32];
  std::snprintf(text, sizeof text, "%.9g", scale);
  return text;
}

/// A loss scale in the log: whole scales (powers of two times a whole
/// first scale) in full, so that a reader gets the very value.
std::string jsonScale(float scale) {
  if (scale >= 1.0f && scale < 1e15f && std::floor(scale) == scale) {
    char text[32];
    std::snprintf(text, sizeof text, "%.0f", double(scale));
    return text;
  }
  return formatScale(scale);
}

/// `value` as a JSON number with `decimals` digits after the point, or
/// null where it is not finite (JSON has no NaN or infinity; the gradient
/// norm of a step whose scaled gradients overflowed is one).
std::string jsonNumber(double value, int decimals) {
  if (!std::isfinite(value))
    return "null";
  char text[64];
  std::snprintf(text, sizeof text, "%.*f", decimals, value);
  return text;
}

/// The training loop's state and its progress output.
class Trainer {
public:
  Trainer(const tgc_model_info &m, StepBuffers &s, const Dataset &d,
          const Options &opt, uint64_t seed, double lr)
      : m(m), s(s), d(d), opt(opt), seed(seed), lr(lr) {}
  ~Trainer() {
    for (size_t k = 0; k < scratch.size(); ++k) {
      if (scratchDevice[k] != scratch[k])
        tgc_device_free(scratchDevice[k]);
      std::free(scratch[k]);
    }
  }

  void run(int64_t firstStep, int64_t steps);
  /// Every process takes part (the peak RSS is the job's largest).
  void printSummary() const;

private:
  void runStep(int64_t step, void **args) {
    *static_cast<float *>(s.buffers[s.lr].data) = static_cast<float>(lr);
    *static_cast<float *>(s.buffers[s.step].data) =
        static_cast<float>(step + 1);
    upload(s.buffers[s.lr]);
    upload(s.buffers[s.step]);
    tgc_train_step(args);
    tgc_device_synchronize();
    download(s.buffers[s.loss]);
    download(s.buffers[s.norm]);
    if (s.dpWeight >= 0 && tgc_dist_size() > 1) {
      // Each process's loss is its own slice's: the job's is their
      // weighted sum (the gradients were summed inside the step).
      float *loss = static_cast<float *>(s.buffers[s.loss].data);
      double global = *loss * static_cast<double>(s.scalar(s.dpWeight));
      tgc_dist_sum(&global, 1);
      *loss = static_cast<float>(global);
    }
  }
  double evaluate();
  /// "; not finite: the gradients of a, b (and N more)" from the step's
  /// per-gradient sums of squares, when it returns them.
  std::string nonFiniteGradients() const {
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
  /// The loss scale the step computed for the next one.
  float newLossScale() const {
    for (size_t k = 0; k < s.states.size(); ++k)
      if (s.states[k] == s.lossScale) {
        download(s.buffers[s.newStates[k]]);
        return s.scalar(s.newStates[k]);
      }
    return 1.0f;
  }
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
};

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
  for (size_t k = 0; k < s.params.size(); ++k)
    swapBuffers(s.params[k], s.newParams[k]);
  for (size_t k = 0; k < s.states.size(); ++k)
    swapBuffers(s.states[k], s.newStates[k]);
}

void Trainer::run(int64_t firstStep, int64_t steps) {
  std::FILE *log = nullptr;
  if (!opt.log.empty() && !(log = std::fopen(opt.log.c_str(), "w")))
    die(opt.log + ": cannot write: " + std::strerror(errno));
  bool tty = isatty(STDERR_FILENO) && !opt.quiet;
  if (!opt.quiet)
    std::fprintf(
        stderr,
        "%s: %s, batch %lld x seq %lld, %lld steps from step %lld, data %s\n",
        kProgram, m.model_type, (long long)m.batch_size, (long long)m.seq_len,
        (long long)steps, (long long)firstStep, d.description().c_str());
  if (!opt.quiet && *tgc_device_description())
    std::fprintf(stderr, "%s: on %s\n", kProgram, tgc_device_description());
  if (!opt.quiet && *tgc_dist_description())
    std::fprintf(stderr,
                 "%s: data parallel over %s, global batch %lld (%lld per "
                 "process)\n",
                 kProgram, tgc_dist_description(),
                 (long long)(m.batch_size * tgc_dist_size()),
                 (long long)m.batch_size);

  // Weights, state, data and the program: what the steps add is the plan's.
  rssBeforeStepsMiB = peakRssMiB();
  int64_t tokensPerStep = m.batch_size * m.seq_len * tgc_dist_size();
  int64_t every = std::max<int64_t>(1, steps / 20);
  for (int64_t step = firstStep; step < firstStep + steps; ++step) {
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

    int64_t done = step - firstStep + 1;
    double tokPerS = tokensPerStep / (ms / 1000.0);
    if (log)
      std::fprintf(
          log,
          "{\"step\": %lld, \"loss\": %s, \"grad_norm\": %s, \"ms\": %.3f, "
          "\"tokens_per_s\": %.1f%s}\n",
          (long long)(step + 1), jsonNumber(loss, 6).c_str(),
          jsonNumber(norm, 6).c_str(), ms, tokPerS,
          s.lossScale < 0 ? ""
                          : (", \"loss_scale\": " + jsonScale(scale) +
                             (skipped ? ", \"skipped\": true" : ""))
                                .c_str());
    // The last step's checkpoint is main's (after the summary's figures).
    if (opt.saveEvery && (step + 1) % opt.saveEvery == 0 &&
        step + 1 < firstStep + steps) {
      saveCheckpoint(m, s, opt.save, step + 1, opt.saveDtype, opt.writes);
      lastSavedStep = step + 1;
    }
    if (opt.evalEvery && (step + 1) % opt.evalEvery == 0) {
      double evalLoss = evaluate();
      lastEvalLoss = evalLoss;
      lastEvalStep = step + 1;
      if (!opt.quiet)
        std::fprintf(stderr, "%sstep %lld eval loss %.4f\n", tty ? "\n" : "",
                     (long long)(step + 1), evalLoss);
      if (log)
        std::fprintf(log, "{\"step\": %lld, \"eval_loss\": %s}\n",
                     (long long)(step + 1), jsonNumber(evalLoss, 6).c_str());
    }
    if (!opt.quiet &&
        (tty || done % every == 0 || done == steps || done == 1)) {
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
  }
  if (tty)
    std::fprintf(stderr, "\n");
  if (log)
    std::fclose(log);
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

/// A data-parallel job runs one program: every process must have the same
/// executable (its step's buffer table) and the same settings, or their
/// collectives would mix different things. Only rank 0 writes (logs,
/// checkpoints, dumps, progress): the others' parameters are the same.
void checkJob(Options &opt) {
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
  for (const std::string *text : {&opt.data, &opt.init, &opt.resume})
    mixString(*text);
  mixBytes(&opt.seed, sizeof opt.seed);
  mixBytes(&opt.lr, sizeof opt.lr);
  mixBytes(&opt.steps, sizeof opt.steps);
  // Evaluation runs the step (and its collectives) on every process.
  mixBytes(&opt.evalEvery, sizeof opt.evalEvery);
  mixBytes(&opt.order, sizeof opt.order);
  if (!tgc_dist_all_equal(hash))
    die("the processes of this job run different executables or settings "
        "(model, batch, data, --data-order, --init/--resume, --seed, --lr, "
        "--steps, --eval-every): start every rank with the same command");
  if (tgc_dist_rank() != 0) {
    // --save stays: with ZeRO-1 every process sends its state shards.
    opt.quiet = true;
    opt.log.clear();
    opt.writes = false;
    opt.dumpGrads.clear();
  }
}

} // namespace

// libomp (linked into every executable) runs the matmuls' parallel tiles.
extern "C" void omp_set_num_threads(int);

/// Linux hands out the AMX tile state only on request, per process: a step
/// compiled for a CPU with AMX runs its bf16 products on tiles (and would
/// die on its first tile instruction without this). Elsewhere the request
/// fails harmlessly and such a step is never compiled.
static void requestTileState() {
#if defined(__linux__) && defined(__x86_64__)
  constexpr long kArchReqXcompPerm = 0x1023, kXfeatureXtiledata = 18;
  if (syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) != 0 &&
      __builtin_cpu_supports("amx-tile"))
    std::fprintf(stderr,
                 "%s: warning: Linux refused the AMX tile state (%s): a step "
                 "compiled for this CPU with --precision=bf16-mixed stops on "
                 "its first tile instruction; compile it with "
                 "--mcpu=x86-64-v4 instead\n",
                 kProgram, std::strerror(errno));
#endif
}

int main(int argc, char **argv) {
  if (argc > 0) {
    const char *slash = std::strrchr(argv[0], '/');
    kProgram = slash ? slash + 1 : argv[0];
  }
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
  if (m.zero_processes > 0 && processes != m.zero_processes)
    die("this executable was compiled with --zero=1 --processes=" +
        std::to_string(m.zero_processes) + " (its optimizer state is sharded " +
        std::to_string(m.zero_processes) + " ways) but runs as " +
        std::to_string(processes) + " process" + (processes == 1 ? "" : "es") +
        ": start it with mpirun -np " + std::to_string(m.zero_processes) +
        ", or compile it for " + std::to_string(processes));
  int64_t firstStep = loadWeights(buffers, opt, seed);
  upload(buffers, buffers.params);
  upload(buffers, buffers.states);
  Dataset data = loadData(m, opt, seed);
  Trainer trainer(m, buffers, data, opt, seed, lr);
  trainer.run(firstStep, steps);
  if (!opt.save.empty())
    saveCheckpoint(m, buffers, opt.save, firstStep + steps, opt.saveDtype,
                   opt.writes);
  trainer.printSummary();
  tgc_dist_finalize();
  return 0;
}
