//===- CudaBackendAbiTest.cpp - the CUDA backend's ABI calls, no GPU ------===//
//
// What CudaBackend decides without a GPU: the workspaces the ABI's calls
// get (planned by the compiler) hold what the kernels need: the attention
// gradient's the backward's delta, the cross-entropy's the row statistics
// and scalars, RMSNorm's
// backward its partial weight gradients.
//
//===----------------------------------------------------------------------===//

#include "cuda/CudaBackend.h"
#include "cuda/LaunchConfig.h"

#include "titan/Runtime/titanrt.h"

#include "gtest/gtest.h"

#include <vector>

using namespace titan::rt;
using namespace titan::rt::cuda;

namespace {

TEST(CudaBackendAbiTest, AttentionGradWorkspaceIsTheBackwardsDelta) {
  AttentionShape shape{3, 4, 2, 5, 64, true, 0.125};
  // One f32 per query row: what attentionBackward reads and writes, and
  // exactly what the compiler plans.
  EXPECT_EQ(int64_t(shape.batch * shape.qHeads * shape.seq * sizeof(float)),
            attentionBackwardWorkspaceBytes(shape));
  EXPECT_EQ(attentionBackwardWorkspaceBytes(shape),
            titanrt_attention_grad_workspace_bytes(shape.batch, shape.qHeads,
                                                   shape.seq));
}

TEST(CudaBackendAbiTest, CrossEntropyWorkspaceHoldsEveryStatistic) {
  int64_t rows = 7;
  int64_t planned = titanrt_cross_entropy_workspace_bytes(rows);
  std::vector<float> workspace(size_t(planned / sizeof(float)));
  CrossEntropyWorkspace parts =
      splitCrossEntropyWorkspace(workspace.data(), rows);
  // Four rows-long statistics side by side, then the two scalars, ending
  // exactly at the planned bytes.
  float *base = workspace.data();
  EXPECT_EQ(parts.rowMax, base);
  EXPECT_EQ(parts.rowSumExp, base + rows);
  EXPECT_EQ(parts.targetLogit, base + 2 * rows);
  EXPECT_EQ(parts.lse, base + 3 * rows);
  EXPECT_EQ(parts.validCount, base + 4 * rows);
  EXPECT_EQ(parts.loss + 1, base + workspace.size());
}

TEST(CudaBackendAbiTest, RmsNormGradWorkspaceIsTheKernelsPartials) {
  for (int64_t rows : {1, 255, 256, 4096})
    EXPECT_EQ(titanrt_rms_norm_grad_workspace_bytes(rows, 96),
              rmsNormBackwardWorkspaceBytes(rows, 96))
        << rows << " rows";
}

} // namespace
