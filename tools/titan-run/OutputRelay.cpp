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
  }
}

void OutputRelay::flush() {
  if (!pending.empty())
    emit(pending);
  pending.clear();
}

void OutputRelay::emit(std::string_view line) {
  if (!line.empty())
    lastLine = line;
  std::string text;
  text.reserve(prefix.size() + line.size() + 1);
  text.append(prefix).append(line).push_back('\n');
  writeFully(destination, text);
}

} // namespace titan::run
