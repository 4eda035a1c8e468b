//===- MinCut.cpp - minimum s-t cuts (Dinic's maximum flow) ---------------===//

#include "tgc/Support/MinCut.h"

#include <algorithm>
#include <queue>

using namespace tgc;

MinCut::MinCut(int numNodes)
    : edges(numNodes), level(numNodes), next(numNodes) {}

void MinCut::addEdge(int from, int to, int64_t capacity) {
  edges[from].push_back({to, capacity, static_cast<int>(edges[to].size())});
  edges[to].push_back({from, 0, static_cast<int>(edges[from].size()) - 1});
}

std::vector<bool> MinCut::solve(int source, int sink) {
  while (levelGraph(source, sink)) {
    std::fill(next.begin(), next.end(), 0);
    while (int64_t pushed = augment(source, sink, kInfinite))
      totalFlow += pushed;
  }
  std::vector<bool> sourceSide(edges.size(), false);
  std::vector<int> stack{source};
  sourceSide[source] = true;
  while (!stack.empty()) {
    int v = stack.back();
    stack.pop_back();
    for (const Edge &e : edges[v])
      if (e.capacity > 0 && !sourceSide[e.to]) {
        sourceSide[e.to] = true;
        stack.push_back(e.to);
      }
  }
  return sourceSide;
}

bool MinCut::levelGraph(int source, int sink) {
  std::fill(level.begin(), level.end(), -1);
  std::queue<int> queue;
  level[source] = 0;
  queue.push(source);
  while (!queue.empty()) {
    int v = queue.front();
    queue.pop();
    for (const Edge &e : edges[v])
      if (e.capacity > 0 && level[e.to] < 0) {
        level[e.to] = level[v] + 1;
        queue.push(e.to);
      }
  }
  return level[sink] >= 0;
}

int64_t MinCut::augment(int v, int sink, int64_t limit) {
  if (v == sink)
    return limit;
  for (int &i = next[v]; i < static_cast<int>(edges[v].size()); ++i) {
    Edge &e = edges[v][i];
    if (e.capacity <= 0 || level[e.to] != level[v] + 1)
      continue;
    int64_t pushed = augment(e.to, sink, std::min(limit, e.capacity));
    if (pushed > 0) {
      e.capacity -= pushed;
      edges[e.to][e.reverse].capacity += pushed;
      return pushed;
    }
  }
  return 0;
}
