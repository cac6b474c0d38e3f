//===- GlooStore.cpp - Gloo's rendezvous store over a TCPStore ------------===//

#include "comm/GlooStore.h"

#include <gloo/common/error.h>

namespace titan::rt {

namespace {

/// Throws `status` as the exception Gloo's rendezvous handles.
void throwIfError(const Status &status) {
  if (!status.ok())
    throw gloo::IoException(status.getMessage());
}

} // namespace

void GlooStore::set(const std::string &key, const std::vector<char> &data) {
  throwIfError(client.set(key, std::vector<uint8_t>(data.begin(), data.end())));
}

std::vector<char> GlooStore::get(const std::string &key) {
  std::vector<uint8_t> value;
  throwIfError(client.get(key, value));
  return std::vector<char>(value.begin(), value.end());
}

void GlooStore::wait(const std::vector<std::string> &keys) {
  wait(keys, client.getTimeout());
}

void GlooStore::wait(const std::vector<std::string> &keys,
                     const std::chrono::milliseconds &timeout) {
  throwIfError(client.wait(keys, timeout));
}

} // namespace titan::rt
