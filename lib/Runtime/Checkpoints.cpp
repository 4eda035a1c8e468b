//===- Checkpoints.cpp - weights in and out -------------------------------===//

#include "Checkpoints.h"
#include "Adapters.h"
#include "Distributed.h"
#include "Fatal.h"
#include "tgc/Runtime/SafeTensors.h"

#include <algorithm>
#include <functional>
#include <map>
#include <vector>

using namespace tgc::rt;

void tgc::rt::copyFrom(Buffer &b, const TensorData &t,
                       const std::string &file) {
  checkWeightTensor(b, t, file);
  if (b.info->shard_numel > 0) {
    // ZeRO-3: this process's shard of the whole tensor.
    storeShard(b, wholeNumelOf(*b.info),
               [&](int64_t i) { return static_cast<float>(t.get(i)); });
    t.release();
    return;
  }
  // A narrow frozen weight (tgc --frozen-dtype) is rounded once, from f32.
  std::vector<float> wide(b.info->dtype == TGC_F32 ? 0 : b.numel);
  float *p = wide.empty() ? static_cast<float *>(b.data) : wide.data();
  for (int64_t i = 0; i < b.numel; ++i)
    p[i] = static_cast<float>(t.get(i));
  storeFloats(b, p);
  t.release();
}

/// Gathers the `numel` values of a whole tensor into `whole` on rank 0
/// (ignored on the others) from every process's shard `b`. A narrow shard
/// (a frozen weight of tgc --frozen-dtype) travels widened to f32.
static void gatherFloats(const Buffer &b, float *whole, int64_t numel) {
  std::vector<float> widened =
      b.info->dtype == TGC_F32 ? std::vector<float>() : loadFloats(b);
  const float *shard =
      widened.empty() ? static_cast<const float *>(b.data) : widened.data();
  tgc_dist_gather_shards(shard, b.numel, whole, numel);
}

/// ZeRO-1 state: this process's shard of the whole state in `t`, which has
/// the shape of its parameter `param` (checkpoints hold whole tensors, so
/// they resume at any process count).
static void copyShardFrom(Buffer &b, const Buffer &param, const TensorData &t,
                          const std::string &file) {
  if (t.shape != shapeOf(*param.info))
    die(file + ": tensor 'optimizer." + b.info->name + "' has shape " +
        shapeText(t.shape) + " but the model needs " +
        shapeText(shapeOf(*param.info)));
  storeShard(b, wholeNumelOf(*param.info),
             [&](int64_t i) { return static_cast<float>(t.get(i)); });
}

/// Copies the parameters `st` holds into `s`. Each parameter `required`
/// says it must hold is an error when missing; the others keep their
/// values. Returns whether each tensor was used, by name.
static std::map<std::string, bool>
copyParameters(StepBuffers &s, const SafeTensorsFile &st,
               const std::string &file,
               const std::function<bool(const Buffer &)> &required) {
  std::map<std::string, bool> used;
  for (int i : s.params) {
    Buffer &b = s.buffers[i];
    auto it = st.tensors.find(b.info->name);
    if (it == st.tensors.end()) {
      if (required(b))
        die(file + ": missing tensor '" + std::string(b.info->name) + "'");
      continue;
    }
    copyFrom(b, it->second, file);
    used[it->first] = true;
  }
  return used;
}

static void refuseUnknownTensors(const SafeTensorsFile &st,
                                 const std::map<std::string, bool> &used,
                                 const std::string &file) {
  for (auto &[name, t] : st.tensors)
    if (!used.count(name) && name.rfind("optimizer.", 0) != 0)
      die(file + ": tensor '" + name + "' is not a parameter of this model");
}

static SafeTensorsFile readWeights(const std::string &file) {
  SafeTensorsFile st;
  std::string error;
  if (!readCheckpoint(file, st, error))
    die(error);
  return st;
}

