//===- Executable.h - train_step.h, model info, linking ---------*- C++ -*-===//
#ifndef TGC_DRIVER_EXECUTABLE_H
#define TGC_DRIVER_EXECUTABLE_H

#include "tgc/Frontend/ModelConfig.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include "llvm/Support/Error.h"

#include <string>
#include <vector>

namespace tgc {

/// One buffer of the compiled step's C ABI (see include/tgc/Runtime/ABI.h).
struct BufferDesc {
  std::string name;
  int role = 0, dtype = 0, init = 0;
  double initScale = 0;
  std::vector<int64_t> shape;
  /// ZeRO-1 state: the index of the parameter it holds a shard of, or -1.
  int shardOf = -1;
  /// ZeRO-3 parameter: the elements of this process's shard (`shape` is
  /// the whole tensor's), or 0.
  int64_t shardNumel = 0;
  /// A LoRA adapter's (NAME.lora_A/B.weight): the scale of its path, or 0.
  double loraScale = 0;
};

/// What the runtime needs to know about the model besides its buffers.
struct ModelSummary {
  std::string modelType = "custom", optimizer = "adamw", source;
  int64_t batchSize = 1, seqLen = 1, vocabSize = 0, numFeatures = 0,
          steps = 100;
  double lr = 1e-3;
  uint64_t seed = 0;
  /// Planned arena of the compiled step's intermediates.
  int64_t arenaBytes = 0;
  /// New parameters and state may be written over the old ones.
  bool updateInPlace = false;
  /// tgc --zero=1: the processes the step runs as (0: any number).
  int64_t zeroProcesses = 0;
  /// tgc --lora-r: rank (0: none), Conv1D weights, and the
  /// adapter_config.json text.
  int64_t loraRank = 0;
  bool loraFanInFanOut = false;
  std::string loraConfig;
};

/// With --lora-r, the adapters' settings in `summary` (rank, layout and the
/// adapter_config.json PEFT would write for them) and each adapter buffer's
/// scale (AdapterConfig.cpp).
void describeLora(ModelSummary &summary, std::vector<BufferDesc> &buffers,
                  mlir::func::FuncOp trainStep, const TrainingConfig &training,
                  const ModelConfig *config);

/// Whether the step may write each new parameter and optimizer state over
/// its input: every new value comes from an optimizer update op, and no op
/// after that update reads the old value. (The update lowerings read and
/// write each element at the same index.)
bool canUpdateInPlace(mlir::func::FuncOp trainStep);

/// The first parameter or optimizer state (its name) that `trainStep` reads
/// after the op that computes its new value, at any level (tg or linalg on
/// tensors); empty when there is none. The passes after tg-schedule-updates
/// must not create such a read: the runtime updates in place.
std::string findReadAfterUpdate(mlir::func::FuncOp trainStep);

/// The buffers of `trainStep` (a tg function after tg-optimizer) in call
/// order: arguments, then results (which become out-parameters). Parameter
/// init follows the model family (normal 0.02 for transformer weights with
/// GPT-2's scaled residual projections, ones for norms, zeros for biases,
/// torch.nn.Linear's uniform bound for the MLP).
llvm::Expected<std::vector<BufferDesc>>
describeBuffers(mlir::func::FuncOp trainStep, const ModelConfig *config);

ModelSummary summarize(const ModelConfig *config,
                       const TrainingConfig &training, llvm::StringRef source);

/// train_step.h: the ABI and, as a comment, the table of this model.
std::string generateHeader(const std::vector<BufferDesc> &buffers,
                           const ModelSummary &summary);

/// C source of `static const tgc_buffer_info buffers[]`: the table of
/// `buffers`, for a model-info file.
std::string bufferTableSource(const std::vector<BufferDesc> &buffers);

/// `text` as a C string literal, quotes included.
std::string cStringLiteral(llvm::StringRef text);

/// The text of include/tgc/Runtime/ABI.h, as train_step.h carries it.
llvm::StringRef trainStepABIHeader();

/// C source defining `tgc_model` for the runtime.
std::string generateModelInfo(const std::vector<BufferDesc> &buffers,
                              const ModelSummary &summary);

} // namespace tgc

#endif // TGC_DRIVER_EXECUTABLE_H
