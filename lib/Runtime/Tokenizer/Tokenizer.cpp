//===- Tokenizer.cpp - a tokenizer.json's pipeline, loaded and run --------===//

#include "tgc/Runtime/Tokenizer.h"

#include "../Files.h"
#include "AddedTokens.h"
#include "BPE.h"
#include "Components.h"
#include "FlatStringMap.h"
#include "Unicode.h"

#include <array>
#include <cstring>

using namespace tgc::rt;
using namespace tgc::rt::tok;

namespace tgc::rt::tok {

class WordCache {
public:
  /// A word's ids: `count` of them from `begin` in `ids`.
  struct Range {
    uint32_t begin, count;
  };
  FlatStringMap<Range> words;
  std::vector<uint32_t, LargePageAllocator<uint32_t>> ids;
};

class Pipeline {
public:
  std::string path;
  std::unique_ptr<Normalizer> normalizer;
  std::unique_ptr<PreTokenizer> preTokenizer;
  std::unique_ptr<BPE> model;
  std::unique_ptr<Decoder> decoder;
  SpecialTokenTemplate specials;
  /// Added tokens matched in the raw text, and those matched after
  /// normalization.
  AddedTokenMatcher rawTokens, normalizedTokens;
  std::vector<std::string> idToToken;
  std::vector<bool> special;
  std::optional<uint32_t> bos, eos;
  uint64_t fingerprint = 0;

  void encodeSegment(std::string_view text, bool atStart,
                     std::vector<uint32_t> &ids, WordCache *cache) const;
  /// `hash` is FlatStringMap::hash(word).
  void encodeWord(std::string_view word, uint64_t hash,
                  std::vector<uint32_t> &ids, WordCache *cache) const;
};

/// The words of a segment on their way to encodeWord, a few at a time: a
/// word's cache and vocabulary slots are prefetched when it arrives and read
/// kLookahead words later, so that the misses of neighbouring words overlap
/// (on text whose words repeat little, those misses are most of the time).
class WordQueue {
public:
  WordQueue(const Pipeline &p, std::vector<uint32_t> &ids, WordCache *cache)
      : p(p), ids(ids), cache(cache) {}
  ~WordQueue() { flush(); }

  void push(std::string &&word) {
    if (count == kLookahead)
      encodeOldest();
    size_t at = (first + count++) % kLookahead;
    hashes[at] = FlatStringMap<uint32_t>::hash(word);
    words[at] = std::move(word);
    cache->words.prefetch(hashes[at]);
    p.model->prefetch(hashes[at]);
  }
  void flush() {
    while (count)
      encodeOldest();
  }

private:
  static constexpr size_t kLookahead = 8;
  void encodeOldest() {
    p.encodeWord(words[first], hashes[first], ids, cache);
    first = (first + 1) % kLookahead;
    --count;
  }

  const Pipeline &p;
  std::vector<uint32_t> &ids;
  WordCache *cache;
  std::array<std::string, kLookahead> words;
  std::array<uint64_t, kLookahead> hashes;
  size_t first = 0, count = 0;
};

} // namespace tgc::rt::tok

void tgc::rt::tok::destroyWordCache(WordCache *cache) { delete cache; }
WordCachePtr tgc::rt::tok::newWordCache() { return WordCachePtr(new WordCache); }

void Pipeline::encodeWord(std::string_view word, uint64_t hash,
                          std::vector<uint32_t> &ids, WordCache *cache) const {
  constexpr size_t kLongestCached = 256, kMostCached = 1 << 18;
  if (word.size() > kLongestCached) {
    // A SentencePiece segment is one long word: encode its parts.
    std::vector<size_t> cuts = model->independentCuts(word);
    if (cuts.empty()) {
      model->tokenize(word, hash, ids);
      return;
    }
    cuts.push_back(word.size());
    size_t begin = 0;
    for (size_t end : cuts) {
      std::string_view part = word.substr(begin, end - begin);
      encodeWord(part, FlatStringMap<uint32_t>::hash(part), ids, cache);
      begin = end;
    }
    return;
  }
  if (const WordCache::Range *range = cache->words.find(word, hash)) {
    const uint32_t *first = cache->ids.data() + range->begin;
    ids.insert(ids.end(), first, first + range->count);
    return;
  }
  if (cache->words.size() >= kMostCached) {
    cache->words.clear();
    cache->ids.clear();
  }
  size_t begin = ids.size();
  model->tokenize(word, hash, ids);
  WordCache::Range range{static_cast<uint32_t>(cache->ids.size()),
                         static_cast<uint32_t>(ids.size() - begin)};
  cache->ids.insert(cache->ids.end(), ids.begin() + begin, ids.end());
  cache->words.insert(word, hash, range);
}

