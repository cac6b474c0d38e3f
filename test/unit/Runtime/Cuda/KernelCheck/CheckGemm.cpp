//===- CheckGemm.cpp - cuBLASLt GEMMs against the reference ---------------===//
//
// Transposes, strided batches, a shared weight (folded into one GEMM, or a
// batch stride of 0 under a transposed A), alpha and beta, and the bias,
// ReLU and GELU epilogues, for f32, bf16 and bf16 operands with an f32
// result; sizes that are not multiples of any tile.
//
//===----------------------------------------------------------------------===//

#include "KernelCheck.h"

#include "cuda/Reference.h"

using namespace titan::rt;
using namespace titan::rt::cuda;
using namespace titan::rt::cuda::check;

namespace {

struct GemmCase {
  const char *name;
  GemmProblem problem;
  GemmEpilogue epilogue = GemmEpilogue::None;
  float alpha = 1.0f;
  float beta = 0.0f;
};

void runCase(Checker &checker, Context &context, const GemmCase &gemmCase,
             int32_t dtype, int32_t outputDtype, uint32_t seed) {
  const GemmProblem &p = gemmCase.problem;
  std::string name = std::string("gemm.") + gemmCase.name + "." +
                     nameOf(dtype) + "->" + nameOf(outputDtype);
  std::vector<double> a = randomValues(p.batch * p.m * p.k, seed, dtype);
  std::vector<double> b =
      randomValues((p.bShared ? 1 : p.batch) * p.k * p.n, seed + 1, dtype);
  std::vector<double> bias = randomValues(p.n, seed + 2, outputDtype);
  std::vector<double> c =
      randomValues(p.batch * p.m * p.n, seed + 3, outputDtype);
  DeviceTensor deviceA, deviceB, deviceBias, deviceC;
  if (!checker.expectOk(name, deviceA.upload(dtype, a)) ||
      !checker.expectOk(name, deviceB.upload(dtype, b)) ||
      !checker.expectOk(name, deviceBias.upload(outputDtype, bias)) ||
      !checker.expectOk(name, deviceC.upload(outputDtype, c)))
    return;
  GemmArgs args;
  args.dtype = dtype;
  args.outputDtype = outputDtype;
  args.a = deviceA.get();
  args.b = deviceB.get();
  args.c = deviceC.get();
  args.problem = p;
  args.epilogue = gemmCase.epilogue;
  args.bias = deviceBias.get();
  args.alpha = gemmCase.alpha;
  args.beta = gemmCase.beta;
  if (!checker.expectOk(name, context.gemm->run(context.stream.get(), args)))
    return;
  std::vector<double> actual;
  if (!checker.expectOk(name, deviceC.download(actual)))
    return;
  reference::gemm(p, gemmCase.epilogue, a.data(), b.data(), bias.data(),
                  c.data(), gemmCase.alpha, gemmCase.beta);
  checker.compare(name, actual, c, toleranceFor(outputDtype));
}

} // namespace

void check::checkGemm(Checker &checker, Context &context) {
  const GemmCase cases[] = {
      {"nn", {1, 128, 256, 64, false, false, false}},
      {"tn.batch3", {3, 77, 51, 129, true, false, false}},
      {"nt.shared_folded", {2, 64, 96, 33, false, true, true}},
      {"tt.shared_stride0", {4, 33, 65, 17, true, true, true}},
      {"nt.alpha_beta",
       {1, 70, 30, 50, false, true, false},
       GemmEpilogue::None,
       2.0f,
       0.5f},
      {"nt.bias", {1, 100, 72, 40, false, true, false}, GemmEpilogue::Bias},
      {"nt.relu", {1, 100, 72, 40, false, true, false}, GemmEpilogue::Relu},
      {"nt.relu_bias",
       {2, 100, 72, 40, false, true, true},
       GemmEpilogue::ReluBias},
      {"nt.gelu", {1, 100, 72, 40, false, true, false}, GemmEpilogue::Gelu},
      {"nt.gelu_bias",
       {2, 50, 72, 40, false, true, true},
       GemmEpilogue::GeluBias},
      {"nn.large", {1, 512, 768, 1024, false, false, false}},
  };
  const std::pair<int32_t, int32_t> types[] = {{TITANRT_F32, TITANRT_F32},
                                               {TITANRT_BF16, TITANRT_BF16},
                                               {TITANRT_BF16, TITANRT_F32}};
  uint32_t seed = 100;
  for (const GemmCase &gemmCase : cases)
    for (auto [dtype, outputDtype] : types)
      runCase(checker, context, gemmCase, dtype, outputDtype, seed += 4);

  // titanrt_matmul's entry point: without an addend, with one of its own
  // and with one in C (computed in place), each rounded once.
  std::vector<double> a = randomValues(2 * 5 * 7, 7, TITANRT_BF16);
  std::vector<double> b = randomValues(2 * 9 * 7, 8, TITANRT_BF16);
  std::vector<double> addend = randomValues(2 * 5 * 9, 9, TITANRT_BF16);
  for (const char *mode : {"plain", "addend", "addend_in_place"}) {
    std::string name = std::string("gemm.titanrt_matmul.bf16.") + mode;
    bool hasAddend = mode != std::string("plain");
    bool inPlace = mode == std::string("addend_in_place");
    DeviceTensor deviceA, deviceB, deviceC, deviceAddend;
    if (!checker.expectOk(name, deviceA.upload(TITANRT_BF16, a)) ||
        !checker.expectOk(name, deviceB.upload(TITANRT_BF16, b)) ||
        !checker.expectOk(name, deviceAddend.upload(TITANRT_BF16, addend)) ||
        !checker.expectOk(name,
                          inPlace ? deviceC.upload(TITANRT_BF16, addend)
                                  : deviceC.allocate(TITANRT_BF16, 2 * 5 * 9)))
      continue;
    const void *addendPointer = !hasAddend ? nullptr
                                : inPlace  ? deviceC.get()
                                           : deviceAddend.get();
    if (!checker.expectOk(
            name, context.gemm->matmul(context.stream.get(), TITANRT_BF16,
                                       deviceA.get(), deviceB.get(),
                                       addendPointer, deviceC.get(), 2, 5, 9, 7,
                                       false, true, false)))
      continue;
    std::vector<double> actual;
    std::vector<double> expected =
        hasAddend ? addend : std::vector<double>(2 * 5 * 9);
    if (!checker.expectOk(name, deviceC.download(actual)))
      continue;
    reference::gemm({2, 5, 9, 7, false, true, false}, GemmEpilogue::None,
                    a.data(), b.data(), nullptr, expected.data(), 1.0,
                    hasAddend ? 1.0 : 0.0);
    checker.compare(name, actual, expected, toleranceFor(TITANRT_BF16));
  }
}
