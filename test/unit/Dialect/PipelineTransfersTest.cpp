//===- PipelineTransfersTest.cpp - do the pipeline ranks' messages match --===//
//
// verifyPipelineTransfers on hand-written programs of two and three
// pipeline ranks: exchanges that run, and each mismatch it reports (a
// receive no rank sends for, messages received out of their sender's
// order, another type, a message never received, a bad peer or tag, a
// transfer inside a region).
//
//===----------------------------------------------------------------------===//

#include "titan/Dialect/PipelineTransfers.h"

#include "titan/Dialect/TitanDialect.h"

#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

using namespace mlir;
using namespace mlir::titan;
using testing::HasSubstr;

namespace {

class PipelineTransfersTest : public testing::Test {
protected:
  PipelineTransfersTest() {
    context.loadDialect<TitanDialect, func::FuncDialect>();
  }

  /// Parses the programs whose @train_step bodies are `bodies` (rank r's
  /// is `bodies[r]`; %a is a tensor<4xf32> argument, %b a tensor<2xf32>
  /// one) into `modules`; false (with a test failure) when one does not
  /// parse.
  bool parse(ArrayRef<StringRef> bodies,
             SmallVectorImpl<OwningOpRef<ModuleOp>> &modules) {
    for (StringRef body : bodies) {
      std::string source = (R"mlir(
titan.mesh @pipeline ["pp"=)mlir" +
                            std::to_string(bodies.size()) + R"mlir(]
func.func @train_step(%a: tensor<4xf32>, %b: tensor<2xf32>) {
)mlir" + body.str() + R"mlir(
  return
}
)mlir");
      modules.push_back(parseSourceString<ModuleOp>(source, &context));
      EXPECT_TRUE(modules.back()) << source;
      if (!modules.back())
        return false;
    }
    return true;
  }

  /// Checks the programs `modules`; returns the diagnostics emitted, each
  /// on a line ("" when it succeeds).
  std::string check(ArrayRef<OwningOpRef<ModuleOp>> modules) {
    SmallVector<SmallVector<PipelineTransfer, 0>> ranks;
    std::string diagnostics;
    ScopedDiagnosticHandler handler(&context, [&](Diagnostic &diag) {
      diagnostics += diag.str() + "\n";
      for (Diagnostic &note : diag.getNotes())
        diagnostics += "note: " + note.str() + "\n";
    });
    for (const OwningOpRef<ModuleOp> &module : modules) {
      FailureOr<SmallVector<PipelineTransfer, 0>> transfers =
          readPipelineTransfers(
              (*module).lookupSymbol<func::FuncOp>("train_step"));
      if (failed(transfers))
        return diagnostics;
      ranks.push_back(std::move(*transfers));
    }
    bool ok = succeeded(verifyPipelineTransfers(ranks, /*nccl=*/true));
    // Gloo's model alone accepts what NCCL's does.
    std::string ncclDiagnostics = diagnostics;
    glooRuns = succeeded(verifyPipelineTransfers(ranks, /*nccl=*/false));
    if (ok) {
      EXPECT_TRUE(glooRuns);
    }
    diagnostics = ncclDiagnostics;
    EXPECT_EQ(ok, diagnostics.empty()) << diagnostics;
    return diagnostics;
  }

  /// check() of the programs whose bodies are `bodies`.
  std::string check(ArrayRef<StringRef> bodies) {
    SmallVector<OwningOpRef<ModuleOp>> modules;
    if (!parse(bodies, modules))
      return "parse error";
    return check(modules);
  }

  /// Orders the transfers of the programs whose bodies are `bodies`
  /// (orderPipelineTransfers), checks them, and returns each rank's
  /// transfers as "send P T" or "recv P T" (peer, tag), ";"-separated, one
  /// rank per line.
  std::string order(ArrayRef<StringRef> bodies) {
    SmallVector<OwningOpRef<ModuleOp>> modules;
    if (!parse(bodies, modules))
      return "parse error";
    SmallVector<func::FuncOp> steps;
    for (OwningOpRef<ModuleOp> &module : modules)
      steps.push_back((*module).lookupSymbol<func::FuncOp>("train_step"));
    orderPipelineTransfers(steps);
    EXPECT_EQ(check(modules), "");
    std::string result;
    for (func::FuncOp step : steps) {
      FailureOr<SmallVector<PipelineTransfer, 0>> transfers =
          readPipelineTransfers(step);
      EXPECT_TRUE(succeeded(transfers));
      if (failed(transfers))
        return "";
      for (auto [index, transfer] : llvm::enumerate(*transfers))
        result += (index ? "; " : "") +
                  std::string(transfer.isSend ? "send " : "recv ") +
                  std::to_string(transfer.peer) + " " +
                  std::to_string(transfer.tag);
      result += "\n";
    }
    return result;
  }

