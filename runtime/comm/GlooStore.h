//===- GlooStore.h - Gloo's rendezvous store over a TCPStore ----*- C++ -*-===//
//
// Gloo's contexts exchange their addresses through a
// gloo::rendezvous::Store; this one forwards to a StoreClient, so Gloo
// meets its peers at torchrun's, titan-run's or rank 0's TCPStore.
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_RUNTIME_COMM_GLOOSTORE_H
#define TITAN_RUNTIME_COMM_GLOOSTORE_H

#include "comm/StoreClient.h"

#include <gloo/rendezvous/store.h>

namespace titan::rt {

/// A gloo::rendezvous::Store over a StoreClient. Gloo expects exceptions:
/// a failed request throws gloo::IoException with the client's message.
class GlooStore final : public gloo::rendezvous::Store {
public:
  explicit GlooStore(StoreClient &client) : client(client) {}

  /// Sets `key` to `data`.
  void set(const std::string &key, const std::vector<char> &data) override;
  /// Waits (up to the client's timeout) for `key` and reads it, as Gloo's
  /// own stores do.
  std::vector<char> get(const std::string &key) override;
  /// Waits up to the client's timeout for every key of `keys`.
  void wait(const std::vector<std::string> &keys) override;
  /// Waits up to `timeout` for every key of `keys`.
  void wait(const std::vector<std::string> &keys,
            const std::chrono::milliseconds &timeout) override;

private:
  /// The rendezvous store.
  StoreClient &client;
};

} // namespace titan::rt

#endif // TITAN_RUNTIME_COMM_GLOOSTORE_H
