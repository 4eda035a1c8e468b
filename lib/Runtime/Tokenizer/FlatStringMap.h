//===- FlatStringMap.h - maps keyed by byte strings, without nodes -*- C++ -*-//
//
// Open addressing over one array of slots, the keys' bytes in one arena. A
// lookup hashes the key once and touches one slot (most often) and the key's
// bytes; an insert allocates nothing but amortised arena growth. Encoding
// looks up every word of a corpus, in the word cache and (ignore_merges) in
// the vocabulary: node-based maps made those lookups its largest cost.
//
//===----------------------------------------------------------------------===//
#ifndef TGC_RUNTIME_TOKENIZER_FLATSTRINGMAP_H
#define TGC_RUNTIME_TOKENIZER_FLATSTRINGMAP_H

#include "LargePageAllocator.h"

#include "tgc/Runtime/Tokenizer.h"

#include <cstdint>
#include <cstring>
#include <string_view>
#include <utility>
#include <vector>

namespace tgc::rt::tok {

template <typename Value> class FlatStringMap {
public:
  static uint64_t hash(std::string_view key) { return hashBytes(key); }

  size_t size() const { return count; }
  /// Bytes of all keys held.
  size_t keyBytes() const { return arena.size(); }

  const Value *find(std::string_view key, uint64_t keyHash) const {
    if (slots.empty())
      return nullptr;
    uint32_t tag = tagOf(keyHash);
    for (size_t i = keyHash & mask;; i = (i + 1) & mask) {
      const Slot &slot = slots[i];
      if (slot.length == kEmpty)
        return nullptr;
      if (slot.tag == tag && slot.length == key.size() &&
          std::memcmp(arena.data() + slot.offset, key.data(), key.size()) == 0)
        return &slot.value;
    }
  }
  const Value *find(std::string_view key) const { return find(key, hash(key)); }

  /// Starts loading the slot where a lookup of `keyHash` begins.
  void prefetch(uint64_t keyHash) const {
    if (!slots.empty())
      __builtin_prefetch(&slots[keyHash & mask]);
  }

  /// Adds `key` unless it is there; returns its value and whether it was
  /// added (an existing value is kept).
  std::pair<Value *, bool> insert(std::string_view key, uint64_t keyHash,
                                  const Value &value) {
    if ((count + 1) * 2 > slots.size())
      grow();
    uint32_t tag = tagOf(keyHash);
    size_t i = keyHash & mask;
    for (;; i = (i + 1) & mask) {
      Slot &slot = slots[i];
      if (slot.length == kEmpty)
        break;
      if (slot.tag == tag && slot.length == key.size() &&
          std::memcmp(arena.data() + slot.offset, key.data(), key.size()) == 0)
        return {&slot.value, false};
    }
    Slot &slot = slots[i];
    slot.tag = tag;
    slot.length = static_cast<uint32_t>(key.size());
    slot.offset = static_cast<uint32_t>(arena.size());
    slot.value = value;
    arena.insert(arena.end(), key.begin(), key.end());
    ++count;
    return {&slot.value, true};
  }
  std::pair<Value *, bool> insert(std::string_view key, const Value &value) {
    return insert(key, hash(key), value);
  }

  /// Forgets every key; keeps the memory.
  void clear() {
    for (Slot &slot : slots)
      slot.length = kEmpty;
    arena.clear();
    count = 0;
  }

  /// Calls `visit(key, value)` for each entry, in no particular order.
  template <typename Visit> void forEach(Visit visit) const {
    for (const Slot &slot : slots)
      if (slot.length != kEmpty)
        visit(std::string_view(arena.data() + slot.offset, slot.length),
              slot.value);
  }

private:
  static constexpr uint32_t kEmpty = UINT32_MAX;
  struct Slot {
    uint32_t tag;    // the hash's high half: most mismatches stop here
    uint32_t length; // kEmpty for an empty slot
    uint32_t offset; // of the key's bytes in `arena`
    Value value;
  };
  static uint32_t tagOf(uint64_t keyHash) {
    return static_cast<uint32_t>(keyHash >> 32);
  }

  void grow() {
    Slots old = std::move(slots);
    slots.assign(old.empty() ? 64 : old.size() * 2, Slot{0, kEmpty, 0, {}});
    mask = slots.size() - 1;
    for (const Slot &slot : old) {
      if (slot.length == kEmpty)
        continue;
      uint64_t keyHash =
          hash(std::string_view(arena.data() + slot.offset, slot.length));
      size_t i = keyHash & mask;
      while (slots[i].length != kEmpty)
        i = (i + 1) & mask;
      slots[i] = slot;
    }
  }

  using Slots = std::vector<Slot, LargePageAllocator<Slot>>;
  Slots slots;
  size_t mask = 0, count = 0;
  std::vector<char, LargePageAllocator<char>> arena;
};

} // namespace tgc::rt::tok

#endif // TGC_RUNTIME_TOKENIZER_FLATSTRINGMAP_H
