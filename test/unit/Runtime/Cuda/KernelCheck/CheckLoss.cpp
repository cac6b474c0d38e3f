//===- CheckLoss.cpp - cross-entropy, embedding and AdamW on the GPU ------===//

#include "KernelCheck.h"

#include "core/LowPrecision.h"
#include "cuda/AdamW.h"
#include "cuda/Kernels.h"
#include "cuda/LaunchConfig.h"
#include "cuda/Reference.h"

#include <cmath>
#include <random>

using namespace titan::rt;
using namespace titan::rt::cuda;
using namespace titan::rt::cuda::check;

namespace ref = titan::rt::cuda::reference;

namespace {

/// `rows` labels in [0, vocab), every fifth one ignored (-100).
std::vector<int64_t> randomLabels(int64_t rows, int64_t vocab, uint32_t seed) {
  std::mt19937 generator(seed);
  std::uniform_int_distribution<int64_t> distribution(0, vocab - 1);
  std::vector<int64_t> labels(static_cast<size_t>(rows));
  for (int64_t r = 0; r < rows; ++r)
    labels[static_cast<size_t>(r)] =
        r % 5 == 3 ? -100 : distribution(generator);
  return labels;
}

std::vector<double> asDoubles(const std::vector<int64_t> &values) {
  return std::vector<double>(values.begin(), values.end());
}

/// The reference's loss, row log-sum-exps and count on unsharded logits.
void referenceCrossEntropy(const std::vector<double> &logits,
                           const std::vector<int64_t> &labels, int64_t vocab,
                           double &loss, std::vector<double> &lse,
                           double &count) {
  const int64_t rows = int64_t(labels.size());
  CrossEntropyShape shape{rows, vocab, 0, -100, TITANRT_I64};
  std::vector<double> max(static_cast<size_t>(rows)),
      sum(static_cast<size_t>(rows)), target(static_cast<size_t>(rows));
  lse.assign(static_cast<size_t>(rows), 0.0);
  ref::crossEntropyPartials(shape, logits.data(), labels.data(), max.data(),
                            sum.data(), target.data());
  ref::crossEntropyFinish(shape, max.data(), sum.data(), target.data(),
                          labels.data(), loss, lse.data(), count);
}

/// The loss over `shards` vocabulary slices of [rows, vocab] logits, as
/// tensor-parallel ranks compute it: partials and rescale on the GPU per
/// shard, the all-reduces on the host, finish and the backward on the GPU.
void checkCrossEntropy(Checker &checker, Context &context, int32_t dtype,
                       int32_t labelsDtype, int64_t rows, int64_t vocab,
                       const std::vector<int64_t> &shardStarts, uint32_t seed) {
  const std::string name = "cross_entropy." + nameOf(dtype) +
                           (labelsDtype == TITANRT_I64 ? ".i64" : ".i32") +
                           "." + std::to_string(rows) + "x" +
                           std::to_string(vocab) + ".shards" +
                           std::to_string(shardStarts.size());
  std::vector<double> logits = randomValues(rows * vocab, seed, dtype, 6.0);
  std::vector<int64_t> labels = randomLabels(rows, vocab, seed + 1);
  cudaStream_t stream = context.stream.get();
  DeviceTensor dLabels, dGlobalMax, dSum, dTarget, dLoss, dLse, dCount, dGrad;
  if (!checker.expectOk(name, dLabels.upload(labelsDtype, asDoubles(labels))) ||
      !checker.expectOk(name, dGrad.upload(TITANRT_F32, {1.3})))
    return;

  const size_t numShards = shardStarts.size();
  std::vector<DeviceTensor> dLogits(numShards), dMax(numShards),
      dShardSum(numShards), dShardTarget(numShards);
  std::vector<CrossEntropyShape> shapes;
  std::vector<std::vector<double>> columns;
  std::vector<double> globalMax(static_cast<size_t>(rows), -INFINITY);
  for (size_t shard = 0; shard < numShards; ++shard) {
    const int64_t start = shardStarts[shard];
    const int64_t end = shard + 1 < numShards ? shardStarts[shard + 1] : vocab;
    shapes.push_back({rows, end - start, start, -100, labelsDtype});
    columns.emplace_back(static_cast<size_t>(rows * (end - start)));
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = start; c < end; ++c)
        columns.back()[static_cast<size_t>(r * (end - start) + c - start)] =
            logits[static_cast<size_t>(r * vocab + c)];
    std::vector<double> max;
    if (!checker.expectOk(name, dLogits[shard].upload(dtype, columns.back())) ||
        !checker.expectOk(name, dMax[shard].allocate(TITANRT_F32, rows)) ||
        !checker.expectOk(name, dShardSum[shard].allocate(TITANRT_F32, rows)) ||
        !checker.expectOk(name,
                          dShardTarget[shard].allocate(TITANRT_F32, rows)) ||
        !checker.expectOk(
            name, crossEntropyPartials(stream, dtype, shapes.back(),
                                       dLogits[shard].get(), dLabels.get(),
                                       dMax[shard].as<float>(),
                                       dShardSum[shard].as<float>(),
                                       dShardTarget[shard].as<float>())) ||
        !checker.expectOk(name, dMax[shard].download(max)))
      return;
    for (int64_t r = 0; r < rows; ++r) // all-reduce MAX
      globalMax[static_cast<size_t>(r)] = std::max(
          globalMax[static_cast<size_t>(r)], max[static_cast<size_t>(r)]);
  }
  std::vector<double> sum(static_cast<size_t>(rows), 0.0),
      target(static_cast<size_t>(rows), 0.0);
  if (!checker.expectOk(name, dGlobalMax.upload(TITANRT_F32, globalMax)))
    return;
  for (size_t shard = 0; shard < numShards; ++shard) {
    std::vector<double> shardSum, shardTarget;
    if (numShards > 1 &&
        !checker.expectOk(
            name, crossEntropyRescale(stream, dMax[shard].as<float>(),
                                      dGlobalMax.as<float>(),
                                      dShardSum[shard].as<float>(), rows)))
      return;
    if (!checker.expectOk(name, dShardSum[shard].download(shardSum)) ||
        !checker.expectOk(name, dShardTarget[shard].download(shardTarget)))
      return;
    for (int64_t r = 0; r < rows; ++r) { // all-reduce SUM
      sum[static_cast<size_t>(r)] += shardSum[static_cast<size_t>(r)];
      target[static_cast<size_t>(r)] += shardTarget[static_cast<size_t>(r)];
    }
  }
  CrossEntropyShape whole{rows, vocab, 0, -100, labelsDtype};
  std::vector<double> loss, lse, count;
  if (!checker.expectOk(name, dSum.upload(TITANRT_F32, sum)) ||
      !checker.expectOk(name, dTarget.upload(TITANRT_F32, target)) ||
      !checker.expectOk(name, dLoss.allocate(TITANRT_F32, 1)) ||
      !checker.expectOk(name, dLse.allocate(TITANRT_F32, rows)) ||
      !checker.expectOk(name, dCount.allocate(TITANRT_F32, 1)) ||
      !checker.expectOk(
          name, crossEntropyFinish(stream, whole, dGlobalMax.as<float>(),
                                   dSum.as<float>(), dTarget.as<float>(),
                                   dLabels.get(), dLoss.as<float>(),
                                   dLse.as<float>(), dCount.as<float>())) ||
      !checker.expectOk(name, dLoss.download(loss)) ||
      !checker.expectOk(name, dLse.download(lse)) ||
      !checker.expectOk(name, dCount.download(count)))
    return;
  double expectedLoss, expectedCount;
  std::vector<double> expectedLse;
  referenceCrossEntropy(logits, labels, vocab, expectedLoss, expectedLse,
                        expectedCount);
  checker.compare(name + ".loss", loss, {expectedLoss}, 1e-5);
  checker.compare(name + ".lse", lse, expectedLse, 1e-5);
  checker.compare(name + ".count", count, {expectedCount}, 0.0);

