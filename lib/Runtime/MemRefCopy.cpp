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

/// The copy's dimensions with unit ones dropped and neighbours that are
/// contiguous in both buffers merged (a run of whole rows is one run of
/// elements); the innermost then often has unit strides on both sides and
/// is copied with one memcpy per run.
struct Dims {
  static constexpr int kMaxRank = 16;
  int rank = 0;
  int64_t sizes[kMaxRank], src[kMaxRank], dst[kMaxRank];
};

bool collapse(int64_t rank, const View &s, const View &d, Dims &out) {
  if (rank > Dims::kMaxRank)
    return false;
  for (int64_t i = 0; i < rank; ++i) {
    if (s.sizes[i] == 1)
      continue;
    int r = out.rank;
    if (r > 0 && out.src[r - 1] == s.sizes[i] * s.strides[i] &&
        out.dst[r - 1] == s.sizes[i] * d.strides[i]) {
      out.sizes[r - 1] *= s.sizes[i];
      out.src[r - 1] = s.strides[i];
      out.dst[r - 1] = d.strides[i];
      continue;
    }
    out.sizes[r] = s.sizes[i];
    out.src[r] = s.strides[i];
    out.dst[r] = d.strides[i];
    ++out.rank;
  }
  return true;
}

} // namespace

extern "C" void memrefCopy(int64_t elementSize, UnrankedMemRef *src,
                           UnrankedMemRef *dst) {
  int64_t rank = src->rank;
  View s(*src), d(*dst);
  for (int64_t i = 0; i < rank; ++i)
    if (s.sizes[i] == 0)
      return;
  char *from = s.aligned + s.offset * elementSize;
  char *to = d.aligned + d.offset * elementSize;
  Dims dims;
  if (!collapse(rank, s, d, dims)) {
    // Beyond any rank MLIR emits here: element by element.
    std::vector<int64_t> index(rank, 0);
    for (;;) {
      int64_t so = 0, dof = 0;
      for (int64_t i = 0; i < rank; ++i) {
        so += index[i] * s.strides[i];
        dof += index[i] * d.strides[i];
      }
      std::memcpy(to + dof * elementSize, from + so * elementSize, elementSize);
      int64_t i = rank - 1;
      for (; i >= 0; --i) {
        if (++index[i] < s.sizes[i])
          break;
        index[i] = 0;
      }
      if (i < 0)
        return;
    }
  }
  // The innermost dimension: one memcpy when contiguous in both buffers.
  int inner = dims.rank - 1;
  bool contiguous =
      dims.rank == 0 || (dims.src[inner] == 1 && dims.dst[inner] == 1);
  int64_t runBytes = contiguous
                         ? (dims.rank ? dims.sizes[inner] : 1) * elementSize
                         : elementSize;
  int outer = contiguous ? inner : dims.rank;
  if (outer < 0)
    outer = 0;
  int64_t index[Dims::kMaxRank] = {};
  int64_t so = 0, dof = 0;
  for (;;) {
    std::memcpy(to + dof * elementSize, from + so * elementSize, runBytes);
    int i = outer - 1;
    for (; i >= 0; --i) {
      so += dims.src[i];
      dof += dims.dst[i];
      if (++index[i] < dims.sizes[i])
        break;
      so -= dims.sizes[i] * dims.src[i];
      dof -= dims.sizes[i] * dims.dst[i];
      index[i] = 0;
    }
    if (i < 0)
      return;
  }
}
