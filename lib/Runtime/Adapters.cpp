//===- Adapters.cpp - LoRA adapters in and out ----------------------------===//

#include "Adapters.h"
#include "Checkpoints.h"
#include "Data.h"
#include "Device.h"
#include "Distributed.h"
#include "Fatal.h"
#include "Files.h"
#include "tgc/Runtime/Json.h"

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <map>
#include <vector>

using namespace tgc::rt;

namespace {

constexpr const char *kPeftPrefix = "base_model.model.";
constexpr const char *kAdapterFile = "adapter_model.safetensors";
constexpr const char *kAdapterConfig = "adapter_config.json";
constexpr const char *kTrainingState = "training_state.safetensors";
constexpr const char *kFingerprintKey = "lora_base_fingerprint";

bool endsWith(const std::string &s, const std::string &suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

std::string joinPath(const std::string &directory, const std::string &name) {
  return endsWith(directory, "/") ? directory + name : directory + "/" + name;
}

std::string hex(uint64_t v) {
  char text[17];
  std::snprintf(text, sizeof text, "%016" PRIx64, v);
  return text;
}

json::Document parseJson(const std::string &text, const std::string &what) {
  json::Document doc;
  std::string error;
  if (!json::parse(text, doc, error) || !doc.root().isObject())
    die(what + ": " + (error.empty() ? "not a JSON object" : error));
  return doc;
}

/// A list of names (target_modules, exclude_modules, layers_pattern) as a
/// sorted set, or a string: a regular expression (or "all-linear") marked
/// as one, unless `stringIsName` (layers_pattern's "layers" is ["layers"]);
/// null or absent is empty.
std::vector<std::string> targetSet(const json::Value *targets,
                                   bool stringIsName = false) {
  std::vector<std::string> out;
  if (targets && targets->isString())
    out.push_back(stringIsName
                      ? std::string(targets->string())
                      : "regular expression " + std::string(targets->string()));
  if (targets && targets->isArray())
    for (const json::Value &t : targets->items())
      out.push_back(t.isString() ? std::string(t.string()) : t.describe());
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

/// rank_pattern / alpha_pattern as sorted "key: value" entries, or
/// layers_to_transform (an index or a list) as sorted indices.
std::vector<std::string> patternSet(const json::Value *pattern) {
  std::vector<std::string> out;
  auto text = [](const json::Value &v) {
    return v.isNumber() ? json::Writer().number(v.number()).str()
                        : v.describe();
  };
  if (pattern && pattern->isObject())
    for (auto &[key, value] : pattern->members())
      out.push_back(std::string(key) + ": " + text(value));
  if (pattern && pattern->isNumber())
    out.push_back(text(*pattern));
  if (pattern && pattern->isArray())
    for (const json::Value &v : pattern->items())
      out.push_back(text(v));
  std::sort(out.begin(), out.end());
  return out;
}

std::string listText(const std::vector<std::string> &items) {
  std::string s = "[";
  for (size_t i = 0; i < items.size(); ++i)
    s += (i ? ", " : "") + items[i];
  return s + "]";
}

/// The adapter settings of `file` (an adapter_config.json) must be this
/// executable's: another r, alpha or set of targets trains another model.
void checkAdapterConfig(const std::string &file) {
  std::string text, error;
  if (!readFileBytes(file, text, error))
    die(error);
  json::Document theirFile = parseJson(text, file);
  json::Document ourFile =
      parseJson(tgc_model.lora_config, "the compiled adapter settings");
  const json::Value &theirs = theirFile.root(), &ours = ourFile.root();
  auto number = [](const json::Value *v) {
    return v && v->isNumber() ? v->number() : -1.0;
  };
  auto flag = [](const json::Value *v) { return v && v->boolean(); };
  const char *rebuild = " (compile with the same --lora-r, --lora-alpha, "
                        "--lora-targets and --lora-rslora, or with this "
                        "file as --lora-config)";
  if (const json::Value *type = theirs.get("peft_type");
      type && (!type->isString() || type->string() != "LORA"))
    die(file + ": peft_type " + type->describe() + " is not LoRA");
  if (number(theirs.get("r")) != number(ours.get("r")))
    die(file + ": r is " + (theirs.get("r") ? theirs.get("r")->describe()
                                             : std::string("missing")) +
        " but this executable's adapters have r = " +
        std::to_string(tgc_model.lora_rank) + rebuild);
  if (number(theirs.get("lora_alpha")) != number(ours.get("lora_alpha")))
    die(file + ": lora_alpha is " +
        (theirs.get("lora_alpha") ? theirs.get("lora_alpha")->describe()
                                  : std::string("missing")) +
        " but this executable's is " + ours.get("lora_alpha")->describe() +
        rebuild);
  if (flag(theirs.get("use_rslora")) != flag(ours.get("use_rslora")))
    die(file + ": use_rslora differs from this executable's" +
        std::string(rebuild));
  std::vector<std::string> a = targetSet(theirs.get("target_modules")),
                           b = targetSet(ours.get("target_modules"));
  if (a != b)
    die(file + ": target_modules " + listText(a) +
        " differ from this executable's " + listText(b) + rebuild);
  // The settings that choose other modules or give them other ranks.
  for (const char *key : {"exclude_modules", "layers_pattern"}) {
    bool names = std::string(key) == "layers_pattern";
    std::vector<std::string> x = targetSet(theirs.get(key), names),
                             y = targetSet(ours.get(key), names);
    if (x != y)
      die(file + ": " + key + " " + listText(x) +
          " differ from this executable's " + listText(y) + rebuild);
  }
  for (const char *key :
       {"rank_pattern", "alpha_pattern", "layers_to_transform"}) {
    std::vector<std::string> x = patternSet(theirs.get(key)),
                             y = patternSet(ours.get(key));
    if (x != y)
      die(file + ": " + key + " " + listText(x) +
          " differs from this executable's " + listText(y) + rebuild);
  }
}

} // namespace

bool tgc::rt::isAdapter(const tgc_buffer_info &b) {
  std::string name = b.name;
  return endsWith(name, ".lora_A.weight") || endsWith(name, ".lora_B.weight") ||
         endsWith(name, ".lora_embedding_A") ||
         endsWith(name, ".lora_embedding_B");
}

bool tgc::rt::hasAdapters(const StepBuffers &s) {
  return std::any_of(s.params.begin(), s.params.end(), [&](int i) {
    return isAdapter(*s.buffers[i].info);
  });
}

std::string tgc::rt::peftName(const std::string &name) {
  return kPeftPrefix + name;
}

uint64_t tgc::rt::frozenFingerprint(const StepBuffers &s) {
  // Over the whole tensors, however they are held: ZeRO-3's shards are
  // gathered on rank 0 one tensor at a time, and rank 0's hash is then
  // every process's (as 32-bit halves, exact in doubles).
  uint64_t h = 0x9e3779b97f4a7c15ull;
  bool sharded = false;
  auto mixBytes = [&](const uint8_t *p, size_t bytes) {
    for (size_t k = 0; k < bytes; k += 8) {
      uint64_t word = 0;
      std::memcpy(&word, p + k, std::min<size_t>(8, bytes - k));
      h = mix64(h ^ word);
    }
  };
  for (int i : s.params) {
    const Buffer &b = s.buffers[i];
    if (isAdapter(*b.info))
      continue;
    if (b.info->shard_numel == 0) {
      mixBytes(static_cast<const uint8_t *>(b.data), b.bytes);
      continue;
    }
    sharded = true;
    TensorData whole = wholeTensor(b, shapeOf(*b.info));
    mixBytes(whole.bytes.data(), whole.bytes.size());
  }
  if (!sharded)
    return h;
  double halves[2] = {0, 0};
  if (tgc_dist_rank() == 0) {
    halves[0] = static_cast<double>(h >> 32);
    halves[1] = static_cast<double>(h & 0xffffffffu);
  }
  tgc_dist_sum(halves, 2);
  return (static_cast<uint64_t>(halves[0]) << 32) |
         static_cast<uint64_t>(halves[1]);
}

std::string tgc::rt::trainingStatePath(const std::string &directory) {
  if (!isDirectory(directory))
    die(directory + ": not a directory (a LoRA run resumes from the "
                    "directory its --save wrote)");
  return joinPath(directory, kTrainingState);
}

void tgc::rt::checkBaseFingerprint(const StepBuffers &s,
                                   const SafeTensorsFile &state,
                                   const std::string &file,
                                   const std::string &init) {
  auto saved = state.metadata.find(kFingerprintKey);
  if (saved == state.metadata.end())
    die(file + ": no '" + kFingerprintKey +
        "' in its metadata (--resume needs the directory a LoRA run's --save "
        "wrote)");
  if (saved->second != hex(s.baseFingerprint))
    die(file + ": its adapters were trained on other base weights than " +
        (init.empty() ? std::string("this run's initialisation")
                      : "those of --init " + init) +
        ": give the --init (and --seed) of the run that saved them");
}

void tgc::rt::loadAdapters(StepBuffers &s, const std::string &path) {
  std::string file = path, directory;
  if (isDirectory(path)) {
    directory = path;
    file = joinPath(path, kAdapterFile);
    if (!isFile(file))
      die(path + ": a directory without " + kAdapterFile);
    if (!isFile(joinPath(directory, kAdapterConfig)))
      die(path + ": a directory without " + kAdapterConfig);
  } else {
    size_t slash = path.rfind('/');
    directory = slash == std::string::npos ? "."
                : slash == 0                 ? "/"
                                             : path.substr(0, slash);
  }
  if (isFile(joinPath(directory, kAdapterConfig)))
    checkAdapterConfig(joinPath(directory, kAdapterConfig));
  SafeTensorsFile st;
  std::string error;
  if (!readSafeTensors(file, st, error))
    die(error);
  std::map<std::string, bool> used;
  std::string example;
  for (int i : s.params) {
    Buffer &b = s.buffers[i];
    if (!isAdapter(*b.info))
      continue;
    std::string name = peftName(b.info->name);
    if (example.empty())
      example = name;
    auto it = st.tensors.find(name);
    if (it == st.tensors.end())
      die(file + ": missing adapter '" + name + "'");
    copyFrom(b, it->second, file);
    used[name] = true;
  }
  for (auto &[name, t] : st.tensors)
    if (!used.count(name))
      die(file + ": tensor '" + name +
          "' is not an adapter of this model (whose adapters are named as '" +
          example + "')");
}

void tgc::rt::saveAdapters(const tgc_model_info &m, const StepBuffers &s,
                           const std::string &path, int64_t step, DType dtype,
                           bool writes) {
  bool sharded = std::any_of(s.params.begin(), s.params.end(), [&](int i) {
    return s.buffers[i].info->shard_numel > 0;
  });
  if (!writes && dtype != DType::F32 && !sharded)
    return;
  SafeTensorsFile adapters, state;
  adapters.metadata["format"] = "pt";
  for (int i : s.params) {
    const Buffer &b = s.buffers[i];
    if (!isAdapter(*b.info))
      continue;
    download(b);
    // ZeRO-3's shards gathered on rank 0 (every process takes part).
    TensorData whole = wholeTensor(b, shapeOf(*b.info));
    if (dtype == DType::F32) {
      adapters.tensors[peftName(b.info->name)] = whole;
    } else if (writes) {
      std::vector<float> values(whole.numElements());
      for (size_t k = 0; k < values.size(); ++k)
        values[k] = static_cast<float>(whole.get(k));
      adapters.tensors[peftName(b.info->name)] =
          narrowFloats(values.data(), values.size(), whole.shape, dtype);
    }
    state.tensors[b.info->name] = std::move(whole);
  }
  if (dtype == DType::F32)
    addOptimizerState(s, state);
  if (!writes)
    return;
  std::string error;
  if (!makeDirectory(path, error) ||
      !writeSafeTensors(joinPath(path, kAdapterFile), adapters, error) ||
      !writeFileAtomically(joinPath(path, kAdapterConfig), m.lora_config,
                           error))
    die(error);
  if (dtype != DType::F32)
    return;
  state.metadata["model_type"] = m.model_type;
  state.metadata["step"] = std::to_string(step);
  state.metadata["optimizer_step"] = std::to_string(s.updatesApplied);
  state.metadata[kFingerprintKey] = hex(s.baseFingerprint);
  if (!writeSafeTensors(joinPath(path, kTrainingState), state, error))
    die(error);
}

void tgc::rt::writeMergedWeights(const tgc_model_info &m, const StepBuffers &s,
                                 const std::string &path, int64_t step,
                                 DType dtype, bool writes) {
  bool sharded = std::any_of(s.params.begin(), s.params.end(), [&](int i) {
    return s.buffers[i].info->shard_numel > 0;
  });
  if (!writes && !sharded)
    return;
  std::map<std::string, const Buffer *> byName;
  for (int i : s.params) {
    download(s.buffers[i]);
    byName[s.buffers[i].info->name] = &s.buffers[i];
  }
  std::map<std::string, std::string> metadata{
      {"model_type", m.model_type},
      {"format", "pt"},
      {kExportKey, std::string(dtypeName(dtype)) +
                       " parameters merged with their LoRA adapters at step " +
                       std::to_string(step)}};
  std::vector<TensorEntry> entries;
  std::vector<const Buffer *> weights;
  for (auto &[name, buffer] : byName)
    if (!isAdapter(*buffer->info)) {
      entries.push_back({name, dtype, shapeOf(*buffer->info)});
      weights.push_back(buffer);
    }
  // One merged tensor at a time: the file may be larger than the memory
  // the run had left. Under ZeRO-3 every process gathers each tensor in
  // the same order, and only the writer keeps it.
  auto merged = [&](size_t index) -> TensorData {
    const Buffer &w = *weights[index];
    const std::string &name = entries[index].name;
    std::vector<float> values = wholeFloats(w);
    std::string module = name.substr(0, name.size() - 7);
    auto a = byName.find(module + ".lora_A.weight");
    auto b = byName.find(module + ".lora_B.weight");
    // An embedding's adapters, A [r, V] and B [D, r], merge into its table
    // [V, D] transposed, as a Conv1D weight's do.
    bool embedding = a == byName.end();
    if (embedding) {
      a = byName.find(module + ".lora_embedding_A");
      b = byName.find(module + ".lora_embedding_B");
    }
    bool adapted =
        endsWith(name, ".weight") && a != byName.end() && b != byName.end();
    std::vector<float> A, B;
    if (adapted) {
      A = wholeFloats(*a->second);
      B = wholeFloats(*b->second);
    }
    if (!writes)
      return TensorData();
    if (adapted) {
      // A [r, in], B [out, r]; W [out, in], or [in, out] for Conv1D.
      int64_t r = a->second->info->shape[0], in = a->second->info->shape[1],
              outs = b->second->info->shape[0];
      double scale = a->second->info->lora_scale;
      for (int64_t o = 0; o < outs; ++o)
        for (int64_t i = 0; i < in; ++i) {
          double delta = 0;
          for (int64_t k = 0; k < r; ++k)
            delta += double(B[o * r + k]) * double(A[k * in + i]);
          float &target = m.lora_fan_in_fan_out || embedding
                              ? values[i * outs + o]
                              : values[o * in + i];
          target = static_cast<float>(double(target) + scale * delta);
        }
    }
    return narrowFloats(values.data(), values.size(), shapeOf(*w.info), dtype);
  };
  if (!writes) {
    for (size_t i = 0; i < entries.size(); ++i)
      merged(i);
    return;
  }
  std::string error;
  if (!writeSafeTensors(path, metadata, entries, merged, error))
    die(error);
}
