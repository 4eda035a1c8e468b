//===- GenerateMain.cpp - the generation executable's loop ----------------===//
//
// tgc_generate_main: the main() of every executable `tgc MODEL
// --program=generate -o EXE` produces (its model-info file calls it). Binds
// the buffers of the compiled tgc_prefill / tgc_decode (tgc_generate_model),
// loads the weights, encodes the prompt, prefills the KV cache with it, then
// samples, prints and feeds back one token at a time until EOS,
// --max-new-tokens, a full cache or SIGINT/SIGTERM. The pieces:
// GenerateOptions (flags), GenerateBuffers, Sampler, TokenPrinter. See
// docs/runtime.md, Generation executables.
//
//===----------------------------------------------------------------------===//

#include "../Device.h"
#include "../Fatal.h"
#include "../StopSignals.h"
#include "../TileState.h"
#include "GenerateBuffers.h"
#include "GenerateOptions.h"
#include "Sampler.h"
#include "TokenPrinter.h"
#include "tgc/Runtime/GenerateABI.h"
#include "tgc/Runtime/Tokenizer.h"

#include <malloc.h>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

using namespace tgc::rt;

// libomp (linked into every executable) runs the model's parallel loops.
extern "C" void omp_set_num_threads(int);

namespace {

using Clock = std::chrono::steady_clock;

double msSince(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start)
      .count();
}

std::string readFile(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    die("--prompt-file: cannot read '" + path + "'");
  std::string text((std::istreambuf_iterator<char>(in)),
                   std::istreambuf_iterator<char>());
  if (in.bad())
    die("--prompt-file: cannot read '" + path + "'");
  return text;
}

/// --prompt-ids: decimal ids separated by white space, each below `vocab`.
std::vector<int32_t> parseIds(const std::string &text, int64_t vocab) {
  std::vector<int32_t> ids;
  std::istringstream in(text);
  std::string word;
  while (in >> word) {
    size_t digits = 0;
    while (digits < word.size() && word[digits] >= '0' && word[digits] <= '9')
      ++digits;
    if (digits == 0 || digits != word.size())
      die("--prompt-ids: expected decimal ids separated by white space, got '" +
          word + "'");
    if (digits > 18 || std::stoll(word) >= vocab)
      die("--prompt-ids: id " + word +
          " is out of range: the model's vocabulary has " +
          std::to_string(vocab) + " ids (0.." + std::to_string(vocab - 1) +
          ")");
    ids.push_back(static_cast<int32_t>(std::stoll(word)));
  }
  return ids;
}

/// The prompt's ids: --prompt-ids as given; text through the tokenizer
/// (with its special tokens), or as bytes for a byte-level model.
std::vector<int32_t> promptIds(const GenerateOptions &opt,
                               const tgc_generate_info &m,
                               const tok::Tokenizer *tokenizer) {
  if (opt.promptKind == GenerateOptions::PromptKind::Ids)
    return parseIds(opt.prompt, m.vocab_size);
  std::string text = opt.promptKind == GenerateOptions::PromptKind::File
                         ? readFile(opt.promptFile)
                         : opt.prompt;
  const char *flag = opt.promptKind == GenerateOptions::PromptKind::File
                         ? "--prompt-file"
                         : "--prompt";
  if (tokenizer) {
    if (size_t bad = tok::findInvalidUtf8(text); bad != std::string::npos)
      die(std::string(flag) + ": the text is not valid UTF-8 (at byte " +
          std::to_string(bad) + ")");
    std::vector<uint32_t> ids = tokenizer->encode(text, true);
    return std::vector<int32_t>(ids.begin(), ids.end());
  }
  if (m.vocab_size < 256)
    die(std::string(flag) + " needs --tokenizer: this model's vocabulary of " +
        std::to_string(m.vocab_size) +
        " ids is too small to read the text as bytes (or give --prompt-ids)");
  std::vector<int32_t> ids;
  for (unsigned char c : text)
    ids.push_back(c);
  return ids;
}

/// "1 new token", "2 new tokens".
std::string tokens(int64_t count, const char *kind) {
  return std::to_string(count) + " " + kind +
         (count == 1 ? " token" : " tokens");
}

const char *signalName(int signo) {
  return signo == SIGINT ? "SIGINT" : signo == SIGTERM ? "SIGTERM" : "signal";
}

} // namespace