void Pipeline::encodeSegment(std::string_view raw, bool atStart,
                             std::vector<uint32_t> &ids,
                             WordCache *cache) const {
  std::string text(raw);
  if (normalizer)
    normalizer->apply(text);
  std::vector<Span> spans;
  if (normalizedTokens.empty())
    spans.push_back({0, text.size()});
  else
    spans = normalizedTokens.split(text);
  WordQueue queue(*this, ids, cache);
  for (const Span &span : spans) {
    if (span.id >= 0) {
      queue.flush();
      ids.push_back(static_cast<uint32_t>(span.id));
      continue;
    }
    Piece piece{spans.size() == 1
                    ? std::move(text)
                    : text.substr(span.begin, span.end - span.begin),
                atStart && span.begin == 0};
    if (!preTokenizer) {
      queue.push(std::move(piece.text));
      continue;
    }
    preTokenizer->split(std::move(piece), [&](Piece &&word) {
      queue.push(std::move(word.text));
    });
  }
}

Tokenizer::Tokenizer(std::unique_ptr<Pipeline> pipeline)
    : pipeline(std::move(pipeline)) {}
Tokenizer::~Tokenizer() = default;
Tokenizer::Tokenizer(Tokenizer &&) noexcept = default;

std::vector<uint32_t> Tokenizer::encode(std::string_view text,
                                        bool addSpecialTokens,
                                        WordCache *cache) const {
  const Pipeline &p = *pipeline;
  WordCachePtr local;
  if (!cache) {
    local = newWordCache();
    cache = local.get();
  }
  std::vector<uint32_t> ids;
  // Most text takes 1.5 to 4 bytes per id; untouched capacity costs no
  // memory, and the pages written are faulted in 2 MiB at a time.
  ids.reserve(text.size() / 2 + 8);
  adviseHugePages(ids.data(), ids.capacity() * sizeof(uint32_t));
  if (addSpecialTokens)
    ids.insert(ids.end(), p.specials.prefix.begin(), p.specials.prefix.end());
  for (const Span &span : p.rawTokens.split(text)) {
    if (span.id >= 0)
      ids.push_back(static_cast<uint32_t>(span.id));
    else
      p.encodeSegment(text.substr(span.begin, span.end - span.begin),
                      span.begin == 0, ids, cache);
  }
  if (addSpecialTokens)
    ids.insert(ids.end(), p.specials.suffix.begin(), p.specials.suffix.end());
  return ids;
}

bool Tokenizer::decode(const std::vector<uint32_t> &ids,
                       bool skipSpecialTokens, std::string &text,
                       std::string &error) const {
  const Pipeline &p = *pipeline;
  std::vector<std::string> tokens;
  tokens.reserve(ids.size());
  for (uint32_t id : ids) {
    if (id >= p.idToToken.size() ||
        (p.idToToken[id].empty() && !p.special[id])) {
      error = "token id " + std::to_string(id) + " is not in " + p.path +
              " (its ids run from 0 to " +
              std::to_string(p.idToToken.size() - 1) + ")";
      return false;
    }
    if (skipSpecialTokens && p.special[id])
      continue;
    tokens.push_back(p.idToToken[id]);
  }
  if (p.decoder) {
    p.decoder->decode(tokens);
    text.clear();
    for (const std::string &token : tokens)
      text += token;
    return true;
  }
  // Without a decoder Hugging Face joins the tokens with spaces.
  text.clear();
  for (size_t i = 0; i < tokens.size(); ++i)
    text += (i ? " " : "") + tokens[i];
  return true;
}

