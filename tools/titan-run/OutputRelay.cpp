//===- OutputRelay.cpp - a rank's output, line by line, prefixed ----------===//

#include "OutputRelay.h"

#include <cerrno>
#include <unistd.h>

namespace titan::run {

namespace {

/// Writes all of `text` to `fd`. A reader that went away (EPIPE) or any
/// other error drops the text: a rank's output never stops the job.
void writeFully(int fd, std::string_view text) {
  while (!text.empty()) {
    ssize_t written = ::write(fd, text.data(), text.size());
    if (written < 0) {
      if (errno == EINTR)
        continue;
      return;
    }
    text.remove_prefix(static_cast<size_t>(written));
  }
}

/// The destination a progress line is shown on (-1: none): every relay
/// clears it before writing a line there.
int progressShownOn = -1;

/// What a line drawn over with "\r" shows: what follows its last "\r",
/// without the "\033[K" that cleared the line before it.
std::string_view visiblePart(std::string_view line) {
  size_t carriage = line.rfind('\r');
  if (carriage == std::string_view::npos)
    return line;
  line.remove_prefix(carriage + 1);
  constexpr std::string_view kClear = "\033[K";
  if (line.substr(0, kClear.size()) == kClear)
    line.remove_prefix(kClear.size());
  return line;
}

} // namespace

void OutputRelay::append(std::string_view data) {
  pending.append(data);
  size_t start = 0;
  while (true) {
    size_t newline = pending.find('\n', start);
    if (newline == std::string::npos)
      break;
    emit(std::string_view(pending).substr(start, newline - start));
    start = newline + 1;
  }
  pending.erase(0, start);
  if (pending.size() >= kMaxLineBytes) {
    emit(pending);
    pending.clear();
  } else if (pending.find('\r') != std::string::npos &&
             !visiblePart(pending).empty()) {
    showProgress(visiblePart(pending));
  }
}

void OutputRelay::flush() {
  if (!pending.empty())
    emit(pending);
  pending.clear();
}

void OutputRelay::emit(std::string_view line) {
  line = visiblePart(line);
  if (!line.empty())
    lastLine = line;
  std::string text;
  if (progressShownOn == destination) {
    text = "\r\033[K";
    progressShownOn = -1;
  }
  text.append(prefix).append(line).push_back('\n');
  writeFully(destination, text);
}

void OutputRelay::showProgress(std::string_view progress) {
  std::string text = "\r\033[K";
  text.append(prefix).append(progress);
  writeFully(destination, text);
  progressShownOn = destination;
}

} // namespace titan::run
