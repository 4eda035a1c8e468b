//===- TokenPrinter.h - new tokens on stdout as they come -------*- C++ -*-===//
//
// Prints each generated token as soon as it is known: as text through the
// tokenizer (special tokens skipped; held back while the text ends in an
// incomplete UTF-8 sequence), as raw bytes for a byte-level model without
// a tokenizer, or as ids. stdout is flushed after each print.
//
//===----------------------------------------------------------------------===//
#ifndef TGC_RUNTIME_GENERATE_TOKENPRINTER_H
#define TGC_RUNTIME_GENERATE_TOKENPRINTER_H

#include "tgc/Runtime/Tokenizer.h"

#include <cstdint>
#include <string>
#include <vector>

namespace tgc::rt {

class TokenPrinter {
public:
  enum class Mode {
    Ids,   // decimal ids separated by spaces
    Bytes, // ids < 256 as bytes, others not printed
    Text,  // the tokenizer's decoding (ids it does not have: no text)
  };
  TokenPrinter(Mode mode, const tok::Tokenizer *tokenizer)
      : mode(mode), tokenizer(tokenizer) {}

  /// Prints what `id` adds to the output.
  void add(uint32_t id);
  /// Prints what was held back, then a newline if anything was printed.
  void finish();

private:
  /// Prints the new text of `ids`; false if the tokenizer does not know
  /// one of them.
  bool printText(bool final);
  void write(const std::string &text);

  Mode mode;
  const tok::Tokenizer *tokenizer;
  std::vector<uint32_t> ids;
  size_t printedBytes = 0; // of the decoded text
  bool printedAny = false;
};

} // namespace tgc::rt

#endif // TGC_RUNTIME_GENERATE_TOKENPRINTER_H
