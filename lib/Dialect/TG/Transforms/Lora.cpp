//===- Lora.cpp - tg-lora: low-rank adapters beside linear layers ---------===//
//
// Rewrites y = x·W of every targeted module into
// y = x·W + ((x·Aᵀ)·s)·Bᵀ with new parameters A [r, in] and B [out, r], and
// freezes everything else. See Passes.td.
//
//===----------------------------------------------------------------------===//

#include "tgc/Dialect/TG/Transforms/Lora.h"
#include "tgc/Dialect/TG/IR/TGOps.h"
#include "tgc/Dialect/TG/Transforms/Passes.h"

#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"

#include <cmath>
#include <tuple>

namespace mlir::tg {
#define GEN_PASS_DEF_TGLORAPASS
#include "tgc/Dialect/TG/Transforms/Passes.h.inc"
} // namespace mlir::tg

using namespace mlir;
using namespace mlir::tg;

StringRef mlir::tg::moduleOfWeight(StringRef param) {
  return param.consume_back(".weight") ? param : StringRef();
}

StringRef mlir::tg::moduleKind(StringRef module) {
  return module.substr(module.rfind('.') + 1);
}

bool mlir::tg::isNamedModule(StringRef module, ArrayRef<std::string> names) {
  return llvm::any_of(names, [&](const std::string &t) {
    return module == t ||
           (module.ends_with(t) && module.size() > t.size() &&
            module[module.size() - t.size() - 1] == '.');
  });
}

std::optional<int64_t>
mlir::tg::loraLayerIndex(StringRef module,
                         ArrayRef<std::string> layersPattern) {
  // PEFT: re.match(r".*?\.[^.]*\.(\d+)\.", name), or with a pattern P
  // r".*?\.P\.(\d+)\.": a whole numeric component with two components
  // (or P) before it and one after.
  SmallVector<StringRef> parts;
  module.split(parts, '.');
  for (size_t i = 2; i + 1 < parts.size(); ++i) {
    if (parts[i].empty() ||
        !llvm::all_of(parts[i], [](char c) { return llvm::isDigit(c); }))
      continue;
    if (!layersPattern.empty() &&
        !llvm::is_contained(layersPattern, parts[i - 1].str()))
      continue;
    int64_t index;
    if (!parts[i].getAsInteger(10, index))
      return index;
  }
  return std::nullopt;
}

llvm::Expected<LoraSelection>
LoraSelection::compile(const LoraSettings &settings) {
  LoraSelection s;
  s.lora = settings;
  auto fail = [](const Twine &message) -> llvm::Error {
    return llvm::createStringError(message.str());
  };
  // target_modules and exclude_modules written as regular expressions.
  for (auto [key, text, into] :
       {std::tuple(StringRef("target_modules"), &settings.targetPattern,
                   &s.target),
        std::tuple(StringRef("exclude_modules"), &settings.excludePattern,
                   &s.exclude)}) {
    if (text->empty())
      continue;
    llvm::Expected<tgc::NamePattern> re = tgc::NamePattern::compile(*text);
    if (!re)
      return fail("LoRA " + key + ": " + llvm::toString(re.takeError()));
    *into = *re;
  }
  bool stringTarget =
      s.target || llvm::is_contained(settings.targets, StringRef("all-linear"));
  if (!settings.layers.empty() && stringTarget)
    return fail(
        "LoRA layers_to_transform cannot be used with target_modules "
        "\"" +
        (s.target ? settings.targetPattern : std::string("all-linear")) +
        "\" (as in PEFT): list the target modules instead");
  if (!settings.layersPattern.empty() && settings.layers.empty())
    return fail("LoRA layers_pattern needs layers_to_transform (as in PEFT)");
  for (const std::string &p : settings.layersPattern)
    if (p.empty() ||
        !llvm::all_of(p, [](char c) { return llvm::isAlnum(c) || c == '_'; }))
      return fail("LoRA layers_pattern '" + p +
                  "': expected the name of a module list, such as \"layers\" "
                  "or \"h\"");
  for (int64_t layer : settings.layers)
    if (layer < 0)
      return fail(llvm::formatv("LoRA layers_to_transform: layer {0} is "
                                "negative",
                                layer));
  auto keyed = [&](StringRef what, StringRef key, double value,
                   std::vector<Keyed> &into) -> llvm::Error {
    // PEFT: re.match(rf"(.*\.)?({key})$", name).
    llvm::Expected<tgc::NamePattern> re =
        tgc::NamePattern::compile("(.*\\.)?(" + key.str() + ")");
    if (!re)
      return fail("LoRA " + what + " key '" + key +
                  "' is not a regular expression");
    into.push_back({key.str(), *re, value});
    return llvm::Error::success();
  };
  for (auto &[key, r] : settings.rankPattern) {
    if (r < 1)
      return fail(llvm::formatv("LoRA rank_pattern '{0}': rank {1}: expected "
                                "a positive rank",
                                key, r));
    if (llvm::Error err = keyed("rank_pattern", key, r, s.ranks))
      return std::move(err);
  }
  for (auto &[key, a] : settings.alphaPattern) {
    if (!(a > 0) || !std::isfinite(a))
      return fail(llvm::formatv("LoRA alpha_pattern '{0}': {1}: expected a "
                                "positive number",
                                key, llvm::format("%g", a)));
    if (llvm::Error err = keyed("alpha_pattern", key, a, s.alphas))
      return std::move(err);
  }
  return s;
}

