//===- DeviceTest.cpp - the time model of titan/CostModel/Device.h --------===//

#include "titan/CostModel/Device.h"

#include "RoundDevice.h"

#include "gtest/gtest.h"

using namespace mlir::titan;

namespace {

/// The message of `error`, "" for success.
std::string messageOf(llvm::Error error) {
  return error ? llvm::toString(std::move(error)) : "";
}

using test::makeRoundDevice;

TEST(DeviceTest, GemmEfficiencyInterpolatesInLogFlopsAndClamps) {
  DeviceDescription device = makeRoundDevice();
  EXPECT_DOUBLE_EQ(getGemmEfficiency(device, 1e3), 0.1);
  EXPECT_DOUBLE_EQ(getGemmEfficiency(device, 1e6), 0.1);
  EXPECT_NEAR(getGemmEfficiency(device, 1e7), 0.3, 1e-12);
  EXPECT_DOUBLE_EQ(getGemmEfficiency(device, 1e8), 0.5);
  EXPECT_DOUBLE_EQ(getGemmEfficiency(device, 1e12), 0.5);
}

TEST(DeviceTest, MatmulPeakFallsBackToFloat32) {
  DeviceDescription device = makeRoundDevice();
  EXPECT_DOUBLE_EQ(getMatmulPeak(device, ElementType::BF16), 100e12);
  EXPECT_DOUBLE_EQ(getMatmulPeak(device, ElementType::F16), 10e12);
  EXPECT_DOUBLE_EQ(getMatmulPeak(device, ElementType::I64), 10e12);
  device.matmulPeak[static_cast<unsigned>(ElementType::F32)].reset();
  EXPECT_DOUBLE_EQ(getMatmulPeak(device, ElementType::F64), 5e12);
}

TEST(DeviceTest, ComputeTimeIsTheRooflinePlusOverhead) {
  DeviceDescription device = makeRoundDevice();
  // A 1e8-FLOP bf16 GEMM at 0.5 x 100 TFLOP/s: 2 us of compute; 1e5 bytes
  // at 0.5 TB/s: 0.2 us. Compute-bound.
  EXPECT_NEAR(predictComputeSeconds(device, ComputeClass::Gemm,
                                    ElementType::BF16, 1e8, 1e5),
              2e-6 + 1e-6, 1e-15);
  // The same FLOPs moving 1e7 bytes: 20 us of memory traffic.
  EXPECT_NEAR(predictComputeSeconds(device, ComputeClass::Gemm,
                                    ElementType::BF16, 1e8, 1e7),
              20e-6 + 1e-6, 1e-15);
  // An elementwise op: 1e6 FLOPs at 5 TFLOP/s (0.2 us), 1.2e7 bytes
  // (24 us).
  EXPECT_NEAR(predictComputeSeconds(device, ComputeClass::Vector,
                                    ElementType::F32, 1e6, 1.2e7),
              24e-6 + 1e-6, 1e-15);
  // Attention: 1e9 FLOPs at 0.25 x 100 TFLOP/s.
  EXPECT_NEAR(predictComputeSeconds(device, ComputeClass::Attention,
                                    ElementType::BF16, 1e9, 0),
              40e-6 + 1e-6, 1e-15);
}

TEST(DeviceTest, RingSteps) {
  EXPECT_EQ(getRingSteps(CollectiveKind::AllGather, 4), 3);
  EXPECT_EQ(getRingSteps(CollectiveKind::ReduceScatter, 8), 7);
  EXPECT_EQ(getRingSteps(CollectiveKind::AllToAll, 2), 1);
  EXPECT_EQ(getRingSteps(CollectiveKind::AllReduce, 4), 6);
  EXPECT_EQ(getRingSteps(CollectiveKind::Send, 2), 1);
  EXPECT_EQ(getRingSteps(CollectiveKind::AllReduce, 1), 0);
}

TEST(DeviceTest, CollectiveTimeIsAlphaBeta) {
  LinkDescription link{1e9, 1e-5};
  // all_reduce of 1 MB over 4 ranks: 6 steps, 2 x 3/4 MB sent.
  EXPECT_NEAR(predictCollectiveSeconds(
                  link, CollectiveKind::AllReduce, 4,
                  getBytesSentPerRank(CollectiveKind::AllReduce, 4, 1e6)),
              6e-5 + 1.5e-3, 1e-15);
  // all_gather of a 1 MB shard over 8 ranks: 7 steps, 7 MB.
  EXPECT_NEAR(predictCollectiveSeconds(link, CollectiveKind::AllGather, 8, 7e6),
              7e-5 + 7e-3, 1e-15);
  EXPECT_EQ(predictCollectiveSeconds(link, CollectiveKind::AllGather, 1, 1e6),
            0);
}

TEST(DeviceTest, AxisSpansNodes) {
  // 4 nodes of 8: the inner axis of [4, 8] stays on a node, the outer one
  // crosses nodes.
  EXPECT_FALSE(axisSpansNodes({4, 8}, 1, 8));
  EXPECT_TRUE(axisSpansNodes({4, 8}, 0, 8));
  // Everything on one node.
  EXPECT_FALSE(axisSpansNodes({8}, 0, 8));
  EXPECT_FALSE(axisSpansNodes({4, 8}, 0, 0));
  EXPECT_FALSE(axisSpansNodes({4, 8}, 0, 64));
  // [2, 2, 2] on nodes of 4: the outer axis crosses, the middle one (ranks
  // 0 and 2, 1 and 3, ...) does not.
  EXPECT_TRUE(axisSpansNodes({2, 2, 2}, 0, 4));
  EXPECT_FALSE(axisSpansNodes({2, 2, 2}, 1, 4));
  EXPECT_FALSE(axisSpansNodes({2, 2, 2}, 2, 4));
  // Groups that straddle a node boundary: [3, 2] on nodes of 3 puts ranks
  // 2 and 3 on two nodes.
  EXPECT_TRUE(axisSpansNodes({3, 2}, 1, 3));
  EXPECT_FALSE(axisSpansNodes({3, 2}, 1, 4)); // {0,1} {2,3} | {4,5}
  EXPECT_TRUE(axisSpansNodes({6}, 0, 4));

  DeviceDescription device = makeRoundDevice();
  EXPECT_EQ(&getAxesLink(device, {4, 8}, {1}, 8), &device.intraNode);
  EXPECT_EQ(&getAxesLink(device, {4, 8}, {0, 1}, 8), &device.interNode);
}

TEST(DeviceTest, ModelFlopsPerTokenIsTorchtitansFormula) {
  // Llama 3 8B at seq 8192: 7.50e9 parameters outside the embedding, 32
  // layers of 32 heads x 128: 6 x 7.5e9 + 12 x 32 x 4096 x 8192.
  EXPECT_DOUBLE_EQ(getModelFlopsPerToken(7.5e9, 32.0 * 4096, 8192),
                   6 * 7.5e9 + 12.0 * 32 * 4096 * 8192);
}

TEST(DeviceTest, VerifyNamesTheBadField) {
  DeviceDescription device = makeRoundDevice();
  EXPECT_EQ(messageOf(verifyDevice(device)), "");
  device.gemmEfficiency = {{1e8, 0.5}, {1e6, 0.1}};
  EXPECT_EQ(messageOf(verifyDevice(device)),
            "device 'round': gemm.flops must be ascending");
  device = makeRoundDevice();
  device.memoryEfficiency = 1.5;
  EXPECT_EQ(messageOf(verifyDevice(device)),
            "device 'round': memory.efficiency must be in (0, 1]");
  device = makeRoundDevice();
  device.interNode.bytesPerSecond = 0;
  EXPECT_EQ(messageOf(verifyDevice(device)),
            "device 'round': inter_node.bandwidth_gbps must be positive");
}

} // namespace
