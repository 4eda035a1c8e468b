//===- Sampler.h - the next token from the model's logits -------*- C++ -*-===//
//
// As Hugging Face's generate: the model's logit soft cap (c * tanh(x / c)),
// then temperature, top-k and top-p (nucleus) filtering, then a draw from
// what is left. Temperature 0 is greedy. Reproducible for a seed.
//
//===----------------------------------------------------------------------===//
#ifndef TGC_RUNTIME_GENERATE_SAMPLER_H
#define TGC_RUNTIME_GENERATE_SAMPLER_H

#include "../Data.h"

#include <cstdint>
#include <vector>

namespace tgc::rt {

struct SamplingSettings {
  double softcap = 0;     // 0: none
  double temperature = 1; // 0: greedy
  int64_t topK = 0;       // 0: off
  double topP = 1;        // in (0, 1]; 1: off
  uint64_t seed = 0;
};

class Sampler {
public:
  explicit Sampler(const SamplingSettings &settings);

  /// The next id from the `vocab` logits of the last token. Greedy picks
  /// the largest (the lowest id on ties); sampling draws one uniform number
  /// from the seeded stream. Top-k keeps exactly k ids (ties to the lower
  /// id); top-p keeps the most likely ids, in order, until their
  /// probabilities add up to at least p (at least one). Logits that are NaN
  /// or +inf stop the program, naming the id; -inf logits are never picked.
  int64_t next(const float *logits, int64_t vocab);

private:
  int64_t greedy(int64_t vocab) const;

  SamplingSettings settings;
  Rng rng;
  std::vector<double> scores;  // the logits, soft-capped
  std::vector<int32_t> order;  // candidate ids, most likely first
  std::vector<double> weights; // exp((score - max) / T) of the candidates
};

} // namespace tgc::rt

#endif // TGC_RUNTIME_GENERATE_SAMPLER_H
