//===- StoreTest.cpp - the TCPStore client and server, and PyTorch's ------===//

#include "ThreadJob.h"
#include "comm/StoreClient.h"
#include "comm/StoreServer.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

#include <cstdio>
#include <thread>

using namespace titan::rt;
using namespace titan::rt::test;
using std::chrono::milliseconds;
using std::chrono::seconds;
using testing::HasSubstr;

namespace {

/// A generous bound on operations that wait.
constexpr seconds kBound(30);

std::vector<uint8_t> bytes(const std::string &text) {
  return std::vector<uint8_t>(text.begin(), text.end());
}

std::string text(const std::vector<uint8_t> &bytes) {
  return std::string(bytes.begin(), bytes.end());
}

/// A server on a free port and a client of it with `prefix`.
class StoreTest : public testing::Test {
protected:
  void SetUp() override {
    ASSERT_TRUE(StoreServer::start(0, server).ok());
    client = connect("");
  }

  std::unique_ptr<StoreClient> connect(const std::string &prefix,
                                       milliseconds timeout = kBound) {
    std::unique_ptr<StoreClient> result;
    Status status = StoreClient::connect("127.0.0.1", server->getPort(), prefix,
                                         timeout, result);
    EXPECT_TRUE(status.ok()) << status.getMessage();
    return result;
  }

