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

void checkCase(Checker &checker, Context &context, int32_t dtype,
               AttentionShape shape, uint32_t seed, AttentionKernels kernels) {
  shape.scale = 1.0 / std::sqrt(double(shape.headDim));
  const bool cudaCores = kernels == AttentionKernels::CudaCores;
  const std::string suffix =
      "." + nameOf(dtype) + (cudaCores ? ".cuda_cores" : "") +
      (shape.causal ? ".causal." : ".full.") + std::to_string(shape.batch) +
      "x" + std::to_string(shape.qHeads) + "/" + std::to_string(shape.kvHeads) +
      "x" + std::to_string(shape.seq) + "x" + std::to_string(shape.headDim);
  const std::string forward = "attention_forward" + suffix;
  const std::string backward = "attention_backward" + suffix;
  const int64_t qCount = shape.batch * shape.qHeads * shape.seq * shape.headDim;
  const int64_t kvCount =
      shape.batch * shape.kvHeads * shape.seq * shape.headDim;
  const int64_t rows = shape.batch * shape.qHeads * shape.seq;
  std::vector<double> q = randomValues(qCount, seed, dtype, 2.0);
  std::vector<double> k = randomValues(kvCount, seed + 1, dtype, 2.0);
  std::vector<double> v = randomValues(kvCount, seed + 2, dtype);
  std::vector<double> dout = randomValues(qCount, seed + 3, dtype);
  DeviceTensor dQ, dK, dV, dOut, dLse, dDout, dDq, dDk, dDv, workspace;
  if (!checker.expectOk(forward, dQ.upload(dtype, q)) ||
      !checker.expectOk(forward, dK.upload(dtype, k)) ||
      !checker.expectOk(forward, dV.upload(dtype, v)) ||
      !checker.expectOk(forward, dDout.upload(dtype, dout)) ||
      !checker.expectOk(forward, dOut.allocate(dtype, qCount)) ||
      !checker.expectOk(forward, dLse.allocate(TITANRT_F32, rows)) ||
      !checker.expectOk(forward, dDq.allocate(dtype, qCount)) ||
      !checker.expectOk(forward, dDk.allocate(dtype, kvCount)) ||
      !checker.expectOk(forward, dDv.allocate(dtype, kvCount)) ||
      !checker.expectOk(
          forward,
          workspace.allocate(TITANRT_F32,
                             attentionBackwardWorkspaceBytes(shape) / 4)))
    return;
  cudaStream_t stream = context.stream.get();
  std::vector<double> out, lse;
  if (!checker.expectOk(forward,
                        attentionForward(stream, dtype, shape, dQ.get(),
                                         dK.get(), dV.get(), dOut.get(),
                                         dLse.as<float>(), kernels)) ||
      !checker.expectOk(forward, dOut.download(out)) ||
      !checker.expectOk(forward, dLse.download(lse)))
    return;
  std::vector<double> expectedOut(static_cast<size_t>(qCount)),
      expectedLse(static_cast<size_t>(rows));
  ref::attentionForward(shape, q.data(), k.data(), v.data(), expectedOut.data(),
                        expectedLse.data());
  checker.compare(forward + ".out", out, expectedOut, toleranceFor(dtype));
  checker.compare(forward + ".lse", lse, expectedLse, 1e-4);

  auto run = [&] {
    return attentionBackward(stream, dtype, shape, dQ.get(), dK.get(), dV.get(),
                             dOut.get(), dDout.get(), dLse.as<float>(),
                             dDq.get(), dDk.get(), dDv.get(), workspace.get(),
                             kernels);
  };
  std::vector<double> dq, dk, dv, dqAgain, dkAgain, dvAgain;
  if (!checker.expectOk(backward, run()) ||
      !checker.expectOk(backward, dDq.download(dq)) ||
      !checker.expectOk(backward, dDk.download(dk)) ||
      !checker.expectOk(backward, dDv.download(dv)) ||
      !checker.expectOk(backward, run()) ||
      !checker.expectOk(backward, dDq.download(dqAgain)) ||
      !checker.expectOk(backward, dDk.download(dkAgain)) ||
      !checker.expectOk(backward, dDv.download(dvAgain)))
    return;
  std::vector<double> expectedDq(static_cast<size_t>(qCount)),
      expectedDk(static_cast<size_t>(kvCount)),
      expectedDv(static_cast<size_t>(kvCount));
  ref::attentionBackward(shape, q.data(), k.data(), v.data(), out.data(),
                         dout.data(), lse.data(), expectedDq.data(),
                         expectedDk.data(), expectedDv.data());
  checker.compare(backward + ".dq", dq, expectedDq, toleranceFor(dtype));
  checker.compare(backward + ".dk", dk, expectedDk, toleranceFor(dtype));
  checker.compare(backward + ".dv", dv, expectedDv, toleranceFor(dtype));
  std::vector<double> all = dq, allAgain = dqAgain;
  all.insert(all.end(), dk.begin(), dk.end());
  all.insert(all.end(), dv.begin(), dv.end());
  allAgain.insert(allAgain.end(), dkAgain.begin(), dkAgain.end());
  allAgain.insert(allAgain.end(), dvAgain.begin(), dvAgain.end());
  checker.expectIdentical(backward + ".deterministic", all, allAgain);
  // The backend runs the kernels of AttentionKernels::Titan; the emulation
  // (CudaEmulationTest) has no backend, whose cuBLASLt needs a GPU.
  if (cudaCores || !context.backend)
    return;

  // titanrt_attention and titanrt_attention_grad as the CUDA backend runs
  // them: the forward's output and log-sum-exp, then the backward from
  // them with the planned workspace.
  const std::string abi = "attention_abi" + suffix;
  DeviceTensor abiOut, abiLse, abiDq, abiDk, abiDv, abiWorkspace;
  std::vector<double> abiOutValues, abiLseValues, abiDqOut, abiDkOut, abiDvOut;
  if (!checker.expectOk(abi, abiOut.allocate(dtype, qCount)) ||
      !checker.expectOk(abi, abiLse.allocate(TITANRT_F32, rows)) ||
      !checker.expectOk(abi, abiDq.allocate(dtype, qCount)) ||
      !checker.expectOk(abi, abiDk.allocate(dtype, kvCount)) ||
      !checker.expectOk(abi, abiDv.allocate(dtype, kvCount)) ||
      !checker.expectOk(
          abi, abiWorkspace.allocate(TITANRT_F32,
                                     titanrt_attention_grad_workspace_bytes(
                                         shape.batch, shape.qHeads, shape.seq) /
                                         4)) ||
      !checker.expectOk(abi, context.backend->attention(
                                 dtype, shape, dQ.get(), dK.get(), dV.get(),
                                 abiOut.get(), abiLse.as<float>())) ||
      !checker.expectOk(abi, context.backend->attentionGrad(
                                 dtype, shape, dQ.get(), dK.get(), dV.get(),
                                 abiOut.get(), abiLse.as<float>(), dDout.get(),
                                 abiDq.get(), abiDk.get(), abiDv.get(),
                                 abiWorkspace.get())) ||
      !checker.expectOk(
          abi, checkCuda(cudaStreamSynchronize(context.backend->getStream()),
                         "cudaStreamSynchronize")) ||
      !checker.expectOk(abi, abiOut.download(abiOutValues)) ||
      !checker.expectOk(abi, abiLse.download(abiLseValues)) ||
      !checker.expectOk(abi, abiDq.download(abiDqOut)) ||
      !checker.expectOk(abi, abiDk.download(abiDkOut)) ||
      !checker.expectOk(abi, abiDv.download(abiDvOut)))
    return;
  // The same kernels on the same inputs: the same bits.
  checker.expectIdentical(abi + ".out", abiOutValues, out);
  checker.expectIdentical(abi + ".lse", abiLseValues, lse);
  checker.expectIdentical(abi + ".dq", abiDqOut, dq);
  checker.expectIdentical(abi + ".dk", abiDkOut, dk);
  checker.expectIdentical(abi + ".dv", abiDvOut, dv);
}

