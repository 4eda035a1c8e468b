//===- Json.cpp - the runtime's JSON reader and writer --------------------===//
//
// A recursive-descent reader bounded by a depth limit, and a writer that
// tracks commas per open container. See tgc/Runtime/Json.h.
//
//===----------------------------------------------------------------------===//

#include "tgc/Runtime/Json.h"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

using namespace tgc::rt::json;

double Value::number() const {
  if (tag != Number)
    return 0;
  return flag ? double(payload.integer) : payload.number;
}

const Value *Value::get(std::string_view key) const {
  for (const Member &m : members())
    if (m.name == key)
      return &m.value;
  return nullptr;
}

std::string Value::describe() const {
  switch (tag) {
  case Null:
    return "null";
  case Bool:
    return flag ? "true" : "false";
  case Number: {
    char text[40];
    if (flag)
      std::snprintf(text, sizeof text, "%lld", (long long)payload.integer);
    else
      std::snprintf(text, sizeof text, "%.17g", payload.number);
    return std::string("number ") + text;
  }
  case String: {
    std::string_view text = string();
    return "string " + (text.size() > 40
                            ? quote(std::string(text.substr(0, 40)) + "...")
                            : quote(text));
  }
  case Array:
    return "an array";
  case Object:
    return "an object";
  }
  return "a value";
}

void *Document::allocate(size_t bytes) {
  constexpr size_t kAlign = alignof(Value), kBlock = size_t(1) << 18;
  bytes = (bytes + kAlign - 1) & ~(kAlign - 1);
  if (bytes > left) {
    // Large requests get a block of their own; the current one stays open.
    if (bytes > kBlock / 4) {
      blocks.emplace_back(new char[bytes]);
      return blocks.back().get();
    }
    blocks.emplace_back(new char[kBlock]);
    next = blocks.back().get();
    left = kBlock;
  }
  void *out = next;
  next += bytes;
  left -= bytes;
  return out;
}

namespace tgc::rt::json {

/// Recursive descent into `doc`. Children are collected on one stack per
/// kind and copied into the document once their container closes, so each
/// container is one allocation of exactly its size.
class Parser {
public:
  Parser(std::string_view text, unsigned maxDepth, Document &doc)
      : begin(text.data()), p(text.data()), end(text.data() + text.size()),
        maxDepth(maxDepth), doc(doc) {}

  bool parse(std::string &error) {
    bool ok = value(doc.top, 0);
    if (ok) {
      skipSpace();
      if (p != end)
        ok = fail("unexpected text after the value");
    }
    if (!ok) {
      error = where() + ": " + message;
      doc.top = Value();
    }
    return ok;
  }

private:
  std::string where() const {
    unsigned line = 1, column = 1;
    for (const char *q = begin; q < p; ++q) {
      if (*q == '\n') {
        ++line;
        column = 1;
      } else if ((static_cast<unsigned char>(*q) & 0xC0) != 0x80) {
        ++column; // count characters, not UTF-8 continuation bytes
      }
    }
    return "line " + std::to_string(line) + ", column " +
           std::to_string(column);
  }

  bool fail(std::string m) {
    if (message.empty())
      message = std::move(m);
    return false;
  }

  void skipSpace() {
    while (p != end && (*p == ' ' || *p == '\n' || *p == '\r' || *p == '\t'))
      ++p;
  }

  bool literal(const char *word) {
    size_t n = std::strlen(word);
    if (size_t(end - p) < n || std::memcmp(p, word, n) != 0)
      return false;
    p += n;
    return true;
  }

  bool value(Value &out, unsigned depth) {
    skipSpace();
    if (p == end)
      return fail("unexpected end of text, expected a value");
    switch (*p) {
    case '{':
    case '[':
      if (depth >= maxDepth)
        return fail("nesting deeper than " + std::to_string(maxDepth) +
                    " levels");
      return *p == '{' ? object(out, depth) : array(out, depth);
    case '"':
      return stringValue(out);
    case 't':
    case 'f':
    case 'n':
      if (literal("true")) {
        out.tag = Value::Bool;
        out.flag = true;
        return true;
      }
      if (literal("false")) {
        out.tag = Value::Bool;
        return true;
      }
      if (literal("null")) {
        out.tag = Value::Null;
        return true;
      }
      return fail("unexpected character");
    default:
      if (*p == '-' || (*p >= '0' && *p <= '9'))
        return number(out);
      return fail("unexpected character");
    }
  }

