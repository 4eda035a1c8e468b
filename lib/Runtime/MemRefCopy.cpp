//===- MemRefCopy.cpp - the copy routine lowered memref.copy calls --------===//
//
// MLIR lowers a memref.copy between non-contiguous (strided) buffers to a
// call of `memrefCopy` with unranked descriptors; upstream ships it in
// libmlir_c_runner_utils. Training executables are standalone, so the
// runtime provides its own: a strided copy over any rank.
//
//===----------------------------------------------------------------------===//

#include <cstdint>
#include <cstring>
#include <vector>

namespace {
struct UnrankedMemRef {
  int64_t rank;
  void *descriptor;
};

/// Views the ranked descriptor {allocated, aligned, offset, sizes[],
/// strides[]}.
struct View {
  char *aligned;
  int64_t offset;
  const int64_t *sizes;
  const int64_t *strides;
  explicit View(const UnrankedMemRef &m) {
    auto *words = static_cast<int64_t *>(m.descriptor);
    aligned = reinterpret_cast<char *>(words[1]);
    offset = words[2];
    sizes = words + 3;
    strides = words + 3 + m.rank;
  }
};
} // namespace

extern "C" void memrefCopy(int64_t elementSize, UnrankedMemRef *src,
                           UnrankedMemRef *dst) {
  int64_t rank = src->rank;
  View s(*src), d(*dst);
  int64_t total = 1;
  for (int64_t i = 0; i < rank; ++i)
    total *= s.sizes[i];
  if (total == 0)
    return;
  std::vector<int64_t> index(rank, 0);
  for (int64_t n = 0; n < total; ++n) {
    int64_t so = s.offset, dof = d.offset;
    for (int64_t i = 0; i < rank; ++i) {
      so += index[i] * s.strides[i];
      dof += index[i] * d.strides[i];
    }
    std::memcpy(d.aligned + dof * elementSize, s.aligned + so * elementSize,
                elementSize);
    for (int64_t i = rank - 1; i >= 0; --i) {
      if (++index[i] < s.sizes[i])
        break;
      index[i] = 0;
    }
  }
}