uint32_t Tokenizer::vocabSize() const {
  return static_cast<uint32_t>(pipeline->idToToken.size());
}
std::optional<uint32_t> Tokenizer::bosId() const { return pipeline->bos; }
std::optional<uint32_t> Tokenizer::eosId() const { return pipeline->eos; }
bool Tokenizer::isSpecial(uint32_t id) const {
  return id < pipeline->special.size() && pipeline->special[id];
}
const std::string &Tokenizer::path() const { return pipeline->path; }
uint64_t Tokenizer::fingerprint() const { return pipeline->fingerprint; }

uint64_t tgc::rt::tok::hashBytes(std::string_view bytes, uint64_t seed) {
  auto mix = [](uint64_t x) {
    x ^= x >> 32;
    x *= 0xd6e8feb86659fd93ull;
    x ^= x >> 32;
    x *= 0xd6e8feb86659fd93ull;
    return x ^ (x >> 32);
  };
  uint64_t h = mix(seed ^ (bytes.size() * 0x9E3779B97F4A7C15ull));
  size_t i = 0;
  for (; i + 8 <= bytes.size(); i += 8) {
    uint64_t word;
    std::memcpy(&word, bytes.data() + i, 8);
    h = mix(h ^ word) + 0x9E3779B97F4A7C15ull;
  }
  uint64_t tail = 0;
  if (i < bytes.size())
    std::memcpy(&tail, bytes.data() + i, bytes.size() - i);
  return mix(h ^ tail ^ (bytes.size() - i));
}

//===----------------------------------------------------------------------===//
// Loading
//===----------------------------------------------------------------------===//

namespace {


/// A special token named in tokenizer_config.json: a string, or an
/// AddedToken object with "content".
bool configToken(const json::Value &config, const char *key,
                 const Pipeline &p, const std::string &where,
                 std::optional<uint32_t> &id, std::string &error) {
  const json::Value *value = member(config, key);
  if (!value)
    return true;
  std::string content;
  if (value->isString()) {
    content = value->string();
  } else if (value->isObject()) {
    if (!readString(*value, "content", where + "." + key, content, error))
      return false;
  } else {
    error = where + "." + key + ": expected a token string, found " +
            value->describe();
    return false;
  }
  for (uint32_t i = 0; i < p.idToToken.size(); ++i)
    if (p.idToToken[i] == content) {
      id = i;
      return true;
    }
  error = where + "." + key + ": " + json::quote(content) +
          " is not a token of the tokenizer";
  return false;
}

} // namespace