  static bool isDigit(char c) { return c >= '0' && c <= '9'; }

  /// -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?
  bool number(Value &out) {
    const char *start = p;
    if (*p == '-')
      ++p;
    if (p == end || !isDigit(*p))
      return fail("invalid number: expected a digit");
    if (*p == '0') {
      ++p;
      if (p != end && isDigit(*p))
        return fail("invalid number: leading zero");
    } else {
      while (p != end && isDigit(*p))
        ++p;
    }
    bool integral = true;
    if (p != end && *p == '.') {
      integral = false;
      ++p;
      if (p == end || !isDigit(*p))
        return fail("invalid number: expected a digit after '.'");
      while (p != end && isDigit(*p))
        ++p;
    }
    if (p != end && (*p == 'e' || *p == 'E')) {
      integral = false;
      ++p;
      if (p != end && (*p == '+' || *p == '-'))
        ++p;
      if (p == end || !isDigit(*p))
        return fail("invalid number: expected a digit in the exponent");
      while (p != end && isDigit(*p))
        ++p;
    }
    std::string text(start, p);
    out.tag = Value::Number;
    if (integral) {
      errno = 0;
      long long v = std::strtoll(text.c_str(), nullptr, 10);
      if (errno == 0) {
        out.flag = true;
        out.payload.integer = v;
        return true;
      }
    }
    out.flag = false;
    out.payload.number = std::strtod(text.c_str(), nullptr);
    if (!std::isfinite(out.payload.number)) {
      p = start;
      return fail("number out of range: " + text);
    }
    return true;
  }

  static void appendUtf8(std::string &out, uint32_t code) {
    if (code < 0x80) {
      out += char(code);
    } else if (code < 0x800) {
      out += char(0xC0 | (code >> 6));
      out += char(0x80 | (code & 0x3F));
    } else if (code < 0x10000) {
      out += char(0xE0 | (code >> 12));
      out += char(0x80 | ((code >> 6) & 0x3F));
      out += char(0x80 | (code & 0x3F));
    } else {
      out += char(0xF0 | (code >> 18));
      out += char(0x80 | ((code >> 12) & 0x3F));
      out += char(0x80 | ((code >> 6) & 0x3F));
      out += char(0x80 | (code & 0x3F));
    }
  }

  bool hex4(uint32_t &code) {
    if (end - p < 4)
      return fail("invalid \\u escape: expected four hex digits");
    code = 0;
    for (int i = 0; i < 4; ++i, ++p) {
      char h = *p;
      unsigned digit = h >= '0' && h <= '9'   ? h - '0'
                       : h >= 'a' && h <= 'f' ? h - 'a' + 10
                       : h >= 'A' && h <= 'F' ? h - 'A' + 10
                                              : 16;
      if (digit == 16)
        return fail("invalid \\u escape: expected four hex digits");
      code = code * 16 + digit;
    }
    return true;
  }

  bool escape(std::string &out) {
    ++p; // the backslash
    if (p == end)
      return fail("unterminated string");
    char c = *p++;
    switch (c) {
    case '"':
    case '\\':
    case '/':
      out += c;
      return true;
    case 'b':
      out += '\b';
      return true;
    case 'f':
      out += '\f';
      return true;
    case 'n':
      out += '\n';
      return true;
    case 'r':
      out += '\r';
      return true;
    case 't':
      out += '\t';
      return true;
    case 'u': {
      uint32_t code;
      if (!hex4(code))
        return false;
      if (code >= 0xDC00 && code <= 0xDFFF)
        return fail("invalid \\u escape: a low surrogate without a high one");
      if (code >= 0xD800 && code <= 0xDBFF) {
        uint32_t low;
        if (end - p < 2 || p[0] != '\\' || p[1] != 'u')
          return fail("invalid \\u escape: a high surrogate without a low one");
        p += 2;
        if (!hex4(low))
          return false;
        if (low < 0xDC00 || low > 0xDFFF)
          return fail("invalid \\u escape: a high surrogate without a low one");
        code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00);
      }
      appendUtf8(out, code);
      return true;
    }
    default:
      --p;
      return fail(std::string("invalid escape '\\") + c + "'");
    }
  }

