//===- Format.cpp - numbers for people ------------------------------------===//

#include "tgc/Support/Format.h"

#include "llvm/Support/FormatVariadic.h"

std::string tgc::formatBytes(int64_t bytes) {
  const char *units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(bytes);
  int u = 0;
  while (v >= 1024 && u < 4) {
    v /= 1024;
    ++u;
  }
  return llvm::formatv("{0:F2} {1}", v, units[u]).str();
}

std::string tgc::withCommas(int64_t n) {
  std::string digits = std::to_string(n), out;
  int count = 0;
  for (auto it = digits.rbegin(); it != digits.rend(); ++it) {
    if (count && count % 3 == 0 && *it != '-')
      out.insert(out.begin(), ',');
    out.insert(out.begin(), *it);
    ++count;
  }
  return out;
}

std::string tgc::humanCount(int64_t n) {
  double v = static_cast<double>(n);
  if (v >= 1e12)
    return llvm::formatv("{0:F2} T", v / 1e12).str();
  if (v >= 1e9)
    return llvm::formatv("{0:F2} G", v / 1e9).str();
  if (v >= 1e6)
    return llvm::formatv("{0:F2} M", v / 1e6).str();
  return withCommas(n);
}
