//===- BPE.h - the BPE model of a tokenizer.json ----------------*- C++ -*-===//
//
// Byte-pair encoding as Hugging Face's `tokenizers` runs it: a word starts
// as its characters (or their <0xNN> bytes under byte_fallback, or unk), and
// the adjacent pair with the lowest merge rank merges first, leftmost on
// ties, until no pair in the merge table remains.
//
//===----------------------------------------------------------------------===//
#ifndef TGC_RUNTIME_TOKENIZER_BPE_H
#define TGC_RUNTIME_TOKENIZER_BPE_H

#include "FlatStringMap.h"

#include "tgc/Runtime/Json.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tgc::rt::tok {

class BPE {
public:
  /// Reads the "model" object; null + `error` (prefixed by `where`) when it
  /// is malformed or uses a feature not built.
  static std::unique_ptr<BPE> parse(const json::Value &model,
                                    const std::string &where,
                                    std::string &error);

  /// Appends the ids of `word` to `out`. `wordHash` is
  /// FlatStringMap::hash(word), when the caller has it.
  void tokenize(std::string_view word, std::vector<uint32_t> &out) const {
    tokenize(word, ignoreMerges ? FlatStringMap<uint32_t>::hash(word) : 0, out);
  }
  void tokenize(std::string_view word, uint64_t wordHash,
                std::vector<uint32_t> &out) const;
  /// Starts loading what tokenize(word, wordHash, ...) reads first.
  void prefetch(uint64_t wordHash) const {
    if (ignoreMerges)
      tokenIds.prefetch(wordHash);
  }

  /// Where `word` may be cut into parts that encode independently: before
  /// each U+2581 (SentencePiece's space) that follows another character,
  /// when no token holds U+2581 after another character (then no merge
  /// crosses such a cut). Empty when the vocabulary does not allow it.
  std::vector<size_t> independentCuts(std::string_view word) const;

  std::optional<uint32_t> find(std::string_view token) const;
  const FlatStringMap<uint32_t> &vocab() const { return tokenIds; }

private:
  static constexpr uint32_t kNoRank = UINT32_MAX;
  /// Token ids and merge ranks are packed in 21 bits each.
  static constexpr unsigned kIdBits = 21;
  static constexpr uint64_t kIdMask = (uint64_t(1) << kIdBits) - 1;
  static uint64_t pairKey(uint32_t left, uint32_t right) {
    return (uint64_t(left) << kIdBits) | right;
  }
  /// The initial symbols of `word`.
  void symbolsOf(std::string_view word, std::vector<uint32_t> &ids,
                 std::vector<uint32_t> &lengths) const;

  /// The rank of the pair's merge, kNoRank if none. This lookup is the inner
  /// loop of encoding: pairs of ids below kDenseIds (byte-level BPE's 256
  /// bytes, which every word starts from) are read from a table small enough
  /// to stay in cache, the others from an open-addressing table.
  uint32_t mergeRank(uint32_t left, uint32_t right) const {
    if ((left | right) < kDenseIds)
      return denseRanks[left * kDenseIds + right];
    return sparseMergeRank(left, right);
  }
  uint32_t sparseMergeRank(uint32_t left, uint32_t right) const;
  /// `pairs[rank]` is the pairKey of the merge of that rank.
  void buildMergeTable(const std::vector<uint64_t> &pairs);

  static constexpr uint32_t kDenseIds = 256;

  FlatStringMap<uint32_t> tokenIds;
  /// What the merge of each rank makes.
  std::vector<uint32_t> mergeResults;
  /// Open addressing over (pairKey << kIdBits | rank), ~0 where empty: a
  /// probe reads 8 bytes, and the table is a quarter of the key-and-merge
  /// slots it replaces.
  std::vector<uint64_t, LargePageAllocator<uint64_t>> mergeSlots;
  uint64_t mergeMask = 0;
  std::vector<uint32_t> denseRanks; // kDenseIds x kDenseIds
  /// Ids of the single-character tokens, by code point (-1: none).
  std::vector<int32_t> charIds;
  std::optional<uint32_t> unk;
  /// <0xNN> ids when byte_fallback is on and all 256 exist.
  std::vector<uint32_t> byteIds;
  bool byteFallback = false, fuseUnk = false, ignoreMerges = false;
  bool cutsAtMetaspace = false;
};

} // namespace tgc::rt::tok

#endif // TGC_RUNTIME_TOKENIZER_BPE_H
