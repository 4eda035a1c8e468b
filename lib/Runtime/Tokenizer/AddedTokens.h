//===- AddedTokens.h - the added tokens of a tokenizer.json -----*- C++ -*-===//
//
// Tokens matched in the text before the model sees it (<s>, <|endoftext|>,
// <|im_start|>...): leftmost-longest, honouring lstrip, rstrip and
// single_word. Those marked "normalized" are matched in the normalized text.
//
//===----------------------------------------------------------------------===//
#ifndef TGC_RUNTIME_TOKENIZER_ADDEDTOKENS_H
#define TGC_RUNTIME_TOKENIZER_ADDEDTOKENS_H

#include "tgc/Runtime/Json.h"

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace tgc::rt::tok {

struct AddedToken {
  uint32_t id = 0;
  std::string content;
  bool singleWord = false, lstrip = false, rstrip = false,
       normalized = false, special = false;
};

/// A span of text: an added token (`id` set) or text between them.
struct Span {
  size_t begin, end;
  int64_t id = -1;
};

class AddedTokenMatcher {
public:
  void add(const AddedToken &token);
  bool empty() const { return tokens.empty(); }
  /// Covers `text` with spans, left to right.
  std::vector<Span> split(std::string_view text) const;

private:
  std::vector<AddedToken> tokens;
  /// Token indices by first byte, longest first.
  std::array<std::vector<size_t>, 256> byFirstByte;
};

/// Reads the "added_tokens" array.
bool parseAddedTokens(const json::Value &value, const std::string &where,
                      std::vector<AddedToken> &tokens, std::string &error);

} // namespace tgc::rt::tok

#endif // TGC_RUNTIME_TOKENIZER_ADDEDTOKENS_H
