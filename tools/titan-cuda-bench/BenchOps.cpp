//===- BenchOps.cpp - the operations titan-cuda-bench times ---------------===//

#include "BenchOps.h"

#include "cuda/AdamW.h"
#include "cuda/CudaStatus.h"
#if TITAN_HAVE_CUDNN
#include "cuda/CudnnAttention.h"
#endif
#include "cuda/Kernels.h"
#include "cuda/SquaredNorm.h"

#include <cmath>
#include <cstdio>

using namespace titan::rt;
using namespace titan::rt::cuda;
using namespace titan::rt::cuda::bench;

std::string BatchShape::getName() const {
  return "b" + std::to_string(batch) + "s" + std::to_string(seq);
}

namespace {

/// The buffers of one family, allocated in order until one fails; the
/// failure is reported once, for the family.
class Allocations {
public:
  Allocations(Harness &harness, std::string family, std::string shape)
      : harness(harness), family(std::move(family)), shape(std::move(shape)) {}

  /// `count` elements of `dtype`, uniform in [low, high].
  Allocations &random(DeviceBuffer &buffer, int32_t dtype, int64_t count,
                      double low = -1, double high = 1) {
    if (status.ok())
      status = allocateRandom(buffer, dtype, count, ++seed, low, high,
                              family.c_str());
    return *this;
  }
  /// `count` elements of `dtype`, zeroed.
  Allocations &zeros(DeviceBuffer &buffer, int32_t dtype, int64_t count) {
    if (status.ok())
      status = allocateZeros(buffer, dtype, count, family.c_str());
    return *this;
  }
  /// `bytes` uninitialized bytes (a workspace).
  Allocations &bytes(DeviceBuffer &buffer, int64_t bytes) {
    if (status.ok())
      status = buffer.allocate(bytes, family.c_str());
    return *this;
  }
  /// `count` int64 ids in [0, limit).
  Allocations &ids(DeviceBuffer &buffer, int64_t count, int64_t limit) {
    if (status.ok())
      status = allocateIds(buffer, count, limit, ++seed, family.c_str());
    return *this;
  }
  /// One f32 `value`.
  Allocations &scalar(DeviceBuffer &buffer, float value) {
    if (status.ok())
      status = buffer.allocate(sizeof(float), family.c_str());
    if (status.ok())
      status = checkCuda(cudaMemcpy(buffer.get(), &value, sizeof(value),
                                    cudaMemcpyHostToDevice),
                         "cudaMemcpy", family);
    return *this;
  }

  /// Whether everything was allocated (else the failure is reported).
  bool ok() {
    if (!status.ok() && !reported) {
      harness.fail(family, shape, status);
      reported = true;
    }
    return status.ok();
  }

private:
  Harness &harness;
  std::string family;
  std::string shape;
  Status status;
  uint32_t seed = 0;
  bool reported = false;
};

Measurement makeMeasurement(std::string op, const BatchShape &shape,
                            std::string detail, Work work) {
  Measurement measurement;
  measurement.op = std::move(op);
  measurement.shape = shape.getName();
  measurement.batch = shape.batch;
  measurement.seq = shape.seq;
  measurement.detail = std::move(detail);
  measurement.work = work;
  return measurement;
}

Work computeWork(double flops) { return {Bound::Compute, flops, 0}; }

/// Memory-bound work of `elements` bf16 elements moved, plus `extraBytes`.
Work bf16Traffic(double elements, double extraBytes = 0) {
  return {Bound::Memory, 0, 2 * elements + extraBytes};
}

std::string format(const char *pattern, long long a, long long b = 0,
                   long long c = 0, long long d = 0) {
  char text[160];
  std::snprintf(text, sizeof(text), pattern, a, b, c, d);
  return text;
}

/// c [m, n] = a [m, k] b [k, n] on bf16 operands, untransposed.
GemmArgs bf16Gemm(const void *a, const void *b, void *c, int64_t m, int64_t n,
                  int64_t k) {
  GemmArgs args;
  args.dtype = TITANRT_BF16;
  args.a = a;
  args.b = b;
  args.c = c;
  args.problem.m = m;
  args.problem.n = n;
  args.problem.k = k;
  return args;
}

} // namespace

