//===- RopeConfig.cpp - RoPE settings of a config.json --------------------===//
//
// rope_theta, rope_scaling / rope_parameters (default, linear, llama3; the
// other variants refused by name), partial rotary shares, and the inverse
// frequencies transformers' rope init functions compute from them.
//
//===----------------------------------------------------------------------===//

#include "ConfigReader.h"

#include "llvm/Support/Format.h"

#include <cmath>

using namespace tgc;
using namespace tgc::config;

/// The RoPE variant an object such as rope_scaling names, by "rope_type" or
/// the legacy "type"; "default" where it names none. nullopt: not an object,
/// or a type that is not a string.
static std::optional<std::string> ropeType(const Value &v) {
  const Object *obj = v.getAsObject();
  if (!obj)
    return std::nullopt;
  const Value *type = obj->get("rope_type");
  if (!type)
    type = obj->get("type");
  if (!type)
    return std::string("default");
  if (std::optional<llvm::StringRef> s = type->getAsString())
    return s->str();
  return std::nullopt;
}

/// Reads one object of RoPE settings: "rope_scaling", or "rope_parameters"
/// (newer configs, which keep rope_theta and partial_rotary_factor there
/// too; the top-level `thetaKey` must agree). The variant is named by
/// "rope_type" or the legacy "type"; each variant takes its own keys, as
/// transformers' rope init functions read them. Variants tgc does not build,
/// and keys no variant here reads, are refused by name. Returns the
/// partial_rotary_factor of rope_parameters, if any.
std::optional<double> tgc::config::readRopeSettings(ConfigReader &r,
                                                    llvm::StringRef key,
                                                    llvm::StringRef thetaKey,
                                                    ModelConfig &c) {
  const Value *settings = r.value(key, false);
  if (!settings)
    return std::nullopt;
  const Object *obj = settings->getAsObject();
  if (!obj) {
    r.error(key, "expected an object, got " + describe(*settings));
    return std::nullopt;
  }
  std::optional<std::string> type = ropeType(*settings);
  if (!type) {
    r.error(key, "rope_type must be a string");
    return std::nullopt;
  }
  RopeScaling scaling;
  llvm::SmallVector<llvm::StringRef, 8> keys = {"rope_type", "type"};
  // Every form but rope_scaling is rope_parameters' (Gemma 3's per layer
  // type included).
  if (key != "rope_scaling")
    keys.append({"rope_theta", "partial_rotary_factor"});
  if (*type == "linear") {
    scaling.kind = RopeScalingKind::Linear;
    keys.push_back("factor");
  } else if (*type == "llama3") {
    scaling.kind = RopeScalingKind::Llama3;
    keys.append({"factor", "low_freq_factor", "high_freq_factor",
                 "original_max_position_embeddings"});
  } else if (*type != "default") {
    r.error(key, "RoPE scaling type \"" + *type +
                     "\" is not supported (supported: default, linear, "
                     "llama3)");
    return std::nullopt;
  }
  ConfigReader sub(r.getPath(), *obj, (r.getPrefix() + key + ".").str());
  for (const auto &[name, value] : *obj)
    if (!llvm::is_contained(keys, name.str()))
      sub.error(name.str(), "is not read by rope_type \"" + *type +
                                "\" and would change the math elsewhere; "
                                "remove it");
  if (scaling.kind != RopeScalingKind::None) {
    scaling.factor = sub.number("factor", true).value_or(1.0);
    if (!sub.failed() && scaling.factor < 1.0)
      sub.error("factor", llvm::formatv("must be >= 1, got {0}",
                                        llvm::format("%g", scaling.factor)));
  }
  if (scaling.kind == RopeScalingKind::Llama3) {
    scaling.lowFreqFactor = sub.number("low_freq_factor", true).value_or(1.0);
    scaling.highFreqFactor = sub.number("high_freq_factor", true).value_or(4.0);
    scaling.originalMaxPositions =
        sub.integer("original_max_position_embeddings", true).value_or(1);
    if (!sub.failed() && scaling.highFreqFactor <= scaling.lowFreqFactor)
      sub.error("high_freq_factor",
                llvm::formatv("must be greater than low_freq_factor {0}, got "
                              "{1}",
                              llvm::format("%g", scaling.lowFreqFactor),
                              llvm::format("%g", scaling.highFreqFactor)));
  }
  std::optional<double> theta, partial;
  if (key != "rope_scaling") {
    theta = sub.number("rope_theta", false);
    partial = sub.number("partial_rotary_factor", false);
  }
  r.adoptError(sub);
  if (r.failed())
    return std::nullopt;
  if (scaling.kind != RopeScalingKind::None) {
    if (c.ropeScaling.kind != RopeScalingKind::None)
      r.error(key, "rope_scaling and rope_parameters both scale RoPE; keep "
                   "one of them");
    c.ropeScaling = scaling;
  }
  if (!theta)
    return partial;
  if (r.has(thetaKey) && *theta != c.ropeTheta)
    r.error(key, llvm::formatv("rope_theta {0} contradicts the top-level "
                               "{1} {2}",
                               llvm::format("%g", *theta), thetaKey,
                               llvm::format("%g", c.ropeTheta)));
  c.ropeTheta = *theta;
  return partial;
}

