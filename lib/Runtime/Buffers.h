//===- Buffers.h - the compiled step's buffers ------------------*- C++ -*-===//
//
// Allocates and classifies the buffers the compiled step's table
// (tgc_model) describes: parameters, optimizer state, their updated copies,
// gradients, inputs and outputs; and moves them between host and device.
//
//===----------------------------------------------------------------------===//
#ifndef TGC_RUNTIME_BUFFERS_H
#define TGC_RUNTIME_BUFFERS_H

#include "tgc/Runtime/ABI.h"
#include "tgc/Runtime/SafeTensors.h"

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace tgc::rt {

struct Buffer {
  const tgc_buffer_info *info;
  void *data = nullptr;   // the host copy
  void *device = nullptr; // what the step reads (== data on the CPU)
  int64_t numel;
  size_t bytes;
  bool shared = false; // data belongs to another buffer (in-place update)
};

/// The compiled step's buffers, in the order it takes them, by role.
struct StepBuffers {
  std::vector<Buffer> buffers;
  std::vector<void *> pointers; // what tgc_train_step is called with
  std::vector<int> params, states, newParams, newStates, grads;
  /// Each trainable parameter with its new value (the new parameter of the
  /// same name). A frozen parameter (tgc --freeze) has no new value: the
  /// step reads it and never writes it.
  std::vector<std::pair<int, int>> paramUpdates;
  int ids = -1, targets = -1, features = -1, labels = -1, lr = -1, step = -1,
      loss = -1, norm = -1;
  /// A mixture of experts' load-balancing loss (output aux_loss), reported
  /// beside the loss that includes it.
  int auxLoss = -1;
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
  /// tgc --lora-r: a fingerprint of the frozen base weights, saved with the
  /// adapters so that --resume refuses another base.
  uint64_t baseFingerprint = 0;

  float scalar(int i) const { return *static_cast<float *>(buffers[i].data); }

  ~StepBuffers();
};

/// Bytes of one element of a tgc_dtype.
size_t dtypeBytes(int32_t dtype);
/// Elements of the whole tensor `b` describes.
int64_t wholeNumelOf(const tgc_buffer_info &b);
/// Elements the buffer holds: a ZeRO-3 parameter's shard, else the whole.
int64_t numelOf(const tgc_buffer_info &b);
std::vector<int64_t> shapeOf(const tgc_buffer_info &b);
/// "[2, 3]", for messages.
std::string shapeText(const std::vector<int64_t> &shape);

/// Stops the program, naming `file`, unless `t` can be loaded into `b`: the
/// same shape, a floating-point dtype.
void checkWeightTensor(const Buffer &b, const TensorData &t,
                       const std::string &file);

/// Fills `b` as its table entry says (normal, uniform, ones, constant or
/// zeros) from a stream seeded by `seed` and the buffer's name.
void initialise(Buffer &b, uint64_t seed);

/// Writes `values` (b.numel floats) into b's host copy, rounded to b's
/// element type (bf16/f16 for frozen weights of tgc --frozen-dtype).
void storeFloats(Buffer &b, const float *values);
/// A shard (a ZeRO-3 parameter, ZeRO-1 state): stores this process's part
/// (zero padded) of the `wholeCount`-element tensor whose element i is
/// `whole(i)`.
void storeShard(Buffer &b, int64_t wholeCount,
                const std::function<float(int64_t)> &whole);
/// The safetensors dtype of b's float element type.
DType dtypeOf(const Buffer &b);
/// b's host copy, widened to floats.
std::vector<float> loadFloats(const Buffer &b);
/// b's host copy as a tensor of its shape and element type.
TensorData hostTensor(const Buffer &b);

/// 64-byte aligned memory, or stops naming `what`.
void *allocateAligned(size_t bytes, const std::string &what);

/// Host copy → device (nothing to do on the CPU).
void upload(const Buffer &b);
void upload(const StepBuffers &s, const std::vector<int> &which);
/// Device → host copy.
void download(const Buffer &b);
void download(const StepBuffers &s, const std::vector<int> &which);

/// Allocates (zeroed) and classifies every buffer of the model table;
/// updated values share their inputs' storage when the step allows it.
void bindBuffers(const tgc_model_info &m, StepBuffers &s);

} // namespace tgc::rt

#endif // TGC_RUNTIME_BUFFERS_H
