//===- Batches.cpp - feeding the compiled step ----------------------------===//

#include "Batches.h"
#include "Distributed.h"
#include "Fatal.h"
#include "TokenizedText.h"

#include <cstring>

using namespace tgc::rt;

namespace {

/// A token file read as --data is read: bytes, a .bin of ids, or a text
/// through --tokenizer (cached beside it). Stops naming the file when it
/// cannot be read or holds fewer tokens than one sequence needs; `flag`
/// prefixes the message ("--eval-data ", or nothing for --data).
TokenData loadTokenFile(const tgc_model_info &m, const Options &opt,
                        const std::string &path, const std::string &flag,
                        const std::string &purpose) {
  TokenData data;
  std::string error;
  bool loaded = opt.tokenizer.empty()
                    ? loadTokens(path, m.vocab_size, data, error)
                    : loadTokenizedText(path, opt.tokenizer, m.vocab_size,
                                        opt.threads, data, error);
  if (!loaded)
    die(flag + error);
  int64_t S = m.seq_len;
  if (static_cast<int64_t>(data.tokens.size()) < S + 2)
    die(flag + path + ": " + std::to_string(data.tokens.size()) +
        " tokens is too few for " + purpose + "sequences of " +
        std::to_string(S) + " (need at least " + std::to_string(S + 2) + ")");
  return data;
}

} // namespace

Dataset tgc::rt::loadData(const tgc_model_info &m, const Options &opt,
                          uint64_t seed) {
  Dataset d;
  d.lm = std::strcmp(m.model_type, "mlp") != 0;
  int64_t S = m.seq_len;
  std::string error;
  if (d.lm) {
    std::string path =
        opt.data.empty() ? "/usr/share/common-licenses/GPL-3" : opt.data;
    d.tokens = loadTokenFile(m, opt, path, "", "");
  } else if (!opt.tokenizer.empty()) {
    die("--tokenizer: the model (" + std::string(m.model_type) +
        ") is not a language model");
  } else if (!opt.data.empty()) {
    if (!loadCsv(opt.data, m.num_features, m.vocab_size, d.table, error))
      die(error);
  } else {
    d.table = syntheticTable(8192, m.num_features, m.vocab_size, seed);
  }
  if (!opt.evalEvery)
    return d;
  // --eval-data: the held-out data is that file's, all of --data trains.
  if (!opt.evalData.empty()) {
    if (d.lm) {
      d.evalTokens = loadTokenFile(m, opt, opt.evalData, "--eval-data ",
                                   "one evaluation batch of ");
    } else if (!loadCsv(opt.evalData, m.num_features, m.vocab_size,
                        d.evalTable, error)) {
      die("--eval-data " + error);
    }
    return d;
  }
  if (d.lm) {
    std::vector<int32_t> &all = d.tokens.tokens;
    size_t cut = all.size() * 9 / 10;
    if (static_cast<int64_t>(all.size() - cut) < S + 2)
      die("--eval-every: the held-out 10% of the data is shorter than one "
          "sequence");
    d.evalTokens.tokens.assign(all.begin() + cut, all.end());
    all.resize(cut);
  } else {
    TableData &t = d.table;
    int64_t cut = t.rows() * 9 / 10;
    if (cut < 1 || t.rows() - cut < 1)
      die("--eval-every: too few rows to hold out 10%");
    d.evalTable.features = t.features;
    d.evalTable.y.assign(t.y.begin() + cut, t.y.end());
    d.evalTable.x.assign(t.x.begin() + cut * t.features, t.x.end());
    t.y.resize(cut);
    t.x.resize(cut * t.features);
  }
  return d;
}

void tgc::rt::fillBatch(const tgc_model_info &m, const Dataset &d,
                        StepBuffers &s, const Options &opt, uint64_t seed,
                        int64_t step, bool eval) {
  DataOrder order = eval ? DataOrder::Sequential : opt.order;
  // Each process of a data-parallel job takes its slice of the global
  // batch: together they see what one process with all of it would.
  int64_t globalBatch = m.batch_size * tgc_dist_size();
  int64_t firstRow = m.batch_size * tgc_dist_rank();
  int32_t *targets = nullptr;
  int64_t count = m.batch_size;
  if (d.lm) {
    targets = static_cast<int32_t *>(s.buffers[s.targets].data);
    count *= m.seq_len;
    fillTokenBatch(eval ? d.evalTokens.tokens : d.tokens.tokens, m.batch_size,
                   m.seq_len, step, order, seed,
                   static_cast<int32_t *>(s.buffers[s.ids].data), targets,
                   globalBatch, firstRow);
  } else {
    targets = static_cast<int32_t *>(s.buffers[s.labels].data);
    fillTableBatch(eval ? d.evalTable : d.table, m.batch_size, step, order,
                   seed, static_cast<float *>(s.buffers[s.features].data),
                   targets, globalBatch, firstRow);
  }
  if (s.dpWeight >= 0) {
    // The loss is a mean over the global count of targets that are class
    // ids (an ignore_index, outside [0, vocab), counts for no process).
    double counts[1] = {0};
    for (int64_t i = 0; i < count; ++i)
      counts[0] += targets[i] >= 0 && targets[i] < m.vocab_size;
    double local = counts[0];
    tgc_dist_sum(counts, 1);
    *static_cast<float *>(s.buffers[s.dpWeight].data) =
        counts[0] > 0 ? static_cast<float>(local / counts[0])
                      : 1.0f / tgc_dist_size();
    upload(s.buffers[s.dpWeight]);
  }
  for (int i : {s.ids, s.targets, s.features, s.labels})
    if (i >= 0)
      upload(s.buffers[i]);
}
