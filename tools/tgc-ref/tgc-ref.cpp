//===- tgc-ref.cpp - run a model's train step in the reference interpreter ===//
//
//   tgc-ref MODEL --init W.safetensors --batch B.safetensors -o OUT.safetensors
//           [--train-steps N] [training flags]
//
// Builds the model's @train_step exactly as tgc does and runs it in the f64
// reference interpreter: the numeric oracle that the test suite compares
// with PyTorch and with compiled code. With --train-steps 0 (the default) it
// writes the loss ("loss") and every gradient (by parameter name; frozen
// parameters have none); with N > 0 it runs N optimizer steps on the same
// batch and writes "losses", "grad_norms" and the final parameters.
//
//===----------------------------------------------------------------------===//

#include "tgc/Driver/TrainingFlags.h"

#include "tgc/Dialect/TG/IR/TGOps.h"
#include "tgc/Frontend/MLIRGen.h"
#include "tgc/Pipelines/Pipelines.h"
#include "tgc/Reference/Interpreter.h"
#include "tgc/Runtime/SafeTensors.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/PassManager.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/WithColor.h"

#include <map>
#include <optional>

using namespace mlir;
using namespace tgc;
namespace cl = llvm::cl;

namespace {
cl::OptionCategory refCategory("tgc-ref options");
cl::opt<std::string> modelFile(cl::Positional, cl::desc("<model.json>"),
                               cl::Required, cl::cat(refCategory));
cl::opt<std::string> initFile("init",
                              cl::desc("Weights by HF name (.safetensors)"),
                              cl::Required, cl::cat(refCategory));
cl::opt<std::string> batchFile("batch",
                               cl::desc("Inputs by name (.safetensors)"),
                               cl::Required, cl::cat(refCategory));
cl::opt<std::string> outputFile("o", cl::desc("Output .safetensors"),
                                cl::Required, cl::cat(refCategory));
cl::opt<int> trainSteps("train-steps",
                        cl::desc("Optimizer steps to run (0: gradients only)"),
                        cl::init(0), cl::cat(refCategory));
cl::opt<bool> storeF32(
    "store-f32",
    cl::desc("Round every f32 result to f32 as compiled code stores it "
             "(arithmetic inside each op stays f64): the oracle's own "
             "distance from such code, the floor of a comparison with it"),
    cl::init(false), cl::cat(refCategory));

int fail(const llvm::Twine &message) {
  llvm::WithColor::error(llvm::errs(), "tgc-ref") << message << "\n";
  return 1;
}

std::vector<int64_t> shapeOf(Type type) {
  auto t = llvm::cast<RankedTensorType>(type);
  return {t.getShape().begin(), t.getShape().end()};
}

ref::Tensor toTensor(const rt::TensorData &data) {
  ref::Tensor t(data.shape);
  for (int64_t i = 0; i < t.numElements(); ++i)
    t[i] = data.get(i);
  return t;
}
} // namespace

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  // LLVM's own flags (linked in through MLIR) would bury these.
  cl::HideUnrelatedOptions({&refCategory, &trainingFlagsCategory()});
  cl::ParseCommandLineOptions(argc, argv, "tgc reference interpreter\n");

  llvm::Expected<ModelConfig> config = loadModelConfig(modelFile);
  if (!config)
    return fail(llvm::toString(config.takeError()));
  if (llvm::Error err = applyTrainingFlags(*config))
    return fail(llvm::toString(std::move(err)));

  if (config->training.zeroStage != 0)
    return fail("--zero: the reference interpreter runs one process; "
                "ZeRO's shards exist only in executables under mpirun");

  MLIRContext context;
  OwningOpRef<ModuleOp> module = buildForwardModule(context, *config);
  PassManager pm(&context);
  TrainingGraphOptions options;
  const TrainingConfig &t = config->training;
  setTrainingGraphOptions(options, t);
  options.withOptimizer = trainSteps > 0;
  buildTrainingGraphPipeline(pm, options);
  if (failed(pm.run(*module)))
    return fail("building the train step failed");
  auto step = module->lookupSymbol<func::FuncOp>("train_step");

  rt::SafeTensorsFile weights, batch;
  std::string error;
  if (!rt::readSafeTensors(initFile, weights, error) ||
      !rt::readSafeTensors(batchFile, batch, error))
    return fail(error);

  // Arguments by role and name.
  std::vector<ref::Tensor> args;
  std::vector<std::string> paramNames;
  std::vector<unsigned> paramArgs;
  for (BlockArgument arg : step.getArguments()) {
    unsigned i = arg.getArgNumber();
    std::vector<int64_t> shape = shapeOf(arg.getType());
    if (auto p = step.getArgAttrOfType<StringAttr>(
            i, tg::TGDialect::kParamAttrName)) {
      auto it = weights.tensors.find(p.str());
      if (it == weights.tensors.end())
        return fail(initFile + ": missing tensor '" + p.str() + "'");
      if (it->second.shape != shape)
        return fail(initFile + ": tensor '" + p.str() +
                    "' has the wrong shape");
      args.push_back(toTensor(it->second));
      paramNames.push_back(p.str());
      paramArgs.push_back(i);
    } else if (auto state = step.getArgAttrOfType<StringAttr>(
                   i, tg::TGDialect::kStateAttrName)) {
      args.push_back(state.getValue() == "loss_scale"
                         ? ref::Tensor({}, t.initialLossScale())
                         : ref::Tensor(shape));
    } else {
      auto name =
          step.getArgAttrOfType<StringAttr>(i, tg::TGDialect::kInputAttrName);
      if (name && name.getValue() == "lr") {
        args.push_back(ref::Tensor({}, t.lr));
      } else if (name && name.getValue() == "step") {
        args.push_back(ref::Tensor({}, 1.0));
      } else {
        auto it = batch.tensors.find(name ? name.str() : "");
        if (it == batch.tensors.end())
          return fail(batchFile + ": missing input '" +
                      (name ? name.str() : "?") + "'");
        if (it->second.shape != shape)
          return fail(batchFile + ": input '" + name.str() +
                      "' has the wrong shape");
        args.push_back(toTensor(it->second));
      }
    }
  }

  ref::InterpretOptions interpretOptions;
  interpretOptions.storeF32 = storeF32;
  // A mixture of experts' load-balancing loss, reported beside the loss.
  std::optional<unsigned> auxResult;
  for (unsigned r = 0; r < step.getNumResults(); ++r)
    if (auto name = step.getResultAttrOfType<StringAttr>(
            r, tg::TGDialect::kOutputAttrName);
        name && name.getValue() == "aux_loss")
      auxResult = r;
  rt::SafeTensorsFile out;
  if (trainSteps == 0) {
    auto results = ref::interpret(step, args, interpretOptions);
    if (!results)
      return fail(llvm::toString(results.takeError()));
    out.tensors["loss"] =
        rt::makeTensor({}, (*results)[0].data, rt::DType::F64);
    if (auxResult)
      out.tensors["aux_loss"] =
          rt::makeTensor({}, (*results)[*auxResult].data, rt::DType::F64);
    // The gradients (tg.grad), named by their parameters: frozen ones have
    // none.
    for (unsigned r = 1; r < step.getNumResults(); ++r)
      if (auto name = step.getResultAttrOfType<StringAttr>(
              r, tg::TGDialect::kGradAttrName))
        out.tensors[name.str()] = rt::makeTensor(
            (*results)[r].shape, (*results)[r].data, rt::DType::F64);
  } else {
    // Results: loss, grad_norm, perhaps other outputs (a guarded step's
    // per-gradient sums of squares), then the new params and state, fed
    // back each step to the arguments of the same role and name (a frozen
    // parameter has no new value).
    std::vector<double> losses, norms, auxLosses;
    std::vector<unsigned> carried, updated;
    std::map<std::pair<std::string, std::string>, unsigned> argOf;
    const StringRef roles[] = {tg::TGDialect::kParamAttrName,
                               tg::TGDialect::kStateAttrName};
    for (BlockArgument arg : step.getArguments())
      for (StringRef role : roles)
        if (auto name =
                step.getArgAttrOfType<StringAttr>(arg.getArgNumber(), role))
          argOf[{role.str(), name.str()}] = arg.getArgNumber();
    for (unsigned r = 0; r < step.getNumResults(); ++r)
      for (StringRef role : roles) {
        auto name = step.getResultAttrOfType<StringAttr>(r, role);
        if (!name)
          continue;
        auto from = argOf.find({role.str(), name.str()});
        if (from == argOf.end())
          return fail("the train step returns '" + name.str() +
                      "' but takes no argument of that name");
        carried.push_back(from->second);
        updated.push_back(r);
      }
    unsigned stepArg = step.getNumArguments() - 1;
    for (int s = 1; s <= trainSteps; ++s) {
      args[stepArg] = ref::Tensor({}, static_cast<double>(s));
      auto results = ref::interpret(step, args, interpretOptions);
      if (!results)
        return fail(llvm::toString(results.takeError()));
      losses.push_back((*results)[0][0]);
      norms.push_back((*results)[1][0]);
      if (auxResult)
        auxLosses.push_back((*results)[*auxResult][0]);
      for (size_t k = 0; k < carried.size(); ++k)
        args[carried[k]] = (*results)[updated[k]];
    }
    out.tensors["losses"] =
        rt::makeTensor({trainSteps}, losses, rt::DType::F64);
    out.tensors["grad_norms"] =
        rt::makeTensor({trainSteps}, norms, rt::DType::F64);
    if (auxResult)
      out.tensors["aux_losses"] =
          rt::makeTensor({trainSteps}, auxLosses, rt::DType::F64);
    for (size_t i = 0; i < paramNames.size(); ++i)
      out.tensors[paramNames[i]] = rt::makeTensor(
          args[paramArgs[i]].shape, args[paramArgs[i]].data, rt::DType::F64);
  }
  if (!rt::writeSafeTensors(outputFile, out, error))
    return fail(error);
  return 0;
}
