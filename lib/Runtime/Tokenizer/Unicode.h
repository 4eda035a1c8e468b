//===- Unicode.h - UTF-8, byte-level and normalization helpers --*- C++ -*-===//
#ifndef TGC_RUNTIME_TOKENIZER_UNICODE_H
#define TGC_RUNTIME_TOKENIZER_UNICODE_H

#include <cstdint>
#include <string>
#include <string_view>

namespace tgc::rt::tok {

/// The code point at `pos` of valid UTF-8 `text`; advances `pos` past it.
uint32_t nextCodepoint(std::string_view text, size_t &pos);
/// Length in bytes of the UTF-8 sequence that starts with `lead`.
inline size_t utf8Length(unsigned char lead) {
  return lead < 0x80 ? 1 : lead < 0xE0 ? 2 : lead < 0xF0 ? 3 : 4;
}
void appendUtf8(std::string &out, uint32_t codepoint);

/// GPT-2's byte-level alphabet: each byte as one printable code point
/// (printable Latin-1 bytes map to themselves, the rest to U+0100 on).
uint32_t byteToCodepoint(uint8_t byte);
/// The byte `codepoint` stands for; false if it is not in the alphabet.
bool codepointToByte(uint32_t codepoint, uint8_t &byte);
/// `bytes` written in the byte-level alphabet.
void appendByteLevel(std::string &out, std::string_view bytes);

/// `bytes` as UTF-8, each maximal invalid subsequence replaced by U+FFFD (as
/// Rust's String::from_utf8_lossy, which Hugging Face's decoders use).
std::string utf8Lossy(std::string_view bytes);

enum class NormalForm { NFC, NFD, NFKC, NFKD };
/// `text` (valid UTF-8) in normal form `form`, through utf8proc.
std::string normalize(std::string_view text, NormalForm form);

} // namespace tgc::rt::tok

#endif // TGC_RUNTIME_TOKENIZER_UNICODE_H
