//===- PostProcessors.cpp - tokenizer.json post-processors ----------------===//
//
// What encoding with special tokens adds around one sequence: the "single"
// template of TemplateProcessing, Bert/RobertaProcessing's cls and sep, and
// nothing for ByteLevel (which only adjusts offsets).
//
//===----------------------------------------------------------------------===//

#include "Components.h"

using namespace tgc::rt;
using namespace tgc::rt::tok;

static bool parseTemplate(const json::Value &value, const std::string &where,
                          SpecialTokenTemplate &result, std::string &error) {
  const json::Value *single = member(value, "single");
  const json::Value *specials = member(value, "special_tokens");
  if (!single || !single->isArray()) {
    error = where + ": TemplateProcessing needs a \"single\" array";
    return false;
  }
  bool afterSequence = false;
  for (size_t i = 0; i < single->items().size(); ++i) {
    const json::Value &item = single->items()[i];
    std::string at = where + ".single[" + std::to_string(i) + "]";
    if (item.members().size() != 1 || !item.members()[0].value.isObject()) {
      error = at + ": expected {\"SpecialToken\": ...} or {\"Sequence\": ...}";
      return false;
    }
    const auto &[kind, body] = item.members()[0];
    if (kind == "Sequence") {
      std::string id;
      if (!readString(body, "id", at + ".Sequence", id, error))
        return false;
      if (id != "A") {
        error = at + ".Sequence: a single-sequence template names sequence "
                     "\"A\", not \"" + id + "\"";
        return false;
      }
      afterSequence = true;
      continue;
    }
    if (kind != "SpecialToken") {
      error = at + ": unknown template piece \"" + std::string(kind) + "\"";
      return false;
    }
    std::string name;
    if (!readString(body, "id", at + ".SpecialToken", name, error))
      return false;
    const json::Value *entry = specials ? specials->get(name) : nullptr;
    const json::Value *ids = entry ? member(*entry, "ids") : nullptr;
    if (!ids || !ids->isArray()) {
      error = where + ".special_tokens: no ids for \"" + name + "\"";
      return false;
    }
    for (const json::Value &id : ids->items()) {
      if (!id.isInteger() || id.integer() < 0 || id.integer() > UINT32_MAX) {
        error = where + ".special_tokens[\"" + name + "\"].ids: " +
                id.describe() + " is not a token id";
        return false;
      }
      (afterSequence ? result.suffix : result.prefix)
          .push_back(static_cast<uint32_t>(id.integer()));
    }
  }
  return true;
}

/// Bert/RobertaProcessing's ["token", id] pairs.
static bool readTokenPair(const json::Value &value, const char *key,
                          const std::string &where, uint32_t &id,
                          std::string &error) {
  const json::Value *pair = member(value, key);
  if (!pair || pair->items().size() != 2 || !pair->items()[1].isInteger() ||
      pair->items()[1].integer() < 0) {
    error = where + "." + key + ": expected [\"token\", id]";
    return false;
  }
  id = static_cast<uint32_t>(pair->items()[1].integer());
  return true;
}

bool tgc::rt::tok::parsePostProcessor(const json::Value &value,
                                      const std::string &where,
                                      SpecialTokenTemplate &result,
                                      std::string &error) {
  std::string type;
  if (!readType(value, where, type, error))
    return false;
  if (type == "Sequence") {
    const json::Value *stages = member(value, "processors");
    if (!stages || !stages->isArray()) {
      error = where + ": a Sequence needs a \"processors\" array";
      return false;
    }
    for (size_t i = 0; i < stages->items().size(); ++i)
      if (!parsePostProcessor(stages->items()[i],
                              where + ".processors[" + std::to_string(i) + "]",
                              result, error))
        return false;
    return true;
  }
  if (type == "ByteLevel")
    return true;
  if (type == "TemplateProcessing")
    return parseTemplate(value, where, result, error);
  if (type == "BertProcessing" || type == "RobertaProcessing") {
    uint32_t cls, sep;
    if (!readTokenPair(value, "cls", where, cls, error) ||
        !readTokenPair(value, "sep", where, sep, error))
      return false;
    result.prefix.push_back(cls);
    result.suffix.insert(result.suffix.begin(), sep);
    return true;
  }
  error = where + ": post-processor type \"" + type +
          "\" is not supported (supported: Sequence, ByteLevel, "
          "TemplateProcessing, BertProcessing, RobertaProcessing)";
  return false;
}
