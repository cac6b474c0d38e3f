//===- AtenInterpolateOps.cpp - F.interpolate written with titan ops ------===//
//
// aten::upsample_{nearest,linear,bilinear,trilinear,bicubic}{1,2,3}d and
// _upsample_nearest_exact{1,2,3}d (F.interpolate, nn.Upsample; a ViT's
// position embeddings resized to another image), one spatial dim after
// another. Each output position reads the input positions PyTorch's CPU
// kernel reads, with its weights computed in float as the kernel does:
// linear and cubic modes are a matmul by the [in, out] matrix of those
// weights (a constant), nearest modes slices of the input.
//
//===----------------------------------------------------------------------===//

#include "AtenSupport.h"

#include "llvm/Support/FormatVariadic.h"

#include <cmath>

using namespace mlir;
using namespace mlir::titan;
using namespace mlir::titan::import;

namespace {

enum class Resampling { Nearest, NearestExact, Linear, Cubic };

/// PyTorch's scale from output to input positions (area_pixel_compute_scale
/// and compute_scales_value, in float as its CPU kernels compute it).
float sourceScale(int64_t in, int64_t out, std::optional<double> factor,
                  bool alignCorners) {
  if (alignCorners)
    return out > 1 ? static_cast<float>(in - 1) / static_cast<float>(out - 1)
                   : 0.0f;
  if (factor && *factor > 0)
    return static_cast<float>(1.0 / *factor);
  return static_cast<float>(in) / static_cast<float>(out);
}

/// The input position output `i` of nearest resampling reads.
int64_t nearestSource(int64_t i, int64_t in, int64_t out, float scale,
                      bool exact) {
  if (!exact && out == in)
    return i;
  if (!exact && out == 2 * in)
    return i >> 1;
  float position = exact ? (static_cast<float>(i) + 0.5f) * scale
                         : static_cast<float>(i) * scale;
  return std::min<int64_t>(static_cast<int64_t>(std::floor(position)), in - 1);
}

/// Keys' cubic convolution with A = -0.75, as PyTorch's bicubic.
float cubicNear(float x, float a) {
  return ((a + 2) * x - (a + 3)) * x * x + 1;
}
float cubicFar(float x, float a) {
  return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a;
}

/// The [in, out] matrix of linear or cubic resampling weights.
SmallVector<double> resamplingWeights(Resampling mode, int64_t in, int64_t out,
                                      float scale, bool alignCorners) {
  SmallVector<double> weights(in * out, 0.0);
  auto add = [&](int64_t source, int64_t i, float w) {
    source = std::clamp<int64_t>(source, 0, in - 1);
    weights[source * out + i] += w;
  };
  for (int64_t i = 0; i < out; ++i) {
    float position = alignCorners
                         ? scale * static_cast<float>(i)
                         : scale * (static_cast<float>(i) + 0.5f) - 0.5f;
    if (mode == Resampling::Linear) {
      if (position < 0)
        position = 0;
      int64_t low = static_cast<int64_t>(position);
      int64_t high = low + (low < in - 1 ? 1 : 0);
      float lambda = std::clamp(position - static_cast<float>(low), 0.0f, 1.0f);
      add(low, i, 1.0f - lambda);
      add(high, i, lambda);
      continue;
    }
    float floorPosition = std::floor(position);
    int64_t low = static_cast<int64_t>(floorPosition);
    float t = position - floorPosition;
    constexpr float kA = -0.75f;
    add(low - 1, i, cubicFar(t + 1.0f, kA));
    add(low, i, cubicNear(t, kA));
    add(low + 1, i, cubicNear(1.0f - t, kA));
    add(low + 2, i, cubicFar(2.0f - t, kA));
  }
  return weights;
}

/// `x` [N, C, S..] resampled along `dim` from `in` to `out` positions.
Value resampleDim(Emitter &emit, Value x, int64_t dim, int64_t out,
                  Resampling mode, float scale, bool alignCorners) {
  RankedTensorType type = tensorType(x);
  int64_t in = type.getDimSize(dim);
  if (mode == Resampling::Nearest || mode == Resampling::NearestExact) {
    // Runs of outputs that read consecutive inputs are one slice; a run
    // that reads one input again and again is its broadcast.
    SmallVector<Value> pieces;
    int64_t i = 0;
    auto source = [&](int64_t k) {
      return nearestSource(k, in, out, scale, mode == Resampling::NearestExact);
    };
    while (i < out) {
      int64_t first = source(i), end = i + 1;
      if (end < out && source(end) == first) {
        while (end < out && source(end) == first)
          ++end;
        SmallVector<int64_t> shape(type.getShape());
        shape[dim] = end - i;
        pieces.push_back(
            emit.broadcastTo(emit.slice(x, dim, first, first + 1, 1), shape));
      } else {
        while (end < out && source(end) == first + (end - i))
          ++end;
        pieces.push_back(emit.slice(x, dim, first, first + (end - i), 1));
      }
      i = end;
    }
    return pieces.size() == 1 ? pieces.front() : emit.concat(pieces, dim);
  }
  Type element = type.getElementType();
  SmallVector<double> weights =
      resamplingWeights(mode, in, out, scale, alignCorners);
  auto matrixType = RankedTensorType::get({in, out}, element);
  SmallVector<Attribute> values;
  for (double w : weights)
    values.push_back(FloatAttr::get(element, w));
  Value matrix = ConstantOp::create(emit.builder, emit.loc,
                                    DenseElementsAttr::get(matrixType, values));
  return moveDim(
      emit, matmulLast(emit, moveDim(emit, x, dim, /*toLast=*/true), matrix),
      dim,
      /*toLast=*/false);
}

/// aten::upsample_*(x, output_size, [align_corners,] scales...) and their
/// `.vec` forms (output_size or scale_factors).
Outputs convertUpsample(GraphImporter &importer, Node *node, Resampling mode,
                        int64_t spatial) {
  llvm::Expected<Value> x = floatTensorInput(importer, node);
  if (!x)
    return x.takeError();
  RankedTensorType type = tensorType(*x);
  if (type.getRank() != spatial + 2)
    return makeError(llvm::formatv(
        "{0}-d interpolation needs an input [N, C, S..] of rank {1}, not {2}",
        spatial, spatial + 2, type.getRank()));
  SmallVector<std::optional<double>> factors(spatial);
  if (const ImportedValue *list = importer.namedInput(node, "scale_factors");
      list && list->kind == ImportedValue::Kind::List) {
    if (static_cast<int64_t>(list->items.size()) != spatial)
      return makeError("interpolation needs one scale factor per spatial dim");
    for (auto [i, item] : llvm::enumerate(list->items))
      factors[i] = item.asDouble();
  }
  StringRef names[3] = {"scales_d", "scales_h", "scales_w"};
  for (int64_t i = 0; i < spatial; ++i) {
    StringRef name =
        spatial == 1 ? StringRef("scales") : names[3 - spatial + i];
    if (const ImportedValue *scale = importer.namedInput(node, name);
        scale && scale->isNumber())
      factors[i] = scale->asDouble();
  }
  SmallVector<int64_t> outSizes;
  const ImportedValue *sizes = importer.namedInput(node, "output_size");
  if (sizes && sizes->kind == ImportedValue::Kind::List) {
    if (static_cast<int64_t>(sizes->items.size()) != spatial)
      return makeError("interpolation needs one output size per spatial dim");
    for (const ImportedValue &item : sizes->items)
      outSizes.push_back(item.intValue);
  } else {
    for (int64_t i = 0; i < spatial; ++i) {
      if (!factors[i])
        return makeError("interpolation needs an output size or scale factors");
      outSizes.push_back(static_cast<int64_t>(
          static_cast<double>(type.getDimSize(2 + i)) * *factors[i]));
    }
  }
  const ImportedValue *align = importer.namedInput(node, "align_corners");
  bool alignCorners =
      align && align->kind == ImportedValue::Kind::Bool && align->intValue;
  Emitter emit(importer);
  Value result = *x;
  for (int64_t i = 0; i < spatial; ++i) {
    int64_t in = type.getDimSize(2 + i), out = outSizes[i];
    if (out < 1)
      return makeError(llvm::formatv(
          "interpolation to {0} positions along spatial dim {1}", out, i));
    if (in == out && (!factors[i] || *factors[i] == 1.0))
      continue;
    bool nearest =
        mode == Resampling::Nearest || mode == Resampling::NearestExact;
    float scale = sourceScale(in, out, factors[i], !nearest && alignCorners);
    result = resampleDim(emit, result, 2 + i, out, mode, scale,
                         !nearest && alignCorners);
  }
  return single(result);
}

} // namespace

void mlir::titan::import::addInterpolateConversions(
    llvm::StringMap<Conversion> &table) {
  auto add = [&](std::string name, Resampling mode, int64_t spatial) {
    table["aten::" + name] = [mode, spatial](GraphImporter &importer,
                                             Node *node) {
      return convertUpsample(importer, node, mode, spatial);
    };
  };
  for (int64_t spatial : {1, 2, 3}) {
    std::string suffix = std::to_string(spatial) + "d";
    add("upsample_nearest" + suffix, Resampling::Nearest, spatial);
    add("_upsample_nearest_exact" + suffix, Resampling::NearestExact, spatial);
  }
  add("upsample_linear1d", Resampling::Linear, 1);
  add("upsample_bilinear2d", Resampling::Linear, 2);
  add("upsample_trilinear3d", Resampling::Linear, 3);
  add("upsample_bicubic2d", Resampling::Cubic, 2);
}