void bench::benchGemms(Harness &harness, const ModelShape &model,
                       const BatchShape &shape) {
  struct Linear {
    const char *name;
    int64_t in;
    int64_t out;
  };
  const int64_t qkv = (model.heads + 2 * model.kvHeads) * model.headDim;
  const int64_t attention = model.heads * model.headDim;
  const Linear linears[] = {{"attn_qkv", model.dim, qkv},
                            {"attn_out", attention, model.dim},
                            {"ffn_w13", model.dim, 2 * model.ffn},
                            {"ffn_w2", model.ffn, model.dim},
                            {"lm_head", model.dim, model.vocab}};
  const int64_t t = shape.getTokens();
  for (const Linear &linear : linears) {
    const std::string name = std::string("gemm.") + linear.name;
    const int64_t in = linear.in, out = linear.out;
    DeviceBuffer x, w, y, dx, dw;
    Allocations allocations(harness, name, shape.getName());
    allocations.random(x, TITANRT_BF16, t * in)
        .random(w, TITANRT_BF16, out * in, -0.05, 0.05)
        .zeros(y, TITANRT_BF16, t * out)
        .zeros(dx, TITANRT_BF16, t * in)
        .zeros(dw, TITANRT_F32, out * in);
    if (!allocations.ok())
      continue;
    const Work work = computeWork(2.0 * double(t) * double(in) * double(out));

    // y [t, out] = x [t, in] W^T (W [out, in], as torch.nn.Linear).
    GemmArgs forward = bf16Gemm(x.get(), w.get(), y.get(), t, out, in);
    forward.problem.transposeB = true;
    // dx [t, in] = dy [t, out] W; the forward's output serves as dy.
    GemmArgs inputGrad = bf16Gemm(y.get(), w.get(), dx.get(), t, in, out);
    // dW [out, in] = dy^T x, in f32 (the gradient of an f32 master weight).
    GemmArgs weightGrad = bf16Gemm(y.get(), x.get(), dw.get(), out, in, t);
    weightGrad.outputDtype = TITANRT_F32;
    weightGrad.problem.transposeA = true;

    const std::pair<const char *, GemmArgs *> passes[] = {
        {"fwd", &forward}, {"dx", &inputGrad}, {"dw", &weightGrad}};
    for (auto [suffix, args] : passes) {
      const GemmProblem &p = args->problem;
      std::string detail =
          format("m=%lld n=%lld k=%lld ", p.m, p.n, p.k) +
          (p.transposeA ? "T" : "N") + (p.transposeB ? "T" : "N") +
          (args->outputDtype == TITANRT_F32 ? " bf16->f32" : " bf16->bf16");
      (void)harness.time(
          makeMeasurement(name + "." + suffix, shape, detail, work),
          [&, args = args] {
            return harness.getGemm().run(harness.getStream(), *args);
          });
    }
  }
}

