//===- StatsReport.cpp - printing `tgc stats` -----------------------------===//

#include "tgc/Driver/StatsReport.h"
#include "tgc/Dialect/TG/Analysis/MemoryPlan.h"

#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"

using namespace tgc;
using mlir::tg::SavedActivation;
using mlir::tg::TrainingStats;
using tgc::formatBytes;
using tgc::humanCount;
using tgc::withCommas;

namespace {

std::string shapeOf(mlir::Value value) {
  std::string text;
  llvm::raw_string_ostream os(text);
  auto type = llvm::cast<mlir::ShapedType>(value.getType());
  llvm::interleave(type.getShape(), os, "x");
  return text;
}

std::string layerText(const SavedActivation &a) {
  return a.layer ? std::to_string(*a.layer) : "-";
}

void printMemoryTable(llvm::raw_ostream &os, const StatsReport &r) {
  os << "\nSaved activations (what the backward pass keeps), remat "
     << r.context.remat << "\n";
  os << llvm::formatv("  {0,-6}{1,-46}{2,-25}{3,-18}{4,14}  {5}\n", "layer",
                      "value", "op", "shape", "bytes", "read by");
  std::optional<int64_t> currentLayer;
  int64_t layerBytes = 0, totalElements = 0, totalBytes = 0;
  bool first = true;
  auto flushLayer = [&] {
    if (!first && currentLayer)
      os << llvm::formatv("  {0,-6}{1,-89}{2,14}\n", "", "layer total",
                          formatBytes(layerBytes));
  };
  for (const SavedActivation &a : *r.saved) {
    if (first || a.layer != currentLayer) {
      flushLayer();
      currentLayer = a.layer;
      layerBytes = 0;
      first = false;
    }
    layerBytes += a.bytes;
    totalElements += a.elements;
    totalBytes += a.bytes;
    std::string readers;
    llvm::raw_string_ostream rs(readers);
    llvm::interleave(a.readers, rs, "; ");
    os << llvm::formatv("  {0,-6}{1,-46}{2,-25}{3,-18}{4,14}  {5}\n",
                        layerText(a), a.name,
                        a.value.getDefiningOp()->getName().getStringRef(),
                        shapeOf(a.value), formatBytes(a.bytes), readers);
  }
  flushLayer();
  os << llvm::formatv("  saved_activation_elements {0} ({1})\n",
                      withCommas(totalElements), formatBytes(totalBytes));
  if (r.compiledArenaBytes)
    os << llvm::formatv(
        "  compiled arena {0} (tgc-plan-buffers on the bufferized "
        "step the executable runs)\n",
        formatBytes(*r.compiledArenaBytes));
  if (r.kernels && r.bytesMoved)
    os << llvm::formatv(
        "  kernels {0}, bytes moved {1} (the loop nests the target's "
        "schedule made of the step, and the buffers each reads and "
        "writes)\n",
        withCommas(*r.kernels), formatBytes(*r.bytesMoved));
  if (!r.kernelSources.empty()) {
    constexpr size_t kShown = 12;
    os << llvm::formatv("  most bytes moved (model module, op; all of them "
                        "in --json's bytes_moved_by_source):\n");
    for (const KernelSource &source :
         llvm::ArrayRef(r.kernelSources)
             .take_front(std::min(kShown, r.kernelSources.size())))
      os << llvm::formatv("    {0,-50}{1,-24}{2,8} kernels{3,14}\n",
                          source.module.empty() ? "(no module)" : source.module,
                          source.op, withCommas(source.kernels),
                          formatBytes(source.bytesMoved));
  }
}

void printSweepTable(llvm::raw_ostream &os, const StatsReport &r) {
  os << "\nRematerialisation sweep (planned peak of intermediates; weights and "
        "optimizer state not included)\n";
  os << llvm::formatv("  {0,-22}{1,14}{2,16}{3,20}{4,16}{5,10}\n", "plan",
                      "budget", "planned peak", "saved activations",
                      "extra FLOPs", "extra %");
  for (const RematSweepRow &row : *r.sweep) {
    std::string budget =
        row.budgetBytes >= 0 ? formatBytes(row.budgetBytes) : "-";
    if (!row.feasible) {
      os << llvm::formatv("  {0,-22}{1,14}  no plan fits\n", row.label, budget);
      continue;
    }
    os << llvm::formatv("  {0,-22}{1,14}{2,16}{3,20}{4,16}{5,9:F1}%\n",
                        row.label, budget, formatBytes(row.plannedPeak),
                        formatBytes(row.savedActivationBytes),
                        humanCount(row.extraFlops), row.extraFlopsPercent);
  }
}

} // namespace

