//===- Buffers.cpp - the compiled step's buffers --------------------------===//

#include "Buffers.h"
#include "Distributed.h"
#include "Data.h"
#include "Device.h"
#include "Fatal.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <map>

using namespace tgc::rt;

size_t tgc::rt::dtypeBytes(int32_t dtype) {
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

int64_t tgc::rt::wholeNumelOf(const tgc_buffer_info &b) {
  int64_t n = 1;
  for (int i = 0; i < b.rank; ++i)
    n *= b.shape[i];
  return n;
}

int64_t tgc::rt::numelOf(const tgc_buffer_info &b) {
  return b.shard_numel > 0 ? b.shard_numel : wholeNumelOf(b);
}

void tgc::rt::storeShard(Buffer &b, int64_t wholeCount,
                         const std::function<float(int64_t)> &whole) {
  std::vector<float> values(b.numel, 0.0f);
  int64_t first = tgc_dist_rank() * b.numel;
  int64_t n =
      tgc::runtime::shardElements(wholeCount, b.numel, tgc_dist_rank());
  for (int64_t i = 0; i < n; ++i)
    values[i] = whole(first + i);
  storeFloats(b, values.data());
}

std::vector<int64_t> tgc::rt::shapeOf(const tgc_buffer_info &b) {
  return std::vector<int64_t>(b.shape, b.shape + b.rank);
}

std::string tgc::rt::shapeText(const std::vector<int64_t> &shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

void tgc::rt::checkWeightTensor(const Buffer &b, const TensorData &t,
                                const std::string &file) {
  if (t.shape != shapeOf(*b.info))
    die(file + ": tensor '" + b.info->name + "' has shape " +
        shapeText(t.shape) + " but the model needs " +
        shapeText(shapeOf(*b.info)));
  if (t.dtype != DType::F32 && t.dtype != DType::F64 &&
      t.dtype != DType::BF16 && t.dtype != DType::F16)
    die(file + ": tensor '" + b.info->name + "' has dtype " +
        dtypeName(t.dtype) + "; weights must be floating point");
}

/// Deterministic per-tensor stream: the init of one tensor does not depend
/// on the order or number of the others.
static uint64_t nameSeed(const std::string &name, uint64_t seed) {
  uint64_t h = 1469598103934665603ull;
  for (char c : name)
    h = (h ^ uint8_t(c)) * 1099511628211ull;
  return mix64(h ^ mix64(seed));
}

DType tgc::rt::dtypeOf(const Buffer &b) {
  switch (b.info->dtype) {
  case TGC_BF16:
    return DType::BF16;
  case TGC_F16:
    return DType::F16;
  default:
    return DType::F32;
  }
}

void tgc::rt::storeFloats(Buffer &b, const float *values) {
  if (b.info->dtype == TGC_F32) {
    if (values != b.data)
      std::memcpy(b.data, values, b.bytes);
    return;
  }
  TensorData t = narrowFloats(values, b.numel, shapeOf(*b.info), dtypeOf(b));
  std::memcpy(b.data, t.bytes.data(), b.bytes);
}

std::vector<float> tgc::rt::loadFloats(const Buffer &b) {
  if (b.info->dtype == TGC_F32)
    return std::vector<float>(static_cast<const float *>(b.data),
                              static_cast<const float *>(b.data) + b.numel);
  TensorData t = hostTensor(b);
  std::vector<float> values(b.numel);
  for (int64_t i = 0; i < b.numel; ++i)
    values[i] = static_cast<float>(t.get(i));
  return values;
}

TensorData tgc::rt::hostTensor(const Buffer &b) {
  TensorData t;
  t.dtype = dtypeOf(b);
  t.shape = shapeOf(*b.info);
  t.bytes.assign(static_cast<uint8_t *>(b.data),
                 static_cast<uint8_t *>(b.data) + b.bytes);
  return t;
}

void tgc::rt::initialise(Buffer &b, uint64_t seed) {
  // Narrow parameters (tgc --frozen-dtype) are drawn in f32 and rounded; a
  // ZeRO-3 shard is cut from the whole tensor's values, drawn as one
  // process draws them.
  bool sharded = b.info->shard_numel > 0;
  int64_t numel = wholeNumelOf(*b.info);
  std::vector<float> wide(b.info->dtype == TGC_F32 && !sharded ? 0 : numel);
  float *p = wide.empty() ? static_cast<float *>(b.data) : wide.data();
  Rng rng(nameSeed(b.info->name, seed));
  for (int64_t i = 0; i < numel; ++i) {
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
  if (sharded)
    storeShard(b, numel, [&](int64_t i) { return p[i]; });
  else
    storeFloats(b, p);
}

void *tgc::rt::allocateAligned(size_t bytes, const std::string &what) {
  void *p =
      std::aligned_alloc(64, std::max<size_t>(64, (bytes + 63) / 64 * 64));
  if (!p)
    die("out of memory allocating " + what);
  return p;
}

void tgc::rt::upload(const Buffer &b) {
  if (b.device != b.data)
    tgc_device_upload(b.device, b.data, b.bytes);
}
void tgc::rt::upload(const StepBuffers &s, const std::vector<int> &which) {
  for (int i : which)
    upload(s.buffers[i]);
}
void tgc::rt::download(const Buffer &b) {
  if (b.device != b.data)
    tgc_device_download(b.data, b.device, b.bytes);
}
void tgc::rt::download(const StepBuffers &s, const std::vector<int> &which) {
  for (int i : which)
    download(s.buffers[i]);
}

void tgc::rt::bindBuffers(const tgc_model_info &m, StepBuffers &s) {
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
      else if (name == "aux_loss")
        s.auxLoss = i;
      else if (name.rfind("grad_sumsq.", 0) == 0)
        s.gradSumSquares.push_back(i);
      break;
    }
  }
  // New parameters find theirs by name (frozen parameters have none).
  std::map<std::string, int> paramByName;
  for (int i : s.params)
    paramByName[s.buffers[i].info->name] = i;
  bool paired = true;
  for (int i : s.newParams) {
    auto it = paramByName.find(s.buffers[i].info->name);
    if (it == paramByName.end() ||
        s.buffers[it->second].bytes != s.buffers[i].bytes)
      paired = false;
    else
      s.paramUpdates.push_back({it->second, i});
  }
  if (s.lr < 0 || s.step < 0 || s.loss < 0 || s.norm < 0 || !paired ||
      s.states.size() != s.newStates.size())
    die("the compiled step's buffer table is malformed (rebuild with this "
        "tgc)");
  // Trainable parameters are f32 (the optimizer's masters); frozen ones
  // may be narrower (tgc --frozen-dtype).
  for (auto [param, updated] : s.paramUpdates)
    if (s.buffers[param].info->dtype != TGC_F32)
      die("only f32 trainable parameters are supported by this runtime");
  if (s.inPlace) {
    auto share = [&](int from, int to) {
      s.buffers[to].data = s.buffers[from].data;
      s.buffers[to].device = s.buffers[from].device;
      s.buffers[to].shared = true;
      s.pointers[to] = s.buffers[to].device;
    };
    for (auto [param, updated] : s.paramUpdates)
      share(param, updated);
    for (size_t k = 0; k < s.states.size(); ++k)
      share(s.states[k], s.newStates[k]);
  }
}

StepBuffers::~StepBuffers() {
  for (Buffer &b : buffers)
    if (!b.shared) {
      if (b.device != b.data)
        tgc_device_free(b.device);
      std::free(b.data);
    }
}
