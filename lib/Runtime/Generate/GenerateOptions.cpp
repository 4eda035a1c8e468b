//===- GenerateOptions.cpp - the generation executable's flags ------------===//

#include "GenerateOptions.h"
#include "../Fatal.h"
#include "../Flags.h"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>

using namespace tgc::rt;

static void usage(const tgc_generate_info &m) {
  std::printf(
      "usage: %s [options] --prompt TEXT | --prompt-ids IDS | --prompt-file "
      "FILE\n\n"
      "Generates text with the compiled model (%s, vocabulary %lld, KV "
      "cache\nof %lld positions, prefill in chunks of %lld tokens).\n\n"
      R"(  --init PATH            weights by Hugging Face name: a .safetensors file,
                         a sharded checkpoint's model.safetensors.index.json,
                         or a model directory with either (f32, bf16 or f16
                         tensors). Without it the weights are random (the
                         model family's initialisation, seeded by --seed)
  --tokenizer PATH       a Hugging Face tokenizer.json (or a directory holding
                         one): encodes the prompt with its special tokens,
                         prints text, and stops at its EOS token
  --prompt TEXT          the prompt, encoded by --tokenizer. Without one, a
                         model of >= 256 ids is byte-level (as training reads
                         text without a tokenizer): the text's bytes are the
                         ids, and new ids < 256 print as bytes (larger ones
                         print nothing; see --print-ids)
  --prompt-ids IDS       the prompt's ids, separated by white space (each
                         below the vocabulary size)
  --prompt-file FILE     the prompt's text from FILE (as --prompt)
  --max-new-tokens N     stop after N new tokens (default 64); generation also
                         stops at EOS and when the cache is full
  --temperature T        divide the logits by T before sampling (default 1);
                         0: greedy (the most likely id, the lowest on ties)
  --top-k K              sample among the K most likely ids (default 0: all)
  --top-p P              sample among the most likely ids whose probabilities
                         add up to P, in (0, 1] (default 1: all)
  --seed S               seed of sampling and of random weights (default %llu)
  --print-ids            print the new ids, separated by spaces, instead of
                         text (the default without a tokenizer for a model of
                         < 256 ids)
  --dump-logits FILE     write each step's logits to FILE (f32, vocab_size
                         values a step, before the soft cap)
  --threads N            threads of the model (default: OMP_NUM_THREADS, or
                         every core)
  --quiet                no statistics line on stderr
  --help                 this text

Sampling follows Hugging Face's generate: the model's logit soft cap (if any),
then temperature, top-k and top-p. The new text is printed on stdout as it is
produced; the statistics (prompt tokens, prefill time, new tokens, decode
tokens/s, why it stopped) on stderr.

SIGINT or SIGTERM stops after the token in progress (what was printed stays
printed), exit status 128 + the signal; a second signal stops at once.
)",
      programName(), m.model_type, (long long)m.vocab_size,
      (long long)m.cache_length, (long long)m.prefill_tokens,
      (unsigned long long)m.seed);
}

static uint64_t parseSeed(const std::string &flag, const char *text) {
  char *end = nullptr;
  errno = 0;
  unsigned long long v = std::strtoull(text, &end, 10);
  if (!*text || *end || errno || *text == '-' || *text == '+' || *text == ' ')
    die(flag + ": expected an integer >= 0, got '" + text + "'");
  return v;
}

static double parseNumber(const std::string &flag, const char *text) {
  char *end = nullptr;
  errno = 0;
  double v = std::strtod(text, &end);
  if (!*text || *end || !std::isfinite(v))
    die(flag + ": expected a number, got '" + text + "'");
  return v;
}

GenerateOptions tgc::rt::parseGenerateOptions(int argc, char **argv,
                                              const tgc_generate_info &m) {
  GenerateOptions o;
  auto setPrompt = [&](GenerateOptions::PromptKind kind, const char *flag) {
    if (o.promptKind != GenerateOptions::PromptKind::None)
      die(std::string(flag) +
          ": give one prompt: --prompt, --prompt-ids or --prompt-file");
    o.promptKind = kind;
  };
  for (FlagCursor flags(argc, argv); flags.advance();) {
    const std::string &arg = flags.name();
    auto next = [&] { return flags.value(); };
    auto noValue = [&] { flags.noValue(); };
    if (arg == "--help" || arg == "-h") {
      usage(m);
      std::exit(0);
    } else if (arg == "--init")
      o.init = next();
    else if (arg == "--tokenizer")
      o.tokenizer = next();
    else if (arg == "--prompt") {
      setPrompt(GenerateOptions::PromptKind::Text, "--prompt");
      o.prompt = next();
    } else if (arg == "--prompt-ids") {
      setPrompt(GenerateOptions::PromptKind::Ids, "--prompt-ids");
      o.prompt = next();
    } else if (arg == "--prompt-file") {
      setPrompt(GenerateOptions::PromptKind::File, "--prompt-file");
      o.promptFile = next();
    } else if (arg == "--max-new-tokens")
      o.maxNewTokens = parseInt(arg, next(), 0);
    else if (arg == "--temperature") {
      const char *text = next();
      o.temperature = parseNumber(arg, text);
      if (o.temperature < 0)
        die("--temperature: expected a number >= 0 (0: greedy), got '" +
            std::string(text) + "'");
    } else if (arg == "--top-k")
      o.topK = parseInt(arg, next(), 0);
    else if (arg == "--top-p") {
      const char *text = next();
      o.topP = parseNumber(arg, text);
      if (!(o.topP > 0 && o.topP <= 1))
        die("--top-p: expected a probability in (0, 1] (1: off), got '" +
            std::string(text) + "'");
    } else if (arg == "--seed") {
      o.seed = parseSeed(arg, next());
      o.seedGiven = true;
    } else if (arg == "--print-ids") {
      noValue();
      o.printIds = true;
    } else if (arg == "--dump-logits") {
      o.dumpLogits = next();
    } else if (arg == "--threads")
      o.threads = parseInt(arg, next(), 1);
    else if (arg == "--quiet") {
      noValue();
      o.quiet = true;
    } else
      die("unknown option '" + std::string(flags.written()) +
          "' (see --help)");
  }
  if (o.promptKind == GenerateOptions::PromptKind::None)
    die("no prompt: give --prompt TEXT, --prompt-ids IDS or --prompt-file "
        "FILE (see --help)");
  return o;
}