  /// One UTF-8 sequence starting at p, checked (no overlong forms, no
  /// surrogates, nothing past U+10FFFF), appended to `out`.
  bool utf8(std::string &out) {
    unsigned char lead = static_cast<unsigned char>(*p);
    int extra = lead >= 0xF0 && lead <= 0xF4   ? 3
                : lead >= 0xE0 && lead <= 0xEF ? 2
                : lead >= 0xC2 && lead <= 0xDF ? 1
                                               : -1;
    if (extra < 0 || end - p <= extra)
      return fail("invalid UTF-8 in a string");
    uint32_t code = lead & (0x3F >> extra);
    for (int i = 1; i <= extra; ++i) {
      unsigned char c = static_cast<unsigned char>(p[i]);
      if ((c & 0xC0) != 0x80)
        return fail("invalid UTF-8 in a string");
      code = (code << 6) | (c & 0x3F);
    }
    static const uint32_t kMin[] = {0, 0x80, 0x800, 0x10000};
    if (code < kMin[extra] || code > 0x10FFFF ||
        (code >= 0xD800 && code <= 0xDFFF))
      return fail("invalid UTF-8 in a string");
    out.append(p, extra + 1);
    p += extra + 1;
    return true;
  }

  bool string(std::string &out) {
    ++p; // the opening quote
    while (true) {
      // Copy a run of plain ASCII at once.
      const char *run = p;
      while (p != end && *p != '"' && *p != '\\' &&
             static_cast<unsigned char>(*p) >= 0x20 &&
             static_cast<unsigned char>(*p) < 0x80)
        ++p;
      out.append(run, p);
      if (p == end)
        return fail("unterminated string");
      unsigned char c = static_cast<unsigned char>(*p);
      if (c == '"') {
        ++p;
        return true;
      }
      if (c == '\\') {
        if (!escape(out))
          return false;
      } else if (c < 0x20) {
        return fail("control character in a string (escape it)");
      } else if (!utf8(out)) {
        return false;
      }
    }
  }

  /// Copies `n` trivially copyable elements into the document.
  template <typename T> const T *keep(const T *first, size_t n) {
    if (n == 0)
      return nullptr;
    void *to = doc.allocate(n * sizeof(T));
    std::memcpy(to, first, n * sizeof(T));
    return static_cast<const T *>(to);
  }

  bool sized(size_t n, const char *what) {
    if (n > UINT32_MAX)
      return fail(std::string("more than 2^32 - 1 ") + what);
    return true;
  }

  /// A string into the document: its bytes are decoded into `scratch`.
  bool keepString(std::string_view &out) {
    scratch.clear();
    if (!string(scratch) || !sized(scratch.size(), "bytes in a string"))
      return false;
    out =
        std::string_view(keep(scratch.data(), scratch.size()), scratch.size());
    return true;
  }

  bool stringValue(Value &out) {
    std::string_view text;
    if (!keepString(text))
      return false;
    out.tag = Value::String;
    out.count = static_cast<uint32_t>(text.size());
    out.payload.chars = text.data();
    return true;
  }

