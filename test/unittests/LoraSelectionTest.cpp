//===- LoraSelectionTest.cpp - PEFT's choice of LoRA modules and ranks ----===//

#include "tgc/Dialect/TG/Transforms/Lora.h"

#include <gtest/gtest.h>

using namespace mlir::tg;

namespace {

LoraSelection compiled(const LoraSettings &settings) {
  llvm::Expected<LoraSelection> s = LoraSelection::compile(settings);
  EXPECT_TRUE(static_cast<bool>(s)) << llvm::toString(s.takeError());
  return std::move(*s);
}

std::string errorOf(const LoraSettings &settings) {
  llvm::Expected<LoraSelection> s = LoraSelection::compile(settings);
  if (s)
    return "";
  return llvm::toString(s.takeError());
}

TEST(LoraLayerIndex, AsPeftReadsIt) {
  // The first numeric component with two before it and one after.
  EXPECT_EQ(loraLayerIndex("model.layers.3.mlp.up_proj", {}), 3);
  EXPECT_EQ(loraLayerIndex("transformer.h.11.attn.c_attn", {}), 11);
  // PEFT >= 0.20's lazy match: the layer, not the expert.
  EXPECT_EQ(loraLayerIndex("model.layers.2.mlp.experts.7.w1", {}), 2);
  EXPECT_EQ(loraLayerIndex("model.layers.2.mlp.experts.7.w1", {"experts"}), 7);
  EXPECT_EQ(loraLayerIndex("model.layers.2.mlp.up_proj", {"h"}), std::nullopt);
  EXPECT_EQ(loraLayerIndex("transformer.h.0.mlp.c_fc", {"layers", "h"}), 0);
  // Nothing to read: no number, a number too early or last.
  EXPECT_EQ(loraLayerIndex("lm_head", {}), std::nullopt);
  EXPECT_EQ(loraLayerIndex("h.0.attn", {}), std::nullopt);
  EXPECT_EQ(loraLayerIndex("model.layers.4", {}), std::nullopt);
  EXPECT_EQ(loraLayerIndex("model.layers.4x.mlp", {}), std::nullopt);
}

TEST(LoraSelection, ListTargetsAndLayers) {
  LoraSettings s;
  s.rank = 4;
  s.targets = {"q_proj", "model.layers.0.mlp.up_proj"};
  s.layers = {1};
  LoraSelection sel = compiled(s);
  EXPECT_TRUE(sel.names("model.layers.1.self_attn.q_proj"));
  EXPECT_FALSE(sel.names("model.layers.0.self_attn.q_proj"));
  // An exact name is taken whatever its layer.
  EXPECT_TRUE(sel.names("model.layers.0.mlp.up_proj"));
  EXPECT_FALSE(sel.names("model.layers.1.mlp.up_proj"));
  // A suffix is a whole component: "kq_proj" does not end with ".q_proj".
  EXPECT_FALSE(sel.names("model.layers.1.self_attn.kq_proj"));
}

TEST(LoraSelection, PatternsAndExclusions) {
  LoraSettings s;
  s.rank = 4;
  s.targetPattern = R"(model\.layers\.\d+\.self_attn\.(q|v)_proj)";
  s.excludePattern = R"(.*\.1\..*)";
  LoraSelection sel = compiled(s);
  EXPECT_TRUE(sel.names("model.layers.10.self_attn.v_proj"));
  EXPECT_FALSE(sel.names("model.layers.10.self_attn.k_proj"));
  // A full match: a prefix of the name is not enough.
  EXPECT_FALSE(sel.names("xmodel.layers.1.self_attn.q_proj"));
  EXPECT_TRUE(sel.excludes("model.layers.1.self_attn.q_proj"));
  EXPECT_FALSE(sel.excludes("model.layers.10.self_attn.q_proj"));

  LoraSettings listed;
  listed.rank = 4;
  listed.targets = {"all-linear"};
  listed.exclude = {"down_proj"};
  LoraSelection byList = compiled(listed);
  EXPECT_TRUE(byList.excludes("model.layers.0.mlp.down_proj"));
  EXPECT_FALSE(byList.excludes("model.layers.0.mlp.up_proj"));
  // all-linear names nothing by itself: it selects by what a module is.
  EXPECT_FALSE(byList.names("model.layers.0.mlp.up_proj"));
}

TEST(LoraSelection, RanksAndAlphasPerModule) {
  LoraSettings s;
  s.rank = 8;
  s.alpha = 16;
  s.targets = {"q_proj", "v_proj"};
  s.rankPattern = {{"v_proj", 4}, {"layers.1.self_attn.q_proj", 2}};
  s.alphaPattern = {{R"(layers\.[01]\.self_attn\.v_proj)", 32}};
  LoraSelection sel = compiled(s);
  EXPECT_EQ(*sel.rank("model.layers.0.self_attn.q_proj"), 8);
  EXPECT_EQ(*sel.rank("model.layers.1.self_attn.q_proj"), 2);
  EXPECT_EQ(*sel.rank("model.layers.5.self_attn.v_proj"), 4);
  // Keys match at a component boundary: (.*\.)?(KEY) over the whole name.
  EXPECT_EQ(*sel.rank("model.layers.11.self_attn.q_proj"), 8);
  EXPECT_EQ(*sel.alpha("model.layers.0.self_attn.v_proj"), 32);
  EXPECT_EQ(*sel.alpha("model.layers.2.self_attn.v_proj"), 16);
  EXPECT_DOUBLE_EQ(s.scale(4, 32), 8.0);
  s.rslora = true;
  EXPECT_DOUBLE_EQ(s.scale(4, 32), 16.0);

  // Two keys that match one module with different ranks are refused.
  s.rankPattern.push_back({"self_attn.v_proj", 6});
  LoraSelection conflicting = compiled(s);
  llvm::Expected<int64_t> r =
      conflicting.rank("model.layers.0.self_attn.v_proj");
  ASSERT_FALSE(static_cast<bool>(r));
  EXPECT_NE(llvm::toString(r.takeError()).find("both match module"),
            std::string::npos);
  // ... but agreeing keys are not.
  s.rankPattern.back().second = 4;
  EXPECT_EQ(*compiled(s).rank("model.layers.0.self_attn.v_proj"), 4);
}

TEST(LoraSelection, RefusesWhatPeftRefuses) {
  LoraSettings s;
  s.rank = 4;
  s.targetPattern = ".*q_proj";
  s.layers = {0};
  EXPECT_NE(errorOf(s).find("layers_to_transform cannot be used"),
            std::string::npos);
  s.targetPattern.clear();
  s.targets = {"all-linear"};
  EXPECT_NE(errorOf(s).find("layers_to_transform cannot be used"),
            std::string::npos);
  s.targets = {"q_proj"};
  s.layers.clear();
  s.layersPattern = {"layers"};
  EXPECT_NE(errorOf(s).find("layers_pattern needs layers_to_transform"),
            std::string::npos);
  s.layers = {0};
  s.layersPattern = {"model.layers"};
  EXPECT_NE(errorOf(s).find("expected the name of a module list"),
            std::string::npos);
  s.layersPattern.clear();
  s.targetPattern = "(q_proj";
  EXPECT_NE(errorOf(s).find("is not a regular expression"), std::string::npos);
  s.targetPattern.clear();
  s.rankPattern = {{"q_proj", 0}};
  EXPECT_NE(errorOf(s).find("expected a positive rank"), std::string::npos);
  s.rankPattern = {{"q_proj[", 2}};
  EXPECT_NE(errorOf(s).find("is not a regular expression"), std::string::npos);
}

} // namespace
