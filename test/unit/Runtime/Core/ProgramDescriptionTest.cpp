//===- ProgramDescriptionTest.cpp - the runtime's description parser -----===//
//
// What the runtime reads of a compiled program (docs/runtime.md): the job's
// mesh, a pipeline rank's record, the backend, communicators, places and
// boxes; every malformed record is an error naming its line.
//
//===----------------------------------------------------------------------===//

#include "core/ProgramDescription.h"

#include <gtest/gtest.h>

#include <string>

using namespace titan::rt;

namespace {

/// A pipeline rank's description: pipeline rank 1 of 2, stages of 2 ranks
/// (FSDP 2).
const char *kPipelineRank = R"(titan-program 1
mesh pp=2 dp_replicate=1 fsdp=2 cp=1 tp=1
pipeline rank=1
regions arena=64 state=32 inputs=64
defaults lr=1.0e-03 steps=3 seed=7
comm 0 fsdp
comm 1 pp
arg 0 w param f32 [2,4] state 0 32
arg 1 tokens input i64 [2,4] inputs 0 64
global tokens [4,4]
box tokens 0 [0,0] [2,4]
box tokens 1 [2,0] [2,4]
box tokens 2 [0,0] [2,4]
box tokens 3 [2,0] [2,4]
result 0 loss f32 [] arena 0 4
end
)";

TEST(ProgramDescriptionTest, ReadsAPipelineRanksProgram) {
  ProgramDescription description;
  Status status = parseProgramDescription(kPipelineRank, description);
  ASSERT_TRUE(status.ok()) << status.getMessage();
  EXPECT_EQ(description.getWorldSize(), 4);
  ASSERT_TRUE(description.pipelineRank.has_value());
  EXPECT_EQ(*description.pipelineRank, 1);
  // Ranks 0-1 are on pipeline rank 0, 2-3 on pipeline rank 1.
  EXPECT_EQ(description.getPipelineCoordinate(0), 0);
  EXPECT_EQ(description.getPipelineCoordinate(1), 0);
  EXPECT_EQ(description.getPipelineCoordinate(2), 1);
  EXPECT_EQ(description.getPipelineCoordinate(3), 1);
  // The pp communicator is over mesh axis 0.
  ASSERT_EQ(description.communicators.size(), 2u);
  EXPECT_EQ(description.communicators[0], std::vector<int>{2});
  EXPECT_EQ(description.communicators[1], std::vector<int>{0});
  EXPECT_EQ(description.inputs.at("tokens").boxes.size(), 4u);
}

TEST(ProgramDescriptionTest, WithoutPipelineEveryRankIsOnPipelineRankZero) {
  std::string text = kPipelineRank;
  text.replace(text.find("pipeline rank=1\n"), 16, "");
  ProgramDescription description;
  Status status = parseProgramDescription(text, description);
  ASSERT_TRUE(status.ok()) << status.getMessage();
  EXPECT_FALSE(description.pipelineRank.has_value());
  EXPECT_EQ(description.getPipelineCoordinate(3), 0);
}

/// The error parsing kPipelineRank with its pipeline record (line 3)
/// replaced by `record`, and the mesh (line 2) by `mesh`.
std::string parseError(const std::string &mesh, const std::string &record) {
  std::string text = kPipelineRank;
  text.replace(text.find("mesh pp=2 dp_replicate=1 fsdp=2 cp=1 tp=1"), 41,
               mesh);
  text.replace(text.find("pipeline rank=1"), 15, record);
  ProgramDescription description;
  Status status = parseProgramDescription(text, description);
  return status.ok() ? "" : status.getMessage();
}

/// The error parsing kPipelineRank with `copy` as argument 2.
std::string copyError(const std::string &copy) {
  std::string text = kPipelineRank;
  text.replace(text.find("global tokens"), 0, copy + "\n");
  ProgramDescription description;
  Status status = parseProgramDescription(text, description);
  return status.ok() ? "" : status.getMessage();
}

TEST(ProgramDescriptionTest, ChecksParameterCopies) {
  // The bf16 copy of parameter w (state bytes 16 to 32 would overlap w's
  // place; the parser checks regions, not overlaps).
  EXPECT_EQ(copyError("arg 2 copy.w param_copy bf16 [2,4] state 16 16"), "");
  const std::string refused =
      "is not the bf16 or f16 copy of a float32 argument 'copy.<name>' names "
      "with the role param and its shape: recompile the program";
  for (const char *copy : {
           // No parameter called v; no 'copy.' prefix; f32 is no copy.
           "arg 2 copy.v param_copy bf16 [2,4] state 16 16",
           "arg 2 w2 param_copy bf16 [2,4] state 16 16",
           "arg 2 copy.w param_copy f32 [2,4] state 0 32",
           // Another shape; a copy of the tokens.
           "arg 2 copy.w param_copy bf16 [4,2] state 16 16",
           "arg 2 copy.tokens param_copy bf16 [2,4] state 16 16",
       }) {
    std::string error = copyError(copy);
    EXPECT_NE(error.find(refused), std::string::npos) << copy << ": " << error;
  }
  EXPECT_EQ(copyError("arg 2 copy.v param_copy bf16 [2,4] state 16 16"),
            "program description: the parameter copy 'copy.v' (bf16) " +
                refused);
}

TEST(ProgramDescriptionTest, RejectsMalformedPipelineRecords) {
  const std::string mesh = "mesh pp=2 dp_replicate=1 fsdp=2 cp=1 tp=1";
  EXPECT_EQ(parseError(mesh, "pipeline rank=1"), "");
  EXPECT_NE(parseError(mesh, "pipeline rank=2")
                .find("program description, line 3: malformed pipeline record "
                      "'rank=2' (after a mesh "
                      "whose first axis is pp)"),
            std::string::npos)
      << parseError(mesh, "pipeline rank=2");
  EXPECT_NE(parseError(mesh, "pipeline stage=1")
                .find("malformed pipeline record 'stage=1'"),
            std::string::npos);
  EXPECT_NE(parseError(mesh, "pipeline rank=-1")
                .find("malformed pipeline record 'rank=-1'"),
            std::string::npos);
  // The pp axis must be the outermost.
  EXPECT_NE(
      parseError("mesh dp_replicate=1 fsdp=2 cp=1 tp=1 pp=2", "pipeline rank=0")
          .find("malformed pipeline record 'rank=0'"),
      std::string::npos);
}

} // namespace

TEST(ProgramDescriptionTest, ReadsTheBackend) {
  const std::string mesh = "mesh pp=2 dp_replicate=1 fsdp=2 cp=1 tp=1";
  std::string text = kPipelineRank;
  ProgramDescription description;
  ASSERT_TRUE(parseProgramDescription(text, description).ok());
  // A CPU program says nothing.
  EXPECT_EQ(description.backend, "cpu");
  text.replace(text.find("pipeline rank=1"), 15,
               "pipeline rank=1\nbackend cuda");
  ProgramDescription cuda;
  ASSERT_TRUE(parseProgramDescription(text, cuda).ok());
  EXPECT_EQ(cuda.backend, "cuda");
  EXPECT_NE(parseError(mesh, "backend tpu")
                .find("program description, line 3: unknown backend 'tpu' "
                      "(cpu or cuda)"),
            std::string::npos)
      << parseError(mesh, "backend tpu");
}
