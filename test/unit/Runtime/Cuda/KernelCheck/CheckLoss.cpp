//===- CheckLoss.cpp - cross-entropy, embedding and AdamW on the GPU ------===//

#include "KernelCheck.h"

#include "core/LowPrecision.h"
#include "cuda/AdamW.h"
#include "cuda/Kernels.h"
#include "cuda/LaunchConfig.h"
#include "cuda/Reference.h"
#include "cuda/SquaredNorm.h"

#include <algorithm>
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

/// findIdOutside (titanrt_check_ids) on `ids` (on the device at
/// `deviceIds`) against `bound`, and on the ids before the first outside:
/// the first position outside and its id, or -1 when there is none.
void checkFindIdOutside(Checker &checker, Context &context, int32_t idsDtype,
                        const void *deviceIds, const std::vector<int64_t> &ids,
                        int64_t bound, const std::string &name) {
  DeviceTensor workspace;
  if (!checker.expectOk(name, workspace.allocate(TITANRT_I64, 1)))
    return;
  const auto outside = std::find_if(ids.begin(), ids.end(), [&](int64_t id) {
    return id < 0 || id >= bound;
  });
  const int64_t first = outside == ids.end() ? -1 : outside - ids.begin();
  for (int64_t numIds : {int64_t(ids.size()), std::max<int64_t>(first, 0)}) {
    int64_t position = -2, id = -2;
    if (!checker.expectOk(name, findIdOutside(context.stream.get(), idsDtype,
                                              deviceIds, numIds, bound,
                                              workspace.get(), position, id)))
      return;
    const bool found = numIds > first && first >= 0;
    checker.compare(name + "." + std::to_string(numIds) + "ids",
                    {double(position), double(id)},
                    {found ? double(first) : -1.0,
                     found ? double(ids[size_t(first)]) : 0.0},
                    0.0);
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
  checkFindIdOutside(checker, context, idsDtype, dIds.get(), ids, vocab,
                     "find_id_outside" + suffix);
}

/// FusedAdamW (titanrt_fused_adamw on the GPU): seven tensors of sizes
/// around the chunk size (one empty) in one launch, lr and step read on
/// the device, parameters and moments of `paramDtype`, gradients of
/// `gradDtype` and f32 alternating; in place with a clipping coefficient,
/// and into other buffers with each f32 parameter's bf16 copy. bf16
/// parameters and moments are the f32 update rounded once: within a bf16
/// rounding of the reference's.
void checkAdamW(Checker &checker, Context &context, int32_t paramDtype,
                int32_t gradDtype, uint32_t seed) {
  const std::vector<int64_t> numels = {1, 8191, 8192, 8193, 100000, 0, 37};
  AdamWHyperparameters hyper;
  hyper.lr = 3e-3;
  hyper.step = 5;
  const bool bf16Params = paramDtype == TITANRT_BF16;
  for (bool inPlace : {true, false}) {
    const double gradScale = inPlace ? 0.7 : 1.0;
    const bool copied = !inPlace && !bf16Params;
    const std::string name =
        "adamw." + (bf16Params ? "bf16_params." : std::string()) +
        nameOf(gradDtype) + (inPlace ? ".in_place.scaled" : ".out_of_place");
    struct Tensor {
      std::vector<double> param, grad, m, v;
      DeviceTensor dParam, dGrad, dM, dV, outParam, outM, outV, outCopy;
    };
    std::vector<Tensor> tensors(numels.size());
    std::vector<titanrt_adamw_tensor> list;
    for (size_t i = 0; i < numels.size(); ++i) {
      Tensor &t = tensors[i];
      const int64_t n = numels[i];
      const int32_t dtype = i % 2 == 0 ? gradDtype : TITANRT_F32;
      t.param = randomValues(n, seed++, paramDtype);
      t.grad = randomValues(n, seed++, dtype, 0.1);
      t.m = randomValues(n, seed++, paramDtype, 0.01);
      t.v = randomValues(n, seed++, paramDtype, 1e-4);
      for (double &value : t.v)
        value = std::abs(value);
      if (!checker.expectOk(name, t.dParam.upload(paramDtype, t.param)) ||
          !checker.expectOk(name, t.dGrad.upload(dtype, t.grad)) ||
          !checker.expectOk(name, t.dM.upload(paramDtype, t.m)) ||
          !checker.expectOk(name, t.dV.upload(paramDtype, t.v)) ||
          !checker.expectOk(name, t.outParam.allocate(paramDtype, n)) ||
          !checker.expectOk(name, t.outM.allocate(paramDtype, n)) ||
          !checker.expectOk(name, t.outV.allocate(paramDtype, n)) ||
          !checker.expectOk(name, t.outCopy.allocate(TITANRT_BF16, n)))
        return;
      titanrt_adamw_tensor tensor = {};
      tensor.param = t.dParam.get();
      tensor.grad = t.dGrad.get();
      tensor.exp_avg = t.dM.get();
      tensor.exp_avg_sq = t.dV.get();
      tensor.param_out = (inPlace ? t.dParam : t.outParam).get();
      tensor.exp_avg_out = (inPlace ? t.dM : t.outM).get();
      tensor.exp_avg_sq_out = (inPlace ? t.dV : t.outV).get();
      tensor.param_copy_out = copied ? t.outCopy.get() : nullptr;
      tensor.numel = n;
      tensor.grad_dtype = dtype;
      tensor.param_dtype = paramDtype;
      list.push_back(tensor);
    }
    DeviceTensor dLr, dStep, dScale;
    if (!checker.expectOk(name, dLr.upload(TITANRT_F32, {hyper.lr})) ||
        !checker.expectOk(name,
                          dStep.upload(TITANRT_F32, {double(hyper.step)})) ||
        !checker.expectOk(name, dScale.upload(TITANRT_F32, {gradScale})))
      return;
    AdamWCall call;
    call.lr = dLr.as<float>();
    call.step = dStep.as<float>();
    call.gradScale = inPlace ? dScale.as<float>() : nullptr;
    call.beta1 = hyper.beta1;
    call.beta2 = hyper.beta2;
    call.eps = hyper.eps;
    call.weightDecay = hyper.weightDecay;
    std::unique_ptr<FusedAdamW> optimizer;
    if (!checker.expectOk(
            name, FusedAdamW::create(optimizer, list, context.stream.get())) ||
        !checker.expectOk(name, optimizer->step(context.stream.get(), call)))
      return;
    if (!optimizer->updates(list))
      checker.expectOk(
          name + ".updates",
          Status::internal("the optimizer does not know its list"));
    // Each of the parameters and the two moments, over all tensors.
    std::vector<double> actual[3], expected[3], copies, rounded;
    for (Tensor &t : tensors) {
      std::vector<double> downloaded[3], copy;
      if (!checker.expectOk(
              name,
              (inPlace ? t.dParam : t.outParam).download(downloaded[0])) ||
          !checker.expectOk(
              name, (inPlace ? t.dM : t.outM).download(downloaded[1])) ||
          !checker.expectOk(name,
                            (inPlace ? t.dV : t.outV).download(downloaded[2])))
        return;
      if (copied) {
        // Exactly the updated parameter rounded to bf16.
        if (!checker.expectOk(name, t.outCopy.download(copy)))
          return;
        copies.insert(copies.end(), copy.begin(), copy.end());
        for (double value : downloaded[0])
          rounded.push_back(bf16ToFloat(floatToBf16(float(value))));
      }
      ref::adamW(hyper, double(float(gradScale)), t.param.data(), t.grad.data(),
                 t.m.data(), t.v.data(), int64_t(t.param.size()));
      const std::vector<double> *references[3] = {&t.param, &t.m, &t.v};
      if (bf16Params)
        for (std::vector<double> *reference : {&t.param, &t.m, &t.v})
          for (double &value : *reference)
            value = bf16ToFloat(floatToBf16(float(value)));
      for (int kind = 0; kind < 3; ++kind) {
        actual[kind].insert(actual[kind].end(), downloaded[kind].begin(),
                            downloaded[kind].end());
        expected[kind].insert(expected[kind].end(), references[kind]->begin(),
                              references[kind]->end());
      }
    }
    const std::string prefix =
        name + ".tensors7.chunks" + std::to_string(optimizer->getNumChunks());
    // A bf16 result rounds the f32 update, which may round the other way
    // than the exact one: one bf16 step (2^-7 of the value) of the largest.
    const double tolerance = bf16Params ? 0x1p-7 : 1e-5;
    checker.compare(prefix + ".param", actual[0], expected[0], tolerance);
    checker.compare(prefix + ".exp_avg", actual[1], expected[1], tolerance);
    checker.compare(prefix + ".exp_avg_sq", actual[2], expected[2], tolerance);
    if (copied)
      checker.expectIdentical(prefix + ".param_copy", copies, rounded);
  }
}

/// AdamWOptimizers (CudaBackend's titanrt_fused_adamw): a list seen again
/// reuses its tables (two steps of two tensors, one FusedAdamW), another
/// list gets its own (a third step of the first tensor alone).
void checkAdamWOptimizers(Checker &checker, Context &context, uint32_t seed) {
  const std::string name = "adamw.optimizers";
  AdamWHyperparameters hyper;
  hyper.lr = 3e-3;
  hyper.step = 2;
  const std::vector<int64_t> numels = {100, 9000};
  std::vector<std::vector<double>> param(2), grad(2), m(2), v(2);
  DeviceTensor dParam[2], dGrad[2], dM[2], dV[2], dLr, dStep;
  if (!checker.expectOk(name, dLr.upload(TITANRT_F32, {hyper.lr})) ||
      !checker.expectOk(name, dStep.upload(TITANRT_F32, {double(hyper.step)})))
    return;
  std::vector<titanrt_adamw_tensor> tensors;
  AdamWCall call;
  call.lr = dLr.as<float>();
  call.step = dStep.as<float>();
  call.beta1 = hyper.beta1;
  call.beta2 = hyper.beta2;
  call.eps = hyper.eps;
  call.weightDecay = hyper.weightDecay;
  for (size_t i = 0; i < 2; ++i) {
    const int64_t n = numels[i];
    param[i] = randomValues(n, seed++, TITANRT_F32);
    grad[i] = randomValues(n, seed++, TITANRT_F32, 0.1);
    m[i] = randomValues(n, seed++, TITANRT_F32, 0.01);
    v[i] = randomValues(n, seed++, TITANRT_F32, 1e-4);
    for (double &value : v[i])
      value = std::abs(value);
    if (!checker.expectOk(name, dParam[i].upload(TITANRT_F32, param[i])) ||
        !checker.expectOk(name, dGrad[i].upload(TITANRT_F32, grad[i])) ||
        !checker.expectOk(name, dM[i].upload(TITANRT_F32, m[i])) ||
        !checker.expectOk(name, dV[i].upload(TITANRT_F32, v[i])))
      return;
    titanrt_adamw_tensor t = {};
    t.param = t.param_out = dParam[i].get();
    t.grad = dGrad[i].get();
    t.exp_avg = t.exp_avg_out = dM[i].get();
    t.exp_avg_sq = t.exp_avg_sq_out = dV[i].get();
    t.numel = n;
    t.grad_dtype = TITANRT_F32;
    tensors.push_back(t);
  }
  AdamWOptimizers optimizers;
  for (int step = 0; step < 2; ++step)
    if (!checker.expectOk(name,
                          optimizers.step(context.stream.get(), tensors, call)))
      return;
  const size_t afterTwoSteps = optimizers.size();
  if (!checker.expectOk(
          name, optimizers.step(context.stream.get(), {tensors.front()}, call)))
    return;
  if (afterTwoSteps != 1 || optimizers.size() != 2)
    checker.expectOk(name + ".lists",
                     Status::internal("expected 1 then 2 lists, got " +
                                      std::to_string(afterTwoSteps) + " then " +
                                      std::to_string(optimizers.size())));
  for (size_t i = 0; i < 2; ++i) {
    for (int step = 0; step < (i == 0 ? 3 : 2); ++step)
      ref::adamW(hyper, 1.0, param[i].data(), grad[i].data(), m[i].data(),
                 v[i].data(), numels[i]);
    std::vector<double> actual;
    if (!checker.expectOk(name, dParam[i].download(actual)))
      return;
    checker.compare(name + ".tensor" + std::to_string(i) + ".param", actual,
                    param[i], 1e-5);
  }
}

/// SquaredNorms (titanrt_squared_norm on the GPU): seven tensors of sizes
/// around the chunk size (one empty), f32 and bf16 alternating, in two
/// launches; the same bits again from the list's kept plan.
void checkSquaredNorm(Checker &checker, Context &context, uint32_t seed) {
  const std::string name = "squared_norm.tensors7";
  const std::vector<int64_t> numels = {1, 8191, 8192, 8193, 100000, 0, 37};
  std::vector<DeviceTensor> data(numels.size());
  std::vector<titanrt_norm_tensor> tensors;
  double expected = 0;
  for (size_t i = 0; i < numels.size(); ++i) {
    const int32_t dtype = i % 2 == 0 ? TITANRT_BF16 : TITANRT_F32;
    std::vector<double> values = randomValues(numels[i], seed++, dtype);
    if (!checker.expectOk(name, data[i].upload(dtype, values)))
      return;
    for (double value : values)
      expected += value * value;
    tensors.push_back({data[i].get(), numels[i], dtype});
  }
  SquaredNorms norms;
  DeviceTensor out;
  std::vector<double> first, second;
  if (!checker.expectOk(name, out.allocate(TITANRT_F32, 1)) ||
      !checker.expectOk(name, norms.compute(context.stream.get(), tensors,
                                            out.as<float>())) ||
      !checker.expectOk(name, out.download(first)) ||
      !checker.expectOk(name, norms.compute(context.stream.get(), tensors,
                                            out.as<float>())) ||
      !checker.expectOk(name, out.download(second)))
    return;
  checker.compare(name, first, {expected}, 1e-6);
  checker.expectIdentical(name + ".again", first, second);
  if (norms.size() != 1)
    checker.expectOk(name + ".plans",
                     Status::internal("expected 1 plan, got " +
                                      std::to_string(norms.size())));
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
    // A dimension of scalar accesses (not a multiple of 8).
    checkEmbedding(checker, context, dtype, TITANRT_I32, 700, 100, 36,
                   seed += 3);
    checkEmbedding(checker, context, dtype, TITANRT_I64, 2500, 50257, 128,
                   seed += 3);
    checkAdamW(checker, context, TITANRT_F32, dtype, seed += 40);
    checkAdamW(checker, context, TITANRT_BF16, dtype, seed += 40);
  }
  checkAdamWOptimizers(checker, context, seed += 40);
  checkSquaredNorm(checker, context, seed += 40);
}
