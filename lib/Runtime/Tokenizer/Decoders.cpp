//===- Decoders.cpp - tokenizer.json decoders -----------------------------===//
//
// Sequence, Replace, ByteFallback, Fuse, Strip, ByteLevel and Metaspace, as
// Hugging Face's `tokenizers` chains them over the list of token strings.
//
//===----------------------------------------------------------------------===//

#include "Components.h"
#include "Regex.h"
#include "Unicode.h"

#include "tgc/Runtime/Tokenizer.h"

using namespace tgc::rt;
using namespace tgc::rt::tok;

namespace {

class SequenceDecoder : public Decoder {
public:
  std::vector<std::unique_ptr<Decoder>> stages;
  void decode(std::vector<std::string> &tokens) const override {
    for (const auto &stage : stages)
      stage->decode(tokens);
  }
};

class ReplaceDecoder : public Decoder {
public:
  std::unique_ptr<Regex> pattern;
  std::string content;
  void decode(std::vector<std::string> &tokens) const override {
    for (std::string &token : tokens)
      token = pattern->replaceAll(token, content);
  }
};

/// Runs of <0xNN> tokens become their bytes when those are UTF-8, else one
/// U+FFFD per byte.
class ByteFallbackDecoder : public Decoder {
public:
  void decode(std::vector<std::string> &tokens) const override {
    std::vector<std::string> out;
    std::string bytes;
    size_t count = 0;
    auto flush = [&] {
      if (!count)
        return;
      if (findInvalidUtf8(bytes) == std::string_view::npos)
        out.push_back(bytes);
      else
        for (size_t i = 0; i < count; ++i)
          out.push_back("\xEF\xBF\xBD");
      bytes.clear();
      count = 0;
    };
    for (std::string &token : tokens) {
      int byte = byteToken(token);
      if (byte >= 0) {
        bytes.push_back(static_cast<char>(byte));
        ++count;
        continue;
      }
      flush();
      out.push_back(std::move(token));
    }
    flush();
    tokens = std::move(out);
  }

private:
  static int hex(char c) {
    if (c >= '0' && c <= '9')
      return c - '0';
    if (c >= 'A' && c <= 'F')
      return c - 'A' + 10;
    if (c >= 'a' && c <= 'f')
      return c - 'a' + 10;
    return -1;
  }
  static int byteToken(const std::string &token) {
    if (token.size() != 6 || token.compare(0, 3, "<0x") != 0 ||
        token[5] != '>')
      return -1;
    int hi = hex(token[3]), lo = hex(token[4]);
    return hi < 0 || lo < 0 ? -1 : hi * 16 + lo;
  }
};

class FuseDecoder : public Decoder {
public:
  void decode(std::vector<std::string> &tokens) const override {
    std::string joined;
    for (const std::string &token : tokens)
      joined += token;
    tokens.assign(1, std::move(joined));
  }
};

/// Removes up to `start` leading and `stop` trailing `content` characters
/// from each token.
class StripDecoder : public Decoder {
public:
  std::string content;
  int64_t start = 0, stop = 0;
  void decode(std::vector<std::string> &tokens) const override {
    for (std::string &token : tokens) {
      size_t begin = 0, end = token.size();
      for (int64_t i = 0; i < start && end - begin >= content.size() &&
                          token.compare(begin, content.size(), content) == 0;
           ++i)
        begin += content.size();
      for (int64_t i = 0;
           i < stop && end - begin >= content.size() &&
           token.compare(end - content.size(), content.size(), content) == 0;
           ++i)
        end -= content.size();
      token = token.substr(begin, end - begin);
    }
  }
};

/// Byte-level tokens back to bytes, then to text (invalid UTF-8 becomes
/// U+FFFD). A token with a character outside the alphabet (an added token)
/// is taken as it is written.
class ByteLevelDecoder : public Decoder {
public:
  void decode(std::vector<std::string> &tokens) const override {
    std::string bytes;
    for (const std::string &token : tokens) {
      std::string mapped;
      bool ok = true;
      for (size_t pos = 0; pos < token.size() && ok;) {
        uint8_t byte;
        ok = codepointToByte(nextCodepoint(token, pos), byte);
        mapped.push_back(static_cast<char>(byte));
      }
      bytes += ok ? mapped : token;
    }
    tokens.assign(1, utf8Lossy(bytes));
  }
};

class MetaspaceDecoder : public Decoder {
public:
  std::string replacement = "\xE2\x96\x81";
  bool stripFirstSpace = true;
  void decode(std::vector<std::string> &tokens) const override {
    for (size_t i = 0; i < tokens.size(); ++i) {
      std::string out;
      const std::string &token = tokens[i];
      for (size_t at = 0; at < token.size();) {
        if (token.compare(at, replacement.size(), replacement) == 0) {
          out.push_back(' ');
          at += replacement.size();
        } else {
          out.push_back(token[at++]);
        }
      }
      if (i == 0 && stripFirstSpace && !out.empty() && out[0] == ' ')
        out.erase(0, 1);
      tokens[i] = std::move(out);
    }
  }
};

bool readInt(const json::Value &object, const char *key,
             const std::string &where, int64_t &out, std::string &error) {
  const json::Value *value = member(object, key);
  if (!value)
    return true;
  if (!value->isInteger() || value->integer() < 0) {
    error = where + "." + key + ": expected a count, found " +
            value->describe();
    return false;
  }
  out = value->integer();
  return true;
}

} // namespace

std::unique_ptr<Decoder>
tgc::rt::tok::parseDecoder(const json::Value &value, const std::string &where,
                           std::string &error) {
  std::string type;
  if (!readType(value, where, type, error))
    return nullptr;
  if (type == "Sequence") {
    auto sequence = std::make_unique<SequenceDecoder>();
    if (!parseSequence(value, "decoders", where, sequence->stages, error,
                       parseDecoder))
      return nullptr;
    return sequence;
  }
  if (type == "Replace") {
    auto replace = std::make_unique<ReplaceDecoder>();
    if (!(replace->pattern = parsePattern(value, where, error)) ||
        !readString(value, "content", where, replace->content, error))
      return nullptr;
    return replace;
  }
  if (type == "ByteFallback")
    return std::make_unique<ByteFallbackDecoder>();
  if (type == "Fuse")
    return std::make_unique<FuseDecoder>();
  if (type == "Strip") {
    auto strip = std::make_unique<StripDecoder>();
    if (!readString(value, "content", where, strip->content, error) ||
        !readInt(value, "start", where, strip->start, error) ||
        !readInt(value, "stop", where, strip->stop, error))
      return nullptr;
    return strip;
  }
  if (type == "ByteLevel")
    return std::make_unique<ByteLevelDecoder>();
  if (type == "Metaspace") {
    auto metaspace = std::make_unique<MetaspaceDecoder>();
    std::string scheme;
    bool addPrefixSpace = true;
    if (!readString(value, "replacement", where, metaspace->replacement,
                    error, /*required=*/false) ||
        !readString(value, "prepend_scheme", where, scheme, error,
                    /*required=*/false) ||
        !readBool(value, "add_prefix_space", where, addPrefixSpace, error))
      return nullptr;
    metaspace->stripFirstSpace =
        scheme.empty() ? addPrefixSpace : scheme != "never";
    return metaspace;
  }
  error = where + ": decoder type \"" + type +
          "\" is not supported (supported: Sequence, Replace, ByteFallback, "
          "Fuse, Strip, ByteLevel, Metaspace)";
  return nullptr;
}