void tgc::printStatsTable(llvm::raw_ostream &os, const StatsReport &report) {
  const StatsContext &c = report.context;
  const TrainingStats &s = report.stats;
  os << "Model        " << c.input;
  if (!c.modelType.empty())
    os << " (" << c.modelType << "), batch " << c.batchSize << " x seq "
       << c.seqLen << ", " << (c.precision == "fp32" ? c.dtype : c.precision)
       << ", " << c.optimizer;
  os << "\n";
  os << "Parameters   " << withCommas(s.parameters);
  if (c.idleExpertParameters)
    os << " (active per token "
       << withCommas(s.parameters - c.idleExpertParameters) << ")";
  if (s.frozenParameters)
    os << " (trainable " << withCommas(s.trainableParameters()) << ", frozen "
       << withCommas(s.frozenParameters) << ")";
  os << "\n\n";
  os << llvm::formatv("{0,-30}{1,22}{2,22}{3,22}\n", "One training step",
                      "forward", "backward", "optimizer");
  os << llvm::formatv("{0,-30}{1,22}{2,22}{3,22}\n", "matmul multiplications",
                      withCommas(s.forward.matmulMultiplications),
                      withCommas(s.backward.matmulMultiplications), "-");
  os << llvm::formatv("{0,-30}{1,22}{2,22}{3,22}\n", "FLOPs",
                      humanCount(s.forward.flops), humanCount(s.backward.flops),
                      humanCount(s.optimizer.flops));
  if (s.recompute.flops)
    os << llvm::formatv("{0,-30}{1,22}   (remat {2})\n", "FLOPs recomputed",
                        humanCount(s.recompute.flops), c.remat);
  if (s.processes)
    os << "\nMemory per process (ZeRO-" << (s.shardedParameters ? 3 : 1)
       << ", " << s.processes << " processes)\n";
  else
    os << "\nMemory\n";
  if (s.shardedParameters)
    os << llvm::formatv("  {0,-28}{1,16}   (this process's shards of {2})\n",
                        "parameters", formatBytes(s.heldParameterBytes),
                        formatBytes(s.parameterBytes));
  else if (s.frozenParameters)
    os << llvm::formatv("  {0,-28}{1,16}   (trainable {2}, frozen {3})\n",
                        "parameters", formatBytes(s.parameterBytes),
                        formatBytes(s.parameterBytes - s.frozenParameterBytes),
                        formatBytes(s.frozenParameterBytes));
  else
    os << llvm::formatv("  {0,-28}{1,16}\n", "parameters",
                        formatBytes(s.parameterBytes));
  if (s.gradientPeakBytes)
    os << llvm::formatv("  {0,-28}{1,16}   (in the planned peak: at most {2} "
                        "alive at once)\n",
                        "gradients", formatBytes(s.gradientBytes()),
                        formatBytes(s.gradientPeakBytes));
  else
    os << llvm::formatv("  {0,-28}{1,16}\n", "gradients",
                        formatBytes(s.gradientBytes()));
  if (s.shardedParameters)
    os << llvm::formatv("  {0,-28}{1,16}   (in the planned peak, {2} gathers "
                        "per step; at most {3} in flight while a layer "
                        "computes)\n",
                        "gathered parameters", formatBytes(s.gatheredPeakBytes),
                        s.parameterGathers, s.gathersInFlight);
  if (s.shardedParameters && s.prefetch.computeRate > 0)
    os << llvm::formatv(
        "  {0,-28}{1,16}   ({2} at {3:F1} GB/s and {4:F1} GFLOP/s a process: "
        "{5:F1} of {6:F1} ms of transfer not hidden)\n",
        "gather prefetch", s.prefetch.depth,
        s.prefetch.planned ? "planned" : "--gather-prefetch",
        s.prefetch.gatherBandwidth, s.prefetch.computeRate,
        1e3 * s.prefetch.exposedSeconds, 1e3 * s.prefetch.transferSeconds);
  os << llvm::formatv("  {0,-28}{1,16}{2}\n", "optimizer state",
                      formatBytes(s.optimizerStateBytes),
                      s.processes ? "   (this process's shards)" : "");
  os << llvm::formatv("  {0,-28}{1,16}   ({2} elements)\n", "saved activations",
                      formatBytes(s.savedActivationBytes),
                      withCommas(s.savedActivationElements));
  if (s.collectives && !s.reduceScatters)
    os << llvm::formatv("  {0,-28}{1,16}   (summed over the processes per "
                        "step, in {2} all-reduces)\n",
                        "communication", formatBytes(s.collectiveBytes),
                        s.collectives);
  else if (s.collectives && s.shardedParameters)
    os << llvm::formatv("  {0,-28}{1,16}   (whole tensors per step: {2} "
                        "reduce-scatters of gradients, {3} gathers of "
                        "parameters)\n",
                        "communication", formatBytes(s.collectiveBytes),
                        s.reduceScatters, s.parameterGathers);
  else if (s.collectives)
    os << llvm::formatv("  {0,-28}{1,16}   (gradients reduce-scattered and "
                        "parameters all-gathered per step, ZeRO-1: {2} + {3} "
                        "collectives)\n",
                        "communication", formatBytes(s.collectiveBytes),
                        s.reduceScatters, s.allGathers);
  os << llvm::formatv("  {0,-28}{1,16}   (remat {2}; most live at once {3})\n",
                      "planned peak", formatBytes(s.plannedPeakBytes), c.remat,
                      formatBytes(s.maxLiveBytes));
  os << llvm::formatv("  {0,-28}{1,16}   (parameters held, optimizer state "
                      "and planned peak)\n",
                      "total", formatBytes(s.heldParameterBytes +
                                           s.optimizerStateBytes +
                                           s.plannedPeakBytes));
  if (report.saved)
    printMemoryTable(os, report);
  if (report.sweep)
    printSweepTable(os, report);
}