  // Each shard's backward against its columns of the unsharded one.
  std::vector<double> expectedGrad(logits.size());
  ref::crossEntropyBackward({rows, vocab, 0, -100, TITANRT_I64}, logits.data(),
                            labels.data(), expectedLse.data(), 1.3,
                            expectedCount, expectedGrad.data());
  for (size_t shard = 0; shard < numShards; ++shard) {
    const CrossEntropyShape &shape = shapes[shard];
    std::vector<double> actual,
        expected(static_cast<size_t>(rows * shape.localVocab));
    if (!checker.expectOk(name, crossEntropyBackward(
                                    stream, dtype, shape, dLogits[shard].get(),
                                    dLabels.get(), dLse.as<float>(),
                                    dGrad.as<float>(), dCount.as<float>(),
                                    dLogits[shard].get())) ||
        !checker.expectOk(name, dLogits[shard].download(actual)))
      return;
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < shape.localVocab; ++c)
        expected[static_cast<size_t>(r * shape.localVocab + c)] =
            expectedGrad[static_cast<size_t>(r * vocab + shape.vocabStart + c)];
    checker.compare(name + ".backward.shard" + std::to_string(shard), actual,
                    expected, toleranceFor(dtype));
  }
}

void checkEmbedding(Checker &checker, Context &context, int32_t dtype,
                    int32_t idsDtype, int64_t numIds, int64_t vocab,
                    int64_t dim, uint32_t seed) {
  const std::string suffix = "." + nameOf(dtype) +
                             (idsDtype == TITANRT_I64 ? ".i64." : ".i32.") +
                             std::to_string(numIds) + "ids." +
                             std::to_string(vocab) + "x" + std::to_string(dim);
  // Ids skewed towards small values (frequent tokens), a few out of range.
  std::mt19937 generator(seed);
  std::vector<int64_t> ids(static_cast<size_t>(numIds));
  for (int64_t i = 0; i < numIds; ++i) {
    int64_t id = int64_t(std::pow(double(generator() % 1000) / 1000.0, 3) *
                         double(vocab));
    ids[static_cast<size_t>(i)] = i % 97 == 13 ? -1 : i % 89 == 7 ? vocab : id;
  }
  std::vector<double> table = randomValues(vocab * dim, seed + 1, dtype);
  std::vector<double> grad = randomValues(numIds * dim, seed + 2, dtype);
  DeviceTensor dIds, dTable, dGrad, dOut, dTableGrad, workspace;
  const std::string forward = "embedding_forward" + suffix;
  const std::string backward = "embedding_backward" + suffix;
  if (!checker.expectOk(forward, dIds.upload(idsDtype, asDoubles(ids))) ||
      !checker.expectOk(forward, dTable.upload(dtype, table)) ||
      !checker.expectOk(forward, dGrad.upload(dtype, grad)) ||
      !checker.expectOk(forward, dOut.allocate(dtype, numIds * dim)) ||
      !checker.expectOk(forward, dTableGrad.allocate(dtype, vocab * dim)) ||
      !checker.expectOk(
          forward,
          workspace.allocate(TITANRT_I32,
                             embeddingGradWorkspaceBytes(numIds, vocab) / 4)))
    return;
  cudaStream_t stream = context.stream.get();
  std::vector<double> out, expected(static_cast<size_t>(numIds * dim));
  if (checker.expectOk(forward,
                       embeddingForward(stream, dtype, dTable.get(), idsDtype,
                                        dIds.get(), dOut.get(), numIds, vocab,
                                        dim)) &&
      checker.expectOk(forward, dOut.download(out))) {
    ref::embeddingForward(table.data(), ids.data(), expected.data(), numIds,
                          vocab, dim);
    checker.compare(forward, out, expected, 0.0); // a copy: exact
  }
  auto run = [&] {
    return embeddingBackward(stream, dtype, idsDtype, dIds.get(), dGrad.get(),
                             dTableGrad.get(), workspace.get(), numIds, vocab,
                             dim);
  };
  std::vector<double> tableGrad, tableGradAgain;
  if (!checker.expectOk(backward, run()) ||
      !checker.expectOk(backward, dTableGrad.download(tableGrad)) ||
      !checker.expectOk(backward, run()) ||
      !checker.expectOk(backward, dTableGrad.download(tableGradAgain)))
    return;
  std::vector<double> expectedGrad(static_cast<size_t>(vocab * dim));
  ref::embeddingBackward(ids.data(), grad.data(), expectedGrad.data(), numIds,
                         vocab, dim);
  checker.compare(backward, tableGrad, expectedGrad, toleranceFor(dtype));
  checker.expectIdentical(backward + ".deterministic", tableGrad,
                          tableGradAgain);
}

