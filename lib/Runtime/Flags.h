//===- Flags.h - walking an executable's command line -----------*- C++ -*-===//
#ifndef TGC_RUNTIME_FLAGS_H
#define TGC_RUNTIME_FLAGS_H

#include <cstdint>
#include <string>

namespace tgc::rt {

/// Walks a command line's flags, `--flag value` or `--flag=value`, from
/// argv[1] on (the training and the generation executables' parsers).
class FlagCursor {
public:
  FlagCursor(int argc, char **argv) : argc(argc), argv(argv) {}
  /// Moves to the next flag; false past the last.
  bool advance();
  /// The flag's name (before any '=').
  const std::string &name() const { return flag; }
  /// The flag as written, for messages.
  const char *written() const { return argv[at]; }
  /// The flag's value: after its '=', or the next argument; stops the
  /// program naming the flag when there is none.
  const char *value();
  /// Stops the program when the flag was given a value with '='.
  void noValue() const;

private:
  int argc;
  char **argv;
  int at = 0;
  std::string flag, inlineValue;
  bool hasInline = false;
};

/// `text` as an integer >= `min`, or stops naming `flag` (also used for
/// numbers read from checkpoint metadata).
int64_t parseInt(const std::string &flag, const char *text, int64_t min);

} // namespace tgc::rt

#endif // TGC_RUNTIME_FLAGS_H
