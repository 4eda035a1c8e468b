//===- Fields.cpp - reading the members of tokenizer.json stages ----------===//

#include "Components.h"
#include "Regex.h"

using namespace tgc::rt;
using namespace tgc::rt::tok;

const json::Value *tgc::rt::tok::member(const json::Value &object,
                                        const char *key) {
  const json::Value *value = object.get(key);
  return value && !value->isNull() ? value : nullptr;
}

bool tgc::rt::tok::readString(const json::Value &object, const char *key,
                              const std::string &where, std::string &out,
                              std::string &error, bool required) {
  const json::Value *value = member(object, key);
  if (!value) {
    if (!required)
      return true;
    error = where + ": missing \"" + key + "\"";
    return false;
  }
  if (!value->isString()) {
    error = where + "." + key + ": expected a string, found " +
            value->describe();
    return false;
  }
  out = value->string();
  return true;
}

bool tgc::rt::tok::readBool(const json::Value &object, const char *key,
                            const std::string &where, bool &out,
                            std::string &error) {
  const json::Value *value = member(object, key);
  if (!value)
    return true; // keeps the default
  if (!value->isBool()) {
    error = where + "." + key + ": expected true or false, found " +
            value->describe();
    return false;
  }
  out = value->boolean();
  return true;
}

bool tgc::rt::tok::readType(const json::Value &object, const std::string &where,
                            std::string &type, std::string &error) {
  if (!object.isObject()) {
    error = where + ": expected an object, found " + object.describe();
    return false;
  }
  return readString(object, "type", where, type, error);
}

/// A {"String": s} or {"Regex": r} pattern.
std::unique_ptr<Regex> tgc::rt::tok::parsePattern(const json::Value &object,
                                           const std::string &where,
                                           std::string &error) {
  const json::Value *pattern = member(object, "pattern");
  if (!pattern || pattern->members().size() != 1 ||
      !pattern->members()[0].value.isString()) {
    error = where + ".pattern: expected {\"String\": ...} or {\"Regex\": ...}";
    return nullptr;
  }
  const auto &[kind, text] = pattern->members()[0];
  if (kind != "String" && kind != "Regex") {
    error = where + ".pattern: unknown pattern kind \"" + std::string(kind) +
            "\" (expected String or Regex)";
    return nullptr;
  }
  std::string regexError;
  auto regex =
      Regex::compile(std::string(text.string()), kind == "String", regexError);
  if (!regex)
    error = where + ".pattern: " + regexError;
  return regex;
}
