//===- LaunchEnvironmentTest.cpp - torchrun's variables -------------------===//

#include "comm/Connect.h"

#include "gtest/gtest.h"

#include <cstdlib>
#include <map>
#include <optional>

using namespace titan::rt;

namespace {

/// Every variable readLaunchEnvironment reads; the fixture clears them and
/// restores them afterwards.
constexpr const char *kVariables[] = {"RANK",
                                      "WORLD_SIZE",
                                      "LOCAL_RANK",
                                      "LOCAL_WORLD_SIZE",
                                      "MASTER_ADDR",
                                      "MASTER_PORT",
                                      "TORCHELASTIC_USE_AGENT_STORE",
                                      "TORCHELASTIC_RESTART_COUNT",
                                      "TORCHELASTIC_RUN_ID",
                                      "TITAN_COMM_TIMEOUT",
                                      "TITAN_COMM_ADDR"};

class LaunchEnvironmentTest : public testing::Test {
protected:
  void SetUp() override {
    for (const char *name : kVariables) {
      if (const char *value = std::getenv(name))
        saved[name] = value;
      unsetenv(name);
    }
  }
  void TearDown() override {
    for (const char *name : kVariables) {
      auto found = saved.find(name);
      if (found != saved.end())
        setenv(name, found->second.c_str(), 1);
      else
        unsetenv(name);
    }
  }

  /// Sets the variables of `values`, then reads the environment.
  Status read(const std::map<std::string, std::string> &values,
              LaunchEnvironment &env) {
    for (const auto &[name, value] : values)
      setenv(name.c_str(), value.c_str(), 1);
    return readLaunchEnvironment(env);
  }

  /// The error of reading with `values`.
  std::string error(const std::map<std::string, std::string> &values) {
    LaunchEnvironment env;
    Status status = read(values, env);
    EXPECT_EQ(status.getCode(), TITANRT_ERROR_INVALID_ARGUMENT);
    return status.getMessage();
  }

  std::map<std::string, std::string> saved;
};

/// What torchrun gives rank 3 of 4 on two nodes.
const std::map<std::string, std::string> kTorchrun = {
    {"RANK", "3"},
    {"WORLD_SIZE", "4"},
    {"LOCAL_RANK", "1"},
    {"LOCAL_WORLD_SIZE", "2"},
    {"MASTER_ADDR", "10.0.0.1"},
    {"MASTER_PORT", "29500"},
    {"TORCHELASTIC_USE_AGENT_STORE", "True"},
    {"TORCHELASTIC_RESTART_COUNT", "2"},
    {"TORCHELASTIC_RUN_ID", "job7"}};

std::map<std::string, std::string>
with(std::map<std::string, std::string> values, const std::string &name,
     const std::string &value) {
  values[name] = value;
  return values;
}

TEST_F(LaunchEnvironmentTest, WithoutALauncherTheProcessIsAlone) {
  LaunchEnvironment env;
  env.rank = 5;
  ASSERT_TRUE(read({}, env).ok());
  EXPECT_EQ(env.rank, 0);
  EXPECT_EQ(env.worldSize, 1);
  EXPECT_EQ(env.localRank, 0);
  EXPECT_EQ(env.localWorldSize, 1);
  EXPECT_FALSE(env.useAgentStore);
  EXPECT_EQ(env.collectiveTimeout, std::chrono::seconds(300));
  EXPECT_EQ(env.commAddr, "");
}

TEST_F(LaunchEnvironmentTest, TorchrunsVariables) {
  LaunchEnvironment env;
  ASSERT_TRUE(read(kTorchrun, env).ok());
  EXPECT_EQ(env.rank, 3);
  EXPECT_EQ(env.worldSize, 4);
  EXPECT_EQ(env.localRank, 1);
  EXPECT_EQ(env.localWorldSize, 2);
  EXPECT_EQ(env.masterAddr, "10.0.0.1");
  EXPECT_EQ(env.masterPort, 29500);
  EXPECT_TRUE(env.useAgentStore);
  EXPECT_EQ(env.restartCount, 2);
  EXPECT_EQ(env.runId, "job7");
}

TEST_F(LaunchEnvironmentTest, TitansOwnVariables) {
  LaunchEnvironment env;
  ASSERT_TRUE(read(with(with(kTorchrun, "TITAN_COMM_TIMEOUT", "2.5"),
                        "TITAN_COMM_ADDR", "10.0.0.7"),
                   env)
                  .ok());
  EXPECT_EQ(env.collectiveTimeout, std::chrono::milliseconds(2500));
  EXPECT_EQ(env.commAddr, "10.0.0.7");
}

TEST_F(LaunchEnvironmentTest, ErrorsNameTheVariableAndTheValue) {
  EXPECT_EQ(error({{"RANK", "0"}}), "RANK is set but WORLD_SIZE is not: a "
                                    "launcher sets both (titan-run and "
                                    "torchrun do)");
  EXPECT_EQ(error(with(kTorchrun, "RANK", "three")),
            "RANK is 'three': expected an integer in [0, 2147483648]");
  EXPECT_EQ(error(with(kTorchrun, "RANK", "4")),
            "RANK is 4 but WORLD_SIZE is 4: RANK must be below WORLD_SIZE");
  EXPECT_EQ(error(with(kTorchrun, "WORLD_SIZE", "0")),
            "WORLD_SIZE is '0': expected an integer in [1, 2147483648]");
  EXPECT_EQ(error(with(kTorchrun, "LOCAL_RANK", "2")),
            "LOCAL_RANK is 2 but LOCAL_WORLD_SIZE is 2: LOCAL_RANK must be "
            "below LOCAL_WORLD_SIZE");
  EXPECT_EQ(error(with(kTorchrun, "MASTER_PORT", "70000")),
            "MASTER_PORT is '70000': expected an integer in [1, 65535]");
  EXPECT_EQ(error(with(kTorchrun, "TORCHELASTIC_USE_AGENT_STORE", "yes")),
            "TORCHELASTIC_USE_AGENT_STORE is 'yes': expected True or False");
  EXPECT_EQ(error(with(kTorchrun, "TITAN_COMM_TIMEOUT", "0")),
            "TITAN_COMM_TIMEOUT is '0': expected a positive number of "
            "seconds");
}

TEST_F(LaunchEnvironmentTest, SeveralRanksNeedTheStoreAddress) {
  EXPECT_EQ(error({{"RANK", "1"}, {"WORLD_SIZE", "2"}, {"MASTER_PORT", "1"}}),
            "MASTER_ADDR is not set: with WORLD_SIZE > 1 every rank needs the "
            "address of the rendezvous store (MASTER_ADDR and MASTER_PORT; "
            "titan-run and torchrun set them)");
}

} // namespace