void bench::benchElementwise(Harness &harness, const ModelShape &model,
                             const BatchShape &shape) {
  const int64_t t = shape.getTokens(), d = model.dim;
  const cudaStream_t stream = harness.getStream();
  const std::string shapeName = shape.getName();
  {
    DeviceBuffer x, w, y, dy, dx, dw, workspace;
    Allocations allocations(harness, "rmsnorm", shapeName);
    allocations.random(x, TITANRT_BF16, t * d)
        .random(w, TITANRT_BF16, d, 0.5, 1.5)
        .zeros(y, TITANRT_BF16, t * d)
        .random(dy, TITANRT_BF16, t * d)
        .zeros(dx, TITANRT_BF16, t * d)
        .zeros(dw, TITANRT_BF16, d)
        .bytes(workspace, rmsNormBackwardWorkspaceBytes(t, d));
    if (allocations.ok()) {
      std::string detail = format("[%lld, %lld] bf16, weight bf16", t, d);
      (void)harness.time(makeMeasurement("rmsnorm.fwd", shape, detail,
                                         bf16Traffic(2.0 * t * d + d)),
                         [&] {
                           return rmsNormForward(stream, TITANRT_BF16,
                                                 TITANRT_BF16, x.get(), w.get(),
                                                 y.get(), t, d, model.normEps);
                         });
      (void)harness.time(
          makeMeasurement("rmsnorm.bwd", shape, detail + ", dx and dweight",
                          bf16Traffic(3.0 * t * d + 2.0 * d)),
          [&] {
            return rmsNormBackward(stream, TITANRT_BF16, TITANRT_BF16, x.get(),
                                   w.get(), dy.get(), /*addend=*/nullptr,
                                   dx.get(), dw.get(), workspace.get(), t, d,
                                   model.normEps);
          });
    }
  }
  {
    // RoPE on q [batch, seq, heads, head_dim], tables [seq, head_dim / 2].
    const int64_t elements = t * model.heads * model.headDim;
    const int64_t tableElements = shape.seq * model.headDim / 2;
    DeviceBuffer x, cos, sin, out;
    Allocations allocations(harness, "rope", shapeName);
    allocations.random(x, TITANRT_BF16, elements)
        .random(cos, TITANRT_F32, tableElements)
        .random(sin, TITANRT_F32, tableElements)
        .zeros(out, TITANRT_BF16, elements);
    if (allocations.ok()) {
      std::string detail =
          format("q [%lld, %lld, %lld, %lld] bf16, interleaved, tables f32",
                 shape.batch, shape.seq, model.heads, model.headDim);
      Work work = bf16Traffic(2.0 * elements, 2.0 * 4 * tableElements);
      (void)harness.time(makeMeasurement("rope.fwd", shape, detail, work), [&] {
        return ropeForward(stream, TITANRT_BF16, TITANRT_F32, x.get(),
                           cos.get(), sin.get(), out.get(), shape.batch,
                           shape.seq, model.heads, model.headDim,
                           RopeStyle::Interleaved);
      });
      (void)harness.time(makeMeasurement("rope.bwd", shape, detail, work), [&] {
        return ropeBackward(stream, TITANRT_BF16, TITANRT_F32, x.get(),
                            cos.get(), sin.get(), out.get(), shape.batch,
                            shape.seq, model.heads, model.headDim,
                            RopeStyle::Interleaved);
      });
    }
  }
  {
    // SwiGLU on the fused w1/w3 output [t, 2 ffn]: gate and up halves.
    const int64_t f = model.ffn;
    DeviceBuffer h, out, dout, dh;
    Allocations allocations(harness, "swiglu", shapeName);
    allocations.random(h, TITANRT_BF16, t * 2 * f)
        .zeros(out, TITANRT_BF16, t * f)
        .random(dout, TITANRT_BF16, t * f)
        .zeros(dh, TITANRT_BF16, t * 2 * f);
    if (allocations.ok()) {
      std::string detail =
          format("[%lld, %lld] of a fused [%lld, %lld] bf16", t, f, t, 2 * f);
      // The up half starts f bf16 elements into each row.
      const int64_t upOffset = f * 2;
      const char *hBase = h.as<char>();
      char *dhBase = dh.as<char>();
      (void)harness.time(makeMeasurement("swiglu.fwd", shape, detail,
                                         bf16Traffic(3.0 * t * f)),
                         [&] {
                           return swiGluForward(stream, TITANRT_BF16, hBase,
                                                hBase + upOffset, out.get(), t,
                                                f, 2 * f);
                         });
      (void)harness.time(makeMeasurement("swiglu.bwd", shape, detail,
                                         bf16Traffic(5.0 * t * f)),
                         [&] {
                           return swiGluBackward(stream, TITANRT_BF16, hBase,
                                                 hBase + upOffset, dout.get(),
                                                 dhBase, dhBase + upOffset, t,
                                                 f, 2 * f);
                         });
    }
  }
  {
    // Softmax over attention scores [batch * heads * seq, seq].
    const int64_t rows = shape.batch * model.heads * shape.seq;
    const int64_t cols = shape.seq;
    const double elements = double(rows) * double(cols);
    DeviceBuffer x, y, dy, dx;
    Allocations allocations(harness, "softmax", shapeName);
    allocations.random(x, TITANRT_BF16, rows * cols, -4, 4)
        .zeros(y, TITANRT_BF16, rows * cols)
        .random(dy, TITANRT_BF16, rows * cols)
        .zeros(dx, TITANRT_BF16, rows * cols);
    if (allocations.ok()) {
      std::string detail = format("[%lld, %lld] bf16", rows, cols);
      (void)harness.time(makeMeasurement("softmax.fwd", shape, detail,
                                         bf16Traffic(2 * elements)),
                         [&] {
                           return softmaxForward(stream, TITANRT_BF16, x.get(),
                                                 y.get(), rows, cols);
                         });
      (void)harness.time(makeMeasurement("softmax.bwd", shape, detail,
                                         bf16Traffic(3 * elements)),
                         [&] {
                           return softmaxBackward(stream, TITANRT_BF16, y.get(),
                                                  dy.get(), dx.get(), rows,
                                                  cols);
                         });
    }
  }
}

