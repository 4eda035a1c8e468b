//===- TokenizedText.cpp - a text corpus through a tokenizer --------------===//

#include "TokenizedText.h"
#include "Files.h"

#include "tgc/Runtime/Tokenizer.h"

#include <algorithm>
#include <atomic>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <thread>

using namespace tgc::rt;

namespace {

/// The cache's first 16 bytes: a magic and the number of ids, so that a
/// file cut short is never read as ids.
constexpr char kMagic[8] = {'T', 'G', 'C', 'T', 'O', 'K', '1', '\0'};


bool readCache(const std::string &path, std::vector<int32_t> &tokens) {
  std::string bytes, error;
  if (!readFileBytes(path, bytes, error) || bytes.size() < 16 ||
      std::memcmp(bytes.data(), kMagic, 8) != 0)
    return false;
  uint64_t count;
  std::memcpy(&count, bytes.data() + 8, 8);
  if (bytes.size() != 16 + 4 * count)
    return false;
  tokens.resize(count);
  for (uint64_t i = 0; i < count; ++i) {
    uint32_t id;
    std::memcpy(&id, bytes.data() + 16 + 4 * i, 4);
    tokens[i] = static_cast<int32_t>(id);
  }
  return true;
}

/// Writes the cache atomically: readers see the whole file or none. False
/// (and nothing left behind) on failure.
bool writeCache(const std::string &path, const std::vector<uint32_t> &ids) {
  std::string error;
  return writeFileAtomically(
      path,
      [&](std::FILE *f) {
        uint64_t count = ids.size();
        return std::fwrite(kMagic, 1, 8, f) == 8 &&
               std::fwrite(&count, 8, 1, f) == 1 &&
               std::fwrite(ids.data(), 4, ids.size(), f) == ids.size();
      },
      error);
}

} // namespace

std::vector<std::string_view>
tgc::rt::splitDocuments(std::string_view text) {
  std::vector<std::string_view> documents;
  size_t begin = 0, i = 0;
  while (i < text.size()) {
    if (text[i] != '\n') {
      ++i;
      continue;
    }
    // A run of line ends (\n, \r\n, and white space between them).
    size_t end = i, newlines = 0;
    for (size_t j = i; j < text.size(); ++j) {
      char c = text[j];
      if (c == '\n') {
        ++newlines;
        end = j + 1;
      } else if (c != '\r' && c != ' ' && c != '\t') {
        break;
      }
    }
    if (newlines >= 2) {
      documents.push_back(text.substr(begin, end - begin));
      begin = end;
    }
    i = end;
  }
  if (begin < text.size())
    documents.push_back(text.substr(begin));
  return documents;
}

bool tgc::rt::loadTokenizedText(const std::string &corpus,
                                const std::string &tokenizerPath,
                                int64_t vocab, int64_t threads,
                                TokenData &data, std::string &error) {
  std::string text;
  if (!readFileBytes(corpus, text, error))
    return false;
  size_t bad = tok::findInvalidUtf8(text);
  if (bad != std::string_view::npos) {
    error = corpus + ": " + tok::textPosition(text, bad) + " (byte " +
            std::to_string(bad) + ")" +
            ": not valid UTF-8 (--tokenizer reads UTF-8 text; without it "
            "a text file is read as bytes)";
    return false;
  }
  std::unique_ptr<tok::Tokenizer> tokenizer =
      tok::Tokenizer::load(tokenizerPath, error);
  if (!tokenizer)
    return false;
  if (tokenizer->vocabSize() > vocab) {
    error = tokenizer->path() + ": the tokenizer's ids run to " +
            std::to_string(tokenizer->vocabSize() - 1) +
            ", past the model's vocab_size of " + std::to_string(vocab);
    return false;
  }

  char key[40];
  std::snprintf(key, sizeof(key), ".tok-%016" PRIx64 ".u32",
                tok::hashBytes(text, tokenizer->fingerprint()));
  std::string cache = corpus + key;
  std::string how;
  if (readCache(cache, data.tokens)) {
    how = "read from " + cache;
  } else {
    std::vector<std::string_view> documents = splitDocuments(text);
    std::vector<std::vector<uint32_t>> encoded(documents.size());
    unsigned workers = threads > 0 ? static_cast<unsigned>(threads)
                                   : std::thread::hardware_concurrency();
    workers = std::max(1u, std::min<unsigned>(workers, documents.size()));
    std::atomic<size_t> nextDocument{0};
    auto work = [&] {
      tok::WordCachePtr cache = tok::newWordCache();
      for (size_t d; (d = nextDocument++) < documents.size();)
        encoded[d] = tokenizer->encode(documents[d], /*addSpecialTokens=*/true,
                                       cache.get());
    };
    std::vector<std::thread> pool;
    for (unsigned w = 1; w < workers; ++w)
      pool.emplace_back(work);
    work();
    for (std::thread &t : pool)
      t.join();
    std::vector<uint32_t> ids;
    for (const auto &document : encoded)
      ids.insert(ids.end(), document.begin(), document.end());
    data.tokens.assign(ids.begin(), ids.end());
    how = writeCache(cache, ids) ? "cached in " + cache
                                 : "not cached: cannot write " + cache;
  }
  data.description = corpus + " (" + std::to_string(data.tokens.size()) +
                     " tokens of " + tokenizer->path() + "; " + how + ")";
  return true;
}
