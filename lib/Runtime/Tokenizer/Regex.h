//===- Regex.h - PCRE2 patterns for Split and Replace -----------*- C++ -*-===//
//
// The regexes tokenizer files declare (Oniguruma syntax in Hugging Face's
// library: \p{L}, \p{N}, (?i:...), lookahead) compiled by PCRE2 in UTF and
// Unicode-property mode, JIT-compiled where PCRE2 can.
//
//===----------------------------------------------------------------------===//
#ifndef TGC_RUNTIME_TOKENIZER_REGEX_H
#define TGC_RUNTIME_TOKENIZER_REGEX_H

#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tgc::rt::tok {

class Regex {
public:
  /// A pattern; `literal` matches `pattern` as plain text. Null and
  /// `error` set when PCRE2 refuses the pattern.
  static std::unique_ptr<Regex> compile(const std::string &pattern,
                                        bool literal, std::string &error);
  ~Regex();

  /// The non-overlapping matches in `text`, left to right, as byte ranges
  /// [begin, end). Empty matches are skipped.
  std::vector<std::pair<size_t, size_t>> findAll(std::string_view text) const;
  /// `text` with every match replaced by `content`.
  std::string replaceAll(std::string_view text, std::string_view content) const;
  /// The same matches, each passed to `found(begin, end)` as it is found.
  void forEachMatch(std::string_view text,
                    const std::function<void(size_t, size_t)> &found) const;

private:
  Regex() = default;
  struct Impl;
  std::unique_ptr<Impl> impl;
};

} // namespace tgc::rt::tok

#endif // TGC_RUNTIME_TOKENIZER_REGEX_H