void bench::benchAttention(Harness &harness, const ModelShape &model,
                           const BatchShape &shape) {
  AttentionShape attention;
  attention.batch = shape.batch;
  attention.qHeads = model.heads;
  attention.kvHeads = model.kvHeads;
  attention.seq = shape.seq;
  attention.headDim = model.headDim;
  attention.causal = true;
  attention.scale = 1.0 / std::sqrt(double(model.headDim));
  const int64_t qElements =
      shape.batch * model.heads * shape.seq * model.headDim;
  const int64_t kvElements =
      shape.batch * model.kvHeads * shape.seq * model.headDim;
  DeviceBuffer q, k, v, out, lse, dout, dq, dk, dv, workspace;
  Allocations allocations(harness, "attention", shape.getName());
  allocations.random(q, TITANRT_BF16, qElements)
      .random(k, TITANRT_BF16, kvElements)
      .random(v, TITANRT_BF16, kvElements)
      .zeros(out, TITANRT_BF16, qElements)
      .zeros(lse, TITANRT_F32, shape.batch * model.heads * shape.seq)
      .random(dout, TITANRT_BF16, qElements)
      .zeros(dq, TITANRT_BF16, qElements)
      .zeros(dk, TITANRT_BF16, kvElements)
      .zeros(dv, TITANRT_BF16, kvElements)
      .bytes(workspace, attentionBackwardWorkspaceBytes(attention));
  if (!allocations.ok())
    return;
  // FlashAttention's count: 4 b h s^2 d (QK^T and PV), halved when causal;
  // the backward is 2.5 times the forward (5 products).
  const double forwardFlops = 4.0 * double(shape.batch) * double(model.heads) *
                              double(shape.seq) * double(shape.seq) *
                              double(model.headDim) / 2;
  std::string detail = format("q [%lld, %lld, %lld, %lld] bf16, ", shape.batch,
                              model.heads, shape.seq, model.headDim) +
                       format("%lld kv heads, causal", model.kvHeads);
  const cudaStream_t stream = harness.getStream();
  // titan's kernels (tensor cores), then the CUDA-core ones on the same
  // inputs: their baseline in the same run.
  for (auto [name, kernels] :
       {std::pair<std::string, AttentionKernels>{"attention",
                                                 AttentionKernels::Titan},
        {"attention_cuda_cores", AttentionKernels::CudaCores}}) {
    // The forward runs first: the backward reads its out and lse.
    (void)harness.time(makeMeasurement(name + ".fwd", shape, detail,
                                       computeWork(forwardFlops)),
                       [&, kernels = kernels] {
                         return attentionForward(
                             stream, TITANRT_BF16, attention, q.get(), k.get(),
                             v.get(), out.get(), lse.as<float>(), kernels);
                       });
    (void)harness.time(makeMeasurement(name + ".bwd", shape, detail,
                                       computeWork(2.5 * forwardFlops)),
                       [&, kernels = kernels] {
                         return attentionBackward(
                             stream, TITANRT_BF16, attention, q.get(), k.get(),
                             v.get(), out.get(), dout.get(), lse.as<float>(),
                             dq.get(), dk.get(), dv.get(), workspace.get(),
                             kernels);
                       });
  }
#if TITAN_HAVE_CUDNN
  // cuDNN's fused attention on the same inputs (what the CUDA backend runs
  // where cuDNN loads); a failure to load or plan is each row's error.
  std::unique_ptr<CudnnAttention> cudnn;
  Status created = CudnnAttention::create(cudnn, stream);
  (void)harness.time(makeMeasurement("attention_cudnn.fwd", shape, detail,
                                     computeWork(forwardFlops)),
                     [&] {
                       return created.ok()
                                  ? cudnn->forward(attention, q.get(), k.get(),
                                                   v.get(), out.get(),
                                                   lse.as<float>())
                                  : created;
                     });
  (void)harness.time(makeMeasurement("attention_cudnn.bwd", shape, detail,
                                     computeWork(2.5 * forwardFlops)),
                     [&] {
                       return created.ok()
                                  ? cudnn->backward(attention, q.get(), k.get(),
                                                    v.get(), out.get(),
                                                    dout.get(), lse.as<float>(),
                                                    dq.get(), dk.get(),
                                                    dv.get(), workspace.get())
                                  : created;
                     });
#endif
}

