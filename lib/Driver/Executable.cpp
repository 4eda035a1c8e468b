//===- Executable.cpp - train_step.h, model info, linking -----------------===//

#include "tgc/Driver/Executable.h"
#include "tgc/Dialect/TG/IR/TGOps.h"
#include "tgc/Dialect/TG/IR/TrainStep.h"
#include "tgc/Runtime/ABI.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>
#include <cstdio>
#include <map>

using namespace tgc;
using namespace mlir;

namespace {
const char *kABIHeader =
#include "tgc/Runtime/ABIHeader.inc"
    ;

int dtypeOf(Type type) {
  if (type.isF32())
    return TGC_F32;
  if (type.isF64())
    return TGC_F64;
  if (type.isBF16())
    return TGC_BF16;
  if (type.isF16())
    return TGC_F16;
  if (type.isInteger(64))
    return TGC_I64;
  return TGC_I32;
}

/// The family's initialisation of parameter `name` with shape `shape`.
void chooseInit(BufferDesc &b, const ModelConfig *config) {
  llvm::StringRef name = b.name;
  // PEFT's init_lora_weights=True: A Kaiming-uniform with a = sqrt(5), that
  // is U(-1/sqrt(in), 1/sqrt(in)); B zero, so training starts at the base.
  if (name.ends_with(".lora_A.weight")) {
    b.init = TGC_INIT_UNIFORM;
    b.initScale = 1.0 / std::sqrt(static_cast<double>(b.shape.back()));
    return;
  }
  if (name.ends_with(".lora_B.weight")) {
    b.init = TGC_INIT_ZEROS;
    return;
  }
  // lora.Embedding's: A zero, B standard normal.
  if (name.ends_with(".lora_embedding_A")) {
    b.init = TGC_INIT_ZEROS;
    return;
  }
  if (name.ends_with(".lora_embedding_B")) {
    b.init = TGC_INIT_NORMAL;
    b.initScale = 1.0;
    return;
  }
  if (config && config->family == ModelFamily::MLP) {
    // torch.nn.Linear: U(-1/sqrt(fan_in), 1/sqrt(fan_in)) for weight and bias.
    int64_t fanIn = 1;
    if (name.ends_with(".weight"))
      fanIn = b.shape.back();
    else
      for (size_t i = 0; i + 1 < config->layerSizes.size(); ++i)
        if (name == "layers." + std::to_string(i) + ".bias")
          fanIn = config->layerSizes[i];
    b.init = TGC_INIT_UNIFORM;
    b.initScale = 1.0 / std::sqrt(static_cast<double>(fanIn));
    return;
  }
  bool norm = name.ends_with("norm.weight") || name.contains(".ln_") ||
              name.starts_with("transformer.ln_f");
  if (norm && name.ends_with(".weight")) {
    // Gemma's RMSNorms scale by (1 + weight): their identity is 0.
    b.init = config && config->gemmaScaling ? TGC_INIT_ZEROS : TGC_INIT_ONES;
  } else if (name.ends_with(".bias")) {
    b.init = TGC_INIT_ZEROS;
  } else {
    b.init = TGC_INIT_NORMAL;
    b.initScale = 0.02;
    // GPT-2 scales the residual projections by 1/sqrt(2 * n_layer).
    if (config && config->family == ModelFamily::GPT2 &&
        name.ends_with("c_proj.weight"))
      b.initScale = 0.02 / std::sqrt(2.0 * config->numLayers);
  }
}

const char *roleName(int role) {
  switch (role) {
  case TGC_PARAM:
    return "TGC_PARAM";
  case TGC_STATE:
    return "TGC_STATE";
  case TGC_INPUT:
    return "TGC_INPUT";
  case TGC_OUTPUT:
    return "TGC_OUTPUT";
  case TGC_NEW_PARAM:
    return "TGC_NEW_PARAM";
  case TGC_NEW_STATE:
    return "TGC_NEW_STATE";
  default:
    return "TGC_GRAD";
  }
}

} // namespace

