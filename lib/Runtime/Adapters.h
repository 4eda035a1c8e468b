//===- Adapters.h - LoRA adapters in and out --------------------*- C++ -*-===//
//
// A step compiled with tgc --lora-r trains the parameters NAME.lora_A.weight
// and NAME.lora_B.weight beside the frozen NAME.weight. This is how they
// are saved as PEFT does (adapter_model.safetensors, adapter_config.json),
// loaded back (--init-adapter, --resume), and merged into the base weights
// (--merge-to).
//
//===----------------------------------------------------------------------===//
#ifndef TGC_RUNTIME_ADAPTERS_H
#define TGC_RUNTIME_ADAPTERS_H

#include "Buffers.h"
#include "tgc/Runtime/SafeTensors.h"

#include <cstdint>
#include <string>

namespace tgc::rt {

/// Whether a parameter is a LoRA adapter matrix.
bool isAdapter(const tgc_buffer_info &b);
bool hasAdapters(const StepBuffers &s);

/// PEFT's name of an adapter in adapter_model.safetensors.
std::string peftName(const std::string &name);

/// A hash of the parameters that are not adapters (the frozen base).
uint64_t frozenFingerprint(const StepBuffers &s);

/// The file --save's directory keeps the adapters' training state in.
std::string trainingStatePath(const std::string &directory);

/// Refuses to resume adapters trained on other base weights than `s` has.
/// `init` is the run's --init ("" for the family's initialisation).
void checkBaseFingerprint(const StepBuffers &s, const SafeTensorsFile &state,
                          const std::string &file, const std::string &init);

/// --init-adapter: adapters PEFT (or --save) wrote, in a directory with
/// adapter_model.safetensors and adapter_config.json, or that file.
void loadAdapters(StepBuffers &s, const std::string &path);

/// --save of a LoRA run: the directory `path` with adapter_model.safetensors
/// (PEFT's names, in `dtype`), adapter_config.json and, for f32,
/// training_state.safetensors (the adapters, their optimizer state and the
/// step, for --resume). `writes`: this process writes.
void saveAdapters(const tgc_model_info &m, const StepBuffers &s,
                  const std::string &path, int64_t step, DType dtype,
                  bool writes);

/// --merge-to: every base weight under its Hugging Face name, the adapted
/// ones as W + scale·B·A (its transpose for [in, out] weights), in `dtype`.
/// Every process calls it (ZeRO-3's shards are gathered tensor by tensor);
/// the one that `writes` writes.
void writeMergedWeights(const tgc_model_info &m, const StepBuffers &s,
                        const std::string &path, int64_t step, DType dtype,
                        bool writes);

} // namespace tgc::rt

#endif // TGC_RUNTIME_ADAPTERS_H
