//===- CudaBackendAbiTest.cpp - the CUDA backend's ABI calls, no GPU ------===//
//
// What CudaBackend decides without a GPU: the attention gradient's
// workspace (the ABI's, planned by the compiler) holds the recomputed
// log-sum-exp and the backward's delta side by side, each the size the
// kernels need.
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

TEST(CudaBackendAbiTest, AttentionGradWorkspaceHoldsLseThenDelta) {
  AttentionShape shape{3, 4, 2, 5, 64, true, 0.125};
  int64_t rows = shape.batch * shape.qHeads * shape.seq;
  int64_t planned = titanrt_attention_grad_workspace_bytes(
      shape.batch, shape.qHeads, shape.seq);
  std::vector<float> workspace(size_t(planned / sizeof(float)));
  AttentionGradWorkspace parts =
      splitAttentionGradWorkspace(workspace.data(), shape);
  EXPECT_EQ(parts.lse, workspace.data());
  EXPECT_EQ(parts.delta, workspace.data() + rows);
  // Each part is what the kernels read and write: the log-sum-exp one f32
  // per query row, the delta attentionBackwardWorkspaceBytes; together
  // exactly the planned bytes.
  EXPECT_EQ(int64_t(rows * sizeof(float)),
            attentionBackwardWorkspaceBytes(shape));
  EXPECT_EQ(int64_t(rows * sizeof(float)) +
                attentionBackwardWorkspaceBytes(shape),
            planned);
}

} // namespace
