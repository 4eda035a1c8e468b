//===- Components.h - the stages of a tokenizer.json ------------*- C++ -*-===//
//
// Each stage Hugging Face's `tokenizers` runs, built from its JSON object:
// normalizers rewrite a segment's text, pre-tokenizers split it into words,
// decoders turn token strings back into text, post-processors add special
// tokens. A `type` that is not built is refused by name.
//
//===----------------------------------------------------------------------===//
#ifndef TGC_RUNTIME_TOKENIZER_COMPONENTS_H
#define TGC_RUNTIME_TOKENIZER_COMPONENTS_H

#include "tgc/Runtime/Json.h"

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace tgc::rt::tok {

class Regex;

class Normalizer {
public:
  virtual ~Normalizer() = default;
  virtual void apply(std::string &text) const = 0;
};

/// A word of the pre-tokenized text; `atStart` if it begins the input (the
/// Metaspace pre-tokenizer's prepend_scheme "first" looks at it).
struct Piece {
  std::string text;
  bool atStart = false;
};

/// Receives the words of a pre-tokenizer, in order.
using PieceSink = std::function<void(Piece &&)>;

class PreTokenizer {
public:
  virtual ~PreTokenizer() = default;
  /// Splits `piece`, passing each word to `emit` as it is found: a whole
  /// corpus is one piece, so nothing is gathered in between.
  virtual void split(Piece &&piece, const PieceSink &emit) const = 0;
};

class Decoder {
public:
  virtual ~Decoder() = default;
  /// Rewrites the token strings in place; their concatenation is the text.
  virtual void decode(std::vector<std::string> &tokens) const = 0;
};

/// What encoding with special tokens adds around the ids of one sequence.
struct SpecialTokenTemplate {
  std::vector<uint32_t> prefix, suffix;
};

/// Each parser reads `value` (the JSON object of one stage, `where` naming
/// it for errors, e.g. "normalizer.normalizers[1]"). Null + `error` when the
/// object is malformed or its type is not built.
std::unique_ptr<Normalizer> parseNormalizer(const json::Value &value,
                                            const std::string &where,
                                            std::string &error);
std::unique_ptr<PreTokenizer> parsePreTokenizer(const json::Value &value,
                                                const std::string &where,
                                                std::string &error);
std::unique_ptr<Decoder> parseDecoder(const json::Value &value,
                                      const std::string &where,
                                      std::string &error);
/// `tokenIds` maps token strings to ids, for templates naming tokens.
bool parsePostProcessor(const json::Value &value, const std::string &where,
                        SpecialTokenTemplate &result, std::string &error);

/// Helpers for reading stage objects.
const json::Value *member(const json::Value &object, const char *key);
bool readString(const json::Value &object, const char *key,
                const std::string &where, std::string &out,
                std::string &error, bool required = true);
bool readBool(const json::Value &object, const char *key,
              const std::string &where, bool &out, std::string &error);
/// A stage's {"String": s} or {"Regex": r} "pattern" member.
std::unique_ptr<Regex> parsePattern(const json::Value &object,
                                    const std::string &where,
                                    std::string &error);
/// Parses the array `key` of a Sequence stage (`where` naming it) with
/// `parse(item, itemWhere, error)` into `stages`; false + `error` when the
/// array is missing or an item fails.
template <typename Stage, typename Parse>
bool parseSequence(const json::Value &value, const char *key,
                   const std::string &where,
                   std::vector<std::unique_ptr<Stage>> &stages,
                   std::string &error, Parse parse) {
  const json::Value *items = member(value, key);
  if (!items || !items->isArray()) {
    error = where + ": a Sequence needs a \"" + key + "\" array";
    return false;
  }
  for (size_t i = 0; i < items->items().size(); ++i) {
    auto stage =
        parse(items->items()[i],
              where + "." + key + "[" + std::to_string(i) + "]", error);
    if (!stage)
      return false;
    stages.push_back(std::move(stage));
  }
  return true;
}

/// The `type` of a stage object; false + error if missing.
bool readType(const json::Value &object, const std::string &where,
              std::string &type, std::string &error);

} // namespace tgc::rt::tok

#endif // TGC_RUNTIME_TOKENIZER_COMPONENTS_H