/// Optimizer state and the step counts from a file --save wrote; returns
/// the step to go on from.
static int64_t resumeState(StepBuffers &s, const SafeTensorsFile &st,
                           const std::string &file,
                           std::map<std::string, bool> &used) {
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
  int64_t firstStep =
      parseInt(file + ": metadata 'step'", step->second.c_str(), 0);
  auto updates = st.metadata.find("optimizer_step");
  s.updatesApplied = updates == st.metadata.end()
                         ? firstStep
                         : parseInt(file + ": metadata 'optimizer_step'",
                                    updates->second.c_str(), 0);
  return firstStep;
}

int64_t tgc::rt::loadWeights(StepBuffers &s, const Options &opt,
                             uint64_t seed) {
  // State that does not start at zero (the loss scale), unless resumed.
  for (int i : s.states)
    if (s.buffers[i].info->init != TGC_INIT_NONE)
      initialise(s.buffers[i], seed);
  bool lora = hasAdapters(s);
  auto everyParameter = [](const Buffer &) { return true; };
  auto baseParameter = [](const Buffer &b) { return !isAdapter(*b.info); };

  // The base weights: --init (whose adapters, if any, are used too), the
  // family's initialisation, or --resume's file below.
  if (!opt.init.empty()) {
    SafeTensorsFile st = readWeights(opt.init);
    for (int i : s.params)
      if (isAdapter(*s.buffers[i].info))
        initialise(s.buffers[i], seed);
    refuseUnknownTensors(st, copyParameters(s, st, opt.init, baseParameter),
                         opt.init);
  } else if (opt.resume.empty() || lora) {
    for (int i : s.params)
      initialise(s.buffers[i], seed);
  }
  if (lora)
    s.baseFingerprint = frozenFingerprint(s);
  if (!opt.initAdapter.empty())
    loadAdapters(s, opt.initAdapter);
  if (opt.resume.empty())
    return 0;

  // A LoRA run resumes its adapters and their state from the directory
  // --save wrote, on the base of --init.
  std::string file = lora ? trainingStatePath(opt.resume) : opt.resume;
  SafeTensorsFile st = readWeights(file);
  auto adapter = [](const Buffer &b) { return isAdapter(*b.info); };
  std::map<std::string, bool> used =
      lora ? copyParameters(s, st, file, adapter)
           : copyParameters(s, st, file, everyParameter);
  if (lora)
    checkBaseFingerprint(s, st, file, opt.init);
  int64_t firstStep = resumeState(s, st, file, used);
  refuseUnknownTensors(st, used, file);
  return firstStep;
}

void tgc::rt::dumpGradients(const StepBuffers &s, const std::string &path) {
  if (s.grads.size() != s.newParams.size())
    die("--dump-grads: this executable was compiled without gradient outputs "
        "(compile it with tgc --return-gradients)");
  download(s, s.grads);
  SafeTensorsFile out;
  for (int i : s.grads)
    out.tensors[s.buffers[i].info->name] = hostTensor(s.buffers[i]);
  out.tensors["loss"] = hostTensor(s.buffers[s.loss]);
  if (s.auxLoss >= 0)
    out.tensors["aux_loss"] = hostTensor(s.buffers[s.auxLoss]);
  std::string error;
  if (!writeSafeTensors(path, out, error))
    die(error);
}

TensorData tgc::rt::wholeTensor(const Buffer &b,
                                const std::vector<int64_t> &shape) {
  if (b.info->shard_numel == 0 && b.info->shard_of < 0)
    return hostTensor(b);
  int64_t numel = 1;
  for (int64_t d : shape)
    numel *= d;
  bool root = tgc_dist_rank() == 0;
  TensorData t;
  t.dtype = dtypeOf(b);
  t.shape = shape;
  if (t.dtype == DType::F32) {
    t.bytes.resize(root ? numel * sizeof(float) : 0);
    gatherFloats(b, reinterpret_cast<float *>(t.bytes.data()), numel);
    return t;
  }
  std::vector<float> whole(root ? numel : 0);
  gatherFloats(b, whole.data(), numel);
  return root ? narrowFloats(whole.data(), numel, shape, t.dtype) // exact
              : t;
}

