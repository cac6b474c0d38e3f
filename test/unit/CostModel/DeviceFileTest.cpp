//===- DeviceFileTest.cpp - device files (titan/Config/DeviceFile.h) ------===//

#include "titan/Config/DeviceFile.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

using namespace mlir::titan;

namespace {

/// A complete device file; tests replace parts of it.
const char *kDeviceFile = R"(
[device]
name = "test"
memory_gib = 16
ranks_per_node = 4
op_overhead_us = 2

[peak_tflops]
bfloat16 = 100
float32 = 10
vector = 5

[memory]
bandwidth_gbps = 1000
efficiency = 0.5

[gemm]
flops = [1e6, 1e8]
efficiency = [0.1, 0.5]
attention_efficiency = 0.25

[intra_node]
bandwidth_gbps = 100
latency_us = 2

[inter_node]
bandwidth_gbps = 10
latency_us = 10
)";

/// The error message of parsing `text`, or "" when it parses.
std::string parseError(const std::string &text) {
  llvm::Expected<DeviceDescription> device = parseDeviceFile(text, "test.toml");
  return device ? "" : llvm::toString(device.takeError());
}

std::string replaced(llvm::StringRef from, llvm::StringRef to) {
  std::string text = kDeviceFile;
  size_t at = text.find(from.str());
  EXPECT_NE(at, std::string::npos) << from.str();
  return text.replace(at, from.size(), to.str());
}

TEST(DeviceFileTest, ParsesUnitsIntoSeconds) {
  llvm::Expected<DeviceDescription> device =
      parseDeviceFile(kDeviceFile, "test.toml");
  ASSERT_TRUE(bool(device)) << llvm::toString(device.takeError());
  EXPECT_EQ(device->name, "test");
  EXPECT_DOUBLE_EQ(device->memoryBytes, 16.0 * (1ull << 30));
  EXPECT_EQ(device->ranksPerNode, 4);
  EXPECT_DOUBLE_EQ(device->opOverheadSeconds, 2e-6);
  EXPECT_DOUBLE_EQ(getMatmulPeak(*device, ElementType::BF16), 100e12);
  EXPECT_DOUBLE_EQ(getMatmulPeak(*device, ElementType::F32), 10e12);
  EXPECT_FALSE(device->matmulPeak[static_cast<unsigned>(ElementType::F16)]);
  EXPECT_DOUBLE_EQ(device->vectorPeak, 5e12);
  EXPECT_DOUBLE_EQ(device->memoryBytesPerSecond, 1e12);
  ASSERT_EQ(device->gemmEfficiency.size(), 2u);
  EXPECT_DOUBLE_EQ(device->gemmEfficiency[1].flops, 1e8);
  EXPECT_DOUBLE_EQ(device->gemmEfficiency[1].efficiency, 0.5);
  EXPECT_DOUBLE_EQ(device->intraNode.bytesPerSecond, 100e9);
  EXPECT_DOUBLE_EQ(device->interNode.latencySeconds, 10e-6);
  // Not a CPU device: no threads per rank.
  EXPECT_EQ(device->threadsPerRank, 0);
}

TEST(DeviceFileTest, ACpuDeviceSaysItsThreadsPerRank) {
  llvm::Expected<DeviceDescription> device =
      parseDeviceFile(replaced("ranks_per_node = 4\n",
                               "ranks_per_node = 4\nthreads_per_rank = 3\n"),
                      "test.toml");
  ASSERT_TRUE(bool(device)) << llvm::toString(device.takeError());
  EXPECT_EQ(device->threadsPerRank, 3);
  EXPECT_EQ(device->hardwareThreadsPerRank, 0) << "absent: threads_per_rank";
  llvm::Expected<DeviceDescription> shared =
      parseDeviceFile(replaced("ranks_per_node = 4\n",
                               "ranks_per_node = 4\nthreads_per_rank "
                               "= 3\nhardware_threads_per_rank = 1.5\n"),
                      "test.toml");
  ASSERT_TRUE(bool(shared)) << llvm::toString(shared.takeError());
  EXPECT_DOUBLE_EQ(shared->hardwareThreadsPerRank, 1.5);
  EXPECT_EQ(parseError(replaced("ranks_per_node = 4\n",
                                "ranks_per_node = 4\nthreads_per_rank = "
                                "1\nhardware_threads_per_rank = 2\n")),
            "test.toml: device 'test': hardware_threads_per_rank must be in "
            "(0, threads_per_rank], or absent");
  EXPECT_EQ(parseError(replaced("ranks_per_node = 4\n",
                                "ranks_per_node = 4\nthreads_per_rank = -1\n")),
            "test.toml: device 'test': threads_per_rank must be 0 (not a CPU "
            "device) or positive");
  // The bundled CPU device was calibrated with one thread per rank, four
  // ranks on two hardware threads.
  llvm::Expected<DeviceDescription> cpu = loadDevice("cpu");
  ASSERT_TRUE(bool(cpu)) << llvm::toString(cpu.takeError());
  EXPECT_EQ(cpu->threadsPerRank, 1);
  EXPECT_DOUBLE_EQ(cpu->hardwareThreadsPerRank, 0.5);
}

