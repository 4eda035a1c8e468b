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
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"

#include <cmath>

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

bool mlir::tg::isLoraTarget(StringRef module, const LoraSettings &settings) {
  return llvm::any_of(settings.targets, [&](const std::string &t) {
    return module == t ||
           (module.ends_with(t) && module.size() > t.size() &&
            module[module.size() - t.size() - 1] == '.');
  });
}

namespace {

constexpr StringLiteral kAllLinear = "all-linear";

/// One product whose weight is a parameter: `x·Wᵀ` (tg.linear, W [out, in])
/// or, for GPT-2's Conv1D, `x·W` (tg.matmul, W [in, out]).
struct Product {
  Operation *op;
  Value input;
};

/// A parameter read by products only, with the products that read it.
struct Module {
  unsigned argIndex;
  std::string name;
  int64_t in = 0, out = 0;
  bool fanInFanOut = false;
  bool onlyProducts = true;
  bool feedsLoss = false;
  SmallVector<Product> products;
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
        continue;
      }
      m.fanInFanOut = fanInFanOut;
      m.feedsLoss |= feedsLoss(user);
      m.products.push_back(*product);
    }
    if (m.products.empty())
      continue;
    m.in = type.getDimSize(m.fanInFanOut ? 0 : 1);
    m.out = type.getDimSize(m.fanInFanOut ? 1 : 0);
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

} // namespace

llvm::Error mlir::tg::addLoraAdapters(func::FuncOp forward,
                                      const LoraSettings &settings) {
  if (settings.rank < 1)
    return error(llvm::formatv("LoRA rank r = {0}: expected a positive rank",
                               settings.rank));
  if (!(settings.alpha > 0) || !std::isfinite(settings.alpha))
    return error(llvm::formatv("lora_alpha = {0}: expected a positive number",
                               llvm::format("%g", settings.alpha)));
  if (settings.targets.empty())
    return error("no LoRA target modules");
  llvm::MapVector<unsigned, Module> modules = findModules(forward);
  if (modules.empty())
    return error(llvm::formatv("@{0} has no linear layer to adapt",
                               forward.getName()));

  bool allLinear = llvm::is_contained(settings.targets, kAllLinear);
  SmallVector<Module *> targeted;
  for (auto &[index, m] : modules) {
    bool named = isLoraTarget(m.name, settings);
    if (!named && !(allLinear && m.onlyProducts && !m.feedsLoss))
      continue;
    if (!m.onlyProducts)
      return error(llvm::formatv(
          "LoRA target module '{0}' is not only a linear layer (its weight "
          "is also an embedding table, tied to the output layer): adapters "
          "on embeddings are not supported",
          m.name));
    if (settings.rank > std::min(m.in, m.out))
      return error(llvm::formatv(
          "LoRA rank r = {0} is larger than module '{1}' ({2} inputs, {3} "
          "outputs): r must be at most {4}",
          settings.rank, m.name, m.in, m.out, std::min(m.in, m.out)));
    targeted.push_back(&m);
  }
  for (const std::string &t : settings.targets) {
    if (t == kAllLinear)
      continue;
    LoraSettings one;
    one.targets = {t};
    if (llvm::none_of(modules, [&](auto &entry) {
          return isLoraTarget(entry.second.name, one);
        }))
      return error(llvm::formatv(
          "LoRA target '{0}' matches no linear layer of @{1} (its layers: "
          "{2})",
          t, forward.getName(), moduleKinds(modules)));
  }
  if (targeted.empty())
    return error(llvm::formatv("the LoRA targets select no linear layer of @{0}",
                               forward.getName()));

  // Adapters right after their base weight, highest index first so that
  // the indices still to come stay valid.
  MLIRContext *ctx = forward.getContext();
  OpBuilder b(ctx);
  auto paramAttrs = [&](const std::string &name) {
    return b.getDictionaryAttr(
        b.getNamedAttr(TGDialect::kParamAttrName, b.getStringAttr(name)));
  };
  SmallVector<BlockArgument> adapterArgs;
  for (Module *m : llvm::reverse(targeted)) {
    Type element =
        cast<RankedTensorType>(forward.getArgument(m->argIndex).getType())
            .getElementType();
    auto aType = RankedTensorType::get({settings.rank, m->in}, element);
    auto bType = RankedTensorType::get({m->out, settings.rank}, element);
    Location loc = forward.getArgument(m->argIndex).getLoc();
    unsigned at = m->argIndex + 1;
    if (failed(forward.insertArgument(at, aType,
                                      paramAttrs(m->name + ".lora_A.weight"),
                                      loc)) ||
        failed(forward.insertArgument(at + 1, bType,
                                      paramAttrs(m->name + ".lora_B.weight"),
                                      loc)))
      return error("cannot add adapter arguments to @" +
                   forward.getName().str());
    BlockArgument a = forward.getArgument(at), bMatrix = forward.getArgument(at + 1);
    adapterArgs.push_back(a);
    adapterArgs.push_back(bMatrix);
    for (const Product &p : m->products)
      addLowRankPath(b, p, a, bMatrix, settings.scale());
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
    if (llvm::Error err = addLoraAdapters(forward, settings)) {
      forward.emitError() << "tg-lora: " << llvm::toString(std::move(err));
      return signalPassFailure();
    }
  }
};

} // namespace
