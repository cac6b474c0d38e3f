//===- RankSupervisor.cpp - starting and watching rank processes ----------===//

#include "RankSupervisor.h"

#include "OutputRelay.h"
#include "comm/Socket.h"

#include "llvm/Support/WithColor.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>
#include <fcntl.h>
#include <optional>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

namespace titan::run {

using rt::Socket;
using Clock = std::chrono::steady_clock;

namespace {

/// How long titan-run keeps reading the output of ranks that all exited, so
/// that a background process holding it open does not keep titan-run.
constexpr std::chrono::seconds kDrainTimeout(2);

/// SIGCHLD and the signals titan-run forwards to the ranks.
sigset_t getSupervisedSignals() {
  sigset_t signals;
  sigemptyset(&signals);
  for (int signal : {SIGCHLD, SIGINT, SIGTERM, SIGHUP})
    sigaddset(&signals, signal);
  return signals;
}

/// "SIGKILL".
std::string getSignalName(int signal) {
  const char *abbreviation = sigabbrev_np(signal);
  return abbreviation ? std::string("SIG") + abbreviation
                      : "signal " + std::to_string(signal);
}

/// A started rank process and the read ends of its output pipes.
struct RankProcess {
  explicit RankProcess(int64_t rank)
      : rank(rank), outputRelay(prefix(rank), STDOUT_FILENO),
        errorRelay(prefix(rank), STDERR_FILENO) {}
  static std::string prefix(int64_t rank) {
    return "[rank " + std::to_string(rank) + "] ";
  }

  int64_t rank;
  pid_t pid = -1;
  bool running = false;
  /// How it ended (waitpid's status), once it did.
  int status = 0;
  Socket output, errors;
  OutputRelay outputRelay, errorRelay;
};

/// NULL-terminated pointers to `strings`, for execve.
std::vector<char *> toPointers(const std::vector<std::string> &strings) {
  std::vector<char *> pointers;
  for (const std::string &text : strings)
    pointers.push_back(const_cast<char *>(text.c_str()));
  pointers.push_back(nullptr);
  return pointers;
}

/// Writes `text` to stderr from a forked child (async-signal-safe).
void writeFromChild(const char *text) {
  size_t size = std::strlen(text);
  while (size > 0) {
    ssize_t written = ::write(STDERR_FILENO, text, size);
    if (written <= 0)
      return;
    text += written;
    size -= static_cast<size_t>(written);
  }
}

/// Starts `command` in a process group of its own, its stdout and stderr
/// going to pipes whose read ends `process` keeps; false with `error`
/// when it cannot.
bool startRank(const RankCommand &command, RankProcess &process,
               std::string &error) {
  int outputPipe[2], errorPipe[2];
  if (::pipe2(outputPipe, O_CLOEXEC) != 0) {
    error = "cannot create a pipe: " + rt::describeErrno(errno);
    return false;
  }
  Socket outputRead(outputPipe[0]), outputWrite(outputPipe[1]);
  if (::pipe2(errorPipe, O_CLOEXEC) != 0) {
    error = "cannot create a pipe: " + rt::describeErrno(errno);
    return false;
  }
  Socket errorRead(errorPipe[0]), errorWrite(errorPipe[1]);
  Socket input(::open("/dev/null", O_RDONLY | O_CLOEXEC));
  std::vector<char *> arguments = toPointers(command.arguments);
  std::vector<char *> environment = toPointers(command.environment);
  const std::string execFailure =
      "titan-run: error: cannot execute '" + command.program + "': ";
  const pid_t parent = ::getpid();

  pid_t pid = ::fork();
  if (pid < 0) {
    error = "cannot start a process: " + rt::describeErrno(errno);
    return false;
  }
  if (pid == 0) {
    // Only async-signal-safe calls from here to execve.
    ::setpgid(0, 0);
    // Dies with titan-run, even when titan-run is killed.
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent)
      ::_exit(127);
    ::dup2(input.get(), STDIN_FILENO);
    ::dup2(outputWrite.get(), STDOUT_FILENO);
    ::dup2(errorWrite.get(), STDERR_FILENO);
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    ::signal(SIGPIPE, SIG_DFL);
    ::execve(command.program.c_str(), arguments.data(), environment.data());
    writeFromChild(execFailure.c_str());
    writeFromChild(strerrordesc_np(errno));
    writeFromChild("\n");
    ::_exit(127);
  }
  // The child does the same; doing it here too means the group exists
  // before titan-run signals it.
  ::setpgid(pid, pid);
  process.pid = pid;
  process.running = true;
  process.output = std::move(outputRead);
  process.errors = std::move(errorRead);
  return true;
}

/// Whether `process` exited with the executables' status of a failed
/// collective (4: a peer died or timed out).
bool isCommunicationFailure(const RankProcess &process) {
  return WIFEXITED(process.status) && WEXITSTATUS(process.status) == 4;
}

/// "rank 1 (pid 42) exited with status 3; its last line on stderr: ...".
std::string describeFailure(const RankProcess &process) {
  std::string text = "rank " + std::to_string(process.rank) + " (pid " +
                     std::to_string(process.pid) + ") ";
  if (WIFSIGNALED(process.status))
    text += "was killed by " + getSignalName(WTERMSIG(process.status));
  else
    text += "exited with status " + std::to_string(WEXITSTATUS(process.status));
  const std::string &lastLine = process.errorRelay.getLastLine();
  if (lastLine.empty())
    return text + " (it wrote nothing on stderr)";
  return text + "; its last line on stderr: " + lastLine;
}

/// Reads what is available on `pipe` into `relay`; closes the pipe at its
/// end.
void relayOutput(Socket &pipe, OutputRelay &relay) {
  char buffer[64 * 1024];
  ssize_t size = ::read(pipe.get(), buffer, sizeof(buffer));
  if (size > 0) {
    relay.append(std::string_view(buffer, static_cast<size_t>(size)));
    return;
  }
  if (size < 0 && (errno == EINTR || errno == EAGAIN))
    return;
  relay.flush();
  pipe.close();
}

/// Supervises started ranks until they all ended and their output is read.
class Supervisor {
public:
  Supervisor(std::vector<RankProcess> &processes,
             std::chrono::milliseconds gracePeriod, Socket signals)
      : processes(processes), gracePeriod(gracePeriod),
        signals(std::move(signals)) {}

