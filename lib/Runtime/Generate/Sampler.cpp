//===- Sampler.cpp - the next token from the model's logits ---------------===//

#include "Sampler.h"
#include "../Fatal.h"

#include <algorithm>
#include <cmath>
#include <numeric>

using namespace tgc::rt;

Sampler::Sampler(const SamplingSettings &settings)
    // Its own stream: not the one random weights are drawn from.
    : settings(settings), rng(mix64(settings.seed ^ 0x73616d706c6572ull)) {}

int64_t Sampler::greedy(int64_t vocab) const {
  int64_t best = 0;
  for (int64_t i = 1; i < vocab; ++i)
    if (scores[i] > scores[best])
      best = i;
  return best;
}

int64_t Sampler::next(const float *logits, int64_t vocab) {
  scores.resize(vocab);
  double cap = settings.softcap;
  for (int64_t i = 0; i < vocab; ++i) {
    double x = logits[i];
    if (std::isnan(x) || x == INFINITY)
      die("the model's logit of id " + std::to_string(i) + " is " +
          (std::isnan(x) ? "NaN" : "+inf") +
          " (broken weights, or an overflow in the model)");
    scores[i] = cap != 0 ? cap * std::tanh(x / cap) : x;
  }
  if (settings.temperature == 0)
    return greedy(vocab);

  // The candidates and their weights exp((score - max) / T), which no tiny
  // temperature overflows: the top k (sorted, most likely first; ties: the
  // lower id), or every id (in id order).
  auto before = [&](int32_t a, int32_t b) {
    return scores[a] > scores[b] || (scores[a] == scores[b] && a < b);
  };
  order.resize(vocab);
  std::iota(order.begin(), order.end(), 0);
  bool sorted = false;
  if (settings.topK > 0 && settings.topK < vocab) {
    std::partial_sort(order.begin(), order.begin() + settings.topK, order.end(),
                      before);
    order.resize(settings.topK);
    sorted = true;
  }
  double top = -INFINITY;
  for (int32_t id : order)
    top = std::max(top, scores[id]);
  if (top == -INFINITY)
    die("the model's logits are all -inf: no token to sample");
  auto weigh = [&] {
    weights.resize(order.size());
    double total = 0;
    for (size_t j = 0; j < order.size(); ++j)
      total += weights[j] =
          std::exp((scores[order[j]] - top) / settings.temperature);
    return total;
  };
  double total = weigh();

  if (settings.topP < 1) {
    // Top-p: the most likely ids, in order, until their probability reaches
    // p (at least one). Returns false when `order` runs out first.
    double enough = settings.topP * total;
    auto nucleus = [&] {
      std::sort(order.begin(), order.end(), before);
      weigh();
      double sum = 0;
      for (size_t n = 0; n < order.size();) {
        sum += weights[n++];
        if (sum >= enough) {
          order.resize(n);
          weights.resize(n);
          total = sum;
          return true;
        }
      }
      return false;
    };
    if (sorted) {
      if (!nucleus()) // rounding: all k
        total = weigh();
    } else {
      // Sorting a large vocabulary for each token is slow: first only the
      // ids of probability >= (1 - p) / (V - 1), which usually hold the
      // nucleus (as llama2.c does); every id when they do not.
      double cutoff = vocab > 1 ? (1 - settings.topP) / (vocab - 1) * total : 0;
      size_t kept = 0;
      for (size_t j = 0; j < order.size(); ++j)
        if (weights[j] >= cutoff)
          order[kept++] = order[j];
      order.resize(kept);
      if (!nucleus()) {
        order.resize(vocab);
        std::iota(order.begin(), order.end(), 0);
        if (!nucleus())
          total = weigh();
      }
    }
  }
  int64_t kept = static_cast<int64_t>(order.size());

  double u = rng.uniform() * total, sum = 0;
  for (int64_t j = 0; j < kept; ++j) {
    sum += weights[j];
    if (u < sum)
      return order[j];
  }
  // Rounding left u at the very end: the last id with any probability.
  for (int64_t j = kept - 1; j > 0; --j)
    if (weights[j] > 0)
      return order[j];
  return order[0];
}