bool LoraSelection::excludes(StringRef module) const {
  if (exclude)
    return exclude->matches(module);
  return isNamedModule(module, lora.exclude);
}

bool LoraSelection::names(StringRef module) const {
  if (target)
    return target->matches(module);
  // An exact name is taken whatever its layer; a suffix match only in the
  // layers of layers_to_transform.
  if (llvm::is_contained(lora.targets, module.str()))
    return true;
  if (!isNamedModule(module, lora.targets))
    return false;
  if (lora.layers.empty())
    return true;
  std::optional<int64_t> layer = loraLayerIndex(module, lora.layersPattern);
  return layer && llvm::is_contained(lora.layers, *layer);
}

SmallVector<StringRef> LoraSelection::matching(ArrayRef<Keyed> keyed,
                                               StringRef module) {
  SmallVector<StringRef> keys;
  for (const Keyed &k : keyed)
    if (k.pattern.matches(module))
      keys.push_back(k.key);
  return keys;
}

llvm::Expected<double> LoraSelection::valueOf(ArrayRef<Keyed> keyed,
                                              StringRef what, StringRef module,
                                              double fallback) {
  const Keyed *first = nullptr;
  for (const Keyed &k : keyed) {
    if (!k.pattern.matches(module))
      continue;
    if (!first) {
      first = &k;
    } else if (k.value != first->value) {
      return llvm::createStringError(
          llvm::formatv("LoRA {0} keys '{1}' and '{2}' both match module "
                        "'{3}' with different values (PEFT would take the "
                        "first in its dictionary order): make them disjoint",
                        what, first->key, k.key, module)
              .str());
    }
  }
  return first ? first->value : fallback;
}

SmallVector<StringRef> LoraSelection::rankKeysOf(StringRef module) const {
  return matching(ranks, module);
}

SmallVector<StringRef> LoraSelection::alphaKeysOf(StringRef module) const {
  return matching(alphas, module);
}

llvm::Expected<int64_t> LoraSelection::rank(StringRef module) const {
  llvm::Expected<double> r = valueOf(ranks, "rank_pattern", module,
                                     static_cast<double>(lora.rank));
  if (!r)
    return r.takeError();
  return static_cast<int64_t>(*r);
}

llvm::Expected<double> LoraSelection::alpha(StringRef module) const {
  return valueOf(alphas, "alpha_pattern", module, lora.alpha);
}