void tgc::printStatsJson(llvm::raw_ostream &os, const StatsReport &report) {
  const StatsContext &c = report.context;
  const TrainingStats &s = report.stats;
  llvm::json::Object root{
      {"input", c.input},
      {"parameters", s.parameters},
      {"trainable_parameters", s.trainableParameters()},
      {"frozen_parameters", s.frozenParameters},
      {"active_parameters", s.parameters - c.idleExpertParameters},
      {"matmul_multiplications",
       llvm::json::Object{{"forward", s.forward.matmulMultiplications},
                          {"backward", s.backward.matmulMultiplications}}},
      {"flops", llvm::json::Object{{"forward", s.forward.flops},
                                   {"backward", s.backward.flops},
                                   {"optimizer", s.optimizer.flops},
                                   {"recompute", s.recompute.flops}}},
      {"memory",
       llvm::json::Object{
           {"parameters", s.parameterBytes},
           {"frozen_parameters", s.frozenParameterBytes},
           {"gradients", s.gradientBytes()},
           {"gradients_alive_at_once", s.gradientPeakBytes},
           {"optimizer_state", s.optimizerStateBytes},
           {"saved_activations", s.savedActivationBytes},
           {"peak", s.plannedPeakBytes},
           {"max_live", s.maxLiveBytes},
           {"parameters_held", s.heldParameterBytes},
           {"gathered_parameters_alive_at_once", s.gatheredPeakBytes},
           {"total", s.heldParameterBytes + s.optimizerStateBytes +
                         s.plannedPeakBytes}}},
      {"saved_activation_elements", s.savedActivationElements},
      {"communication",
       llvm::json::Object{
           {"collectives", s.collectives},
           {"reduce_scatters", s.reduceScatters},
           {"all_gathers", s.allGathers},
           {"parameter_gathers", s.parameterGathers},
           {"gathers_in_flight", s.gathersInFlight},
           {"prefetch_depth", s.prefetch.depth},
           {"prefetch_planned", s.prefetch.planned},
           {"gather_bandwidth_gbps", s.prefetch.gatherBandwidth},
           {"compute_rate_gflops", s.prefetch.computeRate},
           {"gather_transfer_seconds", s.prefetch.transferSeconds},
           {"gather_exposed_seconds", s.prefetch.exposedSeconds},
           {"processes", s.processes},
           {"bytes", s.collectiveBytes}}},
      {"remat", c.remat},
  };
  if (report.saved) {
    llvm::json::Array values;
    for (const SavedActivation &a : *report.saved) {
      llvm::json::Array readers;
      for (const std::string &reader : a.readers)
        readers.push_back(reader);
      llvm::json::Object value{
          {"name", a.name},
          {"op", a.value.getDefiningOp()->getName().getStringRef()},
          {"shape", shapeOf(a.value)},
          {"elements", a.elements},
          {"bytes", a.bytes},
          {"read_by", std::move(readers)}};
      if (a.layer)
        value["layer"] = *a.layer;
      values.push_back(std::move(value));
    }
    root["saved_activations"] = std::move(values);
    if (report.compiledArenaBytes)
      if (auto *memory = root.getObject("memory"))
        (*memory)["compiled_arena"] = *report.compiledArenaBytes;
    if (report.kernels)
      root["kernels"] = *report.kernels;
    if (report.bytesMoved)
      root["bytes_moved"] = *report.bytesMoved;
    if (!report.kernelSources.empty()) {
      llvm::json::Array sources;
      for (const KernelSource &source : report.kernelSources)
        sources.push_back(llvm::json::Object{{"module", source.module},
                                             {"op", source.op},
                                             {"kernels", source.kernels},
                                             {"bytes", source.bytesMoved}});
      root["bytes_moved_by_source"] = std::move(sources);
    }
  }
  if (report.sweep) {
    llvm::json::Array rows;
    for (const RematSweepRow &row : *report.sweep) {
      llvm::json::Object o{{"plan", row.label}, {"feasible", row.feasible}};
      if (row.budgetBytes >= 0)
        o["budget"] = row.budgetBytes;
      if (row.feasible) {
        o["peak"] = row.plannedPeak;
        o["saved_activations"] = row.savedActivationBytes;
        o["extra_flops"] = row.extraFlops;
        o["extra_flops_percent"] = row.extraFlopsPercent;
      }
      rows.push_back(std::move(o));
    }
    root["remat_sweep"] = std::move(rows);
  }
  if (!c.modelType.empty()) {
    root["model_type"] = c.modelType;
    root["batch_size"] = c.batchSize;
    root["seq_len"] = c.seqLen;
    root["dtype"] = c.dtype;
    root["precision"] = c.precision;
    root["optimizer"] = c.optimizer;
  }
  os << llvm::formatv("{0:2}", llvm::json::Value(std::move(root))) << "\n";
}

