//===- Chunking.h - splitting work into balanced chunks ---------*- C++ -*-===//
#ifndef TGC_SUPPORT_CHUNKING_H
#define TGC_SUPPORT_CHUNKING_H

#include <cstdint>

namespace tgc {

/// The chunk size for `total` entries of `bytesPerEntry` bytes each: at most
/// `maxBytes` per chunk but at least `minEntries` entries (never more than
/// `total`, never less than 1), then as many chunks as that takes, of
/// balanced sizes (no short last chunk).
int64_t balancedChunkSize(int64_t total, int64_t bytesPerEntry,
                          int64_t maxBytes, int64_t minEntries);

} // namespace tgc

#endif // TGC_SUPPORT_CHUNKING_H