namespace {

constexpr StringLiteral kAllLinear = "all-linear";

/// One product whose weight is a parameter: `x·Wᵀ` (tg.linear, W [out, in])
/// or, for GPT-2's Conv1D, `x·W` (tg.matmul, W [in, out]).
struct Product {
  Operation *op;
  Value input;
  /// An expert's product: the index of its weight among the
  /// tg.grouped_matmul's weights; -1 otherwise.
  int expert = -1;
};

/// A parameter that products read (a linear layer) or lookups read (an
/// embedding table), with those readers.
struct Module {
  unsigned argIndex;
  std::string name;
  int64_t in = 0, out = 0;
  bool fanInFanOut = false;
  bool onlyProducts = true;
  bool feedsLoss = false;
  SmallVector<Product> products;
  /// Lookups of the weight as an embedding table [V, D] (PEFT's
  /// lora.Embedding adapts these, not a tied head's product).
  SmallVector<EmbeddingOp> lookups;
  /// Uses that are neither products nor lookups.
  bool otherUses = false;
  /// When targeted: the adapters' rank and the low-rank path's scale.
  int64_t rank = 0;
  double scale = 0;

  bool isEmbedding() const { return !lookups.empty(); }
  /// The sizes the adapters' rank must not exceed.
  int64_t width() const { return std::min(in, out); }
};

/// Whether `op` reads `weight` as the weight of a product, and its input.
std::optional<Product> asProduct(Operation *op, Value weight, bool &fanInFanOut) {
  if (auto linear = dyn_cast<LinearOp>(op);
      linear && linear.getWeight() == weight && linear.getInput() != weight) {
    fanInFanOut = false;
    return Product{op, linear.getInput()};
  }
  if (auto matmul = dyn_cast<MatmulOp>(op);
      matmul && matmul.getRhs() == weight && matmul.getLhs() != weight &&
      !matmul.getTransposeLhs() && !matmul.getTransposeRhs()) {
    fanInFanOut = true;
    return Product{op, matmul.getLhs()};
  }
  // An expert's nn.Linear: its weight [out, in] among the grouped
  // product's, applied to the rows routed to it.
  if (auto grouped = dyn_cast<GroupedMatmulOp>(op);
      grouped && grouped.getTransposeWeights() &&
      grouped.getInput() != weight) {
    for (auto [j, w] : llvm::enumerate(grouped.getWeights()))
      if (w == weight) {
        fanInFanOut = false;
        return Product{op, grouped.getInput(), static_cast<int>(j)};
      }
  }
  return std::nullopt;
}

bool feedsLoss(Operation *product) {
  return llvm::any_of(product->getUsers(), [](Operation *user) {
    return isa<CrossEntropyOp, LinearCrossEntropyOp>(user);
  });
}

/// The parameters of `forward` that products read, by argument index.
llvm::MapVector<unsigned, Module> findModules(func::FuncOp forward) {
  llvm::MapVector<unsigned, Module> modules;
  for (BlockArgument arg : forward.getArguments()) {
    auto name = forward.getArgAttrOfType<StringAttr>(arg.getArgNumber(),
                                                     TGDialect::kParamAttrName);
    auto type = dyn_cast<RankedTensorType>(arg.getType());
    if (!name || !type || type.getRank() != 2 ||
        moduleOfWeight(name.getValue()).empty())
      continue;
    Module m;
    m.argIndex = arg.getArgNumber();
    m.name = moduleOfWeight(name.getValue()).str();
    for (Operation *user : arg.getUsers()) {
      bool fanInFanOut = false;
      std::optional<Product> product = asProduct(user, arg, fanInFanOut);
      if (!product) {
        m.onlyProducts = false;
        auto lookup = dyn_cast<EmbeddingOp>(user);
        if (lookup && lookup.getTable() == arg)
          m.lookups.push_back(lookup);
        else
          m.otherUses = true;
        continue;
      }
      m.fanInFanOut = fanInFanOut;
      m.feedsLoss |= feedsLoss(user);
      m.products.push_back(*product);
    }
    if (m.products.empty() && m.lookups.empty())
      continue;
    // An embedding's adapters: A [r, V] (its "in" the vocabulary), B [D, r].
    bool transposed = m.fanInFanOut || m.isEmbedding();
    m.in = type.getDimSize(transposed ? 0 : 1);
    m.out = type.getDimSize(transposed ? 1 : 0);
    modules.insert({m.argIndex, std::move(m)});
  }
  return modules;
}

llvm::Error error(const Twine &message) {
  return llvm::createStringError(message.str());
}

/// The last component of each module name, once, for messages.
std::string moduleKinds(const llvm::MapVector<unsigned, Module> &modules) {
  llvm::SetVector<StringRef> kinds;
  for (auto &[index, m] : modules)
    kinds.insert(moduleKind(m.name));
  return llvm::join(kinds, ", ");
}

/// y + ((x·Aᵀ)·s)·Bᵀ after the product `p`, replacing y's other uses.
void addLowRankPath(OpBuilder &b, const Product &p, Value a, Value bMatrix,
                    double scale) {
  Operation *op = p.op;
  b.setInsertionPointAfter(op);
  Location loc = op->getLoc();
  Value y = op->getResult(0);
  Value down = LinearOp::create(b, loc, p.input, a, Value());
  Value scaled = ScaleOp::create(b, loc, down, b.getF64FloatAttr(scale));
  Value up = LinearOp::create(b, loc, scaled, bMatrix, Value());
  auto sum = AddOp::create(b, loc, y, up);
  if (auto layer = op->getAttr(TGDialect::kLayerAttrName))
    for (Operation *created : {down.getDefiningOp(), scaled.getDefiningOp(),
                               up.getDefiningOp(), sum.getOperation()})
      created->setAttr(TGDialect::kLayerAttrName, layer);
  y.replaceAllUsesExcept(sum, sum);
}

/// y + ((embed(Aᵀ, ids))·s)·Bᵀ after the lookup y = embed(W, ids), as
/// PEFT's lora.Embedding: A [r, V], B [D, r].
void addEmbeddingPath(OpBuilder &b, EmbeddingOp lookup, Value a, Value bMatrix,
                      double scale) {
  b.setInsertionPointAfter(lookup);
  Location loc = lookup.getLoc();
  auto aType = cast<RankedTensorType>(a.getType());
  Value columns = TransposeOp::create(
      b, loc,
      RankedTensorType::get({aType.getDimSize(1), aType.getDimSize(0)},
                            aType.getElementType()),
      a, b.getDenseI64ArrayAttr({1, 0}));
  Value down = EmbeddingOp::create(b, loc, columns, lookup.getIndices());
  Value scaled = ScaleOp::create(b, loc, down, b.getF64FloatAttr(scale));
  Value up = LinearOp::create(b, loc, scaled, bMatrix, Value());
  auto sum = AddOp::create(b, loc, lookup.getResult(), up);
  lookup.getResult().replaceAllUsesExcept(sum, sum);
}

/// One expert's adapters, for the low-rank path of its grouped product.
struct ExpertAdapters {
  int expert;
  Value a, b;
};

/// y + grouped((grouped(x, A_e)·s), B_e) after the grouped product `op`:
/// each expert's rows through its own adapters, zero ones for the experts
/// the targets leave out (they add nothing and train nothing).
void addGroupedLowRankPath(OpBuilder &b, GroupedMatmulOp op,
                           ArrayRef<ExpertAdapters> adapters, int64_t rank,
                           double scale) {
  b.setInsertionPointAfter(op);
  Location loc = op.getLoc();
  auto weightType = cast<RankedTensorType>(op.getWeights().front().getType());
  Type element = weightType.getElementType();
  int64_t out = weightType.getDimSize(0), in = weightType.getDimSize(1);
  SmallVector<Value> as, bs;
  Value zeroA, zeroB;
  for (unsigned e = 0, n = op.getWeights().size(); e < n; ++e) {
    const ExpertAdapters *own = llvm::find_if(
        adapters, [&](const ExpertAdapters &x) { return x.expert == int(e); });
    if (own != adapters.end()) {
      as.push_back(own->a);
      bs.push_back(own->b);
      continue;
    }
    if (!zeroA) {
      auto aType = RankedTensorType::get({rank, in}, element);
      auto bType = RankedTensorType::get({out, rank}, element);
      zeroA =
          ConstantOp::create(b, loc, cast<ElementsAttr>(b.getZeroAttr(aType)));
      zeroB =
          ConstantOp::create(b, loc, cast<ElementsAttr>(b.getZeroAttr(bType)));
    }
    as.push_back(zeroA);
    bs.push_back(zeroB);
  }
  RankedTensorType result = op.getType();
  auto rows = result.clone({result.getDimSize(0), rank});
  Value down = GroupedMatmulOp::create(b, loc, rows, op.getInput(),
                                       op.getOffsets(), as, true);
  Value scaled = ScaleOp::create(b, loc, down, b.getF64FloatAttr(scale));
  Value up = GroupedMatmulOp::create(b, loc, result, scaled, op.getOffsets(),
                                     bs, true);
  auto sum = AddOp::create(b, loc, op.getResult(), up);
  if (auto layer = op->getAttr(TGDialect::kLayerAttrName))
    for (Operation *created : {down.getDefiningOp(), scaled.getDefiningOp(),
                               up.getDefiningOp(), sum.getOperation()})
      created->setAttr(TGDialect::kLayerAttrName, layer);
  op.getResult().replaceAllUsesExcept(sum, sum);
}

} // namespace

