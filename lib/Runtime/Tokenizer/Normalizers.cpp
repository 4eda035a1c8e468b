//===- Normalizers.cpp - tokenizer.json normalizers -----------------------===//
//
// Sequence, NFC/NFD/NFKC/NFKD, Prepend, Replace and Strip, as Hugging Face's
// `tokenizers` applies them to each segment between added tokens.
//
//===----------------------------------------------------------------------===//

#include "Components.h"
#include "Regex.h"
#include "Unicode.h"

using namespace tgc::rt;
using namespace tgc::rt::tok;

namespace {

class SequenceNormalizer : public Normalizer {
public:
  std::vector<std::unique_ptr<Normalizer>> stages;
  void apply(std::string &text) const override {
    for (const auto &stage : stages)
      stage->apply(text);
  }
};

class UnicodeNormalizer : public Normalizer {
public:
  explicit UnicodeNormalizer(NormalForm form) : form(form) {}
  void apply(std::string &text) const override {
    text = normalize(text, form);
  }

private:
  NormalForm form;
};

/// Prepends `prefix` to a non-empty segment.
class PrependNormalizer : public Normalizer {
public:
  std::string prefix;
  void apply(std::string &text) const override {
    if (!text.empty())
      text.insert(0, prefix);
  }
};

class ReplaceNormalizer : public Normalizer {
public:
  std::unique_ptr<Regex> pattern;
  std::string content;
  void apply(std::string &text) const override {
    text = pattern->replaceAll(text, content);
  }
};

/// Strips Unicode white space from either end.
class StripNormalizer : public Normalizer {
public:
  bool left = true, right = true;
  std::unique_ptr<Regex> leading, trailing;
  void apply(std::string &text) const override {
    if (right)
      for (auto [begin, end] : trailing->findAll(text))
        if (end == text.size())
          text.erase(begin);
    if (left)
      for (auto [begin, end] : leading->findAll(text))
        if (begin == 0)
          text.erase(0, end);
  }
};

} // namespace

std::unique_ptr<Normalizer>
tgc::rt::tok::parseNormalizer(const json::Value &value,
                              const std::string &where, std::string &error) {
  std::string type;
  if (!readType(value, where, type, error))
    return nullptr;
  if (type == "Sequence") {
    auto sequence = std::make_unique<SequenceNormalizer>();
    if (!parseSequence(value, "normalizers", where, sequence->stages, error,
                       parseNormalizer))
      return nullptr;
    return sequence;
  }
  if (type == "NFC")
    return std::make_unique<UnicodeNormalizer>(NormalForm::NFC);
  if (type == "NFD")
    return std::make_unique<UnicodeNormalizer>(NormalForm::NFD);
  if (type == "NFKC")
    return std::make_unique<UnicodeNormalizer>(NormalForm::NFKC);
  if (type == "NFKD")
    return std::make_unique<UnicodeNormalizer>(NormalForm::NFKD);
  if (type == "Prepend") {
    auto prepend = std::make_unique<PrependNormalizer>();
    if (!readString(value, "prepend", where, prepend->prefix, error))
      return nullptr;
    return prepend;
  }
  if (type == "Replace") {
    auto replace = std::make_unique<ReplaceNormalizer>();
    if (!(replace->pattern = parsePattern(value, where, error)) ||
        !readString(value, "content", where, replace->content, error))
      return nullptr;
    return replace;
  }
  if (type == "Strip") {
    auto strip = std::make_unique<StripNormalizer>();
    if (!readBool(value, "strip_left", where, strip->left, error) ||
        !readBool(value, "strip_right", where, strip->right, error))
      return nullptr;
    strip->leading = Regex::compile("^\\s+", false, error);
    strip->trailing = Regex::compile("\\s+$", false, error);
    return strip;
  }
  error = where + ": normalizer type \"" + type +
          "\" is not supported (supported: Sequence, NFC, NFD, NFKC, NFKD, "
          "Prepend, Replace, Strip)";
  return nullptr;
}