void checkAdamW(Checker &checker, Context &context, int32_t gradDtype,
                uint32_t seed) {
  const std::string name = "adamw." + nameOf(gradDtype);
  const std::vector<int64_t> numels = {1, 8191, 8192, 8193, 100000, 0, 37};
  AdamWHyperparameters hyper;
  hyper.lr = 3e-3;
  hyper.step = 5;
  const double gradScale = 0.7;
  struct Tensor {
    std::vector<double> param, grad, m, v;
    DeviceTensor dParam, dGrad, dM, dV;
  };
  std::vector<Tensor> tensors(numels.size());
  std::vector<AdamWTensor> list;
  for (size_t i = 0; i < numels.size(); ++i) {
    Tensor &t = tensors[i];
    const int64_t n = numels[i];
    t.param = randomValues(n, seed + uint32_t(4 * i), TITANRT_F32);
    t.grad = randomValues(n, seed + uint32_t(4 * i + 1), gradDtype, 0.1);
    t.m = randomValues(n, seed + uint32_t(4 * i + 2), TITANRT_F32, 0.01);
    t.v = randomValues(n, seed + uint32_t(4 * i + 3), TITANRT_F32, 1e-4);
    for (double &value : t.v)
      value = std::abs(value);
    if (!checker.expectOk(name, t.dParam.upload(TITANRT_F32, t.param)) ||
        !checker.expectOk(name, t.dGrad.upload(gradDtype, t.grad)) ||
        !checker.expectOk(name, t.dM.upload(TITANRT_F32, t.m)) ||
        !checker.expectOk(name, t.dV.upload(TITANRT_F32, t.v)))
      return;
    list.push_back({t.dParam.as<float>(), t.dGrad.get(), t.dM.as<float>(),
                    t.dV.as<float>(), n});
  }
  std::unique_ptr<FusedAdamW> optimizer;
  DeviceTensor dScale;
  if (!checker.expectOk(name, dScale.upload(TITANRT_F32, {gradScale})) ||
      !checker.expectOk(name, FusedAdamW::create(optimizer, gradDtype, list,
                                                 context.stream.get())) ||
      !checker.expectOk(name, optimizer->step(context.stream.get(), hyper,
                                              dScale.as<float>())))
    return;
  // Each of the parameters and the two moments, over all tensors.
  std::vector<double> actual[3], expected[3];
  for (Tensor &t : tensors) {
    std::vector<double> downloaded[3];
    if (!checker.expectOk(name, t.dParam.download(downloaded[0])) ||
        !checker.expectOk(name, t.dM.download(downloaded[1])) ||
        !checker.expectOk(name, t.dV.download(downloaded[2])))
      return;
    ref::adamW(hyper, double(float(gradScale)), t.param.data(), t.grad.data(),
               t.m.data(), t.v.data(), int64_t(t.param.size()));
    const std::vector<double> *references[3] = {&t.param, &t.m, &t.v};
    for (int kind = 0; kind < 3; ++kind) {
      actual[kind].insert(actual[kind].end(), downloaded[kind].begin(),
                          downloaded[kind].end());
      expected[kind].insert(expected[kind].end(), references[kind]->begin(),
                            references[kind]->end());
    }
  }
  const std::string prefix =
      name + ".tensors7.chunks" + std::to_string(optimizer->getNumChunks());
  checker.compare(prefix + ".param", actual[0], expected[0], 1e-5);
  checker.compare(prefix + ".exp_avg", actual[1], expected[1], 1e-5);
  checker.compare(prefix + ".exp_avg_sq", actual[2], expected[2], 1e-5);
}

