//===- Data.h - training data for compiled steps ----------------*- C++ -*-===//
//
// Language models read a token stream (a text file as bytes, or a nanoGPT
// .bin of little-endian uint16 ids); the MLP reads CSV rows (label first) or
// a seeded synthetic data set. Batches depend only on (seed, step), so a
// resumed run sees exactly the batches of an uninterrupted one.
//
//===----------------------------------------------------------------------===//
#ifndef TGC_RUNTIME_DATA_H
#define TGC_RUNTIME_DATA_H

#include <cstdint>
#include <string>
#include <vector>

namespace tgc::rt {

/// splitmix64: a tiny counter-based generator for reproducible streams.
uint64_t mix64(uint64_t x);

class Rng {
public:
  explicit Rng(uint64_t seed) : state(seed) {}
  uint64_t next() { return mix64(state++); }
  double uniform() { return (next() >> 11) * (1.0 / 9007199254740992.0); }
  double normal();

private:
  uint64_t state;
  bool hasSpare = false;
  double spare = 0;
};

enum class DataOrder { Sequential, Random };

struct TokenData {
  std::vector<int32_t> tokens;
  std::string description;
};

/// Reads a token stream; `vocab` bounds the ids. False + `error` on failure.
bool loadTokens(const std::string &path, int64_t vocab, TokenData &data,
                std::string &error);

/// Fills ids/targets [batch, seq] for `step` (0-based) from `tokens`: rows
/// firstRow .. firstRow + batch - 1 of the step's global batch of
/// `globalBatch` rows (a data-parallel process's slice; all of it by
/// default).
void fillTokenBatch(const std::vector<int32_t> &tokens, int64_t batch,
                    int64_t seq, int64_t step, DataOrder order, uint64_t seed,
                    int32_t *ids, int32_t *targets, int64_t globalBatch = 0,
                    int64_t firstRow = 0);

struct TableData {
  int64_t features = 0;
  std::vector<float> x;   // rows × features
  std::vector<int32_t> y; // rows
  std::string description;
  int64_t rows() const { return static_cast<int64_t>(y.size()); }
};

/// Reads CSV rows "label,f1,...,fF". Checks the column count and labels.
bool loadCsv(const std::string &path, int64_t features, int64_t classes,
             TableData &data, std::string &error);

/// A seeded classification set: one Gaussian cluster per class.
TableData syntheticTable(int64_t rows, int64_t features, int64_t classes,
                         uint64_t seed);

void fillTableBatch(const TableData &data, int64_t batch, int64_t step,
                    DataOrder order, uint64_t seed, float *x, int32_t *y,
                    int64_t globalBatch = 0, int64_t firstRow = 0);

} // namespace tgc::rt

#endif // TGC_RUNTIME_DATA_H
