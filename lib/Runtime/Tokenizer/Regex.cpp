//===- Regex.cpp - PCRE2 patterns for Split and Replace -------------------===//

#include "Regex.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

using namespace tgc::rt::tok;

struct Regex::Impl {
  pcre2_code *code = nullptr;
  bool jit = false;
  ~Impl() {
    if (code)
      pcre2_code_free(code);
  }
};

Regex::~Regex() = default;

std::unique_ptr<Regex> Regex::compile(const std::string &pattern, bool literal,
                                      std::string &error) {
  int code = 0;
  PCRE2_SIZE offset = 0;
  // PCRE2_LITERAL takes no UCP (it has no classes to apply it to).
  uint32_t options = PCRE2_UTF | PCRE2_NO_UTF_CHECK |
                     (literal ? PCRE2_LITERAL : PCRE2_UCP);
  pcre2_code *compiled =
      pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()),
                    pattern.size(), options, &code, &offset, nullptr);
  if (!compiled) {
    PCRE2_UCHAR message[256];
    pcre2_get_error_message(code, message, sizeof(message));
    error = "regex /" + pattern + "/ at offset " + std::to_string(offset) +
            ": " + reinterpret_cast<char *>(message);
    return nullptr;
  }
  std::unique_ptr<Regex> regex(new Regex);
  regex->impl = std::make_unique<Impl>();
  regex->impl->code = compiled;
  regex->impl->jit = pcre2_jit_compile(compiled, PCRE2_JIT_COMPLETE) == 0;
  return regex;
}

std::vector<std::pair<size_t, size_t>>
Regex::findAll(std::string_view text) const {
  std::vector<std::pair<size_t, size_t>> matches;
  forEachMatch(text,
               [&](size_t begin, size_t end) { matches.emplace_back(begin, end); });
  return matches;
}

std::string Regex::replaceAll(std::string_view text,
                              std::string_view content) const {
  std::string out;
  size_t last = 0;
  forEachMatch(text, [&](size_t begin, size_t end) {
    out.append(text.substr(last, begin - last));
    out.append(content);
    last = end;
  });
  out.append(text.substr(last));
  return out;
}

void Regex::forEachMatch(
    std::string_view text,
    const std::function<void(size_t, size_t)> &found) const {
  // One match-data block per thread: parallel encoders share the pattern.
  thread_local struct MatchData {
    pcre2_match_data *data = pcre2_match_data_create(32, nullptr);
    ~MatchData() { pcre2_match_data_free(data); }
  } block;
  auto subject = reinterpret_cast<PCRE2_SPTR>(text.data());
  size_t start = 0;
  while (start < text.size()) {
    int rc = impl->jit ? pcre2_jit_match(impl->code, subject, text.size(),
                                         start, 0, block.data, nullptr)
                       : pcre2_match(impl->code, subject, text.size(), start,
                                     PCRE2_NO_UTF_CHECK, block.data, nullptr);
    if (rc < 0)
      break;
    PCRE2_SIZE *ovector = pcre2_get_ovector_pointer(block.data);
    size_t begin = ovector[0], end = ovector[1];
    if (end > begin) {
      found(begin, end);
      start = end;
    } else {
      // An empty match: step one character on.
      start = end + 1;
      while (start < text.size() &&
             (static_cast<unsigned char>(text[start]) & 0xC0) == 0x80)
        ++start;
    }
  }
}