  bool array(Value &out, unsigned depth) {
    out.tag = Value::Array;
    ++p;
    skipSpace();
    if (p != end && *p == ']') {
      ++p;
      return true;
    }
    size_t first = items.size();
    while (true) {
      Value item;
      if (!value(item, depth + 1))
        return false;
      items.push_back(item);
      skipSpace();
      if (p != end && *p == ',') {
        ++p;
        continue;
      }
      if (p != end && *p == ']') {
        ++p;
        size_t n = items.size() - first;
        if (!sized(n, "elements in an array"))
          return false;
        out.count = static_cast<uint32_t>(n);
        out.payload.items = keep(items.data() + first, n);
        items.resize(first);
        return true;
      }
      return fail("expected ',' or ']' in an array");
    }
  }

  bool object(Value &out, unsigned depth) {
    out.tag = Value::Object;
    ++p;
    skipSpace();
    if (p != end && *p == '}') {
      ++p;
      return true;
    }
    size_t first = members.size();
    while (true) {
      skipSpace();
      if (p == end || *p != '"')
        return fail("expected a string key in an object");
      Member member;
      if (!keepString(member.name))
        return false;
      skipSpace();
      if (p == end || *p != ':')
        return fail("expected ':' after an object key");
      ++p;
      if (!value(member.value, depth + 1))
        return false;
      members.push_back(member);
      skipSpace();
      if (p != end && *p == ',') {
        ++p;
        continue;
      }
      if (p != end && *p == '}') {
        ++p;
        size_t n = members.size() - first;
        if (!sized(n, "members in an object"))
          return false;
        out.count = static_cast<uint32_t>(n);
        out.payload.members = keep(members.data() + first, n);
        members.resize(first);
        return true;
      }
      return fail("expected ',' or '}' in an object");
    }
  }

  const char *begin, *p, *end;
  unsigned maxDepth;
  Document &doc;
  std::string message;
  /// The open containers' children, innermost last.
  std::vector<Value> items;
  std::vector<Member> members;
  std::string scratch;
};

} // namespace tgc::rt::json

bool tgc::rt::json::parse(std::string_view text, Document &out,
                          std::string &error, unsigned maxDepth) {
  out = Document();
  return Parser(text, maxDepth, out).parse(error);
}

std::string tgc::rt::json::quote(std::string_view text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
    } else {
      out += c;
    }
  }
  return out + "\"";
}

//===----------------------------------------------------------------------===//
// Writer
//===----------------------------------------------------------------------===//

void Writer::separate() {
  if (afterKey) {
    afterKey = false;
    return;
  }
  if (!nonEmpty.empty()) {
    if (nonEmpty.back())
      raw(style == Spaced ? ", " : ",");
    nonEmpty.back() = true;
  }
}

Writer &Writer::beginObject() {
  separate();
  raw("{");
  nonEmpty.push_back(false);
  return *this;
}

Writer &Writer::endObject() {
  nonEmpty.pop_back();
  raw("}");
  return *this;
}

Writer &Writer::beginArray() {
  separate();
  raw("[");
  nonEmpty.push_back(false);
  return *this;
}

Writer &Writer::endArray() {
  nonEmpty.pop_back();
  raw("]");
  return *this;
}

Writer &Writer::key(std::string_view name) {
  separate();
  raw(quote(name));
  raw(style == Spaced ? ": " : ":");
  afterKey = true;
  return *this;
}

Writer &Writer::string(std::string_view value) {
  separate();
  raw(quote(value));
  return *this;
}

Writer &Writer::integer(int64_t value) {
  separate();
  raw(std::to_string(value));
  return *this;
}

Writer &Writer::unsignedInteger(uint64_t value) {
  separate();
  raw(std::to_string(value));
  return *this;
}

Writer &Writer::fixed(double value, int decimals) {
  if (!std::isfinite(value))
    return null();
  separate();
  char buf[400];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, value);
  raw(buf);
  return *this;
}

Writer &Writer::number(double value, int significant) {
  if (!std::isfinite(value))
    return null();
  separate();
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*g", significant, value);
  raw(buf);
  return *this;
}

Writer &Writer::boolean(bool value) {
  separate();
  raw(value ? "true" : "false");
  return *this;
}

Writer &Writer::null() {
  separate();
  raw("null");
  return *this;
}
