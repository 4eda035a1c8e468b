//===- TokenizedText.h - a text corpus through a tokenizer ------*- C++ -*-===//
//
// `--data corpus.txt --tokenizer PATH`: the corpus is split into documents
// at blank lines (each keeps the newlines that end it), every document is
// encoded with the tokenizer's special tokens (BOS for Llama 2/3, nothing
// for GPT-2 or Qwen), in parallel, and the ids are concatenated, as
// Hugging Face's run_clm concatenates its examples. The ids are cached
// beside the corpus as uint32, keyed by hashes of the corpus and the
// tokenizer, so a second run reads them back.
//
//===----------------------------------------------------------------------===//
#ifndef TGC_RUNTIME_TOKENIZEDTEXT_H
#define TGC_RUNTIME_TOKENIZEDTEXT_H

#include "Data.h"

#include <cstdint>
#include <string>

namespace tgc::rt {

/// Reads `corpus` (UTF-8 text; invalid UTF-8 is refused, naming the line)
/// as the ids of the tokenizer at `tokenizerPath`. `vocab` is the model's:
/// a tokenizer with more ids is refused. `threads` encode (0: every core).
bool loadTokenizedText(const std::string &corpus,
                       const std::string &tokenizerPath, int64_t vocab,
                       int64_t threads, TokenData &data, std::string &error);

/// The documents of `text`: cut after each run of newlines that holds a
/// blank line. Their concatenation is `text`.
std::vector<std::string_view> splitDocuments(std::string_view text);

} // namespace tgc::rt

#endif // TGC_RUNTIME_TOKENIZEDTEXT_H