llvm::Expected<std::vector<BufferDesc>>
tgc::describeBuffers(func::FuncOp step, const ModelConfig *config) {
  std::vector<BufferDesc> buffers;
  std::map<size_t, std::string> shardOwners; // state buffer → its parameter
  auto add = [&](Type type, DictionaryAttr attrs, bool result) -> llvm::Error {
    auto tensor = llvm::dyn_cast<RankedTensorType>(type);
    if (!tensor || tensor.getRank() > 8)
      return llvm::createStringError(
          "train_step has a non-tensor or rank > 8 value");
    BufferDesc b;
    b.shape.assign(tensor.getShape().begin(), tensor.getShape().end());
    b.dtype = dtypeOf(tensor.getElementType());
    if (auto whole = attrs ? attrs.getAs<TypeAttr>(
                                 tg::TGDialect::kShardedAttrName)
                           : TypeAttr()) {
      // ZeRO-3: the runtime initialises, loads and saves the whole tensor.
      auto wholeType = llvm::cast<RankedTensorType>(whole.getValue());
      b.shardNumel = tensor.getNumElements();
      b.shape.assign(wholeType.getShape().begin(), wholeType.getShape().end());
    }
    auto get = [&](llvm::StringRef key) {
      return attrs ? attrs.getAs<StringAttr>(key) : StringAttr();
    };
    if (auto n = get(tg::TGDialect::kParamAttrName)) {
      b.name = n.str();
      b.role = result ? TGC_NEW_PARAM : TGC_PARAM;
      if (!result)
        chooseInit(b, config);
    } else if (auto n = get(tg::TGDialect::kStateAttrName)) {
      b.name = n.str();
      b.role = result ? TGC_NEW_STATE : TGC_STATE;
      if (b.name == "loss_scale" && !result) {
        b.init = TGC_INIT_CONSTANT;
        b.initScale = config ? config->training.initialLossScale() : 65536.0;
      }
      if (auto owner = get(tg::TGDialect::kShardOfAttrName))
        shardOwners[buffers.size()] = owner.str();
    } else if (auto n = get(tg::TGDialect::kInputAttrName)) {
      b.name = n.str();
      b.role = TGC_INPUT;
    } else if (auto n = get(tg::TGDialect::kOutputAttrName)) {
      b.name = n.str();
      b.role = TGC_OUTPUT;
    } else if (auto n = get(tg::TGDialect::kGradAttrName)) {
      b.name = n.str();
      b.role = TGC_GRAD;
    } else {
      return llvm::createStringError(
          llvm::formatv("train_step {0} #{1} has no tg name attribute",
                        result ? "result" : "argument", buffers.size()));
    }
    buffers.push_back(std::move(b));
    return llvm::Error::success();
  };
  for (unsigned i = 0; i < step.getNumArguments(); ++i)
    if (llvm::Error err =
            add(step.getArgumentTypes()[i], step.getArgAttrDict(i), false))
      return std::move(err);
  for (unsigned i = 0; i < step.getNumResults(); ++i)
    if (llvm::Error err =
            add(step.getResultTypes()[i], step.getResultAttrDict(i), true))
      return std::move(err);
  for (auto &[index, owner] : shardOwners) {
    for (auto [p, b] : llvm::enumerate(buffers))
      if (b.role == TGC_PARAM && b.name == owner)
        buffers[index].shardOf = static_cast<int>(p);
    if (buffers[index].shardOf < 0)
      return llvm::createStringError(
          "train_step: state '" + buffers[index].name +
          "' is a shard of unknown parameter '" + owner + "'");
  }
  return buffers;
}

namespace {
/// Whether an op reads `old` after `update` (the op computing its new
/// value) in the body of the step.
bool readAfter(mlir::Block &body, mlir::BlockArgument old,
               mlir::Operation *update) {
  for (mlir::Operation *user : old.getUsers()) {
    mlir::Operation *top = body.findAncestorOpInBlock(*user);
    if (top && top != update && update->isBeforeInBlock(top))
      return true;
  }
  return false;
}
} // namespace

bool tgc::canUpdateInPlace(mlir::func::FuncOp step) {
  using namespace mlir;
  Block &body = step.getBody().front();
  SmallVector<tg::InPlaceUpdate> updates = tg::getInPlaceUpdates(step);
  return !updates.empty() &&
         llvm::all_of(updates, [&](const tg::InPlaceUpdate &u) {
           Operation *update =
               tg::getUpdatingOp(body.getTerminator()->getOperand(u.result));
           return u.old && update && update->hasTrait<tg::ParameterUpdate>() &&
                  update->getBlock() == &body &&
                  !readAfter(body, u.old, update);
         });
}

