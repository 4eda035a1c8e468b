//===- PreTokenizers.cpp - tokenizer.json pre-tokenizers ------------------===//
//
// Sequence, Split, ByteLevel, Metaspace and Digits, splitting pieces as
// Hugging Face's `tokenizers` does (SplitDelimiterBehavior semantics).
//
//===----------------------------------------------------------------------===//

#include "Components.h"
#include "Regex.h"
#include "Unicode.h"


using namespace tgc::rt;
using namespace tgc::rt::tok;

namespace {

enum class Behavior { Removed, Isolated, MergedWithPrevious, MergedWithNext,
                      Contiguous };

/// Turns the matches and gaps of one piece, in order, into the pieces of
/// `behavior`, passing each on as soon as it is known.
class Splitter {
public:
  Splitter(const Piece &piece, Behavior behavior, const PieceSink &emit)
      : piece(piece), behavior(behavior), emit(emit) {}

  void segment(size_t begin, size_t end, bool isMatch) {
    if (end <= begin)
      return;
    switch (behavior) {
    case Behavior::Removed:
      if (!isMatch)
        send(begin, end);
      return;
    case Behavior::Isolated:
      send(begin, end);
      return;
    case Behavior::Contiguous:
      if (isMatch && pending && pendingMatch) {
        pendingEnd = end;
        return;
      }
      break;
    case Behavior::MergedWithPrevious:
      if (isMatch && pending && !pendingLastMatch) {
        pendingEnd = end;
        pendingLastMatch = true;
        return;
      }
      break;
    case Behavior::MergedWithNext:
      // A match joins the piece after it when that is not a match.
      if (!isMatch && pending && pendingMatch) {
        send(pendingBegin, end);
        pending = false;
        return;
      }
      break;
    }
    flush();
    pending = true;
    pendingBegin = begin;
    pendingEnd = end;
    pendingMatch = pendingLastMatch = isMatch;
  }

  void finish() { flush(); }

private:
  void send(size_t begin, size_t end) {
    emit(Piece{piece.text.substr(begin, end - begin),
               piece.atStart && begin == 0});
  }
  void flush() {
    if (pending)
      send(pendingBegin, pendingEnd);
    pending = false;
  }

  const Piece &piece;
  Behavior behavior;
  const PieceSink &emit;
  bool pending = false, pendingMatch = false, pendingLastMatch = false;
  size_t pendingBegin = 0, pendingEnd = 0;
};

/// Splits `piece` at the matches `forEach` finds.
template <typename ForEachMatch>
void splitPiece(const Piece &piece, Behavior behavior, bool invert,
                const PieceSink &emit, ForEachMatch forEach) {
  Splitter splitter(piece, behavior, emit);
  size_t last = 0;
  forEach([&](size_t begin, size_t end) {
    splitter.segment(last, begin, invert);
    splitter.segment(begin, end, !invert);
    last = end;
  });
  splitter.segment(last, piece.text.size(), invert);
  splitter.finish();
}

class SequencePreTokenizer : public PreTokenizer {
public:
  std::vector<std::unique_ptr<PreTokenizer>> stages;
  void split(Piece &&piece, const PieceSink &emit) const override {
    run(0, std::move(piece), emit);
  }

private:
  void run(size_t stage, Piece &&piece, const PieceSink &emit) const {
    if (stage == stages.size())
      return emit(std::move(piece));
    stages[stage]->split(std::move(piece), [&](Piece &&next) {
      run(stage + 1, std::move(next), emit);
    });
  }
};

class SplitPreTokenizer : public PreTokenizer {
public:
  std::unique_ptr<Regex> pattern;
  Behavior behavior = Behavior::Isolated;
  bool invert = false;
  void split(Piece &&piece, const PieceSink &emit) const override {
    splitPiece(piece, behavior, invert, emit, [&](auto &&found) {
      pattern->forEachMatch(piece.text, found);
    });
  }
};

/// GPT-2's split of words, numbers, punctuation and spaces.
constexpr const char *kGpt2Pattern =
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|"
    "\\s+(?!\\S)|\\s+";

class ByteLevelPreTokenizer : public PreTokenizer {
public:
  bool addPrefixSpace = true;
  std::unique_ptr<Regex> gpt2; // when use_regex
  void split(Piece &&piece, const PieceSink &emit) const override {
    if (addPrefixSpace && piece.text.compare(0, 1, " ") != 0)
      piece.text.insert(0, " ");
    auto map = [&](Piece &&word) {
      std::string mapped;
      mapped.reserve(word.text.size() * 2);
      appendByteLevel(mapped, word.text);
      emit(Piece{std::move(mapped), word.atStart});
    };
    if (!gpt2)
      return map(std::move(piece));
    splitPiece(piece, Behavior::Isolated, false, map, [&](auto &&found) {
      gpt2->forEachMatch(piece.text, found);
    });
  }
};

class MetaspacePreTokenizer : public PreTokenizer {
public:
  std::string replacement = "\xE2\x96\x81"; // U+2581
  enum class Prepend { Always, First, Never } prepend = Prepend::Always;
  bool splitWords = true;
  void split(Piece &&piece, const PieceSink &emit) const override {
    std::string text;
    for (char c : piece.text) {
      if (c == ' ')
        text += replacement;
      else
        text.push_back(c);
    }
    bool prepend_ = prepend == Prepend::Always ||
                    (prepend == Prepend::First && piece.atStart);
    if (prepend_ && text.compare(0, replacement.size(), replacement) != 0)
      text.insert(0, replacement);
    Piece replaced{std::move(text), piece.atStart};
    if (!splitWords)
      return emit(std::move(replaced));
    splitPiece(replaced, Behavior::MergedWithNext, false, emit,
               [&](auto &&found) {
                 const std::string &t = replaced.text;
                 for (size_t at = t.find(replacement); at != std::string::npos;
                      at = t.find(replacement, at + replacement.size()))
                   found(at, at + replacement.size());
               });
  }
};

class DigitsPreTokenizer : public PreTokenizer {
public:
  bool individual = false;
  void split(Piece &&piece, const PieceSink &emit) const override {
    splitPiece(piece, Behavior::Isolated, false, emit, [&](auto &&found) {
      const std::string &t = piece.text;
      for (size_t i = 0; i < t.size();) {
        if (t[i] < '0' || t[i] > '9') {
          ++i;
          continue;
        }
        size_t j = i + 1;
        while (!individual && j < t.size() && t[j] >= '0' && t[j] <= '9')
          ++j;
        found(i, j);
        i = j;
      }
    });
  }
};

bool parseBehavior(const json::Value &value, const std::string &where,
                   Behavior &behavior, std::string &error) {
  std::string name;
  if (!readString(value, "behavior", where, name, error))
    return false;
  if (name == "Removed")
    behavior = Behavior::Removed;
  else if (name == "Isolated")
    behavior = Behavior::Isolated;
  else if (name == "MergedWithPrevious")
    behavior = Behavior::MergedWithPrevious;
  else if (name == "MergedWithNext")
    behavior = Behavior::MergedWithNext;
  else if (name == "Contiguous")
    behavior = Behavior::Contiguous;
  else {
    error = where + ".behavior: unknown split behavior \"" + name + "\"";
    return false;
  }
  return true;
}

} // namespace