extern "C" int tgc_generate_main(int argc, char **argv) {
  if (argc > 0)
    setProgramName(argv[0]);
  requestTileState();
  const tgc_generate_info &m = tgc_generate_model;
  GenerateOptions opt = parseGenerateOptions(argc, argv, m);
  if (opt.threads > 0)
    omp_set_num_threads(static_cast<int>(opt.threads));
  // As the training executable: the compiled calls allocate and free their
  // heap intermediates each call; keep the pages mapped between calls.
  mallopt(M_MMAP_THRESHOLD, 1 << 30);
  mallopt(M_TRIM_THRESHOLD, 1 << 30);
  uint64_t seed = opt.seedGiven ? opt.seed : m.seed;

  std::unique_ptr<tok::Tokenizer> tokenizer;
  if (!opt.tokenizer.empty()) {
    std::string error;
    tokenizer = tok::Tokenizer::load(opt.tokenizer, error);
    if (!tokenizer)
      die(error);
    if (tokenizer->vocabSize() > m.vocab_size)
      die(tokenizer->path() + ": the tokenizer has " +
          std::to_string(tokenizer->vocabSize()) +
          " ids but the model's vocabulary has " +
          std::to_string(m.vocab_size));
  }
  std::vector<int32_t> prompt = promptIds(opt, m, tokenizer.get());
  const int64_t n = static_cast<int64_t>(prompt.size());
  const int64_t L = m.cache_length, P = m.prefill_tokens, V = m.vocab_size;
  if (n == 0)
    die("the prompt is empty: generation needs at least one token to start "
        "from");
  if (n >= L)
    die("prompt of " + std::to_string(n) +
        " tokens does not fit the cache of " + std::to_string(L) +
        " positions (tgc --seq-len)");

  GenerateBuffers g;
  bindGenerateBuffers(m, g);
  catchStopSignals();
  if (opt.init.empty())
    std::fprintf(stderr,
                 "%s: note: no --init: the weights are random (the model "
                 "family's initialisation, seed %llu)\n",
                 programName(), (unsigned long long)seed);
  loadGenerateWeights(g, opt.init, seed);

  TokenPrinter::Mode mode = opt.printIds ? TokenPrinter::Mode::Ids
                            : tokenizer  ? TokenPrinter::Mode::Text
                            : V >= 256   ? TokenPrinter::Mode::Bytes
                                         : TokenPrinter::Mode::Ids;
  TokenPrinter printer(mode, tokenizer.get());
  SamplingSettings settings;
  settings.softcap = m.logit_softcap;
  settings.temperature = opt.temperature;
  settings.topK = opt.topK;
  settings.topP = opt.topP;
  settings.seed = seed;
  Sampler sampler(settings);
  std::optional<uint32_t> eos = tokenizer ? tokenizer->eosId() : std::nullopt;

  // Prefill: whole chunks of P tokens, then the rest one at a time; the
  // logits after the last prompt token give the first new token.
  int32_t *ids = g.ids(), *positions = g.positionsData();
  int64_t position = 0;
  Clock::time_point start = Clock::now();
  while (position + P <= n && !caughtStopSignal()) {
    for (int64_t k = 0; k < P; ++k) {
      ids[k] = prompt[position + k];
      positions[k] = static_cast<int32_t>(position + k);
    }
    g.call(tgc_prefill);
    position += P;
  }
  while (position < n && !caughtStopSignal()) {
    ids[0] = prompt[position];
    positions[0] = static_cast<int32_t>(position);
    g.call(tgc_decode);
    ++position;
  }
  double prefillMs = msSince(start);

  // Generation: sample, print, stop or feed the token back at the next
  // position. A stop signal during a call stops after the token it gives.
  std::FILE *logits = nullptr;
  if (!opt.dumpLogits.empty() &&
      !(logits = std::fopen(opt.dumpLogits.c_str(), "wb")))
    die(opt.dumpLogits + ": cannot write: " + std::strerror(errno));
  int64_t generated = 0, decodeCalls = 0;
  double decodeMs = 0;
  std::string stopped;
  if (int signo = caughtStopSignal())
    stopped = signalName(signo); // during prefill
  while (stopped.empty()) {
    if (generated == opt.maxNewTokens) {
      stopped = "--max-new-tokens";
      break;
    }
    if (logits && std::fwrite(g.logitsData(), sizeof(float), V, logits) !=
                      static_cast<size_t>(V))
      die(opt.dumpLogits + ": cannot write: " + std::strerror(errno));
    int64_t id = sampler.next(g.logitsData(), V);
    printer.add(static_cast<uint32_t>(id));
    ++generated;
    if (eos && id == *eos)
      stopped = "EOS";
    else if (int signo = caughtStopSignal())
      stopped = signalName(signo);
    else if (generated == opt.maxNewTokens)
      stopped = "--max-new-tokens";
    else if (position == L)
      stopped = "full cache";
    if (!stopped.empty())
      break;
    ids[0] = static_cast<int32_t>(id);
    positions[0] = static_cast<int32_t>(position);
    Clock::time_point t = Clock::now();
    g.call(tgc_decode);
    decodeMs += msSince(t);
    ++decodeCalls;
    ++position;
  }
  printer.finish();
  if (logits && std::fclose(logits) != 0)
    die(opt.dumpLogits + ": cannot write: " + std::strerror(errno));

  int signo = caughtStopSignal();
  if (signo)
    std::fprintf(stderr, "%s: %s: stopped after %s\n", programName(),
                 signalName(signo), tokens(generated, "new").c_str());
  else if (stopped == "full cache")
    std::fprintf(stderr,
                 "%s: the cache of %lld positions is full (tgc --seq-len): "
                 "stopped after %s\n",
                 programName(), (long long)L, tokens(generated, "new").c_str());
  if (!opt.quiet) {
    char speed[64] = "-";
    if (decodeCalls > 0 && decodeMs > 0)
      std::snprintf(speed, sizeof speed, "%.1f",
                    decodeCalls / (decodeMs / 1000));
    std::string device = tgc_device_description();
    std::fprintf(stderr,
                 "%s: %s, prefill %.1f ms; %s, decode %s tokens/s; "
                 "stopped: %s%s\n",
                 programName(), tokens(n, "prompt").c_str(), prefillMs,
                 tokens(generated, "new").c_str(), speed, stopped.c_str(),
                 device.empty() ? "" : ("; on " + device).c_str());
  }
  // As a shell reports a process the signal ended: 130 for SIGINT, 143 for
  // SIGTERM (also when it came after the last token).
  return signo ? 128 + signo : 0;
}