/// titanrt_attention and titanrt_attention_grad through cuDNN (the
/// backend created with AttentionKernels::Cudnn) against the reference.
void checkCudnnCase(Checker &checker, Context &context, AttentionShape shape,
                    uint32_t seed) {
  shape.scale = 1.0 / std::sqrt(double(shape.headDim));
  const int32_t dtype = TITANRT_BF16;
  const std::string name =
      std::string("attention_cudnn") + (shape.causal ? ".causal." : ".full.") +
      std::to_string(shape.batch) + "x" + std::to_string(shape.qHeads) + "/" +
      std::to_string(shape.kvHeads) + "x" + std::to_string(shape.seq) + "x" +
      std::to_string(shape.headDim);
  if (!checker.expectOk(name, context.cudnnFailure))
    return;
  const int64_t qCount = shape.batch * shape.qHeads * shape.seq * shape.headDim;
  const int64_t kvCount =
      shape.batch * shape.kvHeads * shape.seq * shape.headDim;
  const int64_t rows = shape.batch * shape.qHeads * shape.seq;
  std::vector<double> q = randomValues(qCount, seed, dtype, 2.0);
  std::vector<double> k = randomValues(kvCount, seed + 1, dtype, 2.0);
  std::vector<double> v = randomValues(kvCount, seed + 2, dtype);
  std::vector<double> dout = randomValues(qCount, seed + 3, dtype);
  DeviceTensor dQ, dK, dV, dDout, dOut, dLse, dDq, dDk, dDv, workspace;
  std::vector<double> out, lse, dq, dk, dv;
  CudaBackend &backend = *context.cudnnBackend;
  if (!checker.expectOk(name, dQ.upload(dtype, q)) ||
      !checker.expectOk(name, dK.upload(dtype, k)) ||
      !checker.expectOk(name, dV.upload(dtype, v)) ||
      !checker.expectOk(name, dDout.upload(dtype, dout)) ||
      !checker.expectOk(name, dOut.allocate(dtype, qCount)) ||
      !checker.expectOk(name, dLse.allocate(TITANRT_F32, rows)) ||
      !checker.expectOk(name, dDq.allocate(dtype, qCount)) ||
      !checker.expectOk(name, dDk.allocate(dtype, kvCount)) ||
      !checker.expectOk(name, dDv.allocate(dtype, kvCount)) ||
      !checker.expectOk(
          name, workspace.allocate(TITANRT_F32,
                                   titanrt_attention_grad_workspace_bytes(
                                       shape.batch, shape.qHeads, shape.seq) /
                                       4)) ||
      !checker.expectOk(name, backend.attention(dtype, shape, dQ.get(),
                                                dK.get(), dV.get(), dOut.get(),
                                                dLse.as<float>())) ||
      !checker.expectOk(
          name, backend.attentionGrad(dtype, shape, dQ.get(), dK.get(),
                                      dV.get(), dOut.get(), dLse.as<float>(),
                                      dDout.get(), dDq.get(), dDk.get(),
                                      dDv.get(), workspace.get())) ||
      !checker.expectOk(name,
                        checkCuda(cudaStreamSynchronize(backend.getStream()),
                                  "cudaStreamSynchronize")) ||
      !checker.expectOk(name, dOut.download(out)) ||
      !checker.expectOk(name, dLse.download(lse)) ||
      !checker.expectOk(name, dDq.download(dq)) ||
      !checker.expectOk(name, dDk.download(dk)) ||
      !checker.expectOk(name, dDv.download(dv)))
    return;
  std::vector<double> expectedOut(static_cast<size_t>(qCount)),
      expectedLse(static_cast<size_t>(rows));
  ref::attentionForward(shape, q.data(), k.data(), v.data(), expectedOut.data(),
                        expectedLse.data());
  checker.compare(name + ".out", out, expectedOut, toleranceFor(dtype));
  checker.compare(name + ".lse", lse, expectedLse, 1e-3);
  std::vector<double> expectedDq(static_cast<size_t>(qCount)),
      expectedDk(static_cast<size_t>(kvCount)),
      expectedDv(static_cast<size_t>(kvCount));
  ref::attentionBackward(shape, q.data(), k.data(), v.data(), out.data(),
                         dout.data(), lse.data(), expectedDq.data(),
                         expectedDk.data(), expectedDv.data());
  checker.compare(name + ".dq", dq, expectedDq, toleranceFor(dtype));
  checker.compare(name + ".dk", dk, expectedDk, toleranceFor(dtype));
  checker.compare(name + ".dv", dv, expectedDv, toleranceFor(dtype));
}

} // namespace

void check::checkAttention(Checker &checker, Context &context) {
  uint32_t seed = 5000;
  for (int32_t dtype : {TITANRT_F32, TITANRT_BF16})
    for (const AttentionShape &shape : attentionCheckShapes()) {
      checkCase(checker, context, dtype, shape, seed += 4,
                AttentionKernels::Auto);
      // What tensor cores run, on CUDA cores too (their baseline in
      // titan-cuda-bench).
      if (attentionUsesTensorCores(dtype, shape.headDim))
        checkCase(checker, context, dtype, shape, seed,
                  AttentionKernels::CudaCores);
    }
  // cuDNN: only through a backend (a GPU), at the head dims it takes.
  if (!context.backend)
    return;
  for (const AttentionShape &shape : attentionCheckShapes())
    if (shape.headDim % 8 == 0 && shape.headDim <= 128)
      checkCudnnCase(checker, context, shape, seed += 4);
  checkCudnnCase(checker, context, {1, 8, 2, 300, 128, true, 0}, seed += 4);
}
