//===- CheckAttention.cpp - flash-style attention on the GPU --------------===//
//
// The forward (output and log-sum-exp) against the reference, and the
// backward against the reference fed with the GPU's own output and
// log-sum-exp (what the backward reads), twice to check that it is bitwise
// reproducible; then titanrt_attention_grad as CudaBackend runs it
// (recomputing the forward), bit for bit the same. Sequences that end inside a
// tile, a sequence of one row, GQA, MHA, head dims from 4 to 128 (bf16 at
// 16, 32, 64 and 128 on tensor cores, and forced onto CUDA cores too; at 4
// and 36 on CUDA cores), causal or not. Then cuDNN's fused attention
// (AttentionKernels::Cudnn, bf16 where its head dims apply) the same way
// through the backend: the forward against the reference, the backward
// against the reference fed with cuDNN's own output and log-sum-exp.
//
//===----------------------------------------------------------------------===//

#include "KernelCheck.h"

#include "cuda/CudaStatus.h"
#include "cuda/Kernels.h"
#include "cuda/LaunchConfig.h"
#include "cuda/Reference.h"

#include "titan/Runtime/titanrt.h"

#include <cmath>

using namespace titan::rt;
using namespace titan::rt::cuda;
using namespace titan::rt::cuda::check;

namespace ref = titan::rt::cuda::reference;

namespace {

/// A check's random inputs, on the host and on the GPU.
struct AttentionInputs {
  AttentionInputs(int32_t dtype, const AttentionShape &shape, uint32_t seed)
      : dtype(dtype), shape(shape),
        qCount(shape.batch * shape.qHeads * shape.seq * shape.headDim),
        kvCount(shape.batch * shape.kvHeads * shape.seq * shape.headDim),
        rows(shape.batch * shape.qHeads * shape.seq),
        q(randomValues(qCount, seed, dtype, 2.0)),
        k(randomValues(kvCount, seed + 1, dtype, 2.0)),
        v(randomValues(kvCount, seed + 2, dtype)),
        dout(randomValues(qCount, seed + 3, dtype)) {}

  /// Uploads the inputs; `name` labels a failure.
  bool upload(Checker &checker, const std::string &name) {
    return checker.expectOk(name, dQ.upload(dtype, q)) &&
           checker.expectOk(name, dK.upload(dtype, k)) &&
           checker.expectOk(name, dV.upload(dtype, v)) &&
           checker.expectOk(name, dDout.upload(dtype, dout));
  }

