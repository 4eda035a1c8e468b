//===- Stats.cpp - `tgc stats`: build the step, measure, report -----------===//

#include "tgc/Driver/Stats.h"

#include "tgc/Dialect/TG/IR/TGDialect.h"
#include "tgc/Dialect/TG/Transforms/LowPrecisionSaves.h"
#include "tgc/Dialect/TG/Transforms/Remat.h"
#include "tgc/Driver/Compile.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/Support/FileUtilities.h"

#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/ToolOutputFile.h"

using namespace mlir;
using namespace tgc;

namespace {

/// The --remat-sweep rows: budgets from the peak without rematerialisation
/// down to a tenth of it, and the fixed policies for reference. `base` is
/// the train step built with policy none; `savedElement` the type mixed
/// precision keeps saved activations in (null for fp32).
std::vector<RematSweepRow> sweepRemat(func::FuncOp base, Type savedElement) {
  tg::TrainingStats baseStats = tg::computeTrainingStats(base);
  double stepFlops =
      static_cast<double>(baseStats.forward.flops + baseStats.backward.flops +
                          baseStats.optimizer.flops);
  std::vector<RematSweepRow> rows;
  auto run = [&](std::string label, tg::RematPolicy policy,
                 tg::MemoryBudget budget) {
    RematSweepRow row;
    row.label = std::move(label);
    auto copy = llvm::cast<func::FuncOp>(base->clone());
    // Diagnostics of infeasible budgets are the table's "no plan fits".
    ScopedDiagnosticHandler quiet(base->getContext(),
                                  [](Diagnostic &) { return success(); });
    FailureOr<tg::RematResult> result = tg::rematerialize(
        copy, policy, budget, /*fusedRecompute=*/false, savedElement);
    if (succeeded(result)) {
      if (savedElement)
        tg::keepSavedActivationsIn(copy, savedElement);
      tg::TrainingStats stats = tg::computeTrainingStats(copy);
      row.budgetBytes = result->budgetBytes;
      row.plannedPeak = stats.plannedPeakBytes;
      row.savedActivationBytes = stats.savedActivationBytes;
      row.extraFlops = stats.recompute.flops;
      row.extraFlopsPercent = 100.0 * row.extraFlops / std::max(1.0, stepFlops);
    } else {
      row.feasible = false;
      row.budgetBytes = budget.bytes;
    }
    copy->erase();
    rows.push_back(std::move(row));
  };
  run("none", tg::RematPolicy::None, {});
  run("selective", tg::RematPolicy::Selective, {});
  bool hasLayers = false;
  base.walk([&](Operation *op) {
    hasLayers |= op->hasAttr(tg::TGDialect::kLayerAttrName);
  });
  if (hasLayers)
    run("layers", tg::RematPolicy::Layers, {});
  for (int percent = 100; percent >= 10; percent -= 10) {
    tg::MemoryBudget budget;
    // Of the peak without rematerialisation as the step runs (row "none").
    budget.bytes = rows.front().plannedPeak * percent / 100;
    run(llvm::formatv("budget {0}%", percent).str(), tg::RematPolicy::Budget,
        budget);
  }
  return rows;
}

} // namespace

llvm::Error tgc::runStats(ModuleOp module, const TrainingConfig &training,
                          StatsContext context, const StatsRequest &request,
                          const TargetBackend &target) {
  auto failedBuild = [&] {
    return llvm::createStringError(context.input +
                                   ": building the train step failed (see the "
                                   "diagnostics above)");
  };
  bool sweep = request.rematSweep || !request.rematSweepSvg.empty();
  OwningOpRef<ModuleOp> forwardModule = module.clone();
  if (failed(buildTrainStep(module, training, /*returnGradients=*/false)))
    return failedBuild();
  auto step = module.lookupSymbol<func::FuncOp>("train_step");
  StatsReport report;
  context.remat = stringifyRematPolicy(training.remat).str();
  if (!training.memoryBudget.empty())
    context.remat += " " + training.memoryBudget;
  report.context = context;
  report.stats = tg::computeTrainingStats(step);
  if (request.memory) {
    report.saved = tg::collectSavedActivations(step);
    // The compiled step as tgc builds it (with the gradients among its
    // results when asked): a graph of its own.
    OwningOpRef<ModuleOp> compiled = forwardModule->clone();
    TrainingConfig quiet = training;
    quiet.rematReport = false;
    if (failed(buildTrainStep(*compiled, quiet, request.returnGradients)))
      return failedBuild();
    KernelCounts counts;
    FailureOr<int64_t> arena =
        planTrainStep(*compiled, target, training.fusion, &counts);
    if (failed(arena))
      return llvm::createStringError(context.input +
                                     ": lowering the train step failed (see "
                                     "the diagnostics above)");
    report.compiledArenaBytes = *arena;
    report.kernels = counts.kernels;
    report.bytesMoved = counts.bytesMoved;
    report.kernelSources = std::move(counts.bySource);
    llvm::sort(report.kernelSources,
               [](const KernelSource &a, const KernelSource &b) {
                 return std::tie(b.bytesMoved, a.module, a.op) <
                        std::tie(a.bytesMoved, b.module, b.op);
               });
  }
  if (sweep) {
    // The sweep starts from the step without rematerialisation (and, for
    // mixed precision, before its saved activations get their low-precision
    // copies, which each row adds after its plan): the one built above when
    // that is what was asked for.
    OwningOpRef<ModuleOp> plainModule;
    func::FuncOp base = step;
    tg::LowPrecisionType low = tg::lowPrecisionType(training.precision);
    if (training.remat != tg::RematPolicy::None ||
        low != tg::LowPrecisionType::None) {
      plainModule = forwardModule->clone();
      TrainingConfig plain = training;
      plain.remat = tg::RematPolicy::None;
      plain.memoryBudget.clear();
      plain.rematReport = false;
      if (failed(buildTrainStep(*plainModule, plain, /*returnGradients=*/false,
                                /*lowPrecisionSaves=*/false)))
        return failedBuild();
      base = plainModule->lookupSymbol<func::FuncOp>("train_step");
    }
    report.sweep =
        sweepRemat(base, tg::getLowPrecisionType(base.getContext(), low));
  }
  if (!request.memoryTimeline.empty())
    if (llvm::Error err =
            writeOutputFile(request.memoryTimeline, [&](llvm::raw_ostream &os) {
              writeMemoryTimeline(os, step);
            }))
      return err;
  if (!request.rematSweepSvg.empty())
    if (llvm::Error err =
            writeOutputFile(request.rematSweepSvg, [&](llvm::raw_ostream &os) {
              writeRematSweepSvg(os, report);
            }))
      return err;
  return writeOutputFile(request.output, [&](llvm::raw_ostream &os) {
    if (request.json)
      printStatsJson(os, report);
    else
      printStatsTable(os, report);
  });
}
