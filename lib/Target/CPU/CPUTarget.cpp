//===- CPUTarget.cpp - what the code generator knows of a CPU -------------===//
//
// This machine's vector unit and caches (cpuid through LLVM, sysfs), or an
// --mcpu's from LLVM's description of it.
//
//===----------------------------------------------------------------------===//

#include "tgc/Target/CPU/CPUTarget.h"
#include "tgc/Target/Host/HostCode.h"

#include "llvm/MC/MCSubtargetInfo.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Threading.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/TargetParser/Triple.h"

using namespace tgc;
using namespace tgc::cpu;

namespace {
/// Size in bytes of this machine's cache of `level` and `type` ("Data" or
/// "Unified"), from sysfs; 0 if unknown.
int64_t hostCacheBytes(int level, llvm::StringRef type) {
  for (int index = 0; index < 8; ++index) {
    std::string dir = "/sys/devices/system/cpu/cpu0/cache/index" +
                      std::to_string(index) + "/";
    auto read = [&](const char *file) -> std::string {
      auto buffer = llvm::MemoryBuffer::getFile(dir + file, /*IsText=*/true);
      return buffer ? (*buffer)->getBuffer().trim().str() : "";
    };
    std::string levelText = read("level");
    if (levelText.empty())
      break;
    if (levelText != std::to_string(level) || read("type") != type)
      continue;
    std::string sizeText = read("size");
    llvm::StringRef size = sizeText;
    int64_t value = 0;
    int64_t scale = size.consume_back("K")   ? 1024
                    : size.consume_back("M") ? 1 << 20
                                             : 1;
    if (size.getAsInteger(10, value) || value <= 0)
      return 0;
    return value * scale;
  }
  return 0;
}
} // namespace

std::optional<CPUDescription> tgc::cpu::describeCPU(const std::string &cpu,
                                                    std::string &error) {
  std::unique_ptr<llvm::TargetMachine> tm =
      host::createTargetMachine(cpu, error);
  if (!tm)
    return std::nullopt;
  CPUDescription d;
  d.name = tm->getTargetCPU().str();
  const llvm::MCSubtargetInfo *info = tm->getMCSubtargetInfo();
  auto has = [&](llvm::StringRef feature) {
    return info->checkFeatures(("+" + feature).str());
  };
  llvm::Triple triple = tm->getTargetTriple();
  d.vectorBits = host::widestVectorBits(*tm);
  if (triple.isX86()) {
    d.vectorRegisters = has("avx512f") ? 32 : 16;
    d.amx = has("amx-tile") && has("amx-bf16");
    d.avx512bf16 = has("avx512bf16");
  } else if (triple.isAArch64()) {
    d.vectorRegisters = 32;
  }
  if (cpu.empty() || cpu == "native") {
    if (int64_t l1 = hostCacheBytes(1, "Data"))
      d.l1CacheBytes = l1;
    if (int64_t l2 = hostCacheBytes(2, "Unified"))
      d.l2CacheBytes = l2;
    // OpenMP's default thread count: the CPUs this process may run on.
    d.threads = llvm::hardware_concurrency().compute_thread_count();
  }
  return d;
}

double tgc::cpu::estimateStepGflops(const CPUDescription &cpu) {
  double lanes = cpu.vectorBits / 32.0;
  double perCore = lanes * 2 /*pipes*/ * 2 /*flops an FMA*/ * 3.0 * 0.4;
  return perCore * static_cast<double>(std::max<int64_t>(cpu.threads, 1));
}