/// titanrt_adamw's kernel (adamWStep): one tensor per launch, lr and step
/// read on the device, the updates in place or into other buffers, with and
/// without a clipping coefficient.
void checkAdamWStep(Checker &checker, Context &context, int32_t gradDtype,
                    uint32_t seed) {
  AdamWHyperparameters hyper;
  hyper.lr = 3e-3;
  hyper.step = 5;
  for (int64_t n : {int64_t(1), int64_t(8191), int64_t(8193), int64_t(100000),
                    int64_t(0)}) {
    for (bool inPlace : {true, false}) {
      const bool scaled = n % 2 == 1;
      const double gradScale = scaled ? 0.7 : 1.0;
      const std::string name = "adamw_step." + nameOf(gradDtype) + ".n" +
                               std::to_string(n) +
                               (inPlace ? ".in_place" : ".out_of_place") +
                               (scaled ? ".scaled" : "");
      std::vector<double> param = randomValues(n, seed++, TITANRT_F32);
      std::vector<double> grad = randomValues(n, seed++, gradDtype, 0.1);
      std::vector<double> m = randomValues(n, seed++, TITANRT_F32, 0.01);
      std::vector<double> v = randomValues(n, seed++, TITANRT_F32, 1e-4);
      for (double &value : v)
        value = std::abs(value);
      DeviceTensor dParam, dGrad, dM, dV, dLr, dStep, dScale;
      DeviceTensor outParam, outM, outV, outCopy;
      if (!checker.expectOk(name, dParam.upload(TITANRT_F32, param)) ||
          !checker.expectOk(name, dGrad.upload(gradDtype, grad)) ||
          !checker.expectOk(name, dM.upload(TITANRT_F32, m)) ||
          !checker.expectOk(name, dV.upload(TITANRT_F32, v)) ||
          !checker.expectOk(name, dLr.upload(TITANRT_F32, {hyper.lr})) ||
          !checker.expectOk(name,
                            dStep.upload(TITANRT_F32, {double(hyper.step)})) ||
          !checker.expectOk(name, dScale.upload(TITANRT_F32, {gradScale})) ||
          !checker.expectOk(name, outParam.allocate(TITANRT_F32, n)) ||
          !checker.expectOk(name, outM.allocate(TITANRT_F32, n)) ||
          !checker.expectOk(name, outV.allocate(TITANRT_F32, n)) ||
          !checker.expectOk(name, outCopy.allocate(TITANRT_BF16, n)))
        return;
      AdamWOperands o;
      o.gradDtype = gradDtype;
      o.param = dParam.as<float>();
      o.grad = dGrad.get();
      o.expAvg = dM.as<float>();
      o.expAvgSq = dV.as<float>();
      o.lr = dLr.as<float>();
      o.step = dStep.as<float>();
      o.gradScale = scaled ? dScale.as<float>() : nullptr;
      const DeviceTensor &targetParam = inPlace ? dParam : outParam;
      const DeviceTensor &targetM = inPlace ? dM : outM;
      const DeviceTensor &targetV = inPlace ? dV : outV;
      o.paramOut = targetParam.as<float>();
      o.expAvgOut = targetM.as<float>();
      o.expAvgSqOut = targetV.as<float>();
      // Out of place, the parameter's bf16 copy too (titan.adamw's
      // new_param_copy).
      o.paramCopyOut = inPlace ? nullptr : outCopy.as<uint16_t>();
      o.numel = n;
      o.beta1 = hyper.beta1;
      o.beta2 = hyper.beta2;
      o.eps = hyper.eps;
      o.weightDecay = hyper.weightDecay;
      if (!checker.expectOk(name, adamWStep(context.stream.get(), o)))
        return;
      std::vector<double> actual[3];
      if (!checker.expectOk(name, targetParam.download(actual[0])) ||
          !checker.expectOk(name, targetM.download(actual[1])) ||
          !checker.expectOk(name, targetV.download(actual[2])))
        return;
      ref::adamW(hyper, double(float(gradScale)), param.data(), grad.data(),
                 m.data(), v.data(), n);
      checker.compare(name + ".param", actual[0], param, 1e-5);
      checker.compare(name + ".exp_avg", actual[1], m, 1e-5);
      checker.compare(name + ".exp_avg_sq", actual[2], v, 1e-5);
      if (o.paramCopyOut) {
        // Exactly the updated parameter rounded to bf16.
        std::vector<double> copy, rounded;
        if (!checker.expectOk(name, outCopy.download(copy)))
          return;
        for (double value : actual[0])
          rounded.push_back(bf16ToFloat(floatToBf16(float(value))));
        checker.expectIdentical(name + ".param_copy", copy, rounded);
      }
    }
  }
}

} // namespace

void check::checkLoss(Checker &checker, Context &context) {
  uint32_t seed = 9000;
  for (int32_t dtype : {TITANRT_F32, TITANRT_BF16}) {
    checkCrossEntropy(checker, context, dtype, TITANRT_I64, 37, 1000, {0},
                      seed += 2);
    checkCrossEntropy(checker, context, dtype, TITANRT_I32, 8, 50257, {0},
                      seed += 2);
    checkCrossEntropy(checker, context, dtype, TITANRT_I64, 37, 1500,
                      {0, 400, 1000}, seed += 2);
    checkEmbedding(checker, context, dtype, TITANRT_I64, 1000, 5000, 256,
                   seed += 3);
    checkEmbedding(checker, context, dtype, TITANRT_I32, 3000, 100, 64,
                   seed += 3);
    checkEmbedding(checker, context, dtype, TITANRT_I64, 2500, 50257, 128,
                   seed += 3);
    checkAdamW(checker, context, dtype, seed += 40);
    checkAdamWStep(checker, context, dtype, seed += 40);
  }
}