TEST(DeviceFileTest, ErrorsNameTheKeyAndTheLine) {
  EXPECT_EQ(parseError(replaced("[memory]\nbandwidth_gbps",
                                "[memory]\nbandwith_gbps")),
            "test.toml:14: unknown key "
            "'memory.bandwith_gbps' (did you mean "
            "'bandwidth_gbps'?)");
  EXPECT_EQ(parseError(replaced("[gemm]", "[gem]")),
            "test.toml:17: unknown section [gem] (did you mean 'gemm'?)");
  EXPECT_EQ(parseError(replaced("flops = [1e6, 1e8]", "flops = 1e6")),
            "test.toml:18: 'gemm.flops' must be an array of numbers");
  EXPECT_EQ(parseError(replaced("flops = [1e6, 1e8]", "flops = [1e6]")),
            "test.toml: 'gemm.flops' and 'gemm.efficiency' "
            "must have the same length");
  EXPECT_EQ(parseError(replaced("efficiency = 0.5", "efficiency = 0")),
            "test.toml: device 'test': memory.efficiency "
            "must be in (0, 1]");
  EXPECT_EQ(parseError(replaced("name = \"test\"\n", "")),
            "test.toml: 'device.name' is required");
}

TEST(DeviceFileTest, BundledDevicesLoad) {
  std::vector<llvm::StringRef> names = getBundledDeviceNames();
  EXPECT_THAT(names, testing::IsSupersetOf(
                         {"a100-sxm", "b200", "cpu", "h100-sxm", "h200"}));
  for (llvm::StringRef name : names) {
    llvm::Expected<DeviceDescription> device = loadDevice(name);
    ASSERT_TRUE(bool(device))
        << name.str() << ": " << llvm::toString(device.takeError());
    EXPECT_EQ(device->name, name);
  }
  // torchtitan's MFU divides by these bf16 peaks.
  llvm::Expected<DeviceDescription> h100 = loadDevice("h100-sxm");
  ASSERT_TRUE(bool(h100)) << llvm::toString(h100.takeError());
  EXPECT_DOUBLE_EQ(getMatmulPeak(*h100, ElementType::BF16), 989.5e12);
  EXPECT_EQ(h100->ranksPerNode, 8);
  llvm::Expected<DeviceDescription> a100 = loadDevice("a100-sxm");
  ASSERT_TRUE(bool(a100)) << llvm::toString(a100.takeError());
  EXPECT_DOUBLE_EQ(getMatmulPeak(*a100, ElementType::BF16), 312e12);
}

TEST(DeviceFileTest, UnknownDeviceListsTheBundledOnes) {
  llvm::Expected<DeviceDescription> device = loadDevice("h100");
  ASSERT_FALSE(bool(device));
  std::string message = llvm::toString(device.takeError());
  EXPECT_THAT(message,
              testing::StartsWith(
                  "device 'h100' is neither a bundled device (a100-sxm, "
                  "b200, cpu, h100-sxm, h200) (did you mean 'h100-sxm'?)"));
  EXPECT_THAT(message, testing::HasSubstr("nor a readable device file"));
}

} // namespace
