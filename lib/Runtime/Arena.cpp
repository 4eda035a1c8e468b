//===- Arena.cpp - the allocator behind tgc-plan-buffers ------------------===//
//
// The compiled step gets its planned buffers from tgc_arena_alloc(offset)
// and releases every buffer with tgc_arena_release (see the pass
// descriptions of tgc-plan-buffers and tgc-lower-arena-allocs). The arena is
// mapped on the first call, once per run, with the size the compiled object
// defines (tgc_arena_bytes).
//
//===----------------------------------------------------------------------===//

#include "tgc/Runtime/ABI.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>

extern "C" {

namespace {
char *arenaBase = nullptr;
}

void *tgc_arena_alloc(int64_t offset) {
  if (!arenaBase) {
    size_t bytes = (static_cast<size_t>(tgc_arena_bytes) + 63) / 64 * 64;
    arenaBase = static_cast<char *>(std::aligned_alloc(64, bytes ? bytes : 64));
    if (!arenaBase) {
      std::fprintf(stderr,
                   "error: out of memory allocating the %lld-byte arena\n",
                   static_cast<long long>(tgc_arena_bytes));
      std::exit(1);
    }
  }
  return arenaBase + offset;
}

void tgc_arena_release(void *pointer) {
  char *p = static_cast<char *>(pointer);
  if (arenaBase && p >= arenaBase && p < arenaBase + tgc_arena_bytes)
    return;
  std::free(pointer);
}
}