  /// Runs until the end; returns titan-run's exit code.
  int run();

private:
  /// Sends `signal` to the process group of every running rank.
  void signalRanks(int signal);
  /// Asks every running rank to stop with `signal`, and kills them after
  /// the grace period.
  void stopRanks(int signal);
  /// Handles the signals titan-run received.
  void handleSignals();
  /// Records the ranks that ended; the first failure stops the others.
  void reapRanks();

  std::vector<RankProcess> &processes;
  std::chrono::milliseconds gracePeriod;
  Socket signals;
  /// The signal titan-run was stopped by, or 0.
  int interruption = 0;
  /// The rank that failed first.
  const RankProcess *failure = nullptr;
  /// When the ranks asked to stop get SIGKILL.
  std::optional<Clock::time_point> killTime;
};

void Supervisor::signalRanks(int signal) {
  for (const RankProcess &process : processes)
    if (process.running)
      ::kill(-process.pid, signal);
}

void Supervisor::stopRanks(int signal) {
  signalRanks(signal);
  if (!killTime)
    killTime = Clock::now() + gracePeriod;
}

void Supervisor::handleSignals() {
  signalfd_siginfo info;
  while (::read(signals.get(), &info, sizeof(info)) == sizeof(info)) {
    int signal = static_cast<int>(info.ssi_signo);
    if (signal == SIGCHLD) {
      reapRanks();
    } else if (interruption == 0) {
      interruption = signal;
      stopRanks(signal);
    } else {
      signalRanks(SIGKILL);
    }
  }
}

void Supervisor::reapRanks() {
  int status = 0;
  pid_t pid;
  while ((pid = ::waitpid(-1, &status, WNOHANG)) > 0) {
    for (RankProcess &process : processes) {
      if (process.pid != pid)
        continue;
      process.running = false;
      process.status = status;
      bool failed = !WIFEXITED(status) || WEXITSTATUS(status) != 0;
      // A rank that fails while titan-run stops the job is not the cause,
      // unless the first failure was only a communication error (a peer
      // that failed at once is the cause) and this rank failed by itself.
      if (failed && !failure && interruption == 0 && !killTime) {
        failure = &process;
        stopRanks(SIGTERM);
      } else if (failed && failure && isCommunicationFailure(*failure) &&
                 WIFEXITED(status) && WEXITSTATUS(status) < 128 &&
                 !isCommunicationFailure(process)) {
        failure = &process;
      }
    }
  }
}

int Supervisor::run() {
  std::optional<Clock::time_point> drainDeadline;
  while (true) {
    bool running =
        std::any_of(processes.begin(), processes.end(),
                    [](const RankProcess &process) { return process.running; });
    std::vector<pollfd> entries = {{signals.get(), POLLIN, 0}};
    std::vector<std::pair<Socket *, OutputRelay *>> sources;
    for (RankProcess &process : processes) {
      if (process.output.isOpen())
        sources.emplace_back(&process.output, &process.outputRelay);
      if (process.errors.isOpen())
        sources.emplace_back(&process.errors, &process.errorRelay);
    }
    for (const auto &source : sources)
      entries.push_back({source.first->get(), POLLIN, 0});
    if (!running) {
      if (sources.empty())
        break;
      if (!drainDeadline)
        drainDeadline = Clock::now() + kDrainTimeout;
    }

    std::optional<Clock::time_point> wake = drainDeadline;
    if (killTime && running && (!wake || *killTime < *wake))
      wake = killTime;
    int timeout = -1;
    if (wake)
      timeout = static_cast<int>(std::clamp<int64_t>(
          std::chrono::duration_cast<std::chrono::milliseconds>(*wake -
                                                                Clock::now())
              .count(),
          0, INT_MAX));
    if (::poll(entries.data(), entries.size(), timeout) < 0 && errno != EINTR)
      break;

    if (entries[0].revents & POLLIN)
      handleSignals();
    for (size_t index = 0; index < sources.size(); ++index)
      if (entries[index + 1].revents != 0)
        relayOutput(*sources[index].first, *sources[index].second);
    Clock::time_point now = Clock::now();
    if (killTime && now >= *killTime) {
      signalRanks(SIGKILL);
      killTime = now + gracePeriod;
    }
    if (drainDeadline && now >= *drainDeadline)
      break;
  }
  for (RankProcess &process : processes) {
    process.outputRelay.flush();
    process.errorRelay.flush();
  }

  if (interruption != 0 || failure) {
    // What the ranks left behind in their process groups goes too.
    for (const RankProcess &process : processes)
      ::kill(-process.pid, SIGKILL);
  }
  if (interruption != 0) {
    llvm::WithColor::error(llvm::errs(), "titan-run")
        << "stopped by " << getSignalName(interruption)
        << ", which every rank got too\n";
    return 128 + interruption;
  }
  if (failure) {
    llvm::WithColor::error(llvm::errs(), "titan-run")
        << describeFailure(*failure) << "\n";
    // The rank's own status says what failed (the executables' statuses
    // are documented: 3 for a loss that is not finite); a killed rank, 1.
    if (WIFEXITED(failure->status))
      return WEXITSTATUS(failure->status);
    return 1;
  }
  return 0;
}

} // namespace

