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

const Value *Value::get(std::string_view key) const {
  if (kind != Object)
    return nullptr;
  for (const auto &[name, value] : members)
    if (name == key)
      return &value;
  return nullptr;
}

std::string Value::describe() const {
  switch (kind) {
  case Null:
    return "null";
  case Bool:
    return boolean ? "true" : "false";
  case Number: {
    char text[40];
    if (isInteger)
      std::snprintf(text, sizeof text, "%lld", (long long)integer);
    else
      std::snprintf(text, sizeof text, "%.17g", number);
    return std::string("number ") + text;
  }
  case String:
    return "string " +
           quote(string.size() > 40 ? string.substr(0, 40) + "..." : string);
  case Array:
    return "an array";
  case Object:
    return "an object";
  }
  return "a value";
}

namespace {

class Parser {
public:
  Parser(std::string_view text, unsigned maxDepth)
      : begin(text.data()), p(text.data()), end(text.data() + text.size()),
        maxDepth(maxDepth) {}

  bool parse(Value &out, std::string &error) {
    bool ok = value(out, 0);
    if (ok) {
      skipSpace();
      if (p != end)
        ok = fail("unexpected text after the value");
    }
    if (!ok)
      error = where() + ": " + message;
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
      out.kind = Value::String;
      return string(out.string);
    case 't':
    case 'f':
    case 'n':
      if (literal("true")) {
        out.kind = Value::Bool;
        out.boolean = true;
        return true;
      }
      if (literal("false")) {
        out.kind = Value::Bool;
        out.boolean = false;
        return true;
      }
      if (literal("null")) {
        out.kind = Value::Null;
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
    out.kind = Value::Number;
    out.number = std::strtod(text.c_str(), nullptr);
    if (!std::isfinite(out.number)) {
      p = start;
      return fail("number out of range: " + text);
    }
    if (integral) {
      errno = 0;
      long long v = std::strtoll(text.c_str(), nullptr, 10);
      out.isInteger = errno == 0;
      out.integer = v;
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

  bool array(Value &out, unsigned depth) {
    out.kind = Value::Array;
    ++p;
    skipSpace();
    if (p != end && *p == ']') {
      ++p;
      return true;
    }
    while (true) {
      out.items.emplace_back();
      if (!value(out.items.back(), depth + 1))
        return false;
      skipSpace();
      if (p != end && *p == ',') {
        ++p;
        continue;
      }
      if (p != end && *p == ']') {
        ++p;
        return true;
      }
      return fail("expected ',' or ']' in an array");
    }
  }

  bool object(Value &out, unsigned depth) {
    out.kind = Value::Object;
    ++p;
    skipSpace();
    if (p != end && *p == '}') {
      ++p;
      return true;
    }
    while (true) {
      skipSpace();
      if (p == end || *p != '"')
        return fail("expected a string key in an object");
      std::string key;
      if (!string(key))
        return false;
      skipSpace();
      if (p == end || *p != ':')
        return fail("expected ':' after an object key");
      ++p;
      out.members.emplace_back(std::move(key), Value());
      if (!value(out.members.back().second, depth + 1))
        return false;
      skipSpace();
      if (p != end && *p == ',') {
        ++p;
        continue;
      }
      if (p != end && *p == '}') {
        ++p;
        return true;
      }
      return fail("expected ',' or '}' in an object");
    }
  }

  const char *begin, *p, *end;
  unsigned maxDepth;
  std::string message;
};

} // namespace

bool tgc::rt::json::parse(std::string_view text, Value &out, std::string &error,
                          unsigned maxDepth) {
  out = Value();
  return Parser(text, maxDepth).parse(out, error);
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