/// The rotated share of each head from a top-level key (`key`: rotary_pct,
/// partial_rotary_factor; `fallback` where absent) and rope_parameters'
/// partial_rotary_factor (`nested`), which must agree. Sets c.rotaryDims to
/// int(head_dim · factor), as transformers computes it; `supported` false
/// refuses every factor but 1.
void tgc::config::readPartialRotary(ConfigReader &r, llvm::StringRef key,
                                    double fallback,
                                    std::optional<double> nested,
                                    bool supported, ModelConfig &c) {
  std::optional<double> top = r.number(key, false);
  if (r.failed())
    return;
  if (top && nested && *top != *nested) {
    r.error("rope_parameters",
            llvm::formatv("partial_rotary_factor {0} contradicts the "
                          "top-level {1} {2}",
                          llvm::format("%g", *nested), key,
                          llvm::format("%g", *top)));
    return;
  }
  llvm::StringRef named = top ? key : "rope_parameters";
  double factor = top ? *top : nested.value_or(fallback);
  if (factor == 1.0)
    return;
  if (!supported) {
    r.error(named, llvm::formatv("a partial rotary factor of {0} is not "
                                 "supported by model_type \"{1}\" (RoPE "
                                 "over the whole head only: 1.0)",
                                 llvm::format("%g", factor), c.modelType));
    return;
  }
  auto rotated = static_cast<int64_t>(static_cast<double>(c.headDim) * factor);
  if (factor > 1.0 || rotated < 2 || rotated % 2 != 0)
    r.error(named,
            llvm::formatv("a partial rotary factor of {0} rotates {1} "
                          "of the {2} dimensions of each head; RoPE "
                          "needs an even number from 2 to {2}",
                          llvm::format("%g", factor), rotated, c.headDim));
  else
    c.rotaryDims = rotated;
}

std::vector<double> tgc::ropeInverseFrequencies(const ModelConfig &c) {
  const RopeScaling &scaling = c.ropeScaling;
  int64_t dim = c.rotatedDims();
  std::vector<double> frequencies;
  for (int64_t i = 0; i < dim / 2; ++i) {
    double f = 1.0 / std::pow(c.ropeTheta, 2.0 * i / dim);
    switch (scaling.kind) {
    case RopeScalingKind::None:
      break;
    case RopeScalingKind::Linear:
      f /= scaling.factor;
      break;
    case RopeScalingKind::Llama3: {
      // Long wavelengths are divided by the factor, short ones kept, and the
      // band between interpolates (transformers' _compute_llama3_parameters).
      double original = static_cast<double>(scaling.originalMaxPositions);
      double lowWavelen = original / scaling.lowFreqFactor;
      double highWavelen = original / scaling.highFreqFactor;
      double wavelen = 2.0 * M_PI / f;
      if (wavelen > lowWavelen) {
        f /= scaling.factor;
      } else if (wavelen >= highWavelen) {
        double smooth = (original / wavelen - scaling.lowFreqFactor) /
                        (scaling.highFreqFactor - scaling.lowFreqFactor);
        f = (1.0 - smooth) * f / scaling.factor + smooth * f;
      }
      break;
    }
    }
    frequencies.push_back(f);
  }
  return frequencies;
}
