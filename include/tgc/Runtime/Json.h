//===- Json.h - the runtime's JSON reader and writer ------------*- C++ -*-===//
//
// JSON (RFC 8259) for the runtime, which links no LLVM: safetensors headers,
// checkpoint indexes, tokenizer files and the training log. The reader is
// strict (no trailing commas, comments, NaN or invalid UTF-8) and
// depth-limited, and reports errors by line and column; objects keep their
// members in file order. Values are compact views into their Document.
//
//===----------------------------------------------------------------------===//
#ifndef TGC_RUNTIME_JSON_H
#define TGC_RUNTIME_JSON_H

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tgc::rt::json {

/// A read-only view of `count` contiguous elements.
template <typename T> class Span {
public:
  Span() = default;
  Span(const T *data, size_t count) : first(data), count(count) {}
  const T *begin() const { return first; }
  const T *end() const { return first + count; }
  size_t size() const { return count; }
  bool empty() const { return count == 0; }
  const T &operator[](size_t i) const { return first[i]; }

private:
  const T *first = nullptr;
  size_t count = 0;
};

struct Member;

/// One parsed value: 16 bytes that view strings and children held by the
/// Document that parsed it (tokenizer files hold millions of values).
class Value {
public:
  enum Kind : uint8_t { Null, Bool, Number, String, Array, Object };

  Kind kind() const { return tag; }
  bool isNull() const { return tag == Null; }
  bool isBool() const { return tag == Bool; }
  bool isNumber() const { return tag == Number; }
  bool isString() const { return tag == String; }
  bool isArray() const { return tag == Array; }
  bool isObject() const { return tag == Object; }

  /// True for the literal `true`; false for anything else.
  bool boolean() const { return tag == Bool && flag; }
  /// The number was written as an integer (no fraction or exponent) that
  /// fits in int64: integer() holds it exactly.
  bool isInteger() const { return tag == Number && flag; }
  int64_t integer() const { return isInteger() ? payload.integer : 0; }
  /// The number's value (0 unless a number).
  double number() const;
  /// The string's UTF-8 bytes (empty unless a string).
  std::string_view string() const {
    return tag == String ? std::string_view(payload.chars, count)
                         : std::string_view();
  }
  /// An array's elements (empty unless an array).
  Span<Value> items() const {
    return tag == Array ? Span<Value>(payload.items, count) : Span<Value>();
  }
  /// An object's members in file order, duplicate keys kept (empty unless
  /// an object).
  Span<Member> members() const;

  /// The first member named `key` of an object; nullptr if absent or not an
  /// object.
  const Value *get(std::string_view key) const;
  /// "an object", "string \"abc\"", "number 2.5", ... for error messages.
  std::string describe() const;

private:
  friend class Document;
  friend class Parser;

  Kind tag = Null;
  /// Bool: its value; Number: whether payload holds an int64.
  bool flag = false;
  /// Bytes of a string, elements of an array or members of an object.
  uint32_t count = 0;
  union {
    double number;
    int64_t integer;
    const char *chars;
    const Value *items;
    const Member *members;
  } payload = {0.0};
};

struct Member {
  std::string_view name;
  Value value;
};

inline Span<Member> Value::members() const {
  return tag == Object ? Span<Member>(payload.members, count) : Span<Member>();
}

/// The deepest nesting of arrays and objects parse() accepts by default.
constexpr unsigned kDefaultMaxDepth = 64;

/// A parsed JSON text: owns the strings and containers its values view, in
/// a few large blocks. Movable; values stay valid while it lives.
class Document {
public:
  Document() = default;
  Document(Document &&other) noexcept { *this = std::move(other); }
  Document &operator=(Document &&other) noexcept {
    top = other.top;
    blocks = std::move(other.blocks);
    next = std::exchange(other.next, nullptr);
    left = std::exchange(other.left, 0);
    other.top = Value();
    return *this;
  }
  Document(const Document &) = delete;
  Document &operator=(const Document &) = delete;

  const Value &root() const { return top; }

private:
  friend class Parser;
  /// `bytes` of storage aligned for a Value, valid while this lives.
  void *allocate(size_t bytes);

  Value top;
  std::vector<std::unique_ptr<char[]>> blocks;
  char *next = nullptr;
  size_t left = 0;
};

/// Parses `text`, which must hold exactly one JSON value, into `out`. On
/// failure returns false and sets `error` to "line L, column C: PROBLEM".
bool parse(std::string_view text, Document &out, std::string &error,
           unsigned maxDepth = kDefaultMaxDepth);

/// Builds JSON text. Compact writes {"a":1,"b":[1,2]}; Spaced writes
/// {"a": 1, "b": [1, 2]} (the training log's one line per record).
class Writer {
public:
  enum Style { Compact, Spaced };
  explicit Writer(Style style = Compact) : style(style) {}

  Writer &beginObject();
  Writer &endObject();
  Writer &beginArray();
  Writer &endArray();
  /// The next member's key (inside an object).
  Writer &key(std::string_view name);
  Writer &string(std::string_view text);
  Writer &integer(int64_t value);
  Writer &unsignedInteger(uint64_t value);
  /// `value` with `decimals` digits after the point ("%.*f"); null where
  /// it is not finite (JSON has no NaN or infinity).
  Writer &fixed(double value, int decimals);
  /// `value` to `significant` digits ("%.*g"; 17 round-trips any double);
  /// null where it is not finite.
  Writer &number(double value, int significant = 17);
  Writer &boolean(bool value);
  Writer &null();

  const std::string &str() const { return text; }

private:
  void separate();
  void raw(std::string_view piece) { text.append(piece); }

  Style style;
  std::string text;
  /// One entry per open array/object: whether it has an element yet.
  std::vector<bool> nonEmpty;
  bool afterKey = false;
};

/// `text` as a JSON string literal, quotes included.
std::string quote(std::string_view text);

} // namespace tgc::rt::json

#endif // TGC_RUNTIME_JSON_H