/// The names of every module of `forward`'s parameters: each parameter's
/// name without its last component, and the containers above it
/// ("model.layers.0.self_attn" above "model.layers.0.self_attn.q_proj").
static llvm::SetVector<StringRef> allModules(func::FuncOp forward) {
  llvm::SetVector<StringRef> names;
  for (unsigned i = 0, e = forward.getNumArguments(); i < e; ++i) {
    auto name =
        forward.getArgAttrOfType<StringAttr>(i, TGDialect::kParamAttrName);
    if (!name)
      continue;
    StringRef module = name.getValue();
    for (size_t dot = module.rfind('.'); dot != StringRef::npos;
         dot = module.rfind('.')) {
      module = module.take_front(dot);
      names.insert(module);
    }
  }
  return names;
}

llvm::Error mlir::tg::addLoraAdapters(func::FuncOp forward,
                                      const LoraSettings &settings) {
  if (settings.rank < 1)
    return error(llvm::formatv("LoRA rank r = {0}: expected a positive rank",
                               settings.rank));
  if (!(settings.alpha > 0) || !std::isfinite(settings.alpha))
    return error(llvm::formatv("lora_alpha = {0}: expected a positive number",
                               llvm::format("%g", settings.alpha)));
  if (settings.targets.empty() && settings.targetPattern.empty())
    return error("no LoRA target modules");
  llvm::Expected<LoraSelection> selection = LoraSelection::compile(settings);
  if (!selection)
    return selection.takeError();
  llvm::MapVector<unsigned, Module> modules = findModules(forward);
  if (modules.empty())
    return error(llvm::formatv("@{0} has no linear layer to adapt",
                               forward.getName()));

  // A target pattern must select linear layers only, as PEFT refuses to
  // adapt a module of another kind.
  if (!settings.targetPattern.empty()) {
    llvm::StringSet<> linear;
    for (auto &[index, m] : modules)
      if (!m.otherUses)
        linear.insert(m.name);
    for (StringRef module : allModules(forward))
      if (selection->names(module) && !linear.contains(module))
        return error(llvm::formatv(
            "LoRA target_modules \"{0}\" selects '{1}', which is neither "
            "a linear layer nor an embedding (adapters on norms and "
            "containers of layers are not supported)",
            settings.targetPattern, module));
  }

  bool allLinear = llvm::is_contained(settings.targets, kAllLinear);
  bool excludedAny = false;
  SmallVector<Module *> targeted;
  for (auto &[index, m] : modules) {
    bool named = selection->names(m.name);
    if (!named && !(allLinear && m.onlyProducts && !m.feedsLoss))
      continue;
    if (selection->excludes(m.name)) {
      excludedAny = true;
      continue;
    }
    if (m.otherUses)
      return error(llvm::formatv(
          "LoRA target module '{0}' is neither a linear layer nor an "
          "embedding (its weight has other uses)",
          m.name));
    llvm::Expected<int64_t> rank = selection->rank(m.name);
    if (!rank)
      return rank.takeError();
    llvm::Expected<double> alpha = selection->alpha(m.name);
    if (!alpha)
      return alpha.takeError();
    if (*rank > m.width())
      return error(llvm::formatv(
          "LoRA rank r = {0} is larger than module '{1}' ({2} inputs, {3} "
          "outputs): r must be at most {4}",
          *rank, m.name, m.in, m.out, m.width()));
    m.rank = *rank;
    m.scale = settings.scale(*rank, *alpha);
    targeted.push_back(&m);
  }
  if (settings.targetPattern.empty()) {
    for (const std::string &t : settings.targets) {
      if (t == kAllLinear)
        continue;
      if (llvm::none_of(modules, [&](auto &entry) {
            return isNamedModule(entry.second.name, t);
          }))
        return error(llvm::formatv(
            "LoRA target '{0}' matches no linear layer of @{1} (its layers: "
            "{2})",
            t, forward.getName(), moduleKinds(modules)));
    }
  } else if (llvm::none_of(modules, [&](auto &entry) {
               return selection->names(entry.second.name);
             })) {
    return error(llvm::formatv("LoRA target_modules \"{0}\" matches no "
                               "linear layer of @{1} (its layers: {2})",
                               settings.targetPattern, forward.getName(),
                               moduleKinds(modules)));
  }
  if ((!settings.exclude.empty() || !settings.excludePattern.empty()) &&
      !excludedAny)
    return error("LoRA exclude_modules excludes none of the targeted "
                 "modules");
  if (targeted.empty())
    return error(llvm::formatv(
        "the LoRA targets select no linear layer of @{0}{1}", forward.getName(),
        settings.layers.empty() ? ""
                                : " in the layers of layers_to_transform"));
  // The adapted experts of one grouped product share its low-rank products:
  // one rank and one scale.
  llvm::MapVector<Operation *, SmallVector<Module *>> expertsOf;
  for (Module *m : targeted)
    for (const Product &p : m->products)
      if (p.expert >= 0)
        expertsOf[p.op].push_back(m);
  for (auto &[op, experts] : expertsOf)
    for (Module *m : experts)
      if (m->rank != experts.front()->rank ||
          m->scale != experts.front()->scale)
        return error(llvm::formatv(
            "LoRA gives the experts '{0}' and '{1}' different ranks or "
            "scales ({2} and {3}, {4} and {5}): the experts of one layer "
            "share one rank and one scale in tgc",
            experts.front()->name, m->name, experts.front()->rank, m->rank,
            llvm::format("%g", experts.front()->scale),
            llvm::format("%g", m->scale)));
  // A pattern key that adapts nothing is a mistake in the settings.
  for (auto &[key, value] : settings.rankPattern)
    if (llvm::none_of(targeted, [&, &key = key](Module *m) {
          return llvm::is_contained(selection->rankKeysOf(m->name), key);
        }))
      return error("LoRA rank_pattern key '" + key +
                   "' matches no adapted module");
  for (auto &[key, value] : settings.alphaPattern)
    if (llvm::none_of(targeted, [&, &key = key](Module *m) {
          return llvm::is_contained(selection->alphaKeysOf(m->name), key);
        }))
      return error("LoRA alpha_pattern key '" + key +
                   "' matches no adapted module");

  // Adapters right after their base weight, highest index first so that
  // the indices still to come stay valid.
  MLIRContext *ctx = forward.getContext();
  OpBuilder b(ctx);
  auto paramAttrs = [&](const std::string &name) {
    return b.getDictionaryAttr(
        b.getNamedAttr(TGDialect::kParamAttrName, b.getStringAttr(name)));
  };
  SmallVector<BlockArgument> adapterArgs;
  llvm::MapVector<Operation *, SmallVector<ExpertAdapters>> groupedAdapters;
  for (Module *m : llvm::reverse(targeted)) {
    Type element =
        cast<RankedTensorType>(forward.getArgument(m->argIndex).getType())
            .getElementType();
    auto aType = RankedTensorType::get({m->rank, m->in}, element);
    auto bType = RankedTensorType::get({m->out, m->rank}, element);
    Location loc = forward.getArgument(m->argIndex).getLoc();
    unsigned at = m->argIndex + 1;
    // PEFT's names: lora.Embedding keeps its adapters as parameters of its
    // own, lora.Linear as the weights of two Linear layers.
    std::string aName =
        m->name + (m->isEmbedding() ? ".lora_embedding_A" : ".lora_A.weight");
    std::string bName =
        m->name + (m->isEmbedding() ? ".lora_embedding_B" : ".lora_B.weight");
    if (failed(forward.insertArgument(at, aType, paramAttrs(aName), loc)) ||
        failed(forward.insertArgument(at + 1, bType, paramAttrs(bName), loc)))
      return error("cannot add adapter arguments to @" +
                   forward.getName().str());
    BlockArgument a = forward.getArgument(at), bMatrix = forward.getArgument(at + 1);
    adapterArgs.push_back(a);
    adapterArgs.push_back(bMatrix);
    if (m->isEmbedding()) {
      // The lookups only: a head tied to the table is a module of its own
      // to PEFT, and keeps the base weight.
      for (EmbeddingOp lookup : m->lookups)
        addEmbeddingPath(b, lookup, a, bMatrix, m->scale);
      continue;
    }
    for (const Product &p : m->products)
      if (p.expert < 0)
        addLowRankPath(b, p, a, bMatrix, m->scale);
      else
        groupedAdapters[p.op].push_back({p.expert, a, bMatrix});
  }
  for (auto &[op, adapters] : groupedAdapters) {
    Module *first = expertsOf[op].front();
    addGroupedLowRankPath(b, cast<GroupedMatmulOp>(op), adapters, first->rank,
                          first->scale);
  }

  // Everything but the adapters is frozen.
  for (unsigned i = 0, e = forward.getNumArguments(); i < e; ++i)
    if (forward.getArgAttr(i, TGDialect::kParamAttrName) &&
        !llvm::is_contained(adapterArgs, forward.getArgument(i)))
      forward.setArgAttr(i, TGDialect::kFrozenAttrName, UnitAttr::get(ctx));
  return llvm::Error::success();
}

