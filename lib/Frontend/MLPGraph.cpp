//===- MLPGraph.cpp - MLP classifier → tg -------------------------------===//
//
// The MLP classifier of `model_type: "mlp"`.
//
//===----------------------------------------------------------------------===//

#include "ForwardBuilder.h"

#include <cmath>
#include <numeric>

namespace tgc::frontend {

void ForwardBuilder::declareMLPParams() {
  const auto &sizes = config.layerSizes;
  for (size_t i = 0; i + 1 < sizes.size(); ++i) {
    std::string p = "layers." + std::to_string(i);
    declareParam(p + ".weight", {sizes[i + 1], sizes[i]});
    if (config.bias)
      declareParam(p + ".bias", {sizes[i + 1]});
  }
}

Value ForwardBuilder::buildMLP() {
  Value x = inputs[0], labels = inputs[1];
  size_t numLayers = config.layerSizes.size() - 1;
  for (size_t i = 0; i < numLayers; ++i) {
    std::string p = "layers." + std::to_string(i);
    inLayer(i, [&] {
      x = linear(x, p, config.bias);
      if (i + 1 < numLayers)
        x = activation(x, loc(p + ".act"));
    });
  }
  return crossEntropy(x, labels, std::nullopt);
}

} // namespace tgc::frontend