  int32_t dtype;
  AttentionShape shape;
  int64_t qCount, kvCount, rows;
  std::vector<double> q, k, v, dout;
  DeviceTensor dQ, dK, dV, dDout;
};

/// What a forward and a backward computed, downloaded.
struct AttentionResults {
  std::vector<double> out, lse, dq, dk, dv;
};

/// The forward against the reference, and the backward against the
/// reference fed with the results' own output and log-sum-exp (what the
/// backward read).
void compareWithReference(Checker &checker, const std::string &forward,
                          const std::string &backward,
                          const AttentionInputs &in,
                          const AttentionResults &results,
                          double lseTolerance) {
  const AttentionShape &shape = in.shape;
  std::vector<double> expectedOut(static_cast<size_t>(in.qCount)),
      expectedLse(static_cast<size_t>(in.rows));
  ref::attentionForward(shape, in.q.data(), in.k.data(), in.v.data(),
                        expectedOut.data(), expectedLse.data());
  checker.compare(forward + ".out", results.out, expectedOut,
                  toleranceFor(in.dtype));
  checker.compare(forward + ".lse", results.lse, expectedLse, lseTolerance);
  std::vector<double> expectedDq(static_cast<size_t>(in.qCount)),
      expectedDk(static_cast<size_t>(in.kvCount)),
      expectedDv(static_cast<size_t>(in.kvCount));
  ref::attentionBackward(shape, in.q.data(), in.k.data(), in.v.data(),
                         results.out.data(), in.dout.data(), results.lse.data(),
                         expectedDq.data(), expectedDk.data(),
                         expectedDv.data());
  checker.compare(backward + ".dq", results.dq, expectedDq,
                  toleranceFor(in.dtype));
  checker.compare(backward + ".dk", results.dk, expectedDk,
                  toleranceFor(in.dtype));
  checker.compare(backward + ".dv", results.dv, expectedDv,
                  toleranceFor(in.dtype));
}

/// titanrt_attention, then titanrt_attention_grad from its output and
/// log-sum-exp with the planned workspace, as `backend` runs them.
bool runBackend(Checker &checker, const std::string &name, CudaBackend &backend,
                const AttentionInputs &in, AttentionResults &results) {
  const AttentionShape &shape = in.shape;
  DeviceTensor out, lse, dq, dk, dv, workspace;
  return checker.expectOk(name, out.allocate(in.dtype, in.qCount)) &&
         checker.expectOk(name, lse.allocate(TITANRT_F32, in.rows)) &&
         checker.expectOk(name, dq.allocate(in.dtype, in.qCount)) &&
         checker.expectOk(name, dk.allocate(in.dtype, in.kvCount)) &&
         checker.expectOk(name, dv.allocate(in.dtype, in.kvCount)) &&
         checker.expectOk(
             name, workspace.allocate(
                       TITANRT_F32, titanrt_attention_grad_workspace_bytes(
                                        shape.batch, shape.qHeads, shape.seq) /
                                        4)) &&
         checker.expectOk(name, backend.attention(
                                    in.dtype, shape, in.dQ.get(), in.dK.get(),
                                    in.dV.get(), out.get(), lse.as<float>())) &&
         checker.expectOk(name, backend.attentionGrad(
                                    in.dtype, shape, in.dQ.get(), in.dK.get(),
                                    in.dV.get(), out.get(), lse.as<float>(),
                                    in.dDout.get(), dq.get(), dk.get(),
                                    dv.get(), workspace.get())) &&
         checker.expectOk(name,
                          checkCuda(cudaStreamSynchronize(backend.getStream()),
                                    "cudaStreamSynchronize")) &&
         checker.expectOk(name, out.download(results.out)) &&
         checker.expectOk(name, lse.download(results.lse)) &&
         checker.expectOk(name, dq.download(results.dq)) &&
         checker.expectOk(name, dk.download(results.dk)) &&
         checker.expectOk(name, dv.download(results.dv));
}

/// "causal.2x4/2x200x64".
std::string describe(const AttentionShape &shape) {
  return std::string(shape.causal ? "causal." : "full.") +
         std::to_string(shape.batch) + "x" + std::to_string(shape.qHeads) +
         "/" + std::to_string(shape.kvHeads) + "x" + std::to_string(shape.seq) +
         "x" + std::to_string(shape.headDim);
}

void checkCase(Checker &checker, Context &context, int32_t dtype,
               AttentionShape shape, uint32_t seed, AttentionKernels kernels) {
  shape.scale = 1.0 / std::sqrt(double(shape.headDim));
  const bool cudaCores = kernels == AttentionKernels::CudaCores;
  const std::string suffix = "." + nameOf(dtype) +
                             (cudaCores ? ".cuda_cores." : ".") +
                             describe(shape);
  const std::string forward = "attention_forward" + suffix;
  const std::string backward = "attention_backward" + suffix;
  AttentionInputs in(dtype, shape, seed);
  DeviceTensor dOut, dLse, dDq, dDk, dDv, workspace;
  if (!in.upload(checker, forward) ||
      !checker.expectOk(forward, dOut.allocate(dtype, in.qCount)) ||
      !checker.expectOk(forward, dLse.allocate(TITANRT_F32, in.rows)) ||
      !checker.expectOk(forward, dDq.allocate(dtype, in.qCount)) ||
      !checker.expectOk(forward, dDk.allocate(dtype, in.kvCount)) ||
      !checker.expectOk(forward, dDv.allocate(dtype, in.kvCount)) ||
      !checker.expectOk(
          forward,
          workspace.allocate(TITANRT_F32,
                             attentionBackwardWorkspaceBytes(shape) / 4)))
    return;
  cudaStream_t stream = context.stream.get();
  AttentionResults results;
  if (!checker.expectOk(forward,
                        attentionForward(stream, dtype, shape, in.dQ.get(),
                                         in.dK.get(), in.dV.get(), dOut.get(),
                                         dLse.as<float>(), kernels)) ||
      !checker.expectOk(forward, dOut.download(results.out)) ||
      !checker.expectOk(forward, dLse.download(results.lse)))
    return;

  auto run = [&] {
    return attentionBackward(stream, dtype, shape, in.dQ.get(), in.dK.get(),
                             in.dV.get(), dOut.get(), in.dDout.get(),
                             dLse.as<float>(), dDq.get(), dDk.get(), dDv.get(),
                             workspace.get(), kernels);
  };
  std::vector<double> dqAgain, dkAgain, dvAgain;
  if (!checker.expectOk(backward, run()) ||
      !checker.expectOk(backward, dDq.download(results.dq)) ||
      !checker.expectOk(backward, dDk.download(results.dk)) ||
      !checker.expectOk(backward, dDv.download(results.dv)) ||
      !checker.expectOk(backward, run()) ||
      !checker.expectOk(backward, dDq.download(dqAgain)) ||
      !checker.expectOk(backward, dDk.download(dkAgain)) ||
      !checker.expectOk(backward, dDv.download(dvAgain)))
    return;
  compareWithReference(checker, forward, backward, in, results, 1e-4);
  std::vector<double> all = results.dq, allAgain = dqAgain;
  all.insert(all.end(), results.dk.begin(), results.dk.end());
  all.insert(all.end(), results.dv.begin(), results.dv.end());
  allAgain.insert(allAgain.end(), dkAgain.begin(), dkAgain.end());
  allAgain.insert(allAgain.end(), dvAgain.begin(), dvAgain.end());
  checker.expectIdentical(backward + ".deterministic", all, allAgain);
  // The backend runs the kernels of AttentionKernels::Titan; the emulation
  // (CudaEmulationTest) has no backend, whose cuBLASLt needs a GPU.
  if (cudaCores || !context.backend)
    return;

  // titanrt_attention and titanrt_attention_grad as the CUDA backend runs
  // them: the same kernels on the same inputs, the same bits.
  const std::string abi = "attention_abi" + suffix;
  AttentionResults viaAbi;
  if (!runBackend(checker, abi, *context.backend, in, viaAbi))
    return;
  checker.expectIdentical(abi + ".out", viaAbi.out, results.out);
  checker.expectIdentical(abi + ".lse", viaAbi.lse, results.lse);
  checker.expectIdentical(abi + ".dq", viaAbi.dq, results.dq);
  checker.expectIdentical(abi + ".dk", viaAbi.dk, results.dk);
  checker.expectIdentical(abi + ".dv", viaAbi.dv, results.dv);
}

/// titanrt_attention and titanrt_attention_grad through cuDNN (the
/// backend created with AttentionKernels::Cudnn) against the reference.
void checkCudnnCase(Checker &checker, Context &context, AttentionShape shape,
                    uint32_t seed) {
  shape.scale = 1.0 / std::sqrt(double(shape.headDim));
  const std::string name = "attention_cudnn." + describe(shape);
  if (!checker.expectOk(name, context.cudnnFailure))
    return;
  AttentionInputs in(TITANRT_BF16, shape, seed);
  AttentionResults results;
  if (in.upload(checker, name) &&
      runBackend(checker, name, *context.cudnnBackend, in, results))
    compareWithReference(checker, name, name, in, results, 1e-3);
}

} // namespace

void check::checkAttention(Checker &checker, Context &context) {
  uint32_t seed = 5000;
  for (int32_t dtype : {TITANRT_F32, TITANRT_BF16})
    for (const AttentionShape &shape : attentionCheckShapes()) {
      checkCase(checker, context, dtype, shape, seed += 4,
                AttentionKernels::Titan);
      // What tensor cores run, on CUDA cores too (their baseline in
      // titan-cuda-bench).
      if (attentionUsesTensorCores(dtype, shape.headDim))
        checkCase(checker, context, dtype, shape, seed,
                  AttentionKernels::CudaCores);
    }
  // cuDNN: only through a backend (a GPU). Each shape is a plan that cuDNN
  // compiles at run time (about a second), so four: GQA causal with a
  // ragged tile, MHA and GQA unmasked at small head dims, and head dim 128.
  if (!context.backend)
    return;
  for (const AttentionShape &shape :
       {AttentionShape{2, 4, 2, 200, 64, true, 0},
        AttentionShape{1, 3, 3, 129, 16, false, 0},
        AttentionShape{3, 8, 2, 65, 32, false, 0},
        AttentionShape{1, 8, 2, 300, 128, true, 0}})
    checkCudnnCase(checker, context, shape, seed += 4);
}
