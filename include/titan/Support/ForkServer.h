//===- ForkServer.h - run a tool's main in forked children ------*- C++ -*-===//
//
// A server that runs a tool's main function in processes forked from one
// that has loaded the tool's libraries already. titan-compile links
// LibTorch, whose static initialization (every operator's registration)
// costs about 0.7 s of CPU per start; the test suite starts titan-compile
// about a thousand times. Its client is test/Inputs/forked_process.py.
//
// The protocol, over a Unix stream socket, each message a 4-byte
// big-endian length and its bytes:
// - the client sends its working folder, umask (decimal), the number of
//   arguments, the arguments (argv[0] first) and its environment
//   ("KEY=VALUE"), separated by NUL bytes, with its stdin, stdout and
//   stderr attached (SCM_RIGHTS);
// - the server answers "forked", or "direct" when the environment differs
//   from its own in a variable that libraries read as they load (OMP_*,
//   OPENBLAS_*, LD_*, ...), which a forked process could not apply: the
//   client then runs the tool itself;
// - after "forked", the server sends the tool's exit status (128 + the
//   signal's number if a signal killed it).
//
// Each request is served by a child that waits for a grandchild running
// `main` with the client's arguments, streams, folder, umask and
// environment (then exitSkippingStaticDestructors), so that an exit() or a
// crash anywhere in the tool still reaches the client as its status. The server
// exits once idle for `idleSeconds`, after removing its socket.
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_SUPPORT_FORKSERVER_H
#define TITAN_SUPPORT_FORKSERVER_H

#include "llvm/ADT/StringRef.h"

namespace mlir::titan {

/// A tool's main function.
using ToolMain = int (*)(int argc, char **argv);

/// Flushes the standard streams and ends the process with `status`
/// without running static destructors: LibTorch's deregister every
/// operator, 0.3 s of CPU that a tool which has written and closed its
/// outputs does not need. Under AddressSanitizer the process exits
/// normally, so that the leak check runs.
[[noreturn]] void exitSkippingStaticDestructors(int status);

/// Serves requests on the Unix socket `socketPath` (see above) until idle
/// for `idleSeconds`; returns the server's exit status (1 if it cannot
/// listen).
int runForkServer(llvm::StringRef socketPath, ToolMain main,
                  int idleSeconds = 30);

} // namespace mlir::titan

#endif // TITAN_SUPPORT_FORKSERVER_H