void tgc::writeMemoryTimeline(llvm::raw_ostream &os, mlir::func::FuncOp step) {
  mlir::tg::MemoryPlan plan = mlir::tg::planMemory(step);
  llvm::json::Array events;
  // One "microsecond" per op of the schedule.
  for (size_t i = 0; i < plan.schedule.size(); ++i) {
    mlir::Operation *op = plan.schedule[i];
    std::string name = op->getName().getStringRef().str();
    events.push_back(llvm::json::Object{
        {"name", name},
        {"ph", "X"},
        {"ts", static_cast<int64_t>(i)},
        {"dur", 1},
        {"pid", 1},
        {"tid", 1},
        {"args", llvm::json::Object{{"at", mlir::tg::getOpName(op)},
                                    {"live_bytes", plan.liveBytes[i]}}}});
    events.push_back(llvm::json::Object{
        {"name", "live bytes"},
        {"ph", "C"},
        {"ts", static_cast<int64_t>(i)},
        {"pid", 1},
        {"args", llvm::json::Object{{"bytes", plan.liveBytes[i]}}}});
  }
  events.push_back(llvm::json::Object{
      {"name", "peak " + formatBytes(plan.maxLiveBytes) + " live (arena " +
                   formatBytes(plan.arenaBytes) + ")"},
      {"ph", "i"},
      {"s", "g"},
      {"ts", plan.peakPosition},
      {"pid", 1},
      {"tid", 1}});
  os << llvm::formatv("{0}", llvm::json::Value(llvm::json::Object{
                                 {"traceEvents", std::move(events)},
                                 {"displayTimeUnit", "ns"}}))
     << "\n";
}

