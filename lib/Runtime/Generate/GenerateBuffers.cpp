//===- GenerateBuffers.cpp - the generation program's buffers -------------===//

#include "GenerateBuffers.h"
#include "../Device.h"
#include "../Fatal.h"
#include "tgc/Runtime/SafeTensors.h"

#include <cstdlib>
#include <cstring>
#include <set>

using namespace tgc::rt;

GenerateBuffers::~GenerateBuffers() {
  for (Buffer &b : buffers) {
    if (b.device && b.device != b.data)
      tgc_device_free(b.device);
    std::free(b.data);
  }
}

void GenerateBuffers::call(void (*program)(void **)) {
  upload(buffers[inputIds]);
  upload(buffers[positions]);
  program(pointers.data());
  tgc_device_synchronize();
  download(buffers[logits]);
}

/// "input_ids" etc. must exist, with this dtype and element count.
static int requireBuffer(const GenerateBuffers &g, const char *name,
                         int32_t role, int32_t dtype, int64_t numel,
                         const char *what) {
  for (size_t i = 0; i < g.buffers.size(); ++i) {
    const tgc_buffer_info &info = *g.buffers[i].info;
    if (std::strcmp(info.name, name) != 0 || info.role != role)
      continue;
    if (info.dtype != dtype || g.buffers[i].numel != numel)
      die(std::string("this executable's '") + name + "' has shape " +
          shapeText(shapeOf(info)) + " but should hold " + what +
          " (an executable and runtime of different tgc versions?)");
    return static_cast<int>(i);
  }
  die(std::string("this executable has no '") + name +
      "' buffer: it is not a tgc --program=generate program");
}

void tgc::rt::bindGenerateBuffers(const tgc_generate_info &m,
                                  GenerateBuffers &g) {
  if (m.vocab_size <= 0 || m.cache_length <= 0 || m.prefill_tokens <= 0)
    die("this executable's generation table is empty (vocab_size, "
        "cache_length or prefill_tokens is 0)");
  g.buffers.resize(m.num_buffers);
  g.pointers.resize(m.num_buffers);
  for (int i = 0; i < m.num_buffers; ++i) {
    const tgc_buffer_info &info = m.buffers[i];
    Buffer &b = g.buffers[i];
    b.info = &info;
    b.numel = numelOf(info);
    b.bytes = static_cast<size_t>(b.numel) * dtypeBytes(info.dtype);
    b.data = allocateAligned(b.bytes, "'" + std::string(info.name) + "'");
    std::memset(b.data, 0, b.bytes);
    // On a GPU the caches live on the device only, zeroed there too.
    b.device = tgc_device_alloc(b.bytes, b.data);
    g.pointers[i] = b.device;
    if (info.role == TGC_PARAM)
      g.params.push_back(i);
    else if (info.role == TGC_STATE)
      g.caches.push_back(i);
  }
  std::string chunk = std::to_string(m.prefill_tokens) + " i32";
  g.inputIds = requireBuffer(g, "input_ids", TGC_INPUT, TGC_I32,
                             m.prefill_tokens, chunk.c_str());
  g.positions = requireBuffer(g, "positions", TGC_INPUT, TGC_I32,
                              m.prefill_tokens, chunk.c_str());
  std::string logits = std::to_string(m.vocab_size) + " f32";
  g.logits = requireBuffer(g, "logits", TGC_OUTPUT, TGC_F32, m.vocab_size,
                           logits.c_str());
}

/// Stores `values` (f32) in `b` in its dtype.
static void store(Buffer &b, const std::vector<float> &values) {
  switch (b.info->dtype) {
  case TGC_F32:
    std::memcpy(b.data, values.data(), b.bytes);
    return;
  case TGC_BF16:
  case TGC_F16: {
    TensorData t =
        narrowFloats(values.data(), b.numel, shapeOf(*b.info),
                     b.info->dtype == TGC_BF16 ? DType::BF16 : DType::F16);
    std::memcpy(b.data, t.bytes.data(), b.bytes);
    return;
  }
  default:
    die(std::string("this executable's parameter '") + b.info->name +
        "' is not floating point");
  }
}

void tgc::rt::loadGenerateWeights(GenerateBuffers &g, const std::string &init,
                                  uint64_t seed) {
  std::vector<float> values;
  if (init.empty()) {
    for (int i : g.params) {
      Buffer &b = g.buffers[i];
      values.resize(b.numel);
      // The training executable's stream for this name and seed: the same
      // random weights as an untrained `tgc MODEL` executable of that seed.
      Buffer f32 = b;
      f32.data = values.data();
      initialise(f32, seed);
      store(b, values);
      upload(b);
    }
    return;
  }
  SafeTensorsFile st;
  std::string error;
  if (!readCheckpoint(init, st, error))
    die(error);
  std::set<std::string> used;
  for (int i : g.params) {
    Buffer &b = g.buffers[i];
    auto it = st.tensors.find(b.info->name);
    if (it == st.tensors.end())
      die(init + ": missing tensor '" + std::string(b.info->name) + "'");
    const TensorData &t = it->second;
    checkWeightTensor(b, t, init);
    values.resize(b.numel);
    for (int64_t k = 0; k < b.numel; ++k)
      values[k] = static_cast<float>(t.get(k));
    store(b, values);
    upload(b);
    used.insert(it->first);
  }
  // As the training executable's --init: a checkpoint --save wrote also
  // holds optimizer state, which generation has no use for.
  for (auto &[name, t] : st.tensors)
    if (!used.count(name) && name.rfind("optimizer.", 0) != 0)
      die(init + ": tensor '" + name + "' is not a parameter of this model");
}
