//===- Json.h - the runtime's JSON reader and writer ------------*- C++ -*-===//
//
// JSON (RFC 8259) for the runtime, which links no LLVM: safetensors headers,
// checkpoint indexes, tokenizer files and the training log. The reader is
// strict (no trailing commas, comments, NaN or invalid UTF-8) and
// depth-limited, and reports errors by line and column; objects keep their
// members in file order.
//
//===----------------------------------------------------------------------===//
#ifndef TGC_RUNTIME_JSON_H
#define TGC_RUNTIME_JSON_H

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tgc::rt::json {

struct Value {
  enum Kind { Null, Bool, Number, String, Array, Object };
  Kind kind = Null;
  bool boolean = false;
  double number = 0;
  /// The number was written as an integer (no fraction or exponent) that
  /// fits in int64: `integer` holds it exactly.
  bool isInteger = false;
  int64_t integer = 0;
  std::string string;
  std::vector<Value> items;
  /// In file order; duplicate keys are kept (get() finds the first).
  std::vector<std::pair<std::string, Value>> members;

  bool isNull() const { return kind == Null; }
  bool isObject() const { return kind == Object; }
  bool isArray() const { return kind == Array; }
  bool isString() const { return kind == String; }
  bool isNumber() const { return kind == Number; }
  /// The member named `key` of an object; nullptr if absent or not an
  /// object.
  const Value *get(std::string_view key) const;
  /// "an object", "string \"abc\"", "number 2.5", ... for error messages.
  std::string describe() const;
};

/// The deepest nesting of arrays and objects parse() accepts by default.
constexpr unsigned kDefaultMaxDepth = 64;

/// Parses `text`, which must hold exactly one JSON value. On failure returns
/// false and sets `error` to "line L, column C: PROBLEM".
bool parse(std::string_view text, Value &out, std::string &error,
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
