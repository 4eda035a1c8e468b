//===- Unicode.cpp - UTF-8, byte-level and normalization helpers ----------===//

#include "Unicode.h"

#include "tgc/Runtime/Tokenizer.h"

#include <array>
#include <cstdlib>
#include <utf8proc.h>

using namespace tgc::rt::tok;

uint32_t tgc::rt::tok::nextCodepoint(std::string_view text, size_t &pos) {
  unsigned char c = text[pos];
  size_t n = utf8Length(c);
  uint32_t cp = n == 1 ? c : n == 2 ? c & 0x1F : n == 3 ? c & 0x0F : c & 0x07;
  for (size_t i = 1; i < n; ++i)
    cp = (cp << 6) | (static_cast<unsigned char>(text[pos + i]) & 0x3F);
  pos += n;
  return cp;
}

void tgc::rt::tok::appendUtf8(std::string &out, uint32_t cp) {
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

size_t tgc::rt::tok::findInvalidUtf8(std::string_view text) {
  size_t i = 0, n = text.size();
  while (i < n) {
    unsigned char c = text[i];
    if (c < 0x80) {
      ++i;
      continue;
    }
    size_t len;
    uint32_t cp, min;
    if (c >= 0xC2 && c <= 0xDF)
      len = 2, cp = c & 0x1F, min = 0x80;
    else if (c >= 0xE0 && c <= 0xEF)
      len = 3, cp = c & 0x0F, min = 0x800;
    else if (c >= 0xF0 && c <= 0xF4)
      len = 4, cp = c & 0x07, min = 0x10000;
    else
      return i;
    if (i + len > n)
      return i;
    for (size_t k = 1; k < len; ++k) {
      unsigned char d = text[i + k];
      if ((d & 0xC0) != 0x80)
        return i;
      cp = (cp << 6) | (d & 0x3F);
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
      return i;
    i += len;
  }
  return std::string_view::npos;
}

std::string tgc::rt::tok::textPosition(std::string_view text, size_t offset) {
  std::string_view before = text.substr(0, offset);
  size_t line = 1, lineStart = 0;
  for (size_t i = 0; i < before.size(); ++i)
    if (before[i] == '\n') {
      ++line;
      lineStart = i + 1;
    }
  return "line " + std::to_string(line) + ", column " +
         std::to_string(offset - lineStart + 1);
}

namespace {
struct ByteMap {
  std::array<uint32_t, 256> toCodepoint;
  std::array<int16_t, 512> toByte; // code points < 512 only
  ByteMap() {
    toByte.fill(-1);
    uint32_t next = 256;
    for (int b = 0; b < 256; ++b) {
      bool printable = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) ||
                       (b >= 174 && b <= 255);
      toCodepoint[b] = printable ? b : next++;
      toByte[toCodepoint[b]] = static_cast<int16_t>(b);
    }
  }
};
const ByteMap &byteMap() {
  static const ByteMap map;
  return map;
}
} // namespace

uint32_t tgc::rt::tok::byteToCodepoint(uint8_t byte) {
  return byteMap().toCodepoint[byte];
}

bool tgc::rt::tok::codepointToByte(uint32_t cp, uint8_t &byte) {
  if (cp >= 512 || byteMap().toByte[cp] < 0)
    return false;
  byte = static_cast<uint8_t>(byteMap().toByte[cp]);
  return true;
}

void tgc::rt::tok::appendByteLevel(std::string &out, std::string_view bytes) {
  // Each byte's code point as UTF-8 (one or two bytes), looked up.
  static const auto table = [] {
    std::array<std::array<char, 3>, 256> t{}; // length, then the bytes
    for (int b = 0; b < 256; ++b) {
      std::string utf8;
      appendUtf8(utf8, byteMap().toCodepoint[b]);
      t[b][0] = static_cast<char>(utf8.size());
      for (size_t i = 0; i < utf8.size(); ++i)
        t[b][1 + i] = utf8[i];
    }
    return t;
  }();
  size_t at = out.size();
  out.resize(at + 2 * bytes.size());
  for (char c : bytes) {
    const auto &entry = table[static_cast<uint8_t>(c)];
    out[at] = entry[1];
    out[at + 1] = entry[2];
    at += static_cast<size_t>(entry[0]);
  }
  out.resize(at);
}

std::string tgc::rt::tok::utf8Lossy(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size());
  size_t i = 0;
  while (i < bytes.size()) {
    size_t bad = findInvalidUtf8(bytes.substr(i));
    if (bad == std::string_view::npos) {
      out.append(bytes.substr(i));
      break;
    }
    out.append(bytes.substr(i, bad));
    i += bad;
    // Skip the maximal prefix of a valid sequence (Unicode's "maximal
    // subpart"), at least one byte, and write one U+FFFD for it.
    unsigned char c = bytes[i];
    size_t len = c >= 0xC2 && c <= 0xDF   ? 2
                 : c >= 0xE0 && c <= 0xEF ? 3
                 : c >= 0xF0 && c <= 0xF4 ? 4
                                          : 1;
    size_t k = 1;
    for (; k < len && i + k < bytes.size(); ++k) {
      unsigned char d = bytes[i + k];
      unsigned char lo = 0x80, hi = 0xBF;
      if (k == 1) {
        if (c == 0xE0)
          lo = 0xA0;
        else if (c == 0xED)
          hi = 0x9F;
        else if (c == 0xF0)
          lo = 0x90;
        else if (c == 0xF4)
          hi = 0x8F;
      }
      if (d < lo || d > hi)
        break;
    }
    i += k;
    out.append("\xEF\xBF\xBD");
  }
  return out;
}

/// `text` through utf8proc (any UTF-8).
static std::string normalizeAll(std::string_view text, int options) {
  utf8proc_uint8_t *result = nullptr;
  utf8proc_ssize_t n = utf8proc_map(
      reinterpret_cast<const utf8proc_uint8_t *>(text.data()),
      static_cast<utf8proc_ssize_t>(text.size()), &result,
      static_cast<utf8proc_option_t>(options));
  if (n < 0) // only on invalid UTF-8, which callers have refused
    return std::string(text);
  std::string out(reinterpret_cast<char *>(result), static_cast<size_t>(n));
  std::free(result);
  return out;
}

std::string tgc::rt::tok::normalize(std::string_view text, NormalForm form) {
  int options = UTF8PROC_STABLE;
  switch (form) {
  case NormalForm::NFC:
    options |= UTF8PROC_COMPOSE;
    break;
  case NormalForm::NFD:
    options |= UTF8PROC_DECOMPOSE;
    break;
  case NormalForm::NFKC:
    options |= UTF8PROC_COMPOSE | UTF8PROC_COMPAT;
    break;
  case NormalForm::NFKD:
    options |= UTF8PROC_DECOMPOSE | UTF8PROC_COMPAT;
    break;
  }
  // ASCII is in every normal form and never composes with what precedes it,
  // so only each non-ASCII run, with the ASCII character before it (which a
  // combining mark may compose with), goes through utf8proc.
  std::string out;
  out.reserve(text.size());
  size_t i = 0, n = text.size();
  while (i < n) {
    size_t run = i;
    while (run < n && static_cast<unsigned char>(text[run]) < 0x80)
      ++run;
    if (run == n) {
      out.append(text.substr(i));
      break;
    }
    size_t begin = run > i ? run - 1 : run;
    out.append(text.substr(i, begin - i));
    size_t end = run;
    while (end < n && static_cast<unsigned char>(text[end]) >= 0x80)
      ++end;
    out += normalizeAll(text.substr(begin, end - begin), options);
    i = end;
  }
  return out;
}