std::string tgc::findReadAfterUpdate(mlir::func::FuncOp step) {
  using namespace mlir;
  Block &body = step.getBody().front();
  for (const tg::InPlaceUpdate &u : tg::getInPlaceUpdates(step)) {
    Operation *def =
        tg::getUpdatingOp(body.getTerminator()->getOperand(u.result));
    Operation *update = def ? body.findAncestorOpInBlock(*def) : nullptr;
    if (u.old && update && readAfter(body, u.old, update))
      return u.name.getValue().str();
  }
  return "";
}

ModelSummary tgc::summarize(const ModelConfig *config, const TrainingConfig &t,
                            llvm::StringRef source) {
  ModelSummary s;
  s.source = source.str();
  s.optimizer = stringifyOptimizerKind(t.optimizer).str();
  // Rows per step: micro-batches of --batch-size rows with --grad-accum.
  s.batchSize = t.batchSize * t.gradAccum;
  s.steps = t.steps;
  s.lr = t.lr;
  s.seed = t.seed;
  if (config) {
    s.modelType = config->modelType;
    s.vocabSize = config->vocabSize;
    if (config->family == ModelFamily::MLP) {
      s.seqLen = 1;
      s.numFeatures = config->layerSizes.front();
    } else {
      s.seqLen = config->seqLen();
    }
  }
  return s;
}

std::string tgc::generateHeader(const std::vector<BufferDesc> &buffers,
                                const ModelSummary &summary) {
  std::string out;
  llvm::raw_string_ostream os(out);
  os << "/* train_step.h - generated by tgc for " << summary.source << ".\n *\n"
     << " * Buffers of tgc_train_step, in order:\n";
  for (auto [i, b] : llvm::enumerate(buffers)) {
    os << llvm::formatv(" *   [{0,3}] {1,-14} {2} [", i, roleName(b.role),
                        b.name);
    llvm::interleaveComma(b.shape, os);
    os << "]";
    if (b.shardNumel)
      os << " (shard: " << b.shardNumel << " elements)";
    os << "\n";
  }
  os << " */\n" << kABIHeader;
  return out;
}

std::string tgc::cStringLiteral(llvm::StringRef s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char octal[5];
      std::snprintf(octal, sizeof octal, "\\%03o", static_cast<unsigned>(c));
      out += octal;
    } else {
      out += c;
    }
  }
  return out + "\"";
}

std::string tgc::bufferTableSource(const std::vector<BufferDesc> &buffers) {
  std::string out;
  llvm::raw_string_ostream os(out);
  os << "static const tgc_buffer_info buffers[] = {\n";
  for (const BufferDesc &b : buffers) {
    os << "  {" << cStringLiteral(b.name) << ", " << roleName(b.role) << ", "
       << b.dtype << ", " << b.init << ", "
       << llvm::formatv("{0:e16}", b.initScale) << ", " << b.shape.size()
       << ", {";
    llvm::interleaveComma(b.shape, os);
    if (b.shape.empty())
      os << "0";
    os << "}, " << b.shardOf << ", " << b.shardNumel << ", "
       << llvm::formatv("{0:e16}", b.loraScale) << "},\n";
  }
  os << "};\n";
  return out;
}

llvm::StringRef tgc::trainStepABIHeader() { return kABIHeader; }

std::string tgc::generateModelInfo(const std::vector<BufferDesc> &buffers,
                                   const ModelSummary &s) {
  std::string out;
  llvm::raw_string_ostream os(out);
  os << "/* Generated by tgc: the model description the runtime reads. */\n"
     << "#include \"train_step.h\"\n\n"
     << bufferTableSource(buffers) << "\nconst tgc_model_info tgc_model = {\n"
     << "  " << cStringLiteral(s.modelType) << ", "
     << cStringLiteral(s.optimizer) << ",\n"
     << "  " << s.batchSize << ", " << s.seqLen << ", " << s.vocabSize << ", "
     << s.numFeatures << ", " << s.steps << ",\n"
     << "  " << llvm::formatv("{0:e16}", s.lr) << ", " << s.seed << "ull,\n"
     << "  " << buffers.size() << ", buffers,\n"
     << "  " << s.arenaBytes << ", " << (s.updateInPlace ? 1 : 0) << ", "
     << s.zeroProcesses << ",\n"
     << "  " << s.loraRank << ", " << (s.loraFanInFanOut ? 1 : 0) << ",\n"
     << "  " << cStringLiteral(s.loraConfig) << ",\n};\n";
  return out;
}
