//===- Checkpoints.cpp - weights in and out -------------------------------===//

#include "Checkpoints.h"
#include "Adapters.h"
#include "Distributed.h"
#include "Fatal.h"
#include "tgc/Runtime/SafeTensors.h"

#include <algorithm>
#include <cstring>
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

/// The `numel` values of a whole tensor, gathered on rank 0 (empty on the
/// others) from every process's shard `b`. A narrow shard (a frozen weight
/// of tgc --frozen-dtype) travels widened to f32.
static std::vector<float> gatherFloats(const Buffer &b, int64_t numel) {
  std::vector<float> widened =
      b.info->dtype == TGC_F32 ? std::vector<float>() : loadFloats(b);
  const float *shard =
      widened.empty() ? static_cast<const float *>(b.data) : widened.data();
  std::vector<float> whole(tgc_dist_rank() == 0 ? numel : 0);
  tgc_dist_gather_shards(shard, b.numel, whole.data(), numel);
  return whole;
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
  std::vector<float> whole = gatherFloats(b, numel);
  TensorData t;
  t.dtype = dtypeOf(b);
  t.shape = shape;
  if (tgc_dist_rank() != 0)
    return t;
  if (t.dtype != DType::F32)
    return narrowFloats(whole.data(), numel, shape, t.dtype); // exact
  t.bytes.resize(numel * sizeof(float));
  std::memcpy(t.bytes.data(), whole.data(), t.bytes.size());
  return t;
}

std::vector<float> tgc::rt::wholeFloats(const Buffer &b) {
  if (b.info->shard_numel == 0)
    return loadFloats(b);
  return gatherFloats(b, wholeNumelOf(*b.info));
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
  bool sharded = std::any_of(s.params.begin(), s.params.end(), [&](int i) {
    return s.buffers[i].info->shard_numel > 0;
  });
  if (!writes && dtype != DType::F32 && !sharded)
    return;
  download(s, s.params);
  SafeTensorsFile out;
  out.metadata["model_type"] = m.model_type;
  out.metadata["format"] = "pt";
  // Whole parameters (ZeRO-3's shards gathered on rank 0).
  for (int i : s.params)
    out.tensors[s.buffers[i].info->name] =
        wholeTensor(s.buffers[i], shapeOf(*s.buffers[i].info));
  if (dtype != DType::F32) {
    // Inference weights under their Hugging Face names: no optimizer state
    // and no f32 masters, so nothing to resume training from.
    if (!writes)
      return;
    for (auto &[name, t] : out.tensors) {
      std::vector<float> values(t.numElements());
      for (size_t k = 0; k < values.size(); ++k)
        values[k] = static_cast<float>(t.get(k));
      t = narrowFloats(values.data(), values.size(), t.shape, dtype);
    }
    out.metadata[kExportKey] = std::string(dtypeName(dtype)) +
                               " parameters at step " + std::to_string(step);
    std::string error;
    if (!writeSafeTensors(path, out, error))
      die(error);
    return;
  }
  addOptimizerState(s, out);
  if (!writes)
    return;
  out.metadata["step"] = std::to_string(step);
  out.metadata["optimizer_step"] = std::to_string(s.updatesApplied);
  std::string error;
  if (!writeSafeTensors(path, out, error))
    die(error);
}
