//===- NamePattern.cpp - regular expressions over parameter names ---------===//
//
// std::regex reports a malformed pattern by throwing: this file alone is
// compiled with exceptions (lib/Support/CMakeLists.txt), and none leaves it.
//
//===----------------------------------------------------------------------===//

#include "tgc/Support/NamePattern.h"

#include <regex>

using namespace tgc;

struct NamePattern::Compiled {
  std::regex regex;
};

llvm::Expected<NamePattern> NamePattern::compile(llvm::StringRef pattern) {
  NamePattern result;
  result.source = pattern.str();
  try {
    result.compiled = std::make_shared<const Compiled>(
        Compiled{std::regex(result.source, std::regex::ECMAScript)});
  } catch (const std::regex_error &error) {
    return llvm::createStringError(
        "'" + result.source + "' is not a regular expression: " + error.what());
  }
  return result;
}

bool NamePattern::matches(llvm::StringRef name) const {
  try {
    return std::regex_match(name.begin(), name.end(), compiled->regex);
  } catch (const std::regex_error &) {
    // Only a pattern too complex for a name (error_complexity,
    // error_stack) gets here: it selects nothing.
    return false;
  }
}