  MLIRContext context;
  /// Whether the last check()'s programs run on Gloo.
  bool glooRuns = false;
};

constexpr StringRef kSendA0 =
    R"(titan.send %a on @pipeline ["pp"] peer 0 tag 1 : tensor<4xf32>)";
constexpr StringRef kSendB0 =
    R"(titan.send %b on @pipeline ["pp"] peer 0 tag 2 : tensor<2xf32>)";
constexpr StringRef kSendA1 =
    R"(titan.send %a on @pipeline ["pp"] peer 1 tag 3 : tensor<4xf32>)";
constexpr StringRef kRecvA0 =
    R"(%ra = titan.recv on @pipeline ["pp"] peer 1 tag 1 : tensor<4xf32>)";
constexpr StringRef kRecvB0 =
    R"(%rb = titan.recv on @pipeline ["pp"] peer 1 tag 2 : tensor<2xf32>)";
constexpr StringRef kRecvA1 =
    R"(%rc = titan.recv on @pipeline ["pp"] peer 0 tag 3 : tensor<4xf32>)";

std::string join(ArrayRef<StringRef> lines) {
  std::string joined;
  for (StringRef line : lines)
    joined += "  " + line.str() + "\n";
  return joined;
}

TEST_F(PipelineTransfersTest, ExchangesThatRunPass) {
  // Both send before they receive (sends never block); rank 1 sends two
  // messages that rank 0 receives in their order.
  EXPECT_EQ(check({join({kSendA1, kRecvA0, kRecvB0}),
                   join({kSendA0, kSendB0, kRecvA1})}),
            "");
  // No transfers at all, and a rank that receives before it sends while
  // its peer sends first.
  EXPECT_EQ(check({"", ""}), "");
  EXPECT_EQ(check({join({kRecvA0, kSendA1}), join({kSendA0, kRecvA1})}), "");
}

TEST_F(PipelineTransfersTest, RanksThatWaitForEachOther) {
  std::string diagnostics =
      check({join({kRecvA0, kSendA1}), join({kRecvA1, kSendA0})});
  EXPECT_THAT(diagnostics,
              HasSubstr("the pipeline ranks' programs wait for messages no "
                        "rank sends"));
  EXPECT_THAT(diagnostics,
              HasSubstr("note: pipeline rank 0 waits here for a "
                        "'tensor<4xf32>' of tag 1 from pipeline rank 1\n"));
  EXPECT_THAT(diagnostics,
              HasSubstr("note: pipeline rank 1 waits here for a "
                        "'tensor<4xf32>' of tag 3 from pipeline rank 0\n"));
  // A receive whose sender has ended.
  EXPECT_THAT(check({join({kRecvA0, kRecvB0}), join({kSendA0})}),
              HasSubstr("waits here for a 'tensor<2xf32>' of tag 2 from "
                        "pipeline rank 1, which has ended"));
}

TEST_F(PipelineTransfersTest, ReceivesOutOfTheSendersOrder) {
  // Gloo would match these by tag; NCCL hands the first receive the
  // sender's first message.
  std::string diagnostics =
      check({join({kRecvB0, kRecvA0}), join({kSendA0, kSendB0})});
  EXPECT_THAT(diagnostics,
              HasSubstr("pipeline rank 0 receives a 'tensor<2xf32>' of tag 2 "
                        "from pipeline rank 1, whose oldest message to it not "
                        "received yet is a 'tensor<4xf32>' of tag 1"));
  EXPECT_THAT(diagnostics, HasSubstr("note: sent here"));
}

TEST_F(PipelineTransfersTest, AnotherTypeThanSent) {
  constexpr StringRef kRecvAsB =
      R"(%r = titan.recv on @pipeline ["pp"] peer 1 tag 1 : tensor<2xf32>)";
  EXPECT_THAT(check({join({kRecvAsB}), join({kSendA0})}),
              HasSubstr("pipeline rank 0 receives a 'tensor<2xf32>' of tag 1 "
                        "from pipeline rank 1, whose oldest message to it not "
                        "received yet is a 'tensor<4xf32>' of tag 1"));
}

TEST_F(PipelineTransfersTest, MessagesNeverReceived) {
  EXPECT_THAT(check({join({kRecvA0}), join({kSendA0, kSendB0, kSendB0})}),
              HasSubstr("pipeline rank 1 sends a 'tensor<2xf32>' of tag 2 to "
                        "pipeline rank 0, which never receives it (nor the 1 "
                        "messages sent after it)"));
}

TEST_F(PipelineTransfersTest, PeersAndTagsOutsideTheRuntimes) {
  EXPECT_THAT(check({join({kSendA1}), join({kSendA1})}),
              HasSubstr("pipeline rank 1's titan.send names peer 1, which "
                        "is not another of the pipeline's 2 ranks"));
  EXPECT_THAT(
      check(
          {join({kSendA1}),
           join(
               {R"(%r = titan.recv on @pipeline ["pp"] peer 0 tag 4294967296 : tensor<4xf32>)"})}),
      HasSubstr("pipeline rank 1's titan.recv has tag 4294967296, outside "
                "the runtimes' tags (0 to 2^32 - 1)"));
}

TEST_F(PipelineTransfersTest, ThreeRanksInARing) {
  // Each sends to the next and receives from the previous.
  EXPECT_EQ(
      check(
          {join(
               {R"(titan.send %a on @pipeline ["pp"] peer 1 tag 0 : tensor<4xf32>)",
                R"(%r = titan.recv on @pipeline ["pp"] peer 2 tag 0 : tensor<4xf32>)"}),
           join(
               {R"(%r = titan.recv on @pipeline ["pp"] peer 0 tag 0 : tensor<4xf32>)",
                R"(titan.send %r on @pipeline ["pp"] peer 2 tag 0 : tensor<4xf32>)"}),
           join(
               {R"(%r = titan.recv on @pipeline ["pp"] peer 1 tag 0 : tensor<4xf32>)",
                R"(titan.send %r on @pipeline ["pp"] peer 0 tag 0 : tensor<4xf32>)"})}),
      "");
}

TEST_F(PipelineTransfersTest, TransfersInsideARegionAreRefused) {
  context.loadDialect<scf::SCFDialect>();
  std::string diagnostics =
      check({join({R"(%t = scf.execute_region -> tensor<4xf32> {
    %r = titan.recv on @pipeline ["pp"] peer 1 tag 1 : tensor<4xf32>
    scf.yield %r : tensor<4xf32>
  })"}),
             join({kSendA0})});
  EXPECT_THAT(diagnostics,
              HasSubstr("a transfer between pipeline stages inside a nested "
                        "region"));
}

} // namespace

