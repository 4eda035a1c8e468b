//===- ConfigReader.h - typed access to a config.json's keys ----*- C++ -*-===//
//
// The front end's reading of model files, shared by the family readers
// (FamilyConfigs.cpp), the RoPE settings (RopeConfig.cpp) and the top level
// (ModelConfig.cpp): every error names the file and the key's full path.
//
//===----------------------------------------------------------------------===//
#ifndef TGC_LIB_FRONTEND_CONFIGREADER_H
#define TGC_LIB_FRONTEND_CONFIGREADER_H

#include "tgc/Frontend/ModelConfig.h"

#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"

#include <cmath>
#include <optional>
#include <string>

namespace tgc::config {

using llvm::json::Object;
using llvm::json::Value;

/// Turns llvm::json's "[line:col, byte=N]: message" into
/// "file:line:col: invalid JSON: ...".
std::string formatParseError(llvm::StringRef path, llvm::Error error);

/// Parses `text` (from `path`) as JSON whose top level is an object: errors
/// name the file, the line and column, or say "expected a JSON object
/// `expected`, got ...".
llvm::Expected<Value> parseJSONObject(llvm::StringRef text,
                                      llvm::StringRef path,
                                      llvm::StringRef expected);

/// Describes a JSON value for messages: `string "abc"`, `number 3.5`.
std::string describe(const Value &v);

/// Typed access to the keys of one JSON object. The first error wins and is
/// reported with the file name and the key's full path ("training.lr").
class ConfigReader {
public:
  static constexpr int64_t kMaxSize = int64_t(1) << 31;

  ConfigReader(llvm::StringRef path, const Object &object,
               std::string prefix = "")
      : path(path), object(object), prefix(std::move(prefix)) {}

  /// Whether `key` is written at all, null included.
  bool present(llvm::StringRef key) const { return object.get(key); }

  bool has(llvm::StringRef key) const {
    const Value *v = object.get(key);
    return v && v->kind() != Value::Null;
  }

  std::optional<int64_t> integer(llvm::StringRef key, bool required,
                                 int64_t min = 1) {
    const Value *v = lookup(key, required);
    if (!v)
      return std::nullopt;
    std::optional<int64_t> i = v->getAsInteger();
    if (!i) {
      // 768.0 is still an integer; 7.5 is not.
      if (std::optional<double> d = v->getAsNumber();
          d && std::floor(*d) == *d && std::fabs(*d) < 9e15)
        i = static_cast<int64_t>(*d);
    }
    if (!i)
      return error(key, "expected an integer, got " + describe(*v));
    if (*i < min)
      return error(key, llvm::formatv("must be >= {0}, got {1}", min, *i));
    // Sizes multiply into element counts; keep every one well inside int64.
    if (*i > kMaxSize)
      return error(
          key, llvm::formatv("{0} is too large (at most {1})", *i, kMaxSize));
    return i;
  }

  std::optional<double> number(llvm::StringRef key, bool required,
                               bool positive = true) {
    const Value *v = lookup(key, required);
    if (!v)
      return std::nullopt;
    std::optional<double> d = v->getAsNumber();
    if (!d)
      return error(key, "expected a number, got " + describe(*v));
    if (!std::isfinite(*d) || (positive && *d <= 0) || *d < 0)
      return error(key,
                   llvm::formatv("must be {0}, got {1}",
                                 positive ? "positive" : "non-negative", *d));
    return d;
  }

  std::optional<bool> boolean(llvm::StringRef key) {
    const Value *v = lookup(key, false);
    if (!v)
      return std::nullopt;
    std::optional<bool> b = v->getAsBoolean();
    if (!b)
      return error(key, "expected true or false, got " + describe(*v));
    return b;
  }

  std::optional<std::string> string(llvm::StringRef key, bool required) {
    const Value *v = lookup(key, required);
    if (!v)
      return std::nullopt;
    std::optional<llvm::StringRef> s = v->getAsString();
    if (!s)
      return error(key, "expected a string, got " + describe(*v));
    return s->str();
  }

  const Value *value(llvm::StringRef key, bool required) {
    return lookup(key, required);
  }

  /// Records an error about `key` (if none was recorded yet).
  std::nullopt_t error(llvm::StringRef key, const llvm::Twine &message) {
    if (!firstError)
      firstError = llvm::formatv("{0}: key '{1}{2}': {3}", path, prefix, key,
                                 message.str())
                       .str();
    return std::nullopt;
  }

  /// Records an error not tied to one key.
  void fail(const llvm::Twine &message) {
    if (!firstError)
      firstError = (path + ": " + message).str();
  }

  llvm::StringRef getPath() const { return path; }
  /// The path of this object's keys ("training.", "rope_parameters.").
  llvm::StringRef getPrefix() const { return prefix; }
  bool failed() const { return firstError.has_value(); }
  const std::optional<std::string> &getError() const { return firstError; }
  void adoptError(const ConfigReader &other) {
    if (!firstError && other.firstError)
      firstError = other.firstError;
  }

private:
  const Value *lookup(llvm::StringRef key, bool required) {
    const Value *v = object.get(key);
    if (v && v->kind() == Value::Null)
      v = nullptr;
    if (!v && required && !firstError)
      firstError =
          llvm::formatv("{0}: missing required key '{1}{2}'", path, prefix, key)
              .str();
    return v;
  }

  std::string path;
  const Object &object;
  std::string prefix;
  std::optional<std::string> firstError;
};

/// The activation a config names (`key` for messages).
std::optional<Activation> parseActivation(ConfigReader &reader,
                                          llvm::StringRef key,
                                          llvm::StringRef name);

/// Reads "rope_scaling" or "rope_parameters" (`key`) into `c`; `thetaKey` is
/// the family's top-level RoPE base key, which must agree. Returns
/// rope_parameters' partial_rotary_factor, if any (RopeConfig.cpp).
std::optional<double> readRopeSettings(ConfigReader &r, llvm::StringRef key,
                                       llvm::StringRef thetaKey,
                                       ModelConfig &c);

/// Sets c.rotaryDims from a top-level partial-rotary key and
/// rope_parameters' (`nested`); `supported` false refuses any share but 1.
void readPartialRotary(ConfigReader &r, llvm::StringRef key, double fallback,
                       std::optional<double> nested, bool supported,
                       ModelConfig &c);

/// The training object's "lora": PEFT's LoraConfig keys (LoraConfig.cpp).
void readLora(ConfigReader &r, mlir::tg::LoraSettings &lora);

/// The family readers (FamilyConfigs.cpp), chosen by model_type.
void readLlama(ConfigReader &r, ModelConfig &c);
void readGPT2(ConfigReader &r, ModelConfig &c);
void readGPTNeoX(ConfigReader &r, ModelConfig &c);
void readMLP(ConfigReader &r, ModelConfig &c);

} // namespace tgc::config

#endif // TGC_LIB_FRONTEND_CONFIGREADER_H
