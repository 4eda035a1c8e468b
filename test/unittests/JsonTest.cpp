//===- JsonTest.cpp - the runtime's JSON reader and writer ----------------===//

#include "tgc/Runtime/Json.h"

#include <gtest/gtest.h>

#include <cmath>
#include <deque>
#include <string>

using namespace tgc::rt::json;

namespace {

/// The root of `text` parsed into a document that lives as long as the
/// test program (values view their document).
const Value &parseOk(const std::string &text) {
  static std::deque<Document> documents;
  Document &doc = documents.emplace_back();
  std::string error;
  EXPECT_TRUE(parse(text, doc, error)) << text << ": " << error;
  return doc.root();
}

std::string parseError(const std::string &text, unsigned maxDepth = 64) {
  Document doc;
  std::string error;
  EXPECT_FALSE(parse(text, doc, error, maxDepth)) << text;
  EXPECT_TRUE(doc.root().isNull()); // nothing half-built is left
  return error;
}

TEST(Json, Scalars) {
  EXPECT_TRUE(parseOk("null").isNull());
  EXPECT_TRUE(parseOk(" true ").boolean());
  EXPECT_EQ(parseOk("false").kind(), Value::Bool);
  EXPECT_FALSE(parseOk("false").boolean());
  Value i = parseOk("-9223372036854775808");
  EXPECT_TRUE(i.isInteger());
  EXPECT_EQ(i.integer(), INT64_MIN);
  Value big = parseOk("9223372036854775808"); // past int64: a double only
  EXPECT_FALSE(big.isInteger());
  EXPECT_EQ(big.number(), 9223372036854775808.0);
  Value d = parseOk("2.5e-3");
  EXPECT_FALSE(d.isInteger());
  EXPECT_DOUBLE_EQ(d.number(), 2.5e-3);
  EXPECT_FALSE(parseOk("1.0").isInteger());
  EXPECT_TRUE(parseOk("0").isInteger());
  EXPECT_EQ(parseOk("-0").integer(), 0);
}

TEST(Json, Containers) {
  Value v = parseOk(R"({"b": [1, {"c": null}], "a": "x", "b": 2})");
  ASSERT_TRUE(v.isObject());
  ASSERT_EQ(v.members().size(), 3u); // file order, duplicates kept
  EXPECT_EQ(v.members()[0].name, "b");
  EXPECT_EQ(v.members()[1].name, "a");
  EXPECT_TRUE(v.get("b")->isArray()); // the first of the duplicates
  EXPECT_TRUE(v.get("b")->items()[1].get("c")->isNull());
  EXPECT_EQ(v.get("missing"), nullptr);
  EXPECT_EQ(v.get("a")->get("x"), nullptr); // not an object
  EXPECT_TRUE(parseOk("[]").items().empty());
  EXPECT_TRUE(parseOk("{}").members().empty());
}

TEST(Json, CompactValues) {
  // Tokenizer files hold millions of values: each is a 16-byte view.
  static_assert(sizeof(Value) == 16);
  // Containers nested inside containers keep their own elements while the
  // outer one is still being read.
  const Value &v = parseOk(R"([[1, [2, 3]], {"a": [4], "b": {"c": 5}}, 6])");
  ASSERT_EQ(v.items().size(), 3u);
  EXPECT_EQ(v.items()[0].items()[1].items()[1].integer(), 3);
  EXPECT_EQ(v.items()[1].get("a")->items()[0].integer(), 4);
  EXPECT_EQ(v.items()[1].get("b")->get("c")->integer(), 5);
  EXPECT_EQ(v.items()[2].integer(), 6);
  EXPECT_EQ(v.items()[2].number(), 6.0);
  // Accessors of another kind read as empty.
  EXPECT_TRUE(v.members().empty());
  EXPECT_TRUE(v.string().empty());
  EXPECT_EQ(v.integer(), 0);
  EXPECT_FALSE(v.boolean());
  // Many values, long strings: storage grows past one block.
  std::string text = "{";
  for (int i = 0; i < 100000; ++i)
    text += (i ? ",\"" : "\"") + std::to_string(i) + "\": [\"" +
            std::string(i % 70, 'x') + "\", " + std::to_string(i) + "]";
  text += R"(, "long": ")" + std::string(3 << 20, 'y') + "\"}";
  Document doc;
  std::string error;
  ASSERT_TRUE(parse(text, doc, error)) << error;
  Document moved = std::move(doc); // values stay valid in a moved document
  const Value &root = moved.root();
  ASSERT_EQ(root.members().size(), 100001u);
  for (int i = 0; i < 100000; i += 997) {
    const Member &m = root.members()[i];
    EXPECT_EQ(m.name, std::to_string(i));
    EXPECT_EQ(m.value.items()[0].string(), std::string(i % 70, 'x'));
    EXPECT_EQ(m.value.items()[1].integer(), i);
  }
  EXPECT_EQ(root.get("long")->string().size(), size_t(3) << 20);
}

TEST(Json, Describe) {
  // Long strings are cut to 40 bytes inside the quotes, escapes after.
  std::string text = "\"\\\"" + std::string(50, 'a') + "\"";
  EXPECT_EQ(parseOk(text).describe(),
            "string \"\\\"" + std::string(39, 'a') + "...\"");
  EXPECT_EQ(parseOk("-7").describe(), "number -7");
  EXPECT_EQ(parseOk("[1]").describe(), "an array");
}

