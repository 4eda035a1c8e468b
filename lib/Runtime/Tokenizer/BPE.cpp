//===- BPE.cpp - the BPE model of a tokenizer.json ------------------------===//

#include "BPE.h"

#include "Components.h"
#include "Unicode.h"

#include <cstdio>
#include <queue>

using namespace tgc::rt;
using namespace tgc::rt::tok;

namespace {
constexpr uint64_t kEmptySlot = ~uint64_t(0);
uint64_t hashPair(uint64_t key) {
  key ^= key >> 33;
  key *= 0xff51afd7ed558ccdull;
  key ^= key >> 33;
  return key;
}
} // namespace

void BPE::buildMergeTable(const std::vector<uint64_t> &pairs) {
  uint64_t size = 16;
  while (size * 7 < pairs.size() * 10) // a load of at most 0.7
    size *= 2;
  mergeMask = size - 1;
  mergeSlots.assign(size, kEmptySlot);
  denseRanks.assign(kDenseIds * kDenseIds, kNoRank);
  for (uint32_t rank = 0; rank < pairs.size(); ++rank) {
    uint64_t key = pairs[rank];
    uint64_t left = key >> kIdBits, right = key & kIdMask;
    if ((left | right) < kDenseIds) {
      uint32_t &dense = denseRanks[left * kDenseIds + right];
      if (dense == kNoRank)
        dense = rank;
      continue;
    }
    uint64_t slot = hashPair(key) & mergeMask;
    while (mergeSlots[slot] != kEmptySlot &&
           (mergeSlots[slot] >> kIdBits) != key)
      slot = (slot + 1) & mergeMask;
    if (mergeSlots[slot] != kEmptySlot)
      continue; // the first rank of a pair wins, as in Hugging Face's table
    mergeSlots[slot] = (key << kIdBits) | rank;
  }
}

uint32_t BPE::sparseMergeRank(uint32_t left, uint32_t right) const {
  uint64_t key = pairKey(left, right);
  for (uint64_t slot = hashPair(key) & mergeMask;;
       slot = (slot + 1) & mergeMask) {
    uint64_t entry = mergeSlots[slot];
    if ((entry >> kIdBits) == key)
      return static_cast<uint32_t>(entry & kIdMask);
    if (entry == kEmptySlot)
      return kNoRank;
  }
}

std::optional<uint32_t> BPE::find(std::string_view token) const {
  if (const uint32_t *id = tokenIds.find(token))
    return *id;
  return std::nullopt;
}

