//===- CollectiveChecks.cpp - every collective, checked exactly -----------===//

#include "CollectiveChecks.h"

#include <algorithm>
#include <cstring>
#include <optional>
#include <string>

namespace titan::rt::test {

namespace {

constexpr titanrt_dtype kDtypes[] = {TITANRT_F32, TITANRT_F64,  TITANRT_I64,
                                     TITANRT_I32, TITANRT_BF16, TITANRT_F16};
constexpr titanrt_reduce kReductions[] = {TITANRT_SUM, TITANRT_AVG, TITANRT_MAX,
                                          TITANRT_MIN};
/// Element counts per member: fewer than the ranks, odd, several segments.
constexpr int64_t kCounts[] = {1, 7, 600};
/// Bytes per member of the byte-moving collectives (odd on purpose).
constexpr int64_t kBytes = 13;

const char *getReduceName(titanrt_reduce reduce) {
  switch (reduce) {
  case TITANRT_SUM:
    return "sum";
  case TITANRT_AVG:
    return "avg";
  case TITANRT_MAX:
    return "max";
  case TITANRT_MIN:
    return "min";
  }
  return "?";
}

/// Element `index` of world rank `rank`'s input, an integer in [-2, 2]
/// times `scale`. With `scale` the group size for avg, every sum, partial
/// sum and average of a group of up to 128 ranks is an integer exact in
/// every dtype (bf16 holds the integers up to 256).
double getValue(int64_t rank, int64_t index, int64_t scale) {
  return static_cast<double>(((rank * 7 + index * 3) % 5) - 2) *
         static_cast<double>(scale);
}

/// Byte `index` of world rank `rank`'s data for operation `salt`.
uint8_t getByte(int64_t rank, int64_t index, int64_t salt) {
  return static_cast<uint8_t>(rank * 31 + index * 7 + salt * 13);
}

/// Stores `value` (exact in `dtype`) as one element of `dtype`.
void storeElement(titanrt_dtype dtype, double value, uint8_t *out) {
  switch (dtype) {
  case TITANRT_F32: {
    float element = static_cast<float>(value);
    std::memcpy(out, &element, sizeof(element));
    return;
  }
  case TITANRT_F64:
    std::memcpy(out, &value, sizeof(value));
    return;
  case TITANRT_I64: {
    auto element = static_cast<int64_t>(value);
    std::memcpy(out, &element, sizeof(element));
    return;
  }
  case TITANRT_I32: {
    auto element = static_cast<int32_t>(value);
    std::memcpy(out, &element, sizeof(element));
    return;
  }
  case TITANRT_BF16: {
    float single = static_cast<float>(value);
    uint32_t bits;
    std::memcpy(&bits, &single, sizeof(bits));
    auto element = static_cast<uint16_t>(bits >> 16);
    std::memcpy(out, &element, sizeof(element));
    return;
  }
  case TITANRT_F16: {
    auto element = static_cast<_Float16>(static_cast<float>(value));
    std::memcpy(out, &element, sizeof(element));
    return;
  }
  default:
    return;
  }
}

/// The value of one element of `dtype`.
double loadElement(titanrt_dtype dtype, const uint8_t *in) {
  switch (dtype) {
  case TITANRT_F32: {
    float element;
    std::memcpy(&element, in, sizeof(element));
    return element;
  }
  case TITANRT_F64: {
    double element;
    std::memcpy(&element, in, sizeof(element));
    return element;
  }
  case TITANRT_I64: {
    int64_t element;
    std::memcpy(&element, in, sizeof(element));
    return static_cast<double>(element);
  }
  case TITANRT_I32: {
    int32_t element;
    std::memcpy(&element, in, sizeof(element));
    return element;
  }
  case TITANRT_BF16: {
    uint16_t element;
    std::memcpy(&element, in, sizeof(element));
    uint32_t bits = uint32_t(element) << 16;
    float single;
    std::memcpy(&single, &bits, sizeof(single));
    return single;
  }
  case TITANRT_F16: {
    _Float16 element;
    std::memcpy(&element, in, sizeof(element));
    return static_cast<float>(element);
  }
  default:
    return 0;
  }
}

/// Runs the checks of one communicator.
class Checker {
public:
  Checker(Communicator &communicator, const std::vector<int64_t> &groupRanks,
          int64_t worldRank)
      : communicator(communicator), groupRanks(groupRanks),
        worldRank(worldRank),
        self(std::find(groupRanks.begin(), groupRanks.end(), worldRank) -
             groupRanks.begin()),
        size(static_cast<int64_t>(groupRanks.size())) {}

  Status run(int64_t &checks);

private:
  /// Compares `actual` with `expected`, element by element of `dtype`
  /// (bytes without one).
  Status compare(const std::string &what, const std::vector<uint8_t> &actual,
                 const std::vector<uint8_t> &expected,
                 std::optional<titanrt_dtype> dtype = std::nullopt);
  /// Prefixes a failed operation's error with `what`.
  Status check(const std::string &what, Status status) {
    if (status.ok())
      return status;
    return Status(status.getCode(), what + ": " + status.getMessage());
  }

