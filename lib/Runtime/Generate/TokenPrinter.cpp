//===- TokenPrinter.cpp - new tokens on stdout as they come ---------------===//

#include "TokenPrinter.h"

#include <cstdio>

using namespace tgc::rt;

void TokenPrinter::write(const std::string &text) {
  if (text.empty())
    return;
  std::fwrite(text.data(), 1, text.size(), stdout);
  std::fflush(stdout);
  printedAny = true;
}

void TokenPrinter::add(uint32_t id) {
  switch (mode) {
  case Mode::Ids:
    write((ids.empty() ? "" : " ") + std::to_string(id));
    ids.push_back(id);
    return;
  case Mode::Bytes:
    if (id < 256)
      write(std::string(1, static_cast<char>(id)));
    return;
  case Mode::Text:
    // An id the tokenizer does not have (a model's vocabulary padded beyond
    // it) has no text.
    ids.push_back(id);
    if (!printText(false))
      ids.pop_back();
    return;
  }
}

bool TokenPrinter::printText(bool final) {
  // Decoding every id again keeps what decoders do across tokens (byte
  // fallback, fused pieces, a stripped first space) exactly as one decode
  // of the whole output.
  std::string text, error;
  if (!tokenizer->decode(ids, /*skipSpecialTokens=*/true, text, error))
    return false; // an unknown id (the last: the others decoded before)
  size_t end = text.size();
  // U+FFFD at the end: byte tokens of a character whose last bytes have not
  // been generated yet. Printed only when nothing more will come.
  static const std::string replacement = "\xEF\xBF\xBD";
  while (!final && end >= replacement.size() &&
         text.compare(end - replacement.size(), replacement.size(),
                      replacement) == 0)
    end -= replacement.size();
  if (end > printedBytes) {
    write(text.substr(printedBytes, end - printedBytes));
    printedBytes = end;
  }
  return true;
}

void TokenPrinter::finish() {
  if (mode == Mode::Text && !ids.empty())
    printText(true);
  if (printedAny) {
    std::fputc('\n', stdout);
    std::fflush(stdout);
  }
}
