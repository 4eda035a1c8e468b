//===- Tokenizer.h - Hugging Face tokenizer.json in the runtime -*- C++ -*-===//
//
// Reads a Hugging Face `tokenizer.json` (and the `tokenizer_config.json`
// beside it) and encodes text to ids and ids back to text as the `tokenizers`
// library does: added tokens, normalizer, pre-tokenizer, BPE model,
// post-processor and decoder. Plain C++ over PCRE2 (the Split regexes) and
// utf8proc (Unicode normalization); no LLVM, so training and generation
// executables link it. docs/tokenizers.md lists the components built.
//
//===----------------------------------------------------------------------===//
#ifndef TGC_RUNTIME_TOKENIZER_H
#define TGC_RUNTIME_TOKENIZER_H

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tgc::rt::tok {

class Pipeline;

/// Per-thread memory of words already split into tokens. Optional; one per
/// thread when encoding in parallel.
class WordCache;

class Tokenizer {
public:
  ~Tokenizer();
  Tokenizer(Tokenizer &&) noexcept;

  /// Loads PATH, a tokenizer.json or a directory holding one, and the
  /// tokenizer_config.json beside it when there is one. A component this
  /// reader does not build is refused by name. Errors name the file.
  static std::unique_ptr<Tokenizer> load(const std::string &path,
                                         std::string &error);

  /// The ids of `text` (valid UTF-8). Added tokens written in the text are
  /// matched, as Hugging Face does; `addSpecialTokens` also adds what the
  /// post-processor (or tokenizer_config's add_bos/eos_token) adds.
  std::vector<uint32_t> encode(std::string_view text, bool addSpecialTokens,
                               WordCache *cache = nullptr) const;

  /// The text of `ids`. Unknown ids are an error (false). Invalid UTF-8 that
  /// byte tokens produce becomes U+FFFD, as Hugging Face's decode does.
  bool decode(const std::vector<uint32_t> &ids, bool skipSpecialTokens,
              std::string &text, std::string &error) const;

  /// One past the largest id (model vocabulary and added tokens).
  uint32_t vocabSize() const;
  std::optional<uint32_t> bosId() const;
  std::optional<uint32_t> eosId() const;
  bool isSpecial(uint32_t id) const;
  /// The file the tokenizer came from.
  const std::string &path() const;
  /// A hash of the files read (tokenizer.json, tokenizer_config.json): what
  /// caches of encoded text are keyed by.
  uint64_t fingerprint() const;

private:
  explicit Tokenizer(std::unique_ptr<Pipeline> pipeline);
  std::unique_ptr<Pipeline> pipeline;
};

void destroyWordCache(WordCache *cache);
struct WordCacheDeleter {
  void operator()(WordCache *cache) const { destroyWordCache(cache); }
};
using WordCachePtr = std::unique_ptr<WordCache, WordCacheDeleter>;
WordCachePtr newWordCache();

/// A 64-bit hash of `bytes` (not cryptographic; for cache keys).
uint64_t hashBytes(std::string_view bytes, uint64_t seed = 0);

/// Where `text` first stops being UTF-8 (its byte offset); npos if valid.
size_t findInvalidUtf8(std::string_view text);

/// "line L, column C" (1-based, columns in bytes) of byte `offset` of
/// `text`, for messages.
std::string textPosition(std::string_view text, size_t offset);

} // namespace tgc::rt::tok

#endif // TGC_RUNTIME_TOKENIZER_H
