//===- GenerateBuffers.h - the generation program's buffers -----*- C++ -*-===//
//
// Allocates and classifies the buffers of the compiled generation program's
// table (tgc_generate_model, GenerateABI.h): parameters, input_ids and
// positions, the KV caches and the logits; and fills the parameters from
// --init or with the model family's random initialisation. Each buffer has
// a host copy (`data`) and the one the program reads (`device`: the same
// on the CPU, Device.h); only the parameters, the inputs and the logits
// are ever copied.
//
//===----------------------------------------------------------------------===//
#ifndef TGC_RUNTIME_GENERATE_GENERATEBUFFERS_H
#define TGC_RUNTIME_GENERATE_GENERATEBUFFERS_H

#include "../Buffers.h"
#include "tgc/Runtime/GenerateABI.h"

#include <cstdint>
#include <string>
#include <vector>

namespace tgc::rt {

struct GenerateBuffers {
  std::vector<Buffer> buffers;
  std::vector<void *> pointers; // what tgc_prefill / tgc_decode take
  std::vector<int> params, caches;
  int inputIds = -1, positions = -1, logits = -1;

  int32_t *ids() const {
    return static_cast<int32_t *>(buffers[inputIds].data);
  }
  int32_t *positionsData() const {
    return static_cast<int32_t *>(buffers[positions].data);
  }
  const float *logitsData() const {
    return static_cast<const float *>(buffers[logits].data);
  }

  /// Runs `program` (tgc_prefill or tgc_decode) on the ids and positions
  /// written at ids() and positionsData(), and leaves its logits at
  /// logitsData(): on a GPU the inputs are uploaded first and the logits
  /// downloaded after. The weights and caches stay on the device.
  void call(void (*program)(void **));

  GenerateBuffers() = default;
  GenerateBuffers(const GenerateBuffers &) = delete;
  GenerateBuffers &operator=(const GenerateBuffers &) = delete;
  ~GenerateBuffers();
};

/// Allocates every buffer of the table, zeroed (the caches' rows past the
/// positions written so far must hold finite values), and checks what the
/// loop relies on: i32 input_ids and positions of prefill_tokens elements,
/// f32 logits of vocab_size.
void bindGenerateBuffers(const tgc_generate_info &m, GenerateBuffers &g);

/// The parameters from `init` (by Hugging Face name; f32, f64, bf16 or f16
/// tensors converted to each buffer's dtype), or, when `init` is empty,
/// drawn as a training executable draws them for `seed`.
void loadGenerateWeights(GenerateBuffers &g, const std::string &init,
                         uint64_t seed);

} // namespace tgc::rt

#endif // TGC_RUNTIME_GENERATE_GENERATEBUFFERS_H