std::unique_ptr<BPE> BPE::parse(const json::Value &model,
                                const std::string &where, std::string &error) {
  if (!model.isObject()) {
    error = where + ": expected an object, found " + model.describe();
    return nullptr;
  }
  std::string type = "BPE";
  if (!readString(model, "type", where, type, error, /*required=*/false))
    return nullptr;
  if (type != "BPE") {
    error = where + ": model type \"" + type +
            "\" is not supported (supported: BPE)";
    return nullptr;
  }
  for (const char *key : {"continuing_subword_prefix", "end_of_word_suffix"}) {
    std::string affix;
    if (!readString(model, key, where, affix, error, /*required=*/false))
      return nullptr;
    if (!affix.empty()) {
      error = where + "." + key + ": \"" + affix +
              "\" is not supported (only BPE without word affixes)";
      return nullptr;
    }
  }
  if (const json::Value *dropout = member(model, "dropout");
      dropout && !(dropout->isNumber() && dropout->number() == 0)) {
    error = where + ".dropout: BPE dropout (" + dropout->describe() +
            ") is not supported; it changes encodings at random";
    return nullptr;
  }
  auto bpe = std::unique_ptr<BPE>(new BPE);
  if (!readBool(model, "byte_fallback", where, bpe->byteFallback, error) ||
      !readBool(model, "fuse_unk", where, bpe->fuseUnk, error) ||
      !readBool(model, "ignore_merges", where, bpe->ignoreMerges, error))
    return nullptr;

  const json::Value *vocab = member(model, "vocab");
  if (!vocab || !vocab->isObject()) {
    error = where + ".vocab: expected an object of token: id";
    return nullptr;
  }
  bpe->charIds.assign(0x110000, -1);
  for (const auto &[token, idValue] : vocab->members()) {
    int64_t id = idValue.integer();
    if (!idValue.isInteger() || id < 0) {
      error = where + ".vocab[" + json::quote(token) +
              "]: " + idValue.describe() + " is not a token id";
      return nullptr;
    }
    if (id >= int64_t(kIdMask)) {
      error = where + ".vocab[" + json::quote(token) + "]: id " +
              std::to_string(id) + " is not supported (ids must be below " +
              std::to_string(kIdMask) + ")";
      return nullptr;
    }
    bpe->tokenIds.insert(token, static_cast<uint32_t>(id));
    if (!token.empty() &&
        utf8Length(static_cast<unsigned char>(token[0])) == token.size()) {
      size_t pos = 0;
      bpe->charIds[nextCodepoint(token, pos)] = static_cast<int32_t>(id);
    }
  }

  std::string unkToken;
  if (!readString(model, "unk_token", where, unkToken, error,
                  /*required=*/false))
    return nullptr;
  if (!unkToken.empty()) {
    bpe->unk = bpe->find(unkToken);
    if (!bpe->unk) {
      error = where + ".unk_token: " + json::quote(unkToken) +
              " is not in the vocabulary";
      return nullptr;
    }
  }
  if (bpe->byteFallback) {
    for (int b = 0; b < 256; ++b) {
      char name[8];
      std::snprintf(name, sizeof(name), "<0x%02X>", b);
      std::optional<uint32_t> id = bpe->find(name);
      if (!id) {
        bpe->byteIds.clear();
        break;
      }
      bpe->byteIds.push_back(*id);
    }
  }

  const json::Value *merges = member(model, "merges");
  if (!merges || !merges->isArray()) {
    error = where + ".merges: expected an array";
    return nullptr;
  }
  json::Span<json::Value> mergeItems = merges->items();
  if (mergeItems.size() >= kIdMask) {
    error = where + ".merges: " + std::to_string(mergeItems.size()) +
            " merges are not supported (at most " +
            std::to_string(kIdMask - 1) + ")";
    return nullptr;
  }
  std::vector<uint64_t> pairs;
  pairs.reserve(mergeItems.size());
  bpe->mergeResults.reserve(mergeItems.size());
  std::string joined;
  for (size_t rank = 0; rank < mergeItems.size(); ++rank) {
    const json::Value &merge = mergeItems[rank];
    auto at = [&] { return where + ".merges[" + std::to_string(rank) + "]"; };
    std::string_view left, right;
    if (merge.isString()) {
      std::string_view text = merge.string();
      size_t space = text.find(' ');
      if (space == std::string::npos ||
          text.find(' ', space + 1) != std::string::npos) {
        error = at() + ": " + merge.describe() +
                " is not two tokens separated by one space";
        return nullptr;
      }
      left = text.substr(0, space);
      right = text.substr(space + 1);
    } else if (merge.items().size() == 2 && merge.items()[0].isString() &&
               merge.items()[1].isString()) {
      left = merge.items()[0].string();
      right = merge.items()[1].string();
    } else {
      error = at() + ": expected \"left right\" or [\"left\", \"right\"]";
      return nullptr;
    }
    joined.assign(left).append(right);
    std::optional<uint32_t> l = bpe->find(left), r = bpe->find(right),
                            result = bpe->find(joined);
    if (!l || !r || !result) {
      error = at() + ": " +
              json::quote(!l   ? left
                          : !r ? right
                               : std::string_view(joined)) +
              " is not in the vocabulary";
      return nullptr;
    }
    pairs.push_back(pairKey(*l, *r));
    bpe->mergeResults.push_back(*result);
  }
  bpe->buildMergeTable(pairs);

  // U+2581 only ever after another U+2581 inside a token: cuts before a
  // U+2581 cannot split a merge. (ignore_merges looks at whole words, and
  // an unknown U+2581 could fuse with an unknown neighbour: no cuts then.)
  const std::string metaspace = "\xE2\x96\x81";
  bpe->cutsAtMetaspace = !bpe->ignoreMerges && bpe->find(metaspace);
  bpe->tokenIds.forEach([&](std::string_view token, uint32_t) {
    for (size_t at = token.find(metaspace, 1);
         at != std::string::npos && bpe->cutsAtMetaspace;
         at = token.find(metaspace, at + 1))
      bpe->cutsAtMetaspace =
          at >= 3 && token.compare(at - 3, 3, metaspace) == 0;
  });
  return bpe;
}

std::vector<size_t> BPE::independentCuts(std::string_view word) const {
  std::vector<size_t> cuts;
  if (!cutsAtMetaspace)
    return cuts;
  const std::string_view metaspace = "\xE2\x96\x81";
  for (size_t at = word.find(metaspace, 1); at != std::string_view::npos;
       at = word.find(metaspace, at + 3))
    if (at < 3 || word.compare(at - 3, 3, metaspace) != 0)
      cuts.push_back(at);
  return cuts;
}

