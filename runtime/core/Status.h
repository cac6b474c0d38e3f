//===- Status.h - errors inside libtitanrt ----------------------*- C++ -*-===//
//
// A titanrt_status code with a message: what every runtime operation
// returns. The C ABI functions turn a failed Status into the code they
// return and the message titanrt_last_error() gives.
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_RUNTIME_CORE_STATUS_H
#define TITAN_RUNTIME_CORE_STATUS_H

#include "titan/Runtime/titanrt.h"

#include <string>
#include <utility>

namespace titan::rt {

/// The outcome of a runtime operation: TITANRT_OK, or an error code and a
/// message that names what failed and, where there is one, the fix.
class [[nodiscard]] Status {
public:
  Status() = default;
  Status(titanrt_status code, std::string message)
      : code(code), message(std::move(message)) {}

  static Status success() { return Status(); }
  static Status invalidArgument(std::string message) {
    return {TITANRT_ERROR_INVALID_ARGUMENT, std::move(message)};
  }
  static Status communication(std::string message) {
    return {TITANRT_ERROR_COMMUNICATION, std::move(message)};
  }
  static Status io(std::string message) {
    return {TITANRT_ERROR_IO, std::move(message)};
  }
  static Status unsupported(std::string message) {
    return {TITANRT_ERROR_UNSUPPORTED, std::move(message)};
  }
  static Status internal(std::string message) {
    return {TITANRT_ERROR_INTERNAL, std::move(message)};
  }

  bool ok() const { return code == TITANRT_OK; }
  explicit operator bool() const { return !ok(); }
  titanrt_status getCode() const { return code; }
  const std::string &getMessage() const { return message; }

private:
  titanrt_status code = TITANRT_OK;
  std::string message;
};

/// Returns from the enclosing function when `expr` is an error Status.
#define TITANRT_RETURN_IF_ERROR(expr)                                          \
  do {                                                                         \
    ::titan::rt::Status titanrtStatus_ = (expr);                               \
    if (!titanrtStatus_.ok())                                                  \
      return titanrtStatus_;                                                   \
  } while (false)

/// The size in bytes of one element of `dtype`, or 0 for an unknown code.
size_t dtypeSize(int32_t dtype);

/// The name of `dtype` ("f32", "bf16", ...), or "dtype <code>".
std::string dtypeName(int32_t dtype);

/// Fails (naming `op`) if `addend`, an optional input added to the `bytes`
/// at `out`, overlaps them without being `out` (computed in place).
Status checkAddend(const char *op, const void *addend, const void *out,
                   int64_t bytes);

} // namespace titan::rt

#endif // TITAN_RUNTIME_CORE_STATUS_H
