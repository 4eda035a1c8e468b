//===- FlatStringMapTest.cpp - the tokenizer's flat string maps -----------===//

#include "Tokenizer/FlatStringMap.h"

#include <gtest/gtest.h>

#include <map>
#include <random>
#include <string>

using tgc::rt::tok::FlatStringMap;

namespace {

TEST(FlatStringMap, EmptyFindsNothing) {
  FlatStringMap<uint32_t> map;
  EXPECT_EQ(map.find("a"), nullptr);
  EXPECT_EQ(map.find(""), nullptr);
  EXPECT_EQ(map.size(), 0u);
}

TEST(FlatStringMap, FirstValueOfAKeyIsKept) {
  FlatStringMap<uint32_t> map;
  auto [first, added] = map.insert("tok", 7);
  EXPECT_TRUE(added);
  EXPECT_EQ(*first, 7u);
  auto [again, addedAgain] = map.insert("tok", 9);
  EXPECT_FALSE(addedAgain);
  EXPECT_EQ(*again, 7u);
  EXPECT_EQ(map.size(), 1u);
  // Keys differing only in length or in a byte past a shared prefix.
  map.insert("", 1);
  map.insert("to", 2);
  map.insert(std::string("to\0k", 4), 3);
  EXPECT_EQ(*map.find(""), 1u);
  EXPECT_EQ(*map.find("to"), 2u);
  EXPECT_EQ(*map.find(std::string("to\0k", 4)), 3u);
  EXPECT_EQ(*map.find("tok"), 7u);
  EXPECT_EQ(map.find("toke"), nullptr);
}

// Through many growths, against std::map: every key found with its value,
// absent keys not found, forEach visiting each entry once.
TEST(FlatStringMap, AgreesWithStdMapThroughGrowth) {
  std::mt19937 rng(5);
  FlatStringMap<uint32_t> map;
  std::map<std::string, uint32_t> reference;
  for (uint32_t i = 0; i < 20000; ++i) {
    std::string key(rng() % 12, 'x');
    for (char &c : key)
      c = static_cast<char>(rng() % 4); // short keys over 4 bytes: collisions
    bool added = map.insert(key, i).second;
    EXPECT_EQ(added, reference.emplace(key, i).second) << i;
  }
  EXPECT_EQ(map.size(), reference.size());
  for (const auto &[key, value] : reference) {
    const uint32_t *found = map.find(key);
    ASSERT_NE(found, nullptr);
    EXPECT_EQ(*found, value);
  }
  EXPECT_EQ(map.find(std::string(12, '\5')), nullptr);
  size_t visited = 0;
  map.forEach([&](std::string_view key, uint32_t value) {
    ++visited;
    EXPECT_EQ(reference.at(std::string(key)), value);
  });
  EXPECT_EQ(visited, reference.size());
}

TEST(FlatStringMap, ClearForgetsKeys) {
  FlatStringMap<uint32_t> map;
  for (uint32_t i = 0; i < 100; ++i)
    map.insert(std::to_string(i), i);
  map.clear();
  EXPECT_EQ(map.size(), 0u);
  EXPECT_EQ(map.keyBytes(), 0u);
  EXPECT_EQ(map.find("42"), nullptr);
  map.insert("42", 1);
  EXPECT_EQ(*map.find("42"), 1u);
}

} // namespace
