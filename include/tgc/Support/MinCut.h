//===- MinCut.h - minimum s-t cuts (Dinic's maximum flow) -------*- C++ -*-===//
//
// Graph-agnostic: nodes are integers, capacities int64_t. tg-remat builds
// its "keep or recompute" graph on top (lib/Dialect/TG/Transforms/Remat.cpp).
//
//===----------------------------------------------------------------------===//
#ifndef TGC_SUPPORT_MINCUT_H
#define TGC_SUPPORT_MINCUT_H

#include <cstdint>
#include <vector>

namespace tgc {

class MinCut {
public:
  /// A capacity no finite cut reaches (edges that must not be cut).
  static constexpr int64_t kInfinite = int64_t(1) << 60;

  explicit MinCut(int numNodes);

  /// A directed edge `from` → `to` of `capacity` (>= 0).
  void addEdge(int from, int to, int64_t capacity);

  /// Computes a maximum flow from `source` to `sink` and returns the source
  /// side of the minimum cut it leaves (nodes still reachable from the
  /// source in the residual graph). Call once.
  std::vector<bool> solve(int source, int sink);

  /// The value of the flow solve() pushed (= the capacity of the cut).
  int64_t flow() const { return totalFlow; }

private:
  struct Edge {
    int to;
    int64_t capacity;
    int reverse;
  };
  bool levelGraph(int source, int sink);
  int64_t augment(int v, int sink, int64_t limit);

  std::vector<std::vector<Edge>> edges;
  std::vector<int> level, next;
  int64_t totalFlow = 0;
};

} // namespace tgc

#endif // TGC_SUPPORT_MINCUT_H