void bench::benchLossAndEmbedding(Harness &harness, const ModelShape &model,
                                  const BatchShape &shape) {
  const int64_t t = shape.getTokens(), vocab = model.vocab, d = model.dim;
  const cudaStream_t stream = harness.getStream();
  {
    DeviceBuffer logits, labels, rowMax, rowSumExp, target, lse, loss, count,
        gradLoss, dlogits;
    Allocations allocations(harness, "cross_entropy", shape.getName());
    allocations.random(logits, TITANRT_BF16, t * vocab, -4, 4)
        .ids(labels, t, vocab)
        .zeros(rowMax, TITANRT_F32, t)
        .zeros(rowSumExp, TITANRT_F32, t)
        .zeros(target, TITANRT_F32, t)
        .zeros(lse, TITANRT_F32, t)
        .zeros(loss, TITANRT_F32, 1)
        .zeros(count, TITANRT_F32, 1)
        .scalar(gradLoss, 1.0f)
        .zeros(dlogits, TITANRT_BF16, t * vocab);
    if (allocations.ok()) {
      CrossEntropyShape ce;
      ce.rows = t;
      ce.localVocab = vocab;
      ce.labelsDtype = TITANRT_I64;
      std::string detail =
          format("logits [%lld, %lld] bf16, labels i64", t, vocab);
      const double labelBytes = 8.0 * t;
      (void)harness.time(
          makeMeasurement("cross_entropy.fwd", shape, detail,
                          bf16Traffic(double(t) * vocab, labelBytes)),
          [&] {
            TITANRT_RETURN_IF_ERROR(crossEntropyPartials(
                stream, TITANRT_BF16, ce, logits.get(), labels.get(),
                rowMax.as<float>(), rowSumExp.as<float>(), target.as<float>()));
            return crossEntropyFinish(stream, ce, rowMax.as<float>(),
                                      rowSumExp.as<float>(), target.as<float>(),
                                      labels.get(), loss.as<float>(),
                                      lse.as<float>(), count.as<float>());
          });
      (void)harness.time(
          makeMeasurement("cross_entropy.bwd", shape, detail + ", dlogits bf16",
                          bf16Traffic(2.0 * t * vocab, labelBytes)),
          [&] {
            return crossEntropyBackward(stream, TITANRT_BF16, ce, logits.get(),
                                        labels.get(), lse.as<float>(),
                                        gradLoss.as<float>(), count.as<float>(),
                                        dlogits.get());
          });
    }
  }
  {
    DeviceBuffer table, ids, out, grad, dtable, workspace;
    Allocations allocations(harness, "embedding", shape.getName());
    allocations.random(table, TITANRT_BF16, vocab * d)
        .ids(ids, t, vocab)
        .zeros(out, TITANRT_BF16, t * d)
        .random(grad, TITANRT_BF16, t * d)
        .zeros(dtable, TITANRT_BF16, vocab * d)
        .bytes(workspace, embeddingGradWorkspaceBytes(t, vocab));
    if (allocations.ok()) {
      std::string detail =
          format("table [%lld, %lld] bf16, %lld ids i64", vocab, d, t);
      (void)harness.time(makeMeasurement("embedding.fwd", shape, detail,
                                         bf16Traffic(2.0 * t * d, 8.0 * t)),
                         [&] {
                           return embeddingForward(
                               stream, TITANRT_BF16, table.get(), TITANRT_I64,
                               ids.get(), out.get(), t, vocab, d);
                         });
      (void)harness.time(
          makeMeasurement(
              "embedding.bwd", shape, detail + ", dtable bf16",
              bf16Traffic(double(vocab) * d + double(t) * d, 8.0 * t)),
          [&] {
            return embeddingBackward(stream, TITANRT_BF16, TITANRT_I64,
                                     ids.get(), grad.get(), dtable.get(),
                                     workspace.get(), t, vocab, d);
          });
    }
  }
}

