//===- Chunking.cpp - splitting work into balanced chunks -----------------===//

#include "tgc/Support/Chunking.h"

#include <algorithm>

int64_t tgc::balancedChunkSize(int64_t total, int64_t bytesPerEntry,
                               int64_t maxBytes, int64_t minEntries) {
  int64_t chunk =
      std::max(minEntries, maxBytes / std::max<int64_t>(1, bytesPerEntry));
  chunk = std::max<int64_t>(1, std::min(chunk, total));
  int64_t chunks = (total + chunk - 1) / chunk;
  return (total + chunks - 1) / chunks;
}