std::unique_ptr<Tokenizer> Tokenizer::load(const std::string &path,
                                           std::string &error) {
  std::string file = path, directory;
  if (isDirectory(path)) {
    directory = path;
    file = path + "/tokenizer.json";
  } else {
    size_t slash = path.rfind('/');
    directory = slash == std::string::npos ? "." : path.substr(0, slash);
  }
  std::string text;
  if (!readFileBytes(file, text, error))
    return nullptr;
  uint64_t fingerprint = hashBytes(text);
  json::Document doc;
  std::string parseError;
  if (!json::parse(text, doc, parseError)) {
    error = file + ": " + parseError;
    return nullptr;
  }
  text.clear();
  text.shrink_to_fit();
  const json::Value &root = doc.root();
  if (!root.isObject()) {
    error = file + ": expected a tokenizer object, found " + root.describe();
    return nullptr;
  }
  auto p = std::make_unique<Pipeline>();
  p->path = file;
  p->fingerprint = fingerprint;
  auto fail = [&](const std::string &message) {
    error = file + ": " + message;
    return nullptr;
  };

  const json::Value *model = member(root, "model");
  if (!model)
    return fail("missing \"model\"");
  std::string stageError;
  if (!(p->model = BPE::parse(*model, "model", stageError)))
    return fail(stageError);
  if (const json::Value *v = member(root, "normalizer"))
    if (!(p->normalizer = parseNormalizer(*v, "normalizer", stageError)))
      return fail(stageError);
  if (const json::Value *v = member(root, "pre_tokenizer"))
    if (!(p->preTokenizer = parsePreTokenizer(*v, "pre_tokenizer", stageError)))
      return fail(stageError);
  if (const json::Value *v = member(root, "decoder"))
    if (!(p->decoder = parseDecoder(*v, "decoder", stageError)))
      return fail(stageError);
  if (const json::Value *v = member(root, "post_processor"))
    if (!parsePostProcessor(*v, "post_processor", p->specials, stageError))
      return fail(stageError);

  p->model->vocab().forEach([&](std::string_view token, uint32_t id) {
    if (id >= p->idToToken.size())
      p->idToToken.resize(id + 1);
    p->idToToken[id] = token;
  });
  std::vector<AddedToken> added;
  if (const json::Value *v = member(root, "added_tokens"))
    if (!parseAddedTokens(*v, "added_tokens", added, stageError))
      return fail(stageError);
  p->special.assign(p->idToToken.size(), false);
  for (const AddedToken &token : added) {
    if (token.id >= p->idToToken.size()) {
      p->idToToken.resize(token.id + 1);
      p->special.resize(token.id + 1, false);
    }
    p->idToToken[token.id] = token.content;
    p->special[token.id] = token.special;
    // Hugging Face matches normalized tokens after the normalizer; without
    // one the two are the same.
    (token.normalized && p->normalizer ? p->normalizedTokens : p->rawTokens)
        .add(token);
  }
  for (uint32_t id : p->specials.prefix)
    if (id >= p->idToToken.size())
      return fail("post_processor: special token id " + std::to_string(id) +
                  " is not in the vocabulary");
  for (uint32_t id : p->specials.suffix)
    if (id >= p->idToToken.size())
      return fail("post_processor: special token id " + std::to_string(id) +
                  " is not in the vocabulary");

  // tokenizer_config.json: BOS/EOS, and add_bos/eos_token where it says.
  std::string configPath = directory + "/tokenizer_config.json";
  std::string configText;
  if (readFileBytes(configPath, configText, stageError)) {
    p->fingerprint = hashBytes(configText, p->fingerprint);
    json::Document configDoc;
    if (!json::parse(configText, configDoc, parseError)) {
      error = configPath + ": " + parseError;
      return nullptr;
    }
    const json::Value &config = configDoc.root();
    if (!config.isObject()) {
      error = configPath + ": expected an object, found " + config.describe();
      return nullptr;
    }
    std::string where = "tokenizer_config";
    if (!configToken(config, "bos_token", *p, where, p->bos, stageError) ||
        !configToken(config, "eos_token", *p, where, p->eos, stageError)) {
      error = configPath + ": " + stageError;
      return nullptr;
    }
    // Llama-style configs say what encoding adds; that replaces the
    // tokenizer.json template, as transformers' LlamaTokenizerFast does.
    bool addBos = false, addEos = false;
    bool saysBos = member(config, "add_bos_token") != nullptr,
         saysEos = member(config, "add_eos_token") != nullptr;
    if (!readBool(config, "add_bos_token", where, addBos, stageError) ||
        !readBool(config, "add_eos_token", where, addEos, stageError)) {
      error = configPath + ": " + stageError;
      return nullptr;
    }
    if (saysBos || saysEos) {
      if ((addBos && !p->bos) || (addEos && !p->eos)) {
        error = configPath + ": add_" + std::string(addBos && !p->bos
                                                        ? "bos"
                                                        : "eos") +
                "_token is true but no such token is named";
        return nullptr;
      }
      p->specials = {};
      if (addBos)
        p->specials.prefix.push_back(*p->bos);
      if (addEos)
        p->specials.suffix.push_back(*p->eos);
    }
  }
  return std::unique_ptr<Tokenizer>(new Tokenizer(std::move(p)));
}
