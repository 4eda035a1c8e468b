//===- Checkpoints.h - weights in and out -----------------------*- C++ -*-===//
//
// Loading weights (--init, --resume), saving checkpoints and exports
// (--save, --save-dtype) and dumping gradients (--dump-grads), all as
// safetensors under Hugging Face names.
//
//===----------------------------------------------------------------------===//
#ifndef TGC_RUNTIME_CHECKPOINTS_H
#define TGC_RUNTIME_CHECKPOINTS_H

#include "Buffers.h"
#include "Options.h"

#include <cstdint>
#include <string>

namespace tgc::rt {

/// Marks files --save-dtype exported (parameters only, rounded).
constexpr const char *kExportKey = "tgc_export";

/// Weights from --resume (with optimizer state; returns the step to go on
/// from), --init, or the model family's initialisation (returns 0). With
/// LoRA adapters: the base from --init (or the initialisation), adapters
/// from --init-adapter, or from --resume's directory with their state.
int64_t loadWeights(StepBuffers &s, const Options &opt, uint64_t seed);

/// Parameters, optimizer state (as optimizer.<name>) and the step reached;
/// with a narrower `dtype`, the parameters alone, rounded (an export).
/// `writes`: this process writes (the others send their ZeRO-1 shards).
void saveCheckpoint(const tgc_model_info &m, const StepBuffers &s,
                    const std::string &path, int64_t step, DType dtype,
                    bool writes);

/// Loads `t` (from `file`, for messages) into `b`: checked, converted to
/// b's element type, and its mapped pages given back.
void copyFrom(Buffer &b, const TensorData &t, const std::string &file);

/// b's host copy as a whole tensor of `shape`: a shard (ZeRO-1's state,
/// ZeRO-3's parameters) is gathered from every process on rank 0 (every
/// process calls this; only rank 0's result holds the elements, the others
/// hold none).
TensorData wholeTensor(const Buffer &b, const std::vector<int64_t> &shape);

/// A parameter's whole values as floats: its own (loadFloats), or ZeRO-3's
/// shards gathered on rank 0 (every process calls this; the others get
/// none).
std::vector<float> wholeFloats(const Buffer &b);

/// The optimizer state as optimizer.<name> (ZeRO-1 shards gathered whole:
/// every process calls it).
void addOptimizerState(const StepBuffers &s, SafeTensorsFile &out);

/// The first step's gradients and loss, for tests (--dump-grads).
void dumpGradients(const StepBuffers &s, const std::string &path);

} // namespace tgc::rt

#endif // TGC_RUNTIME_CHECKPOINTS_H
