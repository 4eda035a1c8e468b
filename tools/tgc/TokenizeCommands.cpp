//===- TokenizeCommands.cpp - tgc tokenize / detokenize -------------------===//
//
//   tgc tokenize PATH [FILE] [--add-special-tokens] [--stats]
//   tgc detokenize PATH [FILE] [--skip-special-tokens]
//
// PATH is a Hugging Face tokenizer.json or a directory holding one. FILE (or
// stdin) is text to encode, or decimal ids separated by white space.
//
//===----------------------------------------------------------------------===//

#include "TokenizeCommands.h"

#include "tgc/Runtime/Tokenizer.h"

#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/WithColor.h"
#include "llvm/Support/raw_ostream.h"

#include <cctype>
#include <chrono>

#include <sys/resource.h>

using namespace tgc;
namespace cl = llvm::cl;

cl::OptionCategory &tgc::tokenizerCategory() {
  static cl::OptionCategory category("tgc tokenize/detokenize options");
  return category;
}

namespace {

cl::SubCommand
    tokenizeCommand("tokenize",
                    "Print the token ids of a text as a Hugging Face "
                    "tokenizer.json encodes it");
cl::SubCommand detokenizeCommand("detokenize", "Print the text of token ids");

cl::opt<std::string> tokenizerPath(cl::Positional,
                                   cl::desc("<tokenizer.json|directory>"),
                                   cl::Required, cl::sub(tokenizeCommand),
                                   cl::sub(detokenizeCommand));
cl::opt<std::string> inputPath(cl::Positional, cl::desc("[FILE]"),
                               cl::init("-"), cl::sub(tokenizeCommand),
                               cl::sub(detokenizeCommand));
cl::opt<bool> addSpecialTokens(
    "add-special-tokens",
    cl::desc("Add what the tokenizer adds around a text (BOS/EOS, as "
             "tokenizer.json's post-processor or tokenizer_config.json says)"),
    cl::sub(tokenizeCommand), cl::cat(tokenizerCategory()));
cl::opt<bool> printStats(
    "stats",
    cl::desc("Also print to stderr the loading time and memory, and the "
             "bytes, ids and encoding speed"),
    cl::sub(tokenizeCommand), cl::cat(tokenizerCategory()));
cl::opt<bool>
    skipSpecialTokens("skip-special-tokens",
                      cl::desc("Leave special tokens out of the text"),
                      cl::sub(detokenizeCommand), cl::cat(tokenizerCategory()));

int fail(const std::string &message) {
  llvm::WithColor::error(llvm::errs(), "tgc") << message << "\n";
  return 1;
}

/// The process's peak resident set so far, in KiB.
long peakRssKiB() {
  struct rusage usage;
  return getrusage(RUSAGE_SELF, &usage) == 0 ? usage.ru_maxrss : 0;
}

std::string inputName() {
  return inputPath == "-" ? std::string("<stdin>") : inputPath.getValue();
}

int tokenize(const rt::tok::Tokenizer &tokenizer, llvm::StringRef text) {
  size_t bad = rt::tok::findInvalidUtf8({text.data(), text.size()});
  if (bad != std::string_view::npos)
    return fail(inputName() + ": " +
                rt::tok::textPosition({text.data(), text.size()}, bad) +
                " (byte " + std::to_string(bad) + "): not valid UTF-8");
  auto start = std::chrono::steady_clock::now();
  std::vector<uint32_t> ids =
      tokenizer.encode({text.data(), text.size()}, addSpecialTokens);
  double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  if (printStats)
    llvm::errs() << llvm::formatv(
        "{0}: {1} bytes, {2} ids ({3:f2} bytes/id), encoded in {4:f3} s "
        "({5:f1} MB/s on one thread)\n",
        inputName(), text.size(), ids.size(),
        ids.empty() ? 0.0 : double(text.size()) / ids.size(), seconds,
        seconds > 0 ? text.size() / seconds / 1e6 : 0.0);
  std::string out;
  out.reserve(ids.size() * 6);
  for (size_t i = 0; i < ids.size(); ++i) {
    if (i)
      out.push_back(' ');
    out += std::to_string(ids[i]);
  }
  llvm::outs() << out << "\n";
  return 0;
}

int detokenize(const rt::tok::Tokenizer &tokenizer, llvm::StringRef text) {
  std::vector<uint32_t> ids;
  for (size_t i = 0; i < text.size();) {
    if (std::isspace(static_cast<unsigned char>(text[i]))) {
      ++i;
      continue;
    }
    size_t start = i;
    uint64_t value = 0;
    while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i])))
      value =
          std::min<uint64_t>(value * 10 + (text[i++] - '0'), UINT64_MAX / 20);
    if (i == start || (i < text.size() &&
                       !std::isspace(static_cast<unsigned char>(text[i])))) {
      size_t end = text.find_first_of(" \t\r\n", start);
      return fail(inputName() + ": " +
                  rt::tok::textPosition({text.data(), text.size()}, start) +
                  ": \"" + text.slice(start, end).str() +
                  "\" is not a token id (expected decimal numbers "
                  "separated by white space)");
    }
    if (value >= tokenizer.vocabSize())
      return fail(inputName() + ": " +
                  rt::tok::textPosition({text.data(), text.size()}, start) +
                  ": token id " + text.slice(start, i).str() + " is not in " +
                  tokenizer.path() + " (" +
                  std::to_string(tokenizer.vocabSize()) + " ids)");
    ids.push_back(static_cast<uint32_t>(value));
  }
  std::string decoded, error;
  if (!tokenizer.decode(ids, skipSpecialTokens, decoded, error))
    return fail(inputName() + ": " + error);
  llvm::outs() << decoded;
  return 0;
}

} // namespace

bool tgc::tokenizeCommandGiven() {
  return tokenizeCommand || detokenizeCommand;
}

int tgc::runTokenizeCommand() {
  std::string error;
  long peakBefore = peakRssKiB();
  auto start = std::chrono::steady_clock::now();
  std::unique_ptr<rt::tok::Tokenizer> tokenizer =
      rt::tok::Tokenizer::load(tokenizerPath, error);
  if (!tokenizer)
    return fail(error);
  if (printStats)
    llvm::errs() << llvm::formatv(
        "{0}: loaded in {1:f3} s, the peak resident memory grew by {2:f1} "
        "MiB\n",
        tokenizer->path(),
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
            .count(),
        (peakRssKiB() - peakBefore) / 1024.0);
  llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> input =
      llvm::MemoryBuffer::getFileOrSTDIN(inputPath, /*IsText=*/false);
  if (!input)
    return fail(inputName() + ": " + input.getError().message());
  llvm::StringRef text = (*input)->getBuffer();
  return tokenizeCommand ? tokenize(*tokenizer, text)
                         : detokenize(*tokenizer, text);
}
