//===- Data.cpp - training data for compiled steps ------------------------===//

#include "Data.h"
#include "Files.h"

#include <cerrno>
#include <cmath>
#include <cstring>
#include <sstream>

using namespace tgc::rt;

uint64_t tgc::rt::mix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

double Rng::normal() {
  if (hasSpare) {
    hasSpare = false;
    return spare;
  }
  double u1 = uniform(), u2 = uniform();
  if (u1 < 1e-300)
    u1 = 1e-300;
  double r = std::sqrt(-2.0 * std::log(u1));
  spare = r * std::sin(2 * M_PI * u2);
  hasSpare = true;
  return r * std::cos(2 * M_PI * u2);
}

namespace {

bool endsWith(const std::string &s, const std::string &suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

/// Start of row `i` of `step`: sequential windows, or random ones drawn
/// from a stream keyed by (seed, step, row).
int64_t windowStart(int64_t span, int64_t width, int64_t batch, int64_t step,
                    int64_t row, DataOrder order, uint64_t seed) {
  if (order == DataOrder::Sequential)
    return ((step * batch + row) * width) % span;
  return static_cast<int64_t>(mix64(seed ^ mix64(step * 1000003 + row)) % span);
}
} // namespace

bool tgc::rt::loadTokens(const std::string &path, int64_t vocab,
                         TokenData &data, std::string &error) {
  std::string bytes;
  if (!readFileBytes(path, bytes, error))
    return false;
  data.tokens.clear();
  if (endsWith(path, ".bin")) {
    if (bytes.size() % 2) {
      error =
          path +
          ": a .bin token file holds little-endian uint16 ids, but its size (" +
          std::to_string(bytes.size()) + " bytes) is odd";
      return false;
    }
    data.tokens.resize(bytes.size() / 2);
    for (size_t i = 0; i < data.tokens.size(); ++i) {
      uint16_t id =
          uint8_t(bytes[2 * i]) | (uint16_t(uint8_t(bytes[2 * i + 1])) << 8);
      if (id >= vocab) {
        error = path + ": token " + std::to_string(id) + " at position " +
                std::to_string(i) + " is outside the model's vocabulary of " +
                std::to_string(vocab);
        return false;
      }
      data.tokens[i] = id;
    }
    data.description =
        path + " (" + std::to_string(data.tokens.size()) + " uint16 tokens)";
  } else {
    if (vocab < 256) {
      error =
          path +
          ": a text file is read as bytes, which needs vocab_size >= 256 (the "
          "model has " +
          std::to_string(vocab) + "); use a .bin token file";
      return false;
    }
    data.tokens.assign(bytes.begin(), bytes.end());
    for (int32_t &t : data.tokens)
      t &= 0xFF;
    data.description =
        path + " (" + std::to_string(data.tokens.size()) + " bytes)";
  }
  return true;
}

void tgc::rt::fillTokenBatch(const std::vector<int32_t> &tokens, int64_t batch,
                             int64_t seq, int64_t step, DataOrder order,
                             uint64_t seed, int32_t *ids, int32_t *targets,
                             int64_t globalBatch, int64_t firstRow) {
  int64_t span = static_cast<int64_t>(tokens.size()) - seq; // windows of seq+1
  if (globalBatch <= 0)
    globalBatch = batch;
  for (int64_t i = 0; i < batch; ++i) {
    int64_t start =
        windowStart(span, seq, globalBatch, step, firstRow + i, order, seed);
    for (int64_t s = 0; s < seq; ++s) {
      ids[i * seq + s] = tokens[start + s];
      targets[i * seq + s] = tokens[start + s + 1];
    }
  }
}

bool tgc::rt::loadCsv(const std::string &path, int64_t features,
                      int64_t classes, TableData &data, std::string &error) {
  std::string text;
  if (!readFileBytes(path, text, error))
    return false;
  std::istringstream in(text);
  data = TableData();
  data.features = features;
  std::string line;
  int64_t lineNo = 0;
  while (std::getline(in, line)) {
    ++lineNo;
    if (line.empty() || line[0] == '#')
      continue;
    std::vector<double> values;
    const char *p = line.c_str();
    while (*p) {
      char *end = nullptr;
      errno = 0;
      double v = std::strtod(p, &end);
      if (end == p || errno) {
        error = path + ":" + std::to_string(lineNo) + ": column " +
                std::to_string(values.size() + 1) + " is not a number";
        return false;
      }
      values.push_back(v);
      p = end;
      while (*p == ' ' || *p == '\t' || *p == '\r')
        ++p;
      if (*p == ',')
        ++p;
      else if (*p) {
        error = path + ":" + std::to_string(lineNo) +
                ": expected ',' after column " + std::to_string(values.size());
        return false;
      }
    }
    if (static_cast<int64_t>(values.size()) != features + 1) {
      error = path + ":" + std::to_string(lineNo) + ": expected " +
              std::to_string(features + 1) + " columns (label, then " +
              std::to_string(features) + " features), got " +
              std::to_string(values.size());
      return false;
    }
    double label = values[0];
    if (label != std::floor(label) || label < 0 || label >= classes) {
      error = path + ":" + std::to_string(lineNo) + ": label " +
              std::to_string(label) + " is not a class in [0, " +
              std::to_string(classes) + ")";
      return false;
    }
    data.y.push_back(static_cast<int32_t>(label));
    for (int64_t f = 0; f < features; ++f)
      data.x.push_back(static_cast<float>(values[f + 1]));
  }
  if (data.y.empty()) {
    error = path + ": no data rows";
    return false;
  }
  data.description = path + " (" + std::to_string(data.rows()) + " rows)";
  return true;
}

TableData tgc::rt::syntheticTable(int64_t rows, int64_t features,
                                  int64_t classes, uint64_t seed) {
  TableData data;
  data.features = features;
  Rng rng(seed ^ 0x5EED);
  std::vector<float> centers(classes * features);
  for (float &c : centers)
    c = static_cast<float>(rng.normal());
  for (int64_t r = 0; r < rows; ++r) {
    int32_t label = static_cast<int32_t>(rng.next() % classes);
    data.y.push_back(label);
    for (int64_t f = 0; f < features; ++f)
      data.x.push_back(centers[label * features + f] +
                       static_cast<float>(rng.normal()));
  }
  data.description = "synthetic Gaussian clusters (" + std::to_string(rows) +
                     " rows, seed " + std::to_string(seed) + ")";
  return data;
}

void tgc::rt::fillTableBatch(const TableData &data, int64_t batch, int64_t step,
                             DataOrder order, uint64_t seed, float *x,
                             int32_t *y, int64_t globalBatch,
                             int64_t firstRow) {
  if (globalBatch <= 0)
    globalBatch = batch;
  for (int64_t i = 0; i < batch; ++i) {
    int64_t row = windowStart(data.rows(), 1, globalBatch, step, firstRow + i,
                              order, seed);
    y[i] = data.y[row];
    std::memcpy(x + i * data.features, &data.x[row * data.features],
                sizeof(float) * data.features);
  }
}