std::vector<float> tgc::rt::wholeFloats(const Buffer &b) {
  if (b.info->shard_numel == 0)
    return loadFloats(b);
  int64_t numel = wholeNumelOf(*b.info);
  std::vector<float> whole(tgc_dist_rank() == 0 ? numel : 0);
  gatherFloats(b, whole.data(), numel);
  return whole;
}

void tgc::rt::addOptimizerState(const StepBuffers &s, SafeTensorsFile &out) {
  download(s, s.states);
  for (int i : s.states) {
    const Buffer &b = s.buffers[i];
    // ZeRO's state shards are saved whole, under the names and shape of the
    // unsharded state.
    TensorData t = b.info->shard_of >= 0
                       ? wholeTensor(b, shapeOf(*s.buffers[b.info->shard_of].info))
                       : hostTensor(b);
    out.tensors[std::string("optimizer.") + b.info->name] = std::move(t);
  }
}

void tgc::rt::saveCheckpoint(const tgc_model_info &m, const StepBuffers &s,
                             const std::string &path, int64_t step, DType dtype,
                             bool writes) {
  if (hasAdapters(s))
    return saveAdapters(m, s, path, step, dtype, writes);
  // Inference weights (a narrower --save-dtype) under their Hugging Face
  // names: no optimizer state and no f32 masters, nothing to resume from.
  bool exporting = dtype != DType::F32;
  auto gathered = [](const Buffer &b) {
    return b.info->shard_numel > 0 || b.info->shard_of >= 0;
  };
  download(s, s.params);
  if (!exporting)
    download(s, s.states);

  // The file's tensors in name order, each with its buffer and whole shape.
  struct Source {
    const Buffer *buffer;
    std::vector<int64_t> shape;
  };
  std::map<std::string, Source> sources;
  for (int i : s.params)
    sources[s.buffers[i].info->name] = {&s.buffers[i],
                                        shapeOf(*s.buffers[i].info)};
  if (!exporting)
    for (int i : s.states) {
      const Buffer &b = s.buffers[i];
      // ZeRO's state shards are saved whole, under the names and shape of
      // the unsharded state.
      sources[std::string("optimizer.") + b.info->name] = {
          &b, shapeOf(b.info->shard_of >= 0 ? *s.buffers[b.info->shard_of].info
                                            : *b.info)};
    }
  std::vector<TensorEntry> entries;
  std::vector<const Source *> order;
  for (auto &[name, source] : sources) {
    entries.push_back(
        {name, exporting ? dtype : dtypeOf(*source.buffer), source.shape});
    order.push_back(&source);
  }

  // One tensor at a time: ZeRO's shards are gathered on rank 0 as the file
  // is written, every process taking part in the same order, so no process
  // ever holds more than one whole tensor beyond its own buffers.
  auto produce = [&](size_t i) -> TensorData {
    const Buffer &b = *order[i]->buffer;
    if (!exporting && !gathered(b)) {
      TensorData view; // written from the buffer itself
      view.dtype = dtypeOf(b);
      view.shape = order[i]->shape;
      view.mapped = static_cast<const uint8_t *>(b.data);
      return view;
    }
    TensorData whole = wholeTensor(b, order[i]->shape);
    if (!writes || !exporting || whole.dtype == dtype)
      return whole;
    std::vector<float> values(whole.numElements());
    for (size_t k = 0; k < values.size(); ++k)
      values[k] = static_cast<float>(whole.get(k));
    return narrowFloats(values.data(), values.size(), whole.shape, dtype);
  };
  if (!writes) {
    for (size_t i = 0; i < order.size(); ++i)
      if (gathered(*order[i]->buffer))
        produce(i);
    return;
  }
  std::map<std::string, std::string> metadata{{"model_type", m.model_type},
                                              {"format", "pt"}};
  if (exporting) {
    metadata[kExportKey] = std::string(dtypeName(dtype)) +
                           " parameters at step " + std::to_string(step);
  } else {
    metadata["step"] = std::to_string(step);
    metadata["optimizer_step"] = std::to_string(s.updatesApplied);
  }
  std::string error;
  if (!writeSafeTensors(path, metadata, entries, produce, error))
    die(error);
}