TEST(Json, Strings) {
  EXPECT_EQ(parseOk(R"("a\"b\\c\/d\b\f\n\r\t")").string(),
            "a\"b\\c/d\b\f\n\r\t");
  EXPECT_EQ(parseOk(R"("\u0041\u00e9\u20ac")").string(),
            "A\xC3\xA9\xE2\x82\xAC");
  // A surrogate pair: U+1F600.
  EXPECT_EQ(parseOk(R"("\ud83d\ude00")").string(), "\xF0\x9F\x98\x80");
  // Raw UTF-8 passes through; tokenizer vocabularies are full of it.
  EXPECT_EQ(parseOk("\"\xC4\xA0the \xE2\x96\x81x\"").string(),
            "\xC4\xA0the \xE2\x96\x81x");
}

TEST(Json, Errors) {
  EXPECT_EQ(parseError(""), "line 1, column 1: unexpected end of text, "
                            "expected a value");
  EXPECT_EQ(parseError("{\"a\": 1,\n  }"),
            "line 2, column 3: expected a string key in an object");
  EXPECT_EQ(parseError("[1 2]"), "line 1, column 4: expected ',' or ']' in an "
                                 "array");
  EXPECT_EQ(parseError("{\"a\" 1}"),
            "line 1, column 6: expected ':' after an object key");
  EXPECT_EQ(parseError("[1] x"),
            "line 1, column 5: unexpected text after the value");
  EXPECT_EQ(parseError("01"), "line 1, column 2: invalid number: leading zero");
  EXPECT_NE(parseError("1.").find("expected a digit after '.'"),
            std::string::npos);
  EXPECT_NE(parseError("-").find("invalid number"), std::string::npos);
  EXPECT_NE(parseError("1e").find("exponent"), std::string::npos);
  EXPECT_NE(parseError("1e999").find("out of range"), std::string::npos);
  EXPECT_NE(parseError("NaN").find("unexpected character"), std::string::npos);
  EXPECT_NE(parseError("tru").find("unexpected character"), std::string::npos);
  EXPECT_NE(parseError("[1,]").find("unexpected character"), std::string::npos);
  EXPECT_NE(parseError("\"abc").find("unterminated string"), std::string::npos);
  EXPECT_NE(parseError("\"a\tb\"").find("control character"),
            std::string::npos);
  EXPECT_NE(parseError(R"("\x")").find("invalid escape '\\x'"),
            std::string::npos);
  EXPECT_NE(parseError(R"("\u12G4")").find("four hex digits"),
            std::string::npos);
  EXPECT_NE(parseError(R"("\ud83d")").find("high surrogate"),
            std::string::npos);
  EXPECT_NE(parseError(R"("\ude00")").find("low surrogate"), std::string::npos);
  // Overlong '/', a lone continuation byte, an encoded surrogate.
  for (const char *bad : {"\"\xC0\xAF\"", "\"\x80\"", "\"\xED\xA0\x80\"",
                          "\"\xF4\x90\x80\x80\"", "\"\xE2\x82\""})
    EXPECT_NE(parseError(bad).find("invalid UTF-8"), std::string::npos) << bad;
  // Columns count characters: the error after "é" is at column 5.
  EXPECT_EQ(parseError("[\"\xC3\xA9\" x]"),
            "line 1, column 6: expected ',' or ']' in an array");
}

TEST(Json, DepthLimit) {
  EXPECT_TRUE(parseOk(std::string(64, '[') + std::string(64, ']')).isArray());
  EXPECT_NE(parseError(std::string(65, '[') + std::string(65, ']'))
                .find("nesting deeper than 64 levels"),
            std::string::npos);
  // Far deeper than any stack: refused at the limit, not a crash.
  std::string deep = std::string(1000000, '[');
  EXPECT_NE(parseError(deep, 3).find("nesting deeper than 3 levels"),
            std::string::npos);
}

TEST(Json, Writer) {
  Writer w;
  w.beginObject();
  w.key("name").string("q\"\\\n\xC3\xA9");
  w.key("shape").beginArray().integer(2).integer(-3).endArray();
  w.key("empty").beginObject().endObject();
  w.key("flags").beginArray().boolean(true).null().endArray();
  w.key("offsets")
      .beginArray()
      .unsignedInteger(18446744073709551615ull)
      .endArray();
  w.endObject();
  EXPECT_EQ(w.str(), "{\"name\":\"q\\\"\\\\\\u000a\xC3\xA9\",\"shape\":[2,-3],"
                     "\"empty\":{},\"flags\":[true,null],"
                     "\"offsets\":[18446744073709551615]}");

  Writer log(Writer::Spaced);
  log.beginObject()
      .key("step")
      .integer(3)
      .key("loss")
      .fixed(2.5, 6)
      .key("grad_norm")
      .fixed(std::nan(""), 6)
      .key("scale")
      .number(double(1.5e-5f), 9) // a float to its 9 digits
      .key("inf")
      .number(INFINITY)
      .endObject();
  EXPECT_EQ(log.str(), "{\"step\": 3, \"loss\": 2.500000, \"grad_norm\": null, "
                       "\"scale\": 1.49999996e-05, \"inf\": null}");
}

TEST(Json, RoundTrip) {
  // What the writer writes, the reader reads back to the same values.
  Writer w;
  w.beginObject().key("\xF0\x9F\x98\x80\x01").beginArray();
  for (double d : {0.1, -1e-300, 1.7976931348623157e308, 3.0})
    w.number(d);
  w.endArray().endObject();
  Value v = parseOk(w.str());
  const Value *a = v.get("\xF0\x9F\x98\x80\x01");
  ASSERT_NE(a, nullptr);
  ASSERT_EQ(a->items().size(), 4u);
  EXPECT_EQ(a->items()[0].number(), 0.1);
  EXPECT_EQ(a->items()[1].number(), -1e-300);
  EXPECT_EQ(a->items()[2].number(), 1.7976931348623157e308);
  EXPECT_EQ(a->items()[3].number(), 3.0);
}

} // namespace
