//===- NcclUniqueIdTest.cpp - NCCL's unique id through titan's store ------===//

#include "comm/nccl/NcclUniqueId.h"
#include "comm/StoreClient.h"
#include "comm/StoreServer.h"

#include "gtest/gtest.h"

#include <cstring>
#include <thread>

using namespace titan::rt;
using std::chrono::milliseconds;

namespace {

/// NCCL 2.28.9's version code.
constexpr int kVersion = 22809;

/// An id whose bytes are all different, with the bytes a text encoding
/// could trip on (zeros, spaces, newlines) among them.
ncclUniqueId makeId() {
  ncclUniqueId id;
  for (size_t index = 0; index < sizeof(id.internal); ++index)
    id.internal[index] = static_cast<char>(index * 7 + 3);
  id.internal[0] = 0;
  id.internal[1] = ' ';
  id.internal[2] = '\n';
  return id;
}

bool sameId(const ncclUniqueId &a, const ncclUniqueId &b) {
  return std::memcmp(a.internal, b.internal, sizeof(a.internal)) == 0;
}

TEST(NcclUniqueId, EncodingRoundTrips) {
  const ncclUniqueId id = makeId();
  std::vector<uint8_t> value = encodeUniqueId(id, kVersion);
  const std::string header = "titan-nccl-id 22809 ";
  ASSERT_EQ(value.size(), header.size() + NCCL_UNIQUE_ID_BYTES);
  EXPECT_EQ(std::string(value.begin(), value.begin() + header.size()), header);
  ncclUniqueId decoded;
  ASSERT_TRUE(decodeUniqueId("key", value, kVersion, decoded).ok());
  EXPECT_TRUE(sameId(decoded, id));
}

TEST(NcclUniqueId, RefusalsNameTheKey) {
  ncclUniqueId decoded;
  std::vector<uint8_t> value = encodeUniqueId(makeId(), kVersion);

  Status status = decodeUniqueId("k", value, 22703, decoded);
  EXPECT_EQ(status.getCode(), TITANRT_ERROR_COMMUNICATION);
  EXPECT_EQ(status.getMessage(),
            "the NCCL unique id under 'k' was written by a rank running NCCL "
            "2.28.9 but this rank runs NCCL 2.27.3: every rank must load the "
            "same NCCL (check LD_LIBRARY_PATH)");

  std::vector<uint8_t> shorter(value.begin(), value.end() - 1);
  EXPECT_EQ(decodeUniqueId("k", shorter, kVersion, decoded).getMessage(),
            "the NCCL unique id under 'k' has 127 bytes, not 128");

  std::string text = "something else";
  EXPECT_EQ(decodeUniqueId("k", {text.begin(), text.end()}, kVersion, decoded)
                .getMessage(),
            "the value of 'k' in the rendezvous store is not an NCCL unique "
            "id written by titan (does another job use the same store and run "
            "id?)");

  text = "titan-nccl-id x";
  EXPECT_EQ(decodeUniqueId("k", {text.begin(), text.end()}, kVersion, decoded)
                .getMessage(),
            "the NCCL unique id under 'k' has no version");
}

TEST(NcclUniqueId, VersionsAsNcclWritesThem) {
  EXPECT_EQ(describeNcclVersion(22809), "2.28.9");
  EXPECT_EQ(describeNcclVersion(21805), "2.18.5");
  EXPECT_EQ(describeNcclVersion(2708), "2.7.8");
  EXPECT_EQ(describeNcclVersion(NCCL_VERSION_CODE),
            std::to_string(NCCL_MAJOR) + "." + std::to_string(NCCL_MINOR) +
                "." + std::to_string(NCCL_PATCH));
}

/// A store on a free port with clients under one job's prefix, as the ranks
/// of a job have.
class NcclUniqueIdStoreTest : public ::testing::Test {
protected:
  void SetUp() override { ASSERT_TRUE(StoreServer::start(0, server).ok()); }

  std::unique_ptr<StoreClient> connect(const std::string &prefix,
                                       milliseconds timeout) {
    std::unique_ptr<StoreClient> client;
    Status status = StoreClient::connect("127.0.0.1", server->getPort(), prefix,
                                         timeout, client);
    EXPECT_TRUE(status.ok()) << status.getMessage();
    return client;
  }

  std::unique_ptr<StoreServer> server;
};

TEST_F(NcclUniqueIdStoreTest, RankZeroPublishesAndTheOthersWaitForIt) {
  const std::string job = "titan/run/attempt_0/";
  const ncclUniqueId id = makeId();
  std::vector<ncclUniqueId> fetched(3);
  std::vector<Status> statuses(3);
  std::vector<std::thread> ranks;
  // The other ranks wait before rank 0 publishes.
  for (size_t rank = 0; rank < fetched.size(); ++rank)
    ranks.emplace_back([&, rank] {
      std::unique_ptr<StoreClient> client = connect(job, milliseconds(10000));
      statuses[rank] =
          fetchUniqueId(*client, kNcclWorldIdKey, kVersion, fetched[rank]);
    });
  std::this_thread::sleep_for(milliseconds(100));
  std::unique_ptr<StoreClient> rankZero = connect(job, milliseconds(10000));
  ASSERT_TRUE(publishUniqueId(*rankZero, kNcclWorldIdKey, id, kVersion).ok());
  for (std::thread &rank : ranks)
    rank.join();
  for (size_t rank = 0; rank < fetched.size(); ++rank) {
    EXPECT_TRUE(statuses[rank].ok()) << statuses[rank].getMessage();
    EXPECT_TRUE(sameId(fetched[rank], id));
  }
}

TEST_F(NcclUniqueIdStoreTest, AnotherAttemptDoesNotSeeTheIdAndSaysWhy) {
  std::unique_ptr<StoreClient> rankZero =
      connect("titan/run/attempt_0/", milliseconds(10000));
  ASSERT_TRUE(
      publishUniqueId(*rankZero, kNcclWorldIdKey, makeId(), kVersion).ok());
  std::unique_ptr<StoreClient> restarted =
      connect("titan/run/attempt_1/", milliseconds(200));
  ncclUniqueId id;
  Status status = fetchUniqueId(*restarted, kNcclWorldIdKey, kVersion, id);
  EXPECT_EQ(status.getCode(), TITANRT_ERROR_COMMUNICATION);
  EXPECT_EQ(status.getMessage().rfind(
                "waiting 0.2 s for the NCCL unique id rank 0 publishes: ", 0),
            0u)
      << status.getMessage();
  EXPECT_NE(status.getMessage().find(
                "(is rank 0 running, and did it reach the NCCL bootstrap?)"),
            std::string::npos);
}

TEST_F(NcclUniqueIdStoreTest, AValueFromAnotherNcclIsRefused) {
  std::unique_ptr<StoreClient> client =
      connect("titan/run/attempt_0/", milliseconds(10000));
  ASSERT_TRUE(publishUniqueId(*client, kNcclWorldIdKey, makeId(), 22703).ok());
  ncclUniqueId id;
  Status status = fetchUniqueId(*client, kNcclWorldIdKey, kVersion, id);
  EXPECT_NE(status.getMessage().find("running NCCL 2.27.3 but this rank runs "
                                     "NCCL 2.28.9"),
            std::string::npos)
      << status.getMessage();
}

} // namespace
