//===- MoE.h - reference rules of the mixture-of-experts ops ----*- C++ -*-===//
//
// tg.route, tg.route_grad, tg.expert_dispatch, tg.grouped_matmul and
// tg.grouped_weight_grad in double precision, as TGOps.td describes them.
//
//===----------------------------------------------------------------------===//
#ifndef TGC_REFERENCE_MOE_H
#define TGC_REFERENCE_MOE_H

#include "tgc/Reference/Interpreter.h"

namespace tgc::ref {

struct Routing {
  Tensor weights, experts;
};

/// `logits` [..., E] → weights and experts [..., k].
Routing route(const Tensor &logits, int64_t k, bool normalize);
Tensor routeGrad(const Tensor &grad, const Tensor &logits,
                 const Tensor &experts, bool normalize);

struct Dispatch {
  Tensor rows, positions, offsets;
};
Dispatch expertDispatch(const Tensor &experts, int64_t numExperts);

/// `input` [N, K] times weight e ([K, M], or [M, K] transposed) on its rows.
Tensor groupedMatmul(const Tensor &input, const Tensor &offsets,
                     const std::vector<const Tensor *> &weights,
                     bool transposed, const std::vector<int64_t> &shape);
/// lhs[rows_e]ᵀ · rhs[rows_e] for each of the `offsets` groups.
std::vector<Tensor> groupedWeightGrad(const Tensor &lhs, const Tensor &rhs,
                                      const Tensor &offsets);

} // namespace tgc::ref

#endif // TGC_REFERENCE_MOE_H