namespace {

/// A send of %a to `peer` with `tag`, and a receive of a tensor<4xf32>
/// from `peer` with `tag` (named %r<tag>).
std::string send(int64_t peer, int64_t tag) {
  return "titan.send %a on @pipeline [\"pp\"] peer " + std::to_string(peer) +
         " tag " + std::to_string(tag) + " : tensor<4xf32>";
}
std::string recv(int64_t peer, int64_t tag) {
  return "%r" + std::to_string(tag) +
         " = titan.recv on @pipeline [\"pp\"] peer " + std::to_string(peer) +
         " tag " + std::to_string(tag) + " : tensor<4xf32>";
}
std::string lines(ArrayRef<std::string> ops) {
  std::string joined;
  for (const std::string &op : ops)
    joined += "  " + op + "\n";
  return joined;
}

TEST_F(PipelineTransfersTest, NcclGroupsThatWaitForEachOther) {
  // Gloo runs these; on NCCL rank 0's group {send 1, send 2, recv 3} and
  // rank 1's {send 3, send 4, recv 1} each wait for the other's next group
  // (send 2 is received after recv 1's group; send 4 after recv 3's).
  std::string rank0 = lines({send(1, 1), send(1, 2), recv(1, 3), recv(1, 4)});
  std::string rank1 = lines({send(0, 3), send(0, 4), recv(0, 1), recv(0, 2)});
  std::string diagnostics = check({rank0, rank1});
  EXPECT_TRUE(glooRuns);
  EXPECT_THAT(diagnostics, HasSubstr("on NCCL the pipeline ranks wait for "
                                     "each other"));
  EXPECT_THAT(diagnostics,
              HasSubstr("note: pipeline rank 0's send of a 'tensor<4xf32>' of "
                        "tag 2 waits for pipeline rank 1, which receives it "
                        "in a later NCCL group"));
  EXPECT_THAT(diagnostics,
              HasSubstr("note: pipeline rank 1's send of a 'tensor<4xf32>' of "
                        "tag 4 waits for pipeline rank 0, which receives it "
                        "in a later NCCL group"));
  // orderPipelineTransfers moves rank 0's send 2 past its receive: its
  // group {send 1, recv 3} runs with rank 1's, then {send 2, recv 4}.
  EXPECT_EQ(order({rank0, rank1}), "send 1 1; recv 1 3; send 1 2; recv 1 4\n"
                                   "send 0 3; send 0 4; recv 0 1; recv 0 2\n");
}

TEST_F(PipelineTransfersTest, FourRanksThatWaitOnNccl) {
  // Rank 0's send to rank 1 waits in a group until rank 1 receives it,
  // after rank 3's message, which rank 3 sends after rank 0's next group.
  std::string rank0 = lines({send(1, 1), recv(2, 2), send(3, 3)});
  std::string rank1 = lines({recv(3, 4), recv(0, 1)});
  std::string rank2 = lines({send(0, 2)});
  std::string rank3 = lines({recv(0, 3), send(1, 4)});
  EXPECT_THAT(check({rank0, rank1, rank2, rank3}),
              HasSubstr("on NCCL the pipeline ranks wait for each other"));
  EXPECT_EQ(order({rank0, rank1, rank2, rank3}),
            "recv 2 2; send 1 1; send 3 3\n"
            "recv 3 4; recv 0 1\n"
            "send 0 2\n"
            "recv 0 3; send 1 4\n");
}

TEST_F(PipelineTransfersTest, ReceivesMoveToTheSendersOrder) {
  // Rank 0 receives tag 2 first, but rank 1 sends tag 1 first: the
  // receive of tag 1 moves up.
  EXPECT_EQ(
      order({lines({recv(1, 2), recv(1, 1)}), lines({send(0, 1), send(0, 2)})}),
      "recv 1 1; recv 1 2\n"
      "send 0 1; send 0 2\n");
}

} // namespace