void tgc::writeRematSweepSvg(llvm::raw_ostream &os, const StatsReport &report) {
  const double width = 640, height = 420, left = 70, right = 20, top = 30,
               bottom = 50;
  double maxPeak = 1, maxExtra = 1;
  for (const RematSweepRow &row : *report.sweep)
    if (row.feasible) {
      maxPeak = std::max(maxPeak, static_cast<double>(row.plannedPeak));
      maxExtra = std::max(maxExtra, row.extraFlopsPercent);
    }
  maxExtra *= 1.1;
  auto x = [&](double peak) {
    return left + (width - left - right) * peak / maxPeak;
  };
  auto y = [&](double extra) {
    return height - bottom - (height - top - bottom) * extra / maxExtra;
  };
  os << llvm::formatv(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" "
      "height=\"{1}\" font-family=\"sans-serif\" font-size=\"11\">\n",
      width, height);
  os << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  os << llvm::formatv("<text x=\"{0}\" y=\"18\" font-size=\"13\">tgc remat "
                      "sweep: {1}</text>\n",
                      left, report.context.input);
  os << llvm::formatv("<line x1=\"{0}\" y1=\"{1}\" x2=\"{2}\" y2=\"{1}\" "
                      "stroke=\"black\"/>\n",
                      left, height - bottom, width - right);
  os << llvm::formatv("<line x1=\"{0}\" y1=\"{1}\" x2=\"{0}\" y2=\"{2}\" "
                      "stroke=\"black\"/>\n",
                      left, top, height - bottom);
  for (int i = 0; i <= 4; ++i) {
    double peak = maxPeak * i / 4, extra = maxExtra * i / 4;
    os << llvm::formatv("<text x=\"{0}\" y=\"{1}\" text-anchor=\"middle\">{2}"
                        "</text>\n",
                        x(peak), height - bottom + 15, formatBytes(peak));
    os << llvm::formatv("<text x=\"{0}\" y=\"{1}\" text-anchor=\"end\">{2:F1}%"
                        "</text>\n",
                        left - 5, y(extra) + 4, extra);
  }
  os << llvm::formatv(
      "<text x=\"{0}\" y=\"{1}\" text-anchor=\"middle\">planned "
      "peak of intermediates</text>\n",
      (left + width - right) / 2, height - 12);
  os << llvm::formatv("<text transform=\"translate(14,{0}) rotate(-90)\" "
                      "text-anchor=\"middle\">extra FLOPs (% of the step)"
                      "</text>\n",
                      (top + height - bottom) / 2);
  std::string points;
  for (const RematSweepRow &row : *report.sweep)
    if (row.feasible && row.budgetBytes >= 0)
      points += llvm::formatv("{0:F1},{1:F1} ", x(row.plannedPeak),
                              y(row.extraFlopsPercent))
                    .str();
  os << "<polyline fill=\"none\" stroke=\"steelblue\" stroke-width=\"2\" "
        "points=\""
     << points << "\"/>\n";
  for (const RematSweepRow &row : *report.sweep) {
    if (!row.feasible)
      continue;
    bool named = row.budgetBytes < 0;
    os << llvm::formatv("<circle cx=\"{0:F1}\" cy=\"{1:F1}\" r=\"{2}\" "
                        "fill=\"{3}\"><title>{4}: {5}, +{6:F1}% FLOPs</title>"
                        "</circle>\n",
                        x(row.plannedPeak), y(row.extraFlopsPercent),
                        named ? 5 : 3, named ? "darkorange" : "steelblue",
                        row.label, formatBytes(row.plannedPeak),
                        row.extraFlopsPercent);
    if (named)
      os << llvm::formatv("<text x=\"{0:F1}\" y=\"{1:F1}\">{2}</text>\n",
                          x(row.plannedPeak) + 7, y(row.extraFlopsPercent) - 6,
                          row.label);
  }
  os << "</svg>\n";
}