std::unique_ptr<PreTokenizer>
tgc::rt::tok::parsePreTokenizer(const json::Value &value,
                                const std::string &where, std::string &error) {
  std::string type;
  if (!readType(value, where, type, error))
    return nullptr;
  if (type == "Sequence") {
    auto sequence = std::make_unique<SequencePreTokenizer>();
    if (!parseSequence(value, "pretokenizers", where, sequence->stages, error,
                       parsePreTokenizer))
      return nullptr;
    return sequence;
  }
  if (type == "Split") {
    auto split = std::make_unique<SplitPreTokenizer>();
    if (!(split->pattern = parsePattern(value, where, error)) ||
        !parseBehavior(value, where, split->behavior, error) ||
        !readBool(value, "invert", where, split->invert, error))
      return nullptr;
    return split;
  }
  if (type == "ByteLevel") {
    auto byteLevel = std::make_unique<ByteLevelPreTokenizer>();
    bool useRegex = true;
    if (!readBool(value, "add_prefix_space", where, byteLevel->addPrefixSpace,
                  error) ||
        !readBool(value, "use_regex", where, useRegex, error))
      return nullptr;
    if (useRegex && !(byteLevel->gpt2 = Regex::compile(kGpt2Pattern, false,
                                                       error)))
      return nullptr;
    return byteLevel;
  }
  if (type == "Metaspace") {
    auto metaspace = std::make_unique<MetaspacePreTokenizer>();
    std::string scheme;
    bool addPrefixSpace = true;
    if (!readString(value, "replacement", where, metaspace->replacement,
                    error, /*required=*/false) ||
        !readString(value, "prepend_scheme", where, scheme, error,
                    /*required=*/false) ||
        !readBool(value, "add_prefix_space", where, addPrefixSpace, error) ||
        !readBool(value, "split", where, metaspace->splitWords, error))
      return nullptr;
    if (scheme.empty())
      scheme = addPrefixSpace ? "always" : "never";
    if (scheme == "always")
      metaspace->prepend = MetaspacePreTokenizer::Prepend::Always;
    else if (scheme == "first")
      metaspace->prepend = MetaspacePreTokenizer::Prepend::First;
    else if (scheme == "never")
      metaspace->prepend = MetaspacePreTokenizer::Prepend::Never;
    else {
      error = where + ".prepend_scheme: unknown scheme \"" + scheme +
              "\" (expected always, first or never)";
      return nullptr;
    }
    return metaspace;
  }
  if (type == "Digits") {
    auto digits = std::make_unique<DigitsPreTokenizer>();
    if (!readBool(value, "individual_digits", where, digits->individual,
                  error))
      return nullptr;
    return digits;
  }
  error = where + ": pre-tokenizer type \"" + type +
          "\" is not supported (supported: Sequence, Split, ByteLevel, "
          "Metaspace, Digits)";
  return nullptr;
}
