//===- EmbeddingGradTest.cpp - Tests of the embedding scatter-add ---------===//

#include "core/LowPrecision.h"
#include "cpu/CpuKernels.h"

#include "TestUtil.h"

#include <limits>

using namespace titan::rt;
using namespace titan::rt::cpu;
using namespace titan::rt::cpu::test;

namespace {

/// out[ids[i]] += grad[i] in double, on a zeroed [vocab, dim] table.
template <typename Id, typename T>
std::vector<double> referenceEmbeddingGrad(const std::vector<Id> &ids,
                                           const std::vector<T> &grad,
                                           int64_t vocab, int64_t dim) {
  std::vector<double> table(vocab * dim, 0.0);
  for (size_t i = 0; i < ids.size(); ++i)
    for (int64_t c = 0; c < dim; ++c)
      table[ids[i] * dim + c] += double(grad[i * dim + c]);
  return table;
}

/// Runs the scatter-add of random rows with ids of type Id and elements of
/// type T on every thread count: the result equals the reference and is
/// bitwise the same for all thread counts (every element sums its rows in
/// the order of the ids).
template <typename Id, typename T>
void checkEmbeddingGrad(int32_t idsDtype, int32_t dtype, int64_t vocab,
                        int64_t dim, const std::vector<Id> &ids) {
  SCOPED_TRACE("vocab " + std::to_string(vocab) + ", dim " +
               std::to_string(dim));
  std::vector<T> grad = randomValues<T>(ids.size() * dim, 3);
  std::vector<double> expected = referenceEmbeddingGrad(ids, grad, vocab, dim);
  std::vector<T> first;
  for (int numThreads : threadCounts()) {
    std::vector<T> out(vocab * dim, std::numeric_limits<T>::quiet_NaN());
    Status status =
        embeddingGrad(pool(numThreads), dtype, idsDtype, ids.data(),
                      grad.data(), out.data(), ids.size(), vocab, dim);
    ASSERT_TRUE(status.ok()) << status.getMessage();
    EXPECT_LE(relativeError(out, expected),
              std::numeric_limits<T>::epsilon() * 8);
    if (first.empty())
      first = out;
    EXPECT_EQ(out, first) << numThreads << " threads";
  }
}

TEST(EmbeddingGradTest, RepeatedIdsAccumulate) {
  // Exact: small integers.
  std::vector<int64_t> ids = {2, 0, 2, 2};
  std::vector<float> grad = {1, 10, 2, 20, 3, 30, 4, 40};
  std::vector<float> out(3 * 2, -1.0f);
  Status status = embeddingGrad(pool(2), TITANRT_F32, TITANRT_I64, ids.data(),
                                grad.data(), out.data(), 4, 3, 2);
  ASSERT_TRUE(status.ok()) << status.getMessage();
  EXPECT_EQ(out, (std::vector<float>{2, 20, 0, 0, 8, 80}));
}

TEST(EmbeddingGradTest, Bf16SumsInFloat32AndRoundsOnce) {
  // 256 + 1 + 1 + 1: float32 sums exactly (259), which rounds to bf16 as 260
  // (bf16 steps by 2 there; ties to even); adding in bf16 would stay at 256.
  std::vector<int64_t> ids = {1, 1, 1, 1};
  std::vector<uint16_t> grad = {floatToBf16(256), floatToBf16(1),
                                floatToBf16(1), floatToBf16(1)};
  std::vector<uint16_t> out(2, 0xffff);
  Status status = embeddingGrad(pool(2), TITANRT_BF16, TITANRT_I64, ids.data(),
                                grad.data(), out.data(), 4, 2, 1);
  ASSERT_TRUE(status.ok()) << status.getMessage();
  EXPECT_EQ(bf16ToFloat(out[0]), 0.0f);
  EXPECT_EQ(bf16ToFloat(out[1]), 260.0f);
}

TEST(EmbeddingGradTest, MatchesReference) {
  std::vector<int64_t> ids64 = {5, 0, 5, 99, 5,  17, 42, 42,
                                3, 5, 0, 99, 63, 64, 5,  18};
  std::vector<int32_t> ids32(ids64.begin(), ids64.end());
  for (int64_t dim : {1, 3, 16, 100, 257}) {
    checkEmbeddingGrad<int64_t, float>(TITANRT_I64, TITANRT_F32, 100, dim,
                                       ids64);
    checkEmbeddingGrad<int32_t, float>(TITANRT_I32, TITANRT_F32, 100, dim,
                                       ids32);
    checkEmbeddingGrad<int32_t, double>(TITANRT_I32, TITANRT_F64, 100, dim,
                                        ids32);
  }
}

TEST(EmbeddingGradTest, NoIdsGivesZeros) {
  std::vector<float> out(4 * 8, 1.0f);
  Status status = embeddingGrad(pool(2), TITANRT_F32, TITANRT_I64, nullptr,
                                nullptr, out.data(), 0, 4, 8);
  ASSERT_TRUE(status.ok()) << status.getMessage();
  EXPECT_EQ(out, std::vector<float>(4 * 8, 0.0f));
}

TEST(EmbeddingGradTest, IdOutOfRange) {
  std::vector<int32_t> ids = {1, 4, 7, -1};
  std::vector<float> grad(4 * 2, 1.0f), out(5 * 2);
  Status tooLarge = embeddingGrad(pool(2), TITANRT_F32, TITANRT_I32, ids.data(),
                                  grad.data(), out.data(), 4, 5, 2);
  EXPECT_EQ(tooLarge.getCode(), TITANRT_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(tooLarge.getMessage(),
            "embedding_grad: id 7 at position 2 is outside the table's [0, "
            "5): titan checks the ids of the inputs when it reads them and "
            "those a model computes before its lookups (titan.check_ids), so "
            "a program that gets here skipped a check");

  std::vector<int64_t> negative = {0, -3};
  Status status =
      embeddingGrad(pool(1), TITANRT_F32, TITANRT_I64, negative.data(),
                    grad.data(), out.data(), 2, 5, 2);
  EXPECT_EQ(
      status.getMessage().substr(0, 65),
      "embedding_grad: id -3 at position 1 is outside the table's [0, 5)");
}

/// titanrt_check_ids' search: the first id outside [0, bound), i64 and i32,
/// or -1 when all lie inside.
TEST(IdCheckTest, FindsTheFirstIdOutside) {
  std::vector<int64_t> wide = {0, 9, 10, -1, 12};
  int64_t position = -2, id = -2;
  ASSERT_TRUE(
      findIdOutside(TITANRT_I64, wide.data(), 5, 10, position, id).ok());
  EXPECT_EQ(position, 2);
  EXPECT_EQ(id, 10);
  ASSERT_TRUE(
      findIdOutside(TITANRT_I64, wide.data(), 2, 10, position, id).ok());
  EXPECT_EQ(position, -1);

  std::vector<int32_t> narrow = {3, -7, 40};
  ASSERT_TRUE(
      findIdOutside(TITANRT_I32, narrow.data(), 3, 50, position, id).ok());
  EXPECT_EQ(position, 1);
  EXPECT_EQ(id, -7);
  ASSERT_TRUE(findIdOutside(TITANRT_I32, nullptr, 0, 50, position, id).ok());
  EXPECT_EQ(position, -1);

  Status dtype = findIdOutside(TITANRT_F32, wide.data(), 5, 10, position, id);
  EXPECT_EQ(dtype.getMessage(),
            "check_ids: ids_dtype f32 is neither i64 nor i32");
  Status null = findIdOutside(TITANRT_I64, nullptr, 5, 10, position, id);
  EXPECT_EQ(null.getMessage(), "check_ids: ids is null but holds 5 elements");
}

TEST(EmbeddingGradTest, ArgumentErrors) {
  int64_t id = 0;
  float buffer[4] = {};
  Status idsDtype = embeddingGrad(pool(1), TITANRT_F32, TITANRT_F32, &id,
                                  buffer, buffer, 1, 1, 1);
  EXPECT_EQ(idsDtype.getCode(), TITANRT_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(idsDtype.getMessage(),
            "embedding_grad: ids_dtype f32 is neither i64 nor i32");

  Status dtype = embeddingGrad(pool(1), TITANRT_I64, TITANRT_I64, &id, buffer,
                               buffer, 1, 1, 1);
  EXPECT_EQ(dtype.getCode(), TITANRT_ERROR_UNSUPPORTED);
  EXPECT_EQ(dtype.getMessage(), "embedding_grad: dtype i64 is not supported "
                                "by the CPU backend (f32, f64, bf16, f16)");

  Status vocab = embeddingGrad(pool(1), TITANRT_F32, TITANRT_I64, &id, buffer,
                               buffer, 1, -4, 1);
  EXPECT_EQ(vocab.getMessage(), "embedding_grad: vocab = -4 is negative");

  Status out = embeddingGrad(pool(1), TITANRT_F32, TITANRT_I64, &id, buffer,
                             nullptr, 1, 3, 2);
  EXPECT_EQ(out.getCode(), TITANRT_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(out.getMessage(), "embedding_grad: out is null but holds 6 "
                              "elements");
}

} // namespace
