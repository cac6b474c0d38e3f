//===- OutputRelay.h - a rank's output, line by line, prefixed --*- C++ -*-===//
//
// titan-run copies what each rank writes to its stdout and stderr to its
// own, a whole line at a time and prefixed with "[rank R] ", so that lines
// of different ranks never mix within a line. A progress line (text after
// "\r\033[K" that no newline ends yet, as a rank's metrics draw it on a
// terminal) is redrawn in place at once, and cleared before the next line
// any rank writes.
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_TOOLS_TITAN_RUN_OUTPUTRELAY_H
#define TITAN_TOOLS_TITAN_RUN_OUTPUTRELAY_H

#include <cstddef>
#include <string>
#include <string_view>

namespace titan::run {

/// Relays one output stream of one rank to a file descriptor of titan-run.
class OutputRelay {
public:
  /// Lines get `prefix`; they are written to `destination`.
  OutputRelay(std::string prefix, int destination)
      : prefix(std::move(prefix)), destination(destination) {}

  /// Relays every complete line of what was read; keeps the rest until its
  /// newline comes (or kMaxLineBytes of it).
  void append(std::string_view data);
  /// Relays the rest, a last line without newline, with a newline.
  void flush();
  /// The last non-empty line relayed, without prefix ("" if none).
  const std::string &getLastLine() const { return lastLine; }

  /// A line this long without newline is relayed as it is.
  static constexpr size_t kMaxLineBytes = 64 * 1024;

private:
  /// Writes `prefix` + `line` + "\n" in one write (after clearing a
  /// progress line shown on the same destination); of a line redrawn with
  /// "\r", only what follows the last "\r" (and its "\033[K").
  void emit(std::string_view line);
  /// Draws `progress` (prefixed) in place of the progress line shown.
  void showProgress(std::string_view progress);

  std::string prefix;
  int destination;
  std::string pending;
  std::string lastLine;
};

} // namespace titan::run

#endif // TITAN_TOOLS_TITAN_RUN_OUTPUTRELAY_H
