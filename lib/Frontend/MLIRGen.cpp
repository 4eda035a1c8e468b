//===- MLIRGen.cpp - model configuration → tg forward graph -------------===//
//
// What every family shares: parameters and inputs as function
// arguments, the output (loss or logits), the generation program, and
// the entry points (tgc/Frontend/MLIRGen.h).
//
//===----------------------------------------------------------------------===//

#include "ForwardBuilder.h"

#include <cmath>
#include <numeric>

namespace tgc::frontend {

OwningOpRef<ModuleOp> ForwardBuilder::build() {
  module = ModuleOp::create(fileLoc);
  declareParams();
  if (config.family == ModelFamily::MLP) {
    argTypes.push_back(tensor({B(), config.layerSizes.front()}));
    argAttrs.push_back(b.getDictionaryAttr(b.getNamedAttr(
        TGDialect::kInputAttrName, b.getStringAttr("features"))));
    argTypes.push_back(RankedTensorType::get({B()}, idType));
    argAttrs.push_back(b.getDictionaryAttr(
        b.getNamedAttr(TGDialect::kInputAttrName, b.getStringAttr("labels"))));
  } else {
    declareInputs({"input_ids", "targets"}, {B(), S()});
  }

  b.setInsertionPointToEnd(module->getBody());
  auto lossType = RankedTensorType::get({}, floatType);
  auto func = func::FuncOp::create(b, fileLoc, kForwardFuncName,
                                   b.getFunctionType(argTypes, {lossType}));
  func.setAllArgAttrs(argAttrs);
  Block *entry = func.addEntryBlock();
  b.setInsertionPointToStart(entry);
  for (auto [name, index] : paramIndex)
    params[name] = entry->getArgument(index);
  size_t numParams = paramIndex.size();
  inputs.assign(entry->args_begin() + numParams, entry->args_end());

  SmallVector<Value> results{buildModel()};
  // The load-balancing loss is also reported on its own.
  if (auxLoss) {
    results.push_back(auxLoss);
    func.setFunctionType(
        b.getFunctionType(argTypes, ValueRange(results).getTypes()));
    func.setResultAttr(1, TGDialect::kOutputAttrName,
                       b.getStringAttr("aux_loss"));
  }
  func::ReturnOp::create(b, loc("loss"), results);
  return std::move(module);
}

OwningOpRef<ModuleOp>
ForwardBuilder::buildGeneration(int64_t cacheLength,
                                ArrayRef<GenerationStep> steps) {
  assert(config.family != ModelFamily::MLP &&
         "generation needs a language model");
  module = ModuleOp::create(fileLoc);
  declareParams();
  size_t numParams = argTypes.size();
  for (const GenerationStep &step : steps) {
    argTypes.resize(numParams);
    argAttrs.resize(numParams);
    generation = Generation{step.tokens, cacheLength, Value(), {}, {}};
    declareInputs({"input_ids", "positions"}, {B(), S()});
    auto cacheType =
        tensor({B(), cacheLength, config.numKVHeads, config.headDim});
    SmallVector<Type> resultTypes{
        RankedTensorType::get({B(), config.vocabSize}, floatType)};
    SmallVector<Attribute> resultAttrs{b.getDictionaryAttr(
        b.getNamedAttr(TGDialect::kOutputAttrName, b.getStringAttr("logits")))};
    for (int64_t i = 0; i < config.numLayers; ++i)
      for (const char *kind : {"key", "value"}) {
        auto name = b.getDictionaryAttr(
            b.getNamedAttr(TGDialect::kStateAttrName,
                           b.getStringAttr("past_key_values." +
                                           std::to_string(i) + "." + kind)));
        argTypes.push_back(cacheType);
        argAttrs.push_back(name);
        resultTypes.push_back(cacheType);
        resultAttrs.push_back(name);
      }
    b.setInsertionPointToEnd(module->getBody());
    auto func = func::FuncOp::create(b, fileLoc, step.name,
                                     b.getFunctionType(argTypes, resultTypes));
    func.setAllArgAttrs(argAttrs);
    // Generation reads the parameters and never writes them.
    for (size_t i = 0; i < numParams; ++i)
      func.setArgAttr(i, TGDialect::kFrozenAttrName, b.getUnitAttr());
    func.setAllResultAttrs(resultAttrs);
    Block *entry = func.addEntryBlock();
    b.setInsertionPointToStart(entry);
    params.clear();
    for (auto [name, index] : paramIndex)
      params[name] = entry->getArgument(index);
    inputs.assign(entry->args_begin() + numParams,
                  entry->args_begin() + numParams + 2);
    generation->positions = inputs[1];
    generation->caches.assign(entry->args_begin() + numParams + 2,
                              entry->args_end());
    generation->updated = generation->caches;
    SmallVector<Value> results{buildModel()};
    results.append(generation->updated.begin(), generation->updated.end());
    func::ReturnOp::create(b, loc("logits"), results);
  }
  generation.reset();
  return std::move(module);
}

void ForwardBuilder::declareParams() {
  switch (config.family) {
  case ModelFamily::Llama:
    return declareLlamaParams();
  case ModelFamily::GPT2:
    return declareGPT2Params();
  case ModelFamily::GPTNeoX:
    return declareGPTNeoXParams();
  case ModelFamily::MLP:
    return declareMLPParams();
  }
}

Value ForwardBuilder::buildModel() {
  switch (config.family) {
  case ModelFamily::Llama:
    return buildLlama();
  case ModelFamily::GPT2:
    return buildGPT2();
  case ModelFamily::GPTNeoX:
    return buildGPTNeoX();
  case ModelFamily::MLP:
    return buildMLP();
  }
  llvm_unreachable("unknown model family");
}

int64_t ForwardBuilder::S() const {
  return generation ? generation->tokens : config.seqLen();
}

RankedTensorType ForwardBuilder::tensor(ArrayRef<int64_t> shape) {
  return RankedTensorType::get(shape, floatType);
}

Location ForwardBuilder::loc(StringRef name) {
  return NameLoc::get(b.getStringAttr(name), fileLoc);
}

void ForwardBuilder::declareParam(const std::string &name,
                                  ArrayRef<int64_t> shape) {
  paramIndex.emplace_back(name, argTypes.size());
  argTypes.push_back(tensor(shape));
  argAttrs.push_back(b.getDictionaryAttr(
      b.getNamedAttr(TGDialect::kParamAttrName, b.getStringAttr(name))));
}

void ForwardBuilder::declareProjection(const std::string &prefix, int64_t out,
                                       int64_t in, bool bias) {
  declareParam(prefix + ".weight", {out, in});
  if (bias)
    declareParam(prefix + ".bias", {out});
}

void ForwardBuilder::declareInputs(ArrayRef<StringRef> names,
                                   ArrayRef<int64_t> shape) {
  for (StringRef name : names) {
    argTypes.push_back(RankedTensorType::get(shape, idType));
    argAttrs.push_back(b.getDictionaryAttr(
        b.getNamedAttr(TGDialect::kInputAttrName, b.getStringAttr(name))));
  }
}

Value ForwardBuilder::param(const std::string &name) {
  auto it = params.find(name);
  assert(it != params.end() && "parameter declared before use");
  return it->second;
}

Value ForwardBuilder::optionalParam(const std::string &name) {
  auto it = params.find(name);
  return it == params.end() ? Value() : it->second;
}

Value ForwardBuilder::activation(Value x, Location l) {
  switch (config.activation) {
  case Activation::ReLU:
    return ReluOp::create(b, l, x);
  case Activation::GeluErf:
    return GeluOp::create(b, l, x, b.getStringAttr("none"));
  case Activation::GeluTanh:
    return GeluOp::create(b, l, x, b.getStringAttr("tanh"));
  case Activation::SiLU:
    return SiluOp::create(b, l, x);
  }
  llvm_unreachable("unknown activation");
}

Value ForwardBuilder::reshape(Value x, ArrayRef<int64_t> shape, Location l) {
  auto type = llvm::cast<RankedTensorType>(x.getType());
  return ReshapeOp::create(b, l, type.clone(shape), x);
}

void ForwardBuilder::inLayer(int64_t index, llvm::function_ref<void()> build) {
  currentLayer = index;
  Block *block = b.getInsertionBlock();
  Operation *last = block->empty() ? nullptr : &block->back();
  build();
  auto first = last ? std::next(last->getIterator()) : block->begin();
  for (Operation &op : llvm::make_range(first, block->end()))
    op.setAttr(TGDialect::kLayerAttrName, b.getI64IntegerAttr(index));
}

Value ForwardBuilder::linear(Value x, const std::string &prefix, bool bias) {
  return LinearOp::create(b, loc(prefix), x, param(prefix + ".weight"),
                          bias ? param(prefix + ".bias") : Value());
}

Value ForwardBuilder::outputOf(Value h, function_ref<Value(Value)> finalNorm,
                               Value head, StringRef headName, Value targets) {
  if (!generation) {
    Value logits =
        LinearOp::create(b, loc(headName), finalNorm(h), head, Value());
    return crossEntropy(logits, targets, /*ignore=*/-100);
  }
  Value last = SliceOp::create(b, loc(headName), h, /*axis=*/1, S() - 1, 1);
  Value logits =
      LinearOp::create(b, loc(headName), finalNorm(last), head, Value());
  return reshape(logits, {B(), config.vocabSize}, loc(headName));
}

Value ForwardBuilder::crossEntropy(Value logits, Value targets,
                                   std::optional<int64_t> ignore) {
  return CrossEntropyOp::create(
      b, loc("loss"), logits, targets,
      ignore ? b.getI64IntegerAttr(*ignore) : IntegerAttr(),
      config.logitSoftcap ? b.getF64FloatAttr(*config.logitSoftcap)
                          : FloatAttr());
}

} // namespace tgc::frontend

using namespace mlir;
using namespace mlir::tg;
using namespace tgc;

OwningOpRef<ModuleOp> tgc::buildForwardModule(MLIRContext &context,
                                              const ModelConfig &config) {
  context.loadDialect<TGDialect, func::FuncDialect>();
  return frontend::ForwardBuilder(context, config).build();
}

OwningOpRef<ModuleOp>
tgc::buildGenerationModule(MLIRContext &context, const ModelConfig &config,
                           int64_t cacheLength,
                           ArrayRef<GenerationStep> steps) {
  context.loadDialect<TGDialect, func::FuncDialect>();
  return frontend::ForwardBuilder(context, config)
      .buildGeneration(cacheLength, steps);
}
