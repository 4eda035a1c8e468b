//===- NamePattern.h - regular expressions over parameter names -*- C++ -*-===//
#ifndef TGC_SUPPORT_NAMEPATTERN_H
#define TGC_SUPPORT_NAMEPATTERN_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <memory>
#include <string>

namespace tgc {

/// A regular expression that selects parameters by their Hugging Face names
/// (`tgc --freeze`). The syntax is ECMAScript's (std::regex), the nearest
/// to Python's `re` that C++ has: `.`, `*?`, `\d`, `\w`, `(?:...)`, `(?=...)`
/// and `|` read as in Python; Python-only syntax such as `(?P<name>...)`,
/// lookbehind and inline flags is refused. A name is selected when the whole
/// of it matches, as Python's `re.fullmatch` (PEFT's rule for a string of
/// `target_modules`): `model\.layers\.0\..*`, not `layers.0`.
class NamePattern {
public:
  /// The compiled `pattern`, or an error describing why it is not a
  /// regular expression.
  static llvm::Expected<NamePattern> compile(llvm::StringRef pattern);

  /// Whether the whole of `name` matches.
  bool matches(llvm::StringRef name) const;

  const std::string &text() const { return source; }

private:
  struct Compiled;
  std::shared_ptr<const Compiled> compiled;
  std::string source;
};

} // namespace tgc

#endif // TGC_SUPPORT_NAMEPATTERN_H
