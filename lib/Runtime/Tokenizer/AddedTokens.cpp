//===- AddedTokens.cpp - the added tokens of a tokenizer.json -------------===//

#include "AddedTokens.h"

#include "Components.h"
#include "Unicode.h"

#include "tgc/Runtime/Tokenizer.h"

#include <algorithm>
#include <utf8proc.h>

using namespace tgc::rt;
using namespace tgc::rt::tok;

void AddedTokenMatcher::add(const AddedToken &token) {
  if (token.content.empty())
    return;
  tokens.push_back(token);
  auto &bucket = byFirstByte[static_cast<unsigned char>(token.content[0])];
  bucket.push_back(tokens.size() - 1);
  std::sort(bucket.begin(), bucket.end(), [&](size_t a, size_t b) {
    size_t la = tokens[a].content.size(), lb = tokens[b].content.size();
    return la != lb ? la > lb : a < b;
  });
}

namespace {
bool isSpace(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' ||
         c == '\f';
}

/// Letters, digits, marks and '_' (Rust's is_alphanumeric, plus '_').
bool isWordCodepoint(uint32_t cp) {
  if (cp == '_')
    return true;
  switch (utf8proc_category(static_cast<utf8proc_int32_t>(cp))) {
  case UTF8PROC_CATEGORY_LU:
  case UTF8PROC_CATEGORY_LL:
  case UTF8PROC_CATEGORY_LT:
  case UTF8PROC_CATEGORY_LM:
  case UTF8PROC_CATEGORY_LO:
  case UTF8PROC_CATEGORY_ND:
  case UTF8PROC_CATEGORY_NL:
  case UTF8PROC_CATEGORY_NO:
    return true;
  default:
    return false;
  }
}

bool wordCharBefore(std::string_view text, size_t at) {
  if (at == 0)
    return false;
  size_t start = at - 1;
  while (start > 0 && (static_cast<unsigned char>(text[start]) & 0xC0) == 0x80)
    --start;
  return isWordCodepoint(nextCodepoint(text, start));
}

bool wordCharAt(std::string_view text, size_t at) {
  return at < text.size() && isWordCodepoint(nextCodepoint(text, at));
}
} // namespace

std::vector<Span> AddedTokenMatcher::split(std::string_view text) const {
  std::vector<Span> spans;
  size_t textStart = 0; // where the current run of plain text begins
  for (size_t i = 0; i < text.size();) {
    const auto &bucket = byFirstByte[static_cast<unsigned char>(text[i])];
    const AddedToken *found = nullptr;
    if (!bucket.empty()) {
      for (size_t index : bucket) {
        const AddedToken &token = tokens[index];
        if (text.compare(i, token.content.size(), token.content) != 0)
          continue;
        if (token.singleWord &&
            (wordCharBefore(text, i) ||
             wordCharAt(text, i + token.content.size())))
          continue;
        found = &token;
        break;
      }
    }
    if (!found) {
      ++i;
      continue;
    }
    size_t begin = i, end = i + found->content.size();
    if (found->lstrip)
      while (begin > textStart && isSpace(text[begin - 1]))
        --begin;
    if (found->rstrip)
      while (end < text.size() && isSpace(text[end]))
        ++end;
    if (begin > textStart)
      spans.push_back({textStart, begin});
    spans.push_back({begin, end, found->id});
    textStart = i = end;
  }
  if (textStart < text.size())
    spans.push_back({textStart, text.size()});
  return spans;
}

bool tgc::rt::tok::parseAddedTokens(const json::Value &value,
                                    const std::string &where,
                                    std::vector<AddedToken> &tokens,
                                    std::string &error) {
  if (!value.isArray()) {
    error = where + ": expected an array, found " + value.describe();
    return false;
  }
  for (size_t i = 0; i < value.items().size(); ++i) {
    const json::Value &item = value.items()[i];
    std::string at = where + "[" + std::to_string(i) + "]";
    AddedToken token;
    const json::Value *id = item.isObject() ? member(item, "id") : nullptr;
    if (!id || !id->isInteger() || id->integer() < 0 ||
        id->integer() >= (int64_t(1) << 31)) {
      error = at + ": expected an object with an integer \"id\"";
      return false;
    }
    token.id = static_cast<uint32_t>(id->integer());
    if (!readString(item, "content", at, token.content, error) ||
        !readBool(item, "single_word", at, token.singleWord, error) ||
        !readBool(item, "lstrip", at, token.lstrip, error) ||
        !readBool(item, "rstrip", at, token.rstrip, error) ||
        !readBool(item, "normalized", at, token.normalized, error) ||
        !readBool(item, "special", at, token.special, error))
      return false;
    if (findInvalidUtf8(token.content) != std::string_view::npos) {
      error = at + ".content: not valid UTF-8";
      return false;
    }
    tokens.push_back(std::move(token));
  }
  return true;
}