void blockSupervisedSignals() {
  sigset_t signals = getSupervisedSignals();
  ::pthread_sigmask(SIG_BLOCK, &signals, nullptr);
}

int superviseRanks(const std::vector<RankCommand> &commands,
                   std::chrono::milliseconds gracePeriod) {
  sigset_t supervised = getSupervisedSignals();
  Socket signals(::signalfd(-1, &supervised, SFD_CLOEXEC | SFD_NONBLOCK));
  if (!signals.isOpen()) {
    llvm::WithColor::error(llvm::errs(), "titan-run")
        << "cannot watch signals: " << rt::describeErrno(errno) << "\n";
    return 1;
  }
  std::vector<RankProcess> processes;
  processes.reserve(commands.size());
  for (const RankCommand &command : commands) {
    processes.emplace_back(command.rank);
    std::string error;
    if (!startRank(command, processes.back(), error)) {
      llvm::WithColor::error(llvm::errs(), "titan-run")
          << "rank " << command.rank << ": " << error << "\n";
      processes.pop_back();
      for (const RankProcess &process : processes)
        ::kill(-process.pid, SIGKILL);
      for (const RankProcess &process : processes)
        ::waitpid(process.pid, nullptr, 0);
      return 1;
    }
  }
  return Supervisor(processes, gracePeriod, std::move(signals)).run();
}

} // namespace titan::run