namespace {

struct TGLoraPass : tg::impl::TGLoraPassBase<TGLoraPass> {
  using Base::Base;

  void runOnOperation() override {
    if (rank == 0)
      return;
    ModuleOp module = getOperation();
    auto forward = module.lookupSymbol<func::FuncOp>(forwardName);
    if (!forward) {
      module.emitError() << "tg-lora: no function @" << forwardName;
      return signalPassFailure();
    }
    LoraSettings settings;
    settings.rank = rank;
    settings.alpha = alpha;
    settings.rslora = rslora;
    settings.targets.assign(targets.begin(), targets.end());
    settings.targetPattern = targetPattern;
    settings.layers.assign(layers.begin(), layers.end());
    settings.layersPattern.assign(layersPattern.begin(), layersPattern.end());
    settings.exclude.assign(exclude.begin(), exclude.end());
    settings.excludePattern = excludePattern;
    if (rankPatternKeys.size() != rankPatternRanks.size() ||
        alphaPatternKeys.size() != alphaPatternAlphas.size()) {
      module.emitError() << "tg-lora: each rank-pattern (alpha-pattern) key "
                            "needs one rank (alpha)";
      return signalPassFailure();
    }
    for (auto [key, r] : llvm::zip(rankPatternKeys, rankPatternRanks))
      settings.rankPattern.emplace_back(key, r);
    for (auto [key, a] : llvm::zip(alphaPatternKeys, alphaPatternAlphas))
      settings.alphaPattern.emplace_back(key, a);
    if (llvm::Error err = addLoraAdapters(forward, settings)) {
      forward.emitError() << "tg-lora: " << llvm::toString(std::move(err));
      return signalPassFailure();
    }
  }
};

} // namespace
