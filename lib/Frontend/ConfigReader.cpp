//===- ConfigReader.cpp - values and activations in messages
//---------------===//
//
// Part of the front end's config reading (ConfigReader.h).
//
//===----------------------------------------------------------------------===//

#include "ConfigReader.h"

#include "llvm/ADT/StringSwitch.h"

using namespace tgc;
using namespace tgc::config;

/// Describes a JSON value for messages: `string "abc"`, `number 3.5`.
std::string tgc::config::describe(const Value &v) {
  std::string s;
  llvm::raw_string_ostream os(s);
  switch (v.kind()) {
  case Value::Null:
    return "null";
  case Value::Boolean:
    return *v.getAsBoolean() ? "true" : "false";
  case Value::Number:
    os << "number " << v;
    return s;
  case Value::String:
    os << "string " << v;
    return s;
  case Value::Array:
    return "an array";
  case Value::Object:
    return "an object";
  }
  return "a value";
}

std::optional<Activation> tgc::config::parseActivation(ConfigReader &reader,
                                                       llvm::StringRef key,
                                                       llvm::StringRef name) {
  auto act =
      llvm::StringSwitch<std::optional<Activation>>(name)
          .Case("relu", Activation::ReLU)
          .Cases({"gelu", "gelu_python"}, Activation::GeluErf)
          .Cases({"gelu_new", "gelu_pytorch_tanh", "gelu_tanh", "gelu_fast"},
                 Activation::GeluTanh)
          .Cases({"silu", "swish"}, Activation::SiLU)
          .Default(std::nullopt);
  if (!act)
    reader.error(key, "unsupported activation \"" + name +
                          "\" (expected relu, gelu, gelu_new, "
                          "gelu_pytorch_tanh, gelu_fast or silu)");
  return act;
}