void BPE::symbolsOf(std::string_view word, std::vector<uint32_t> &ids,
                    std::vector<uint32_t> &lengths) const {
  bool lastUnk = false;
  for (size_t pos = 0; pos < word.size();) {
    size_t start = pos;
    int32_t id = charIds[nextCodepoint(word, pos)];
    size_t n = pos - start;
    std::string_view ch = word.substr(start, n);
    if (id >= 0) {
      ids.push_back(static_cast<uint32_t>(id));
      lengths.push_back(static_cast<uint32_t>(n));
      lastUnk = false;
      continue;
    }
    if (byteFallback && !byteIds.empty()) {
      for (char c : ch) {
        ids.push_back(byteIds[static_cast<uint8_t>(c)]);
        lengths.push_back(1);
      }
      lastUnk = false;
      continue;
    }
    if (!unk)
      continue; // Hugging Face drops what it cannot name
    if (fuseUnk && lastUnk) {
      lengths.back() += static_cast<uint32_t>(n);
      continue;
    }
    ids.push_back(*unk);
    lengths.push_back(static_cast<uint32_t>(n));
    lastUnk = true;
  }
}

void BPE::tokenize(std::string_view word, uint64_t wordHash,
                   std::vector<uint32_t> &out) const {
  if (word.empty())
    return;
  if (ignoreMerges)
    if (const uint32_t *id = tokenIds.find(word, wordHash)) {
      out.push_back(*id);
      return;
    }
  // Scratch space reused across words (one set per encoding thread).
  thread_local std::vector<uint32_t> ids, lengths, ranks;
  ids.clear();
  lengths.clear();
  symbolsOf(word, ids, lengths);
  size_t n = ids.size();
  if (n <= 1) {
    out.insert(out.end(), ids.begin(), ids.end());
    return;
  }
  if (n <= 48) {
    // Short words: scan for the lowest-ranked pair (leftmost on ties), which
    // is what the heap below finds, without its bookkeeping.
    ranks.resize(n - 1);
    for (size_t i = 0; i + 1 < n; ++i)
      ranks[i] = mergeRank(ids[i], ids[i + 1]);
    while (ids.size() > 1) {
      size_t best = 0;
      for (size_t i = 1; i < ranks.size(); ++i)
        if (ranks[i] < ranks[best])
          best = i;
      if (ranks[best] == kNoRank)
        break;
      ids[best] = mergeResults[ranks[best]];
      ids.erase(ids.begin() + best + 1);
      ranks.erase(ranks.begin() + best);
      if (best + 1 < ids.size())
        ranks[best] = mergeRank(ids[best], ids[best + 1]);
      if (best > 0)
        ranks[best - 1] = mergeRank(ids[best - 1], ids[best]);
    }
    out.insert(out.end(), ids.begin(), ids.end());
    return;
  }
  // A doubly linked list of symbols; merged-away symbols get length 0.
  std::vector<int32_t> prev(n), next(n);
  for (size_t i = 0; i < n; ++i) {
    prev[i] = static_cast<int32_t>(i) - 1;
    next[i] = i + 1 < n ? static_cast<int32_t>(i + 1) : -1;
  }
  struct Candidate {
    uint32_t rank, pos, result;
    bool operator>(const Candidate &o) const {
      return rank != o.rank ? rank > o.rank : pos > o.pos;
    }
  };
  std::priority_queue<Candidate, std::vector<Candidate>, std::greater<>> heap;
  auto consider = [&](int32_t left) {
    if (left < 0 || next[left] < 0)
      return;
    if (uint32_t rank = mergeRank(ids[left], ids[next[left]]); rank != kNoRank)
      heap.push({rank, static_cast<uint32_t>(left), mergeResults[rank]});
  };
  for (size_t i = 0; i + 1 < n; ++i)
    consider(static_cast<int32_t>(i));
  while (!heap.empty()) {
    Candidate top = heap.top();
    heap.pop();
    int32_t left = static_cast<int32_t>(top.pos);
    if (lengths[left] == 0 || next[left] < 0)
      continue;
    int32_t right = next[left];
    uint32_t rank = mergeRank(ids[left], ids[right]);
    if (rank == kNoRank || mergeResults[rank] != top.result)
      continue; // stale: a neighbour merged since
    ids[left] = top.result;
    lengths[left] += lengths[right];
    lengths[right] = 0;
    next[left] = next[right];
    if (next[right] >= 0)
      prev[next[right]] = left;
    consider(prev[left]);
    consider(left);
  }
  for (int32_t i = 0; i >= 0; i = next[i])
    out.push_back(ids[i]);
}
