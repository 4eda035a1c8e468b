//===- MoE.cpp - reference rules of the mixture-of-experts ops ------------===//

#include "MoE.h"

#include <algorithm>
#include <cmath>
#include <numeric>

using namespace tgc::ref;

namespace {

/// softmax of row `r` of a [R, E] tensor.
std::vector<double> rowSoftmax(const Tensor &logits, int64_t r, int64_t E) {
  const double *l = logits.data.data() + r * E;
  double m = *std::max_element(l, l + E), sum = 0;
  std::vector<double> p(E);
  for (int64_t e = 0; e < E; ++e)
    sum += p[e] = std::exp(l[e] - m);
  for (double &x : p)
    x /= sum;
  return p;
}

/// Expert ids clamped into [0, E), as the lowering does.
int64_t clampExpert(double id, int64_t E) {
  return std::clamp<int64_t>(static_cast<int64_t>(id), 0, E - 1);
}

/// The rows [lo, hi) of group e, clamped into [0, N].
std::pair<int64_t, int64_t> segment(const Tensor &offsets, int64_t e,
                                    int64_t N) {
  int64_t lo = std::clamp<int64_t>(static_cast<int64_t>(offsets[e]), 0, N);
  int64_t hi = std::clamp<int64_t>(static_cast<int64_t>(offsets[e + 1]), lo, N);
  return {lo, hi};
}

} // namespace

Routing tgc::ref::route(const Tensor &logits, int64_t k, bool normalize) {
  int64_t E = logits.shape.back(), R = logits.numElements() / E;
  std::vector<int64_t> shape = logits.shape;
  shape.back() = k;
  Routing out{Tensor(shape), Tensor(shape)};
  for (int64_t r = 0; r < R; ++r) {
    std::vector<double> p = rowSoftmax(logits, r, E);
    std::vector<int64_t> order(E);
    std::iota(order.begin(), order.end(), 0);
    // Larger probability first; equal ones keep the lower expert first.
    std::stable_sort(order.begin(), order.end(),
                     [&](int64_t a, int64_t b) { return p[a] > p[b]; });
    double sum = 0;
    for (int64_t j = 0; j < k; ++j)
      sum += p[order[j]];
    for (int64_t j = 0; j < k; ++j) {
      out.weights[r * k + j] = normalize ? p[order[j]] / sum : p[order[j]];
      out.experts[r * k + j] = static_cast<double>(order[j]);
    }
  }
  return out;
}

Tensor tgc::ref::routeGrad(const Tensor &grad, const Tensor &logits,
                           const Tensor &experts, bool normalize) {
  int64_t E = logits.shape.back(), R = logits.numElements() / E;
  int64_t k = grad.shape.back();
  Tensor out(logits.shape);
  for (int64_t r = 0; r < R; ++r) {
    std::vector<double> p = rowSoftmax(logits, r, E), dp(E, 0.0);
    const double *g = grad.data.data() + r * k;
    std::vector<int64_t> e(k);
    double sum = 0;
    for (int64_t j = 0; j < k; ++j)
      sum += p[e[j] = clampExpert(experts[r * k + j], E)];
    double dot = 0; // Σ_i g_i · w_i of the normalised weights
    for (int64_t j = 0; j < k; ++j)
      dot += g[j] * p[e[j]] / sum;
    for (int64_t j = 0; j < k; ++j)
      dp[e[j]] += normalize ? (g[j] - dot) / sum : g[j];
    double inner = 0;
    for (int64_t i = 0; i < E; ++i)
      inner += dp[i] * p[i];
    for (int64_t i = 0; i < E; ++i)
      out[r * E + i] = p[i] * (dp[i] - inner);
  }
  return out;
}

Dispatch tgc::ref::expertDispatch(const Tensor &experts, int64_t numExperts) {
  int64_t N = experts.numElements();
  Dispatch d{Tensor({N}), Tensor(experts.shape), Tensor({numExperts + 1})};
  int64_t k = experts.shape.back();
  std::vector<int64_t> cursor(numExperts + 1, 0);
  for (int64_t i = 0; i < N; ++i)
    ++cursor[clampExpert(experts[i], numExperts) + 1];
  std::partial_sum(cursor.begin(), cursor.end(), cursor.begin());
  for (int64_t e = 0; e <= numExperts; ++e)
    d.offsets[e] = static_cast<double>(cursor[e]);
  for (int64_t i = 0; i < N; ++i) {
    int64_t row = cursor[clampExpert(experts[i], numExperts)]++;
    d.positions[i] = static_cast<double>(row);
    d.rows[row] = static_cast<double>(i / k);
  }
  return d;
}

Tensor tgc::ref::groupedMatmul(const Tensor &input, const Tensor &offsets,
                               const std::vector<const Tensor *> &weights,
                               bool transposed,
                               const std::vector<int64_t> &shape) {
  int64_t N = input.shape[0], K = input.shape[1], M = shape[1];
  Tensor out(shape);
  for (size_t e = 0; e < weights.size(); ++e) {
    const Tensor &w = *weights[e];
    auto [lo, hi] = segment(offsets, e, N);
    for (int64_t r = lo; r < hi; ++r)
      for (int64_t m = 0; m < M; ++m) {
        double acc = 0;
        for (int64_t c = 0; c < K; ++c)
          acc += input[r * K + c] * (transposed ? w[m * K + c] : w[c * M + m]);
        out[r * M + m] = acc;
      }
  }
  return out;
}

std::vector<Tensor> tgc::ref::groupedWeightGrad(const Tensor &lhs,
                                                const Tensor &rhs,
                                                const Tensor &offsets) {
  int64_t N = lhs.shape[0], P = lhs.shape[1], Q = rhs.shape[1];
  int64_t E = offsets.numElements() - 1;
  std::vector<Tensor> out;
  for (int64_t e = 0; e < E; ++e) {
    Tensor g({P, Q});
    auto [lo, hi] = segment(offsets, e, N);
    for (int64_t r = lo; r < hi; ++r)
      for (int64_t p = 0; p < P; ++p)
        for (int64_t q = 0; q < Q; ++q)
          g[p * Q + q] += lhs[r * P + p] * rhs[r * Q + q];
    out.push_back(std::move(g));
  }
  return out;
}
