//===- LargePageAllocator.h - tables on transparent huge pages -*- C++ -*-===//
//
// A std::allocator that asks the kernel to back allocations of 2 MiB and more
// with transparent huge pages (madvise, for kernels set to "madvise"). The
// tokenizer's merge table, vocabulary and word cache are read at random, a
// few bytes per lookup: with 4 KiB pages nearly every lookup also misses the
// TLB, whose page walks cost more than the cache miss under virtualization.
//
//===----------------------------------------------------------------------===//
#ifndef TGC_RUNTIME_TOKENIZER_LARGEPAGEALLOCATOR_H
#define TGC_RUNTIME_TOKENIZER_LARGEPAGEALLOCATOR_H

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <sys/mman.h>

namespace tgc::rt::tok {

/// Advises huge pages for the 2 MiB-aligned part of [data, data + bytes):
/// for large buffers that are written once (fewer page faults).
inline void adviseHugePages(void *data, size_t bytes) {
#ifdef MADV_HUGEPAGE
  constexpr uintptr_t kHugePage = uintptr_t(2) << 20;
  uintptr_t first =
      (reinterpret_cast<uintptr_t>(data) + kHugePage - 1) & ~(kHugePage - 1);
  uintptr_t last =
      (reinterpret_cast<uintptr_t>(data) + bytes) & ~(kHugePage - 1);
  if (last > first) // advice only: failure is harmless
    ::madvise(reinterpret_cast<void *>(first), last - first, MADV_HUGEPAGE);
#endif
}

template <typename T> struct LargePageAllocator {
  using value_type = T;
  static constexpr size_t kHugePage = size_t(2) << 20;

  LargePageAllocator() = default;
  template <typename U> LargePageAllocator(const LargePageAllocator<U> &) {}

  T *allocate(size_t n) {
    size_t bytes = n * sizeof(T);
    if (bytes < kHugePage)
      return std::allocator<T>().allocate(n);
    size_t rounded = (bytes + kHugePage - 1) / kHugePage * kHugePage;
    void *p = std::aligned_alloc(kHugePage, rounded);
    if (!p) {
      std::fprintf(stderr,
                   "error: out of memory (%zu bytes for a tokenizer "
                   "table)\n",
                   rounded);
      std::abort();
    }
    adviseHugePages(p, rounded);
    return static_cast<T *>(p);
  }
  void deallocate(T *p, size_t n) {
    if (n * sizeof(T) < kHugePage)
      return std::allocator<T>().deallocate(p, n);
    std::free(p);
  }
  template <typename U> bool operator==(const LargePageAllocator<U> &) const {
    return true;
  }
  template <typename U> bool operator!=(const LargePageAllocator<U> &) const {
    return false;
  }
};

} // namespace tgc::rt::tok

#endif // TGC_RUNTIME_TOKENIZER_LARGEPAGEALLOCATOR_H