  Status checkAllGather();
  Status checkReductions(titanrt_dtype dtype, titanrt_reduce reduce,
                         int64_t count);
  Status checkAllToAll();
  Status checkBroadcast(int64_t root, bool inPlace);
  Status checkSendRecv();

  Communicator &communicator;
  const std::vector<int64_t> &groupRanks;
  int64_t worldRank;
  int64_t self;
  int64_t size;
  int64_t compared = 0;
};

Status Checker::compare(const std::string &what,
                        const std::vector<uint8_t> &actual,
                        const std::vector<uint8_t> &expected,
                        std::optional<titanrt_dtype> dtype) {
  ++compared;
  if (actual == expected)
    return Status::success();
  size_t elementSize = dtype ? dtypeSize(*dtype) : 1;
  size_t index = 0;
  while (index < actual.size() &&
         std::memcmp(&actual[index], &expected[index], elementSize) == 0)
    index += elementSize;
  auto format = [&](const std::vector<uint8_t> &buffer) {
    return dtype ? std::to_string(loadElement(*dtype, &buffer[index]))
                 : std::to_string(buffer[index]);
  };
  return Status::internal(what + " on world rank " + std::to_string(worldRank) +
                          ": " + (dtype ? "element " : "byte ") +
                          std::to_string(index / elementSize) + " is " +
                          format(actual) + ", expected " + format(expected));
}

Status Checker::checkAllGather() {
  std::vector<uint8_t> in(kBytes), out(kBytes * size), expected(kBytes * size);
  for (int64_t index = 0; index < kBytes; ++index)
    in[index] = getByte(worldRank, index, 1);
  for (int64_t member = 0; member < size; ++member)
    for (int64_t index = 0; index < kBytes; ++index)
      expected[member * kBytes + index] = getByte(groupRanks[member], index, 1);
  TITANRT_RETURN_IF_ERROR(check(
      "all_gather", communicator.allGather(in.data(), out.data(), kBytes)));
  return compare("all_gather", out, expected);
}

Status Checker::checkReductions(titanrt_dtype dtype, titanrt_reduce reduce,
                                int64_t count) {
  const std::string name = dtypeName(dtype) + " " + getReduceName(reduce) +
                           " (count " + std::to_string(count) + ")";
  const size_t elementSize = dtypeSize(dtype);
  const int64_t scale = reduce == TITANRT_AVG ? size : 1;
  // The reduction of every member's element `index`.
  auto reduced = [&](int64_t index) {
    std::vector<double> values;
    for (int64_t member : groupRanks)
      values.push_back(getValue(member, index, scale));
    double sum = 0;
    for (double value : values)
      sum += value;
    switch (reduce) {
    case TITANRT_SUM:
      return sum;
    case TITANRT_AVG:
      return sum / static_cast<double>(size);
    case TITANRT_MAX:
      return *std::max_element(values.begin(), values.end());
    case TITANRT_MIN:
      return *std::min_element(values.begin(), values.end());
    }
    return 0.0;
  };

  // all_reduce, out of place and in place.
  std::vector<uint8_t> in(count * elementSize), expected(count * elementSize);
  for (int64_t index = 0; index < count; ++index) {
    storeElement(dtype, getValue(worldRank, index, scale),
                 &in[index * elementSize]);
    storeElement(dtype, reduced(index), &expected[index * elementSize]);
  }
  std::vector<uint8_t> out(in.size());
  TITANRT_RETURN_IF_ERROR(check(
      "all_reduce " + name,
      communicator.allReduce(dtype, reduce, in.data(), out.data(), count)));
  TITANRT_RETURN_IF_ERROR(compare("all_reduce " + name, out, expected, dtype));
  TITANRT_RETURN_IF_ERROR(check(
      "all_reduce in place " + name,
      communicator.allReduce(dtype, reduce, in.data(), in.data(), count)));
  TITANRT_RETURN_IF_ERROR(
      compare("all_reduce in place " + name, in, expected, dtype));

  // reduce_scatter: chunk `self` of the reduction of size x count elements.
  std::vector<uint8_t> whole(size * count * elementSize);
  for (int64_t index = 0; index < size * count; ++index)
    storeElement(dtype, getValue(worldRank, index, scale),
                 &whole[index * elementSize]);
  for (int64_t index = 0; index < count; ++index)
    storeElement(dtype, reduced(self * count + index),
                 &expected[index * elementSize]);
  TITANRT_RETURN_IF_ERROR(
      check("reduce_scatter " + name,
            communicator.reduceScatter(dtype, reduce, whole.data(), out.data(),
                                       count)));
  return compare("reduce_scatter " + name, out, expected, dtype);
}

Status Checker::checkAllToAll() {
  // Chunk j of member m's input is getByte(m, ..., 10 + j).
  std::vector<uint8_t> in(kBytes * size), out(kBytes * size),
      expected(kBytes * size);
  for (int64_t member = 0; member < size; ++member)
    for (int64_t index = 0; index < kBytes; ++index) {
      in[member * kBytes + index] = getByte(worldRank, index, 10 + member);
      expected[member * kBytes + index] =
          getByte(groupRanks[member], index, 10 + self);
    }
  TITANRT_RETURN_IF_ERROR(check(
      "all_to_all", communicator.allToAll(in.data(), out.data(), kBytes)));
  return compare("all_to_all", out, expected);
}

Status Checker::checkBroadcast(int64_t root, bool inPlace) {
  const std::string name = std::string("broadcast") +
                           (inPlace ? " in place" : "") + " from root " +
                           std::to_string(root);
  std::vector<uint8_t> in(kBytes), out(kBytes, 0), expected(kBytes);
  for (int64_t index = 0; index < kBytes; ++index) {
    in[index] = getByte(worldRank, index, 2);
    expected[index] = getByte(groupRanks[root], index, 2);
  }
  std::vector<uint8_t> &target = inPlace ? in : out;
  TITANRT_RETURN_IF_ERROR(check(
      name, communicator.broadcast(root, in.data(), target.data(), kBytes)));
  return compare(name, target, expected);
}

Status Checker::checkSendRecv() {
  // Around the group: each member sends two messages (tags 1 and 2) to the
  // next and receives two from the previous, every member sending first:
  // sends do not wait for their receivers (a rendezvous send would
  // deadlock here), the data is copied at the send (the buffer is
  // overwritten right after), and completeSends() waits for them.
  const int64_t next = (self + 1) % size;
  const int64_t previous = (self + size - 1) % size;
  auto message = [](int64_t sender, int64_t tag) {
    std::vector<uint8_t> bytes(kBytes);
    for (int64_t index = 0; index < kBytes; ++index)
      bytes[index] = getByte(sender, index, 20 + tag);
    return bytes;
  };
  auto sendBoth = [&]() -> Status {
    for (int64_t tag : {1, 2}) {
      std::vector<uint8_t> bytes = message(worldRank, tag);
      TITANRT_RETURN_IF_ERROR(
          check("send tag " + std::to_string(tag),
                communicator.send(next, tag, bytes.data(), kBytes)));
      std::fill(bytes.begin(), bytes.end(), 0);
    }
    return Status::success();
  };
  auto receiveBoth = [&]() -> Status {
    for (int64_t tag : {1, 2}) {
      std::vector<uint8_t> bytes(kBytes);
      std::string name = "recv tag " + std::to_string(tag);
      TITANRT_RETURN_IF_ERROR(
          check(name, communicator.recv(previous, tag, bytes.data(), kBytes)));
      TITANRT_RETURN_IF_ERROR(
          compare(name, bytes, message(groupRanks[previous], tag)));
    }
    return Status::success();
  };
  TITANRT_RETURN_IF_ERROR(sendBoth());
  TITANRT_RETURN_IF_ERROR(receiveBoth());
  return check("complete the sends", communicator.completeSends());
}

Status Checker::run(int64_t &checks) {
  if (self == size)
    return Status::internal("world rank " + std::to_string(worldRank) +
                            " is not in the group it checks");
  if (communicator.getRank() != self || communicator.getSize() != size)
    return Status::internal("the communicator says group rank " +
                            std::to_string(communicator.getRank()) + " of " +
                            std::to_string(communicator.getSize()) +
                            ", expected " + std::to_string(self) + " of " +
                            std::to_string(size));
  TITANRT_RETURN_IF_ERROR(checkAllGather());
  for (titanrt_dtype dtype : kDtypes)
    for (titanrt_reduce reduce : kReductions)
      for (int64_t count : kCounts)
        TITANRT_RETURN_IF_ERROR(checkReductions(dtype, reduce, count));
  TITANRT_RETURN_IF_ERROR(checkAllToAll());
  for (int64_t root = 0; root < size; ++root)
    for (bool inPlace : {false, true})
      TITANRT_RETURN_IF_ERROR(checkBroadcast(root, inPlace));
  if (size > 1)
    TITANRT_RETURN_IF_ERROR(checkSendRecv());
  TITANRT_RETURN_IF_ERROR(check("barrier", communicator.barrier()));
  checks += compared;
  return Status::success();
}

} // namespace

Status checkCollectives(Communicator &communicator,
                        const std::vector<int64_t> &groupRanks,
                        int64_t worldRank, int64_t &checks) {
  return Checker(communicator, groupRanks, worldRank).run(checks);
}

} // namespace titan::rt::test