void bench::benchAdamW(Harness &harness, const ModelShape &model) {
  // The parameters of the model, as torchtitan's Llama 3 holds them.
  const int64_t d = model.dim, kv = model.kvHeads * model.headDim,
                q = model.heads * model.headDim;
  std::vector<int64_t> numels = {model.vocab * d};
  for (int64_t layer = 0; layer < model.layers; ++layer)
    for (int64_t numel : {q * d, kv * d, kv * d, d * q, model.ffn * d,
                          model.ffn * d, d * model.ffn, d, d})
      numels.push_back(numel);
  numels.push_back(d);
  numels.push_back(model.vocab * d);
  // Each tensor starts 256-byte aligned, as separate allocations would.
  std::vector<int64_t> offsets;
  int64_t total = 0, parameters = 0;
  for (int64_t numel : numels) {
    offsets.push_back(total);
    total += (numel + 63) / 64 * 64;
    parameters += numel;
  }
  DeviceBuffer params, expAvg, expAvgSq, paramsBf16, expAvgBf16, expAvgSqBf16,
      gradF32, gradBf16, lr, step, normOut;
  Allocations allocations(harness, "adamw", "model");
  allocations.random(params, TITANRT_F32, total, -0.05, 0.05)
      .zeros(expAvg, TITANRT_F32, total)
      .zeros(expAvgSq, TITANRT_F32, total)
      .random(paramsBf16, TITANRT_BF16, total, -0.05, 0.05)
      .zeros(expAvgBf16, TITANRT_BF16, total)
      .zeros(expAvgSqBf16, TITANRT_BF16, total)
      .random(gradF32, TITANRT_F32, total, -1e-3, 1e-3)
      .random(gradBf16, TITANRT_BF16, total, -1e-3, 1e-3)
      .random(lr, TITANRT_F32, 1, 1e-4, 1e-3)
      .zeros(step, TITANRT_F32, 1)
      .zeros(normOut, TITANRT_F32, 1);
  if (!allocations.ok())
    return;
  // lr and step on the device, as executables keep them.
  AdamWCall call;
  call.lr = lr.as<float>();
  call.step = step.as<float>();
  // f32 parameters and moments (mixed precision's masters) with f32 or bf16
  // gradients; bf16 ones with bf16 gradients (pure bf16 training).
  for (auto [paramDtype, gradDtype] : {std::pair{TITANRT_F32, TITANRT_F32},
                                       {TITANRT_F32, TITANRT_BF16},
                                       {TITANRT_BF16, TITANRT_BF16}}) {
    const bool f32 = gradDtype == TITANRT_F32;
    const bool bf16Params = paramDtype == TITANRT_BF16;
    // Element `offset` of `buffer`, of the parameters' dtype.
    auto state = [&](const DeviceBuffer &buffer, int64_t offset) -> void * {
      return bf16Params ? static_cast<void *>(buffer.as<uint16_t>() + offset)
                        : static_cast<void *>(buffer.as<float>() + offset);
    };
    std::vector<titanrt_adamw_tensor> tensors;
    for (size_t i = 0; i < numels.size(); ++i) {
      titanrt_adamw_tensor tensor = {};
      tensor.param = tensor.param_out =
          state(bf16Params ? paramsBf16 : params, offsets[i]);
      tensor.grad =
          f32 ? static_cast<const void *>(gradF32.as<float>() + offsets[i])
              : static_cast<const void *>(gradBf16.as<uint16_t>() + offsets[i]);
      tensor.exp_avg = tensor.exp_avg_out =
          state(bf16Params ? expAvgBf16 : expAvg, offsets[i]);
      tensor.exp_avg_sq = tensor.exp_avg_sq_out =
          state(bf16Params ? expAvgSqBf16 : expAvgSq, offsets[i]);
      tensor.numel = numels[i];
      tensor.grad_dtype = gradDtype;
      tensor.param_dtype = paramDtype;
      tensors.push_back(tensor);
    }
    Measurement measurement;
    measurement.op = bf16Params ? "adamw.bf16_params"
                     : f32      ? "adamw.grad_f32"
                                : "adamw.grad_bf16";
    measurement.shape = "model";
    measurement.detail =
        format("%lld tensors, %lld parameters (%lld layers), ",
               (long long)numels.size(), parameters, model.layers) +
        (bf16Params ? "bf16 parameters and moments, " : "") + "grads " +
        (f32 ? "f32" : "bf16");
    // Reads the parameter, both moments and the gradient; writes the
    // parameter and the moments.
    const double stateBytes = bf16Params ? 2 : 4;
    measurement.work = {Bound::Memory, 0,
                        double(parameters) * (6 * stateBytes + (f32 ? 4 : 2))};
    std::unique_ptr<FusedAdamW> optimizer;
    Status status = FusedAdamW::create(optimizer, tensors, harness.getStream());
    if (!status.ok()) {
      harness.fail(measurement.op, measurement.shape, status);
      continue;
    }
    (void)harness.time(measurement, [&] {
      return optimizer->step(harness.getStream(), call);
    });
    if (bf16Params)
      continue; // The gradients' norm is squared_norm.grad_bf16's.
    // Clipping's squared norm of the same gradients, as executables compute
    // it (titanrt_squared_norm): reads each gradient once.
    std::vector<titanrt_norm_tensor> gradients;
    for (const titanrt_adamw_tensor &tensor : tensors)
      gradients.push_back({tensor.grad, tensor.numel, gradDtype});
    Measurement norm;
    norm.op = f32 ? "squared_norm.grad_f32" : "squared_norm.grad_bf16";
    norm.shape = "model";
    norm.detail = measurement.detail;
    norm.work = {Bound::Memory, 0, double(parameters) * (f32 ? 4 : 2)};
    SquaredNorms norms;
    (void)harness.time(norm, [&] {
      return norms.compute(harness.getStream(), gradients, normOut.as<float>());
    });
  }
}