  std::unique_ptr<StoreServer> server;
  std::unique_ptr<StoreClient> client;
};

TEST_F(StoreTest, SetGetAddCheckWait) {
  ASSERT_TRUE(client->set("greeting", bytes("hello")).ok());
  std::vector<uint8_t> value;
  ASSERT_TRUE(client->get("greeting", value).ok());
  EXPECT_EQ(text(value), "hello");

  int64_t sum = 0;
  ASSERT_TRUE(client->add("counter", 5, sum).ok());
  EXPECT_EQ(sum, 5);
  ASSERT_TRUE(client->add("counter", -7, sum).ok());
  EXPECT_EQ(sum, -2);
  ASSERT_TRUE(client->get("counter", value).ok());
  EXPECT_EQ(text(value), "-2");

  bool ready = true;
  ASSERT_TRUE(client->check({"greeting", "missing"}, ready).ok());
  EXPECT_FALSE(ready);
  ASSERT_TRUE(client->check({"greeting", "counter"}, ready).ok());
  EXPECT_TRUE(ready);
  EXPECT_TRUE(client->wait({"greeting", "counter"}, seconds(1)).ok());
}

TEST_F(StoreTest, GetAndWaitBlockUntilTheKeyIsSet) {
  std::unique_ptr<StoreClient> waiter = connect("");
  std::unique_ptr<StoreClient> other = connect("");
  std::thread setter([&] {
    std::this_thread::sleep_for(milliseconds(200));
    EXPECT_TRUE(client->set("late", bytes("here")).ok());
  });
  std::vector<uint8_t> value;
  std::thread waiting(
      [&] { EXPECT_TRUE(waiter->wait({"late"}, kBound).ok()); });
  EXPECT_TRUE(other->get("late", value).ok());
  EXPECT_EQ(text(value), "here");
  setter.join();
  waiting.join();
}

TEST_F(StoreTest, AWaitTimesOutAndTheClientStillWorks) {
  Clock::time_point start = Clock::now();
  Status status = client->wait({"never", "set"}, milliseconds(200));
  EXPECT_LT(secondsSince(start), kBound.count());
  EXPECT_EQ(status.getCode(), TITANRT_ERROR_COMMUNICATION);
  EXPECT_EQ(status.getMessage(), "rendezvous store at 127.0.0.1:" +
                                     std::to_string(server->getPort()) +
                                     ": wait for 'never', 'set': timed out");
  // The connection was replaced: the late answer is not read as the next.
  ASSERT_TRUE(client->set("never", bytes("1")).ok());
  ASSERT_TRUE(client->set("set", bytes("2")).ok());
  std::vector<uint8_t> value;
  ASSERT_TRUE(client->get("set", value).ok());
  EXPECT_EQ(text(value), "2");
}

TEST_F(StoreTest, AGetTimesOutAfterTheClientTimeout) {
  std::unique_ptr<StoreClient> impatient = connect("", milliseconds(200));
  std::vector<uint8_t> value;
  Status status = impatient->get("never", value);
  EXPECT_EQ(status.getCode(), TITANRT_ERROR_COMMUNICATION);
  EXPECT_THAT(status.getMessage(), HasSubstr("wait for 'never': timed out"));
}

TEST_F(StoreTest, PrefixesSeparateRuns) {
  std::unique_ptr<StoreClient> first = connect("run1/");
  std::unique_ptr<StoreClient> second = connect("run2/");
  ASSERT_TRUE(first->set("key", bytes("one")).ok());
  ASSERT_TRUE(second->set("key", bytes("two")).ok());
  std::vector<uint8_t> value;
  ASSERT_TRUE(first->get("key", value).ok());
  EXPECT_EQ(text(value), "one");
  ASSERT_TRUE(second->get("key", value).ok());
  EXPECT_EQ(text(value), "two");
  ASSERT_TRUE(client->get("run1/key", value).ok());
  EXPECT_EQ(text(value), "one");
  bool ready = true;
  ASSERT_TRUE(client->check({"key"}, ready).ok());
  EXPECT_FALSE(ready);
}

TEST_F(StoreTest, ManyWaitersWakeOnOneSetAndAClosedWaiterIsForgotten) {
  {
    // A waiter that goes away while waiting.
    std::unique_ptr<StoreClient> quitter = connect("");
    EXPECT_FALSE(quitter->wait({"go"}, milliseconds(50)).ok());
  }
  std::vector<std::unique_ptr<StoreClient>> waiters;
  for (int index = 0; index < 4; ++index)
    waiters.push_back(connect(""));
  std::vector<std::thread> threads;
  for (auto &waiter : waiters)
    threads.emplace_back([&waiter] {
      EXPECT_TRUE(waiter->wait({"go", "also"}, kBound).ok());
    });
  ASSERT_TRUE(client->set("also", bytes("")).ok());
  std::this_thread::sleep_for(milliseconds(50));
  ASSERT_TRUE(client->set("go", bytes("")).ok());
  for (std::thread &thread : threads)
    thread.join();
}

TEST(StoreConnect, RetriesUntilTheServerListens) {
  int port = findFreePort();
  std::unique_ptr<StoreServer> server;
  std::thread starter([&] {
    std::this_thread::sleep_for(milliseconds(300));
    EXPECT_TRUE(StoreServer::start(port, server).ok());
  });
  std::unique_ptr<StoreClient> client;
  Status status = StoreClient::connect("127.0.0.1", port, "", kBound, client);
  starter.join();
  ASSERT_TRUE(status.ok()) << status.getMessage();
  EXPECT_TRUE(client->set("up", bytes("yes")).ok());
}

TEST(StoreConnect, GivesUpAfterTheTimeoutNamingTheAddress) {
  int port = findFreePort();
  std::unique_ptr<StoreClient> client;
  Clock::time_point start = Clock::now();
  Status status =
      StoreClient::connect("127.0.0.1", port, "", milliseconds(300), client);
  EXPECT_LT(secondsSince(start), kBound.count());
  EXPECT_EQ(status.getMessage(),
            "cannot reach the rendezvous store at 127.0.0.1:" +
                std::to_string(port) + " after 0.3 s: connection refused");
  EXPECT_EQ(client, nullptr);
}

TEST(StoreConnect, AnUnknownHostIsNamed) {
  std::unique_ptr<StoreClient> client;
  Status status = StoreClient::connect("no-such-host.invalid", 29500, "",
                                       milliseconds(300), client);
  EXPECT_THAT(status.getMessage(),
              HasSubstr("cannot resolve the host name 'no-such-host.invalid' "
                        "of the rendezvous store"));
}

TEST(StoreServer, APortInUseIsAnError) {
  std::unique_ptr<StoreServer> first, second;
  ASSERT_TRUE(StoreServer::start(0, first).ok());
  Status status = StoreServer::start(first->getPort(), second);
  EXPECT_EQ(status.getMessage(), "cannot listen on port " +
                                     std::to_string(first->getPort()) +
                                     ": address already in use");
}

/// Runs `script` with PyTorch 1.13's Python; returns its stdout. Lines the
/// script prints before it is done can be read while it runs through
/// `onLine`.
std::string runPython(const std::string &script,
                      const std::function<void(const std::string &)> &onLine,
                      int &exitCode) {
  std::string command = std::string(TITAN_PYTHON) + " -c '" + script + "'";
  FILE *pipe = popen(command.c_str(), "r");
  EXPECT_NE(pipe, nullptr);
  std::string output;
  char line[4096];
  while (pipe && fgets(line, sizeof(line), pipe)) {
    output += line;
    onLine(line);
  }
  exitCode = pipe ? pclose(pipe) : -1;
  return output;
}

TEST(StoreInterop, PythonTCPStoreClientAgainstTitanServer) {
  std::unique_ptr<StoreServer> server;
  ASSERT_TRUE(StoreServer::start(0, server).ok());
  std::unique_ptr<StoreClient> client;
  ASSERT_TRUE(
      StoreClient::connect("127.0.0.1", server->getPort(), "", kBound, client)
          .ok());
  ASSERT_TRUE(client->set("from_titan", bytes("hi python")).ok());
  std::string script =
      "import datetime, torch.distributed as d\n"
      "s = d.TCPStore(\"127.0.0.1\", " +
      std::to_string(server->getPort()) +
      ", None, False, datetime.timedelta(seconds=30))\n"
      "assert s.get(\"from_titan\") == b\"hi python\"\n"
      "s.set(\"from_python\", \"hi titan\")\n"
      "assert s.add(\"n\", 5) == 5 and s.add(\"n\", 2) == 7\n"
      "assert s.compare_set(\"c\", \"\", \"x\") == b\"x\"\n"
      "assert s.compare_set(\"c\", \"x\", \"y\") == b\"y\"\n"
      "assert s.compare_set(\"c\", \"z\", \"w\") == b\"y\"\n"
      "assert s.compare_set(\"absent\", \"z\", \"w\") == b\"z\"\n"
      "assert s.num_keys() == 4, s.num_keys()\n"
      "assert s.delete_key(\"c\") and not s.delete_key(\"c\")\n"
      "s.wait([\"from_titan\", \"n\"])\n"
      "try:\n"
      "    s.wait([\"never\"], datetime.timedelta(milliseconds=200))\n"
      "    raise SystemExit(\"wait did not time out\")\n"
      "except RuntimeError:\n"
      "    pass\n"
      "print(\"python ok\")\n";
  int exitCode = 0;
  std::string output = runPython(
      script, [](const std::string &) {}, exitCode);
  EXPECT_EQ(exitCode, 0) << output;
  EXPECT_EQ(output, "python ok\n");
  std::vector<uint8_t> value;
  ASSERT_TRUE(client->get("from_python", value).ok());
  EXPECT_EQ(text(value), "hi titan");
  ASSERT_TRUE(client->get("n", value).ok());
  EXPECT_EQ(text(value), "7");
}

TEST(StoreInterop, TitanClientAgainstPythonTCPStoreServer) {
  std::string script =
      "import datetime, torch.distributed as d\n"
      "s = d.TCPStore(\"127.0.0.1\", 0, None, True, "
      "datetime.timedelta(seconds=30), wait_for_workers=False)\n"
      "s.set(\"from_python\", \"hi titan\")\n"
      "print(s.port, flush=True)\n"
      "s.wait([\"done\"])\n"
      "assert s.get(\"from_titan\") == b\"hi python\"\n"
      "assert s.get(\"run/key\") == b\"prefixed\"\n"
      "assert s.add(\"n\", 0) == 12\n"
      "print(\"python ok\", flush=True)\n";
  std::thread clientThread;
  Status clientStatus;
  int exitCode = 0;
  std::string output = runPython(
      script,
      [&](const std::string &line) {
        if (clientThread.joinable())
          return;
        int port = std::stoi(line);
        clientThread = std::thread([&, port] {
          clientStatus = [&]() -> Status {
            std::unique_ptr<StoreClient> client, prefixed;
            TITANRT_RETURN_IF_ERROR(
                StoreClient::connect("127.0.0.1", port, "", kBound, client));
            TITANRT_RETURN_IF_ERROR(StoreClient::connect(
                "127.0.0.1", port, "run/", kBound, prefixed));
            std::vector<uint8_t> value;
            TITANRT_RETURN_IF_ERROR(client->get("from_python", value));
            if (text(value) != "hi titan")
              return Status::internal("read '" + text(value) + "'");
            int64_t sum;
            TITANRT_RETURN_IF_ERROR(client->add("n", 12, sum));
            bool ready = true;
            TITANRT_RETURN_IF_ERROR(client->check({"absent"}, ready));
            if (ready)
              return Status::internal("'absent' is there");
            TITANRT_RETURN_IF_ERROR(
                client->set("from_titan", bytes("hi python")));
            TITANRT_RETURN_IF_ERROR(prefixed->set("key", bytes("prefixed")));
            TITANRT_RETURN_IF_ERROR(client->wait({"from_python"}, kBound));
            return client->set("done", bytes(""));
          }();
        });
      },
      exitCode);
  ASSERT_TRUE(clientThread.joinable()) << output;
  clientThread.join();
  EXPECT_TRUE(clientStatus.ok()) << clientStatus.getMessage();
  EXPECT_EQ(exitCode, 0) << output;
  EXPECT_THAT(output, HasSubstr("python ok\n"));
}

} // namespace
