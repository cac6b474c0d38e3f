//===- AtenGridSampleOps.cpp - sampling an image at given points ----------===//
//
// aten::grid_sampler / grid_sampler_2d (F.grid_sample of a 4-d input:
// spatial transformers, deformable attention, optical-flow warps): the
// value of each input plane at the points a grid gives in [-1, 1],
// bilinear or nearest, with PyTorch's padding modes (zeros, border,
// reflection) and align_corners. The points are turned into positions of
// the plane, each corner read by a gather along the flattened plane
// (gatherAlong; differentiable in the input, a scatter-add) and weighted
// by the distances to the point (differentiable in the grid); and
// aten::affine_grid_generator (F.affine_grid), the grid of an affine map.
//
//===----------------------------------------------------------------------===//

#include "AtenSupport.h"

#include "llvm/Support/FormatVariadic.h"

using namespace mlir;
using namespace mlir::titan;
using namespace mlir::titan::import;

namespace {

/// PyTorch's GridSamplerInterpolation and GridSamplerPadding.
enum class Interpolation { Bilinear = 0, Nearest = 1, Bicubic = 2 };
enum class Padding { Zeros = 0, Border = 1, Reflection = 2 };

/// x clipped to [0, size - 1].
Value clipToPlane(Emitter &emit, Value x, int64_t size) {
  return emit.min(emit.binary<MaxOp>(x, emit.splatLike(x, 0.0)),
                  emit.splatLike(x, static_cast<double>(size - 1)));
}

/// x reflected into [low, high] (PyTorch's reflect_coordinates with
/// twice_low = 2 low, twice_high = 2 high): by |x - low| modulo the span,
/// mirrored on odd flips.
Value reflect(Emitter &emit, Value x, double low, double high) {
  if (low == high)
    return emit.splatLike(x, 0.0);
  double span = high - low;
  Value distance =
      absolute(emit, emit.binary<SubOp>(x, emit.splatLike(x, low)));
  Value flips = floorOf(emit, emit.scale(distance, 1.0 / span));
  Value extra =
      emit.binary<SubOp>(distance, emit.scale(flips, span)); // fmod, >= 0
  return emit.select(isEven(emit, flips),
                     emit.binary<AddOp>(extra, emit.splatLike(x, low)),
                     emit.binary<SubOp>(emit.splatLike(x, span + low), extra));
}

/// The position along a plane dim of `size` that normalized coordinates
/// `x` in [-1, 1] give (PyTorch's grid_sampler_compute_source_index).
Value sourcePosition(Emitter &emit, Value x, int64_t size, Padding padding,
                     bool alignCorners) {
  double n = static_cast<double>(size);
  // align_corners: -1 and 1 are the centres of the corner pixels; else
  // their outer edges.
  Value position =
      alignCorners
          ? emit.scale(emit.binary<AddOp>(x, emit.splatLike(x, 1.0)),
                       (n - 1) / 2)
          : emit.binary<SubOp>(
                emit.scale(emit.binary<AddOp>(x, emit.splatLike(x, 1.0)),
                           n / 2),
                emit.splatLike(x, 0.5));
  switch (padding) {
  case Padding::Zeros:
    return position;
  case Padding::Border:
    return clipToPlane(emit, position, size);
  case Padding::Reflection:
    position = alignCorners ? reflect(emit, position, 0, n - 1)
                            : reflect(emit, position, -0.5, n - 0.5);
    return clipToPlane(emit, position, size);
  }
  llvm_unreachable("unknown padding");
}

/// aten::grid_sampler(input [N, C, H, W], grid [N, Ho, Wo, 2],
/// interpolation_mode, padding_mode, align_corners) -> [N, C, Ho, Wo].
Outputs convertGridSampler(GraphImporter &importer, Node *node) {
  llvm::Expected<Value> input = importer.tensorInput(node, 0);
  llvm::Expected<Value> grid = importer.tensorInput(node, 1);
  llvm::Expected<int64_t> mode = importer.intInput(node, 2);
  llvm::Expected<int64_t> paddingMode = importer.intInput(node, 3);
  if (llvm::Error error =
          requireAll("grid_sample needs an input, a grid and integer "
                     "interpolation and padding modes",
                     input, grid, mode, paddingMode))
    return std::move(error);
  RankedTensorType inputType = tensorType(*input), gridType = tensorType(*grid);
  if (!isa<FloatType>(inputType.getElementType()) ||
      inputType.getElementType() != gridType.getElementType())
    return makeError("grid_sample needs a float input and a grid of its type");
  if (inputType.getRank() != 4)
    return makeError(llvm::formatv(
        "grid_sample of a {0}-d input: titan samples 4-d inputs [N, C, H, W] "
        "(not volumes)",
        inputType.getRank()));
  ArrayRef<int64_t> shape = inputType.getShape();
  int64_t batch = shape[0], channels = shape[1], height = shape[2],
          width = shape[3];
  if (gridType.getRank() != 4 || gridType.getDimSize(0) != batch ||
      gridType.getDimSize(3) != 2)
    return makeError(llvm::formatv(
        "grid_sample of an input [{0}, {1}, {2}, {3}] needs a grid [{0}, "
        "H_out, W_out, 2]",
        batch, channels, height, width));
  if (*mode == static_cast<int64_t>(Interpolation::Bicubic))
    return makeError("grid_sample's mode 'bicubic' is not supported; use "
                     "'bilinear' or 'nearest'");
  if (*mode != static_cast<int64_t>(Interpolation::Bilinear) &&
      *mode != static_cast<int64_t>(Interpolation::Nearest))
    return makeError(llvm::formatv(
        "grid_sample's interpolation mode {0} is unknown", *mode));
  if (*paddingMode < 0 || *paddingMode > 2)
    return makeError(llvm::formatv("grid_sample's padding mode {0} is unknown",
                                   *paddingMode));
  auto padding = static_cast<Padding>(*paddingMode);
  bool alignCorners = flagOr(importer, node, "align_corners", false);

  Emitter emit(importer);
  int64_t rows = gridType.getDimSize(1), columns = gridType.getDimSize(2);
  int64_t points = rows * columns;
  Value flatGrid = emit.reshape(*grid, {batch, points, 2});
  Value x = emit.reshape(emit.slice(flatGrid, 2, 0, 1, 1), {batch, 1, points});
  Value y = emit.reshape(emit.slice(flatGrid, 2, 1, 2, 1), {batch, 1, points});
  Value ix = sourcePosition(emit, x, width, padding, alignCorners);
  Value iy = sourcePosition(emit, y, height, padding, alignCorners);
  Value plane = emit.reshape(*input, {batch, channels, height * width});
  auto i64 = emit.builder.getI64Type();
  // The plane's value at whole positions (cx, cy) [N, 1, P], 0 where they
  // lie outside it.
  auto read = [&](Value cx, Value cy) -> llvm::Expected<Value> {
    Value inside =
        both(emit,
             both(emit, emit.compare("ge", cx, emit.splatLike(cx, 0.0)),
                  emit.compare("le", cx, emit.splatLike(cx, width - 1.0))),
             both(emit, emit.compare("ge", cy, emit.splatLike(cy, 0.0)),
                  emit.compare("le", cy, emit.splatLike(cy, height - 1.0))));
    Value linear = emit.binary<AddOp>(
        emit.scale(clipToPlane(emit, cy, height), static_cast<double>(width)),
        clipToPlane(emit, cx, width));
    Value index =
        emit.broadcastTo(emit.cast(linear, i64), {batch, channels, points});
    Outputs values = gatherAlong(importer, plane, 2, index);
    if (!values)
      return values.takeError();
    Value value = values->front().tensor;
    return emit.select(emit.broadcastTo(inside, {batch, channels, points}),
                       value, emit.splatLike(value, 0.0));
  };
  Value sampled;
  if (*mode == static_cast<int64_t>(Interpolation::Nearest)) {
    // Half to even, as PyTorch's nearbyint.
    llvm::Expected<Value> value =
        read(roundHalfEven(emit, ix), roundHalfEven(emit, iy));
    if (!value)
      return value.takeError();
    sampled = *value;
  } else {
    // The four corners around (ix, iy), each weighted by the area of the
    // rectangle between the point and the opposite corner.
    Value west = floorOf(emit, ix), north = floorOf(emit, iy);
    Value east = emit.binary<AddOp>(west, emit.splatLike(west, 1.0));
    Value south = emit.binary<AddOp>(north, emit.splatLike(north, 1.0));
    Value toEast = emit.binary<SubOp>(east, ix),
          fromWest = emit.binary<SubOp>(ix, west);
    Value toSouth = emit.binary<SubOp>(south, iy),
          fromNorth = emit.binary<SubOp>(iy, north);
    struct Corner {
      Value cx, cy, weight;
    };
    Corner corners[] = {
        {west, north, emit.binary<MulOp>(toEast, toSouth)},
        {east, north, emit.binary<MulOp>(fromWest, toSouth)},
        {west, south, emit.binary<MulOp>(toEast, fromNorth)},
        {east, south, emit.binary<MulOp>(fromWest, fromNorth)},
    };
    for (const Corner &corner : corners) {
      llvm::Expected<Value> value = read(corner.cx, corner.cy);
      if (!value)
        return value.takeError();
      Value weighted = emit.binary<MulOp>(
          *value, emit.broadcastTo(corner.weight, {batch, channels, points}));
      sampled = sampled ? emit.binary<AddOp>(sampled, weighted) : weighted;
    }
  }
  return single(emit.reshape(sampled, {batch, channels, rows, columns}));
}

/// aten::affine_grid_generator(theta [N, S, S + 1], size [N, C, D.., ],
/// align_corners) (F.affine_grid, a spatial transformer's sampling grid for
/// grid_sample): each output position's normalized coordinates (x first,
/// then y (, z), and 1; in [-1, 1] at the corners' centres with
/// align_corners, else at the pixels' centres), a constant [P, S + 1],
/// times theta: [N, D.., S].
Outputs convertAffineGrid(GraphImporter &importer, Node *node) {
  llvm::Expected<Value> theta = floatTensorInput(importer, node);
  llvm::Expected<std::vector<int64_t>> size = importer.intListInput(node, 1);
  if (llvm::Error error = requireAll(
          "affine_grid needs theta and a constant size", theta, size))
    return std::move(error);
  int64_t spatial = static_cast<int64_t>(size->size()) - 2;
  RankedTensorType type = tensorType(*theta);
  if ((spatial != 2 && spatial != 3) || type.getRank() != 3 ||
      type.getDimSize(0) != (*size)[0] || type.getDimSize(1) != spatial ||
      type.getDimSize(2) != spatial + 1)
    return makeError(llvm::formatv(
        "affine_grid expects a size [N, C, H, W] with theta [N, 2, 3] or "
        "[N, C, D, H, W] with theta [N, 3, 4]; got size of {0} dims and "
        "theta '{1}'",
        size->size(), type));
  bool alignCorners = flagOr(importer, node, "align_corners", false);
  // The coordinates along a dim of `steps` positions.
  auto along = [&](int64_t steps) {
    std::vector<double> points;
    for (int64_t i = 0; i < steps; ++i) {
      if (steps == 1)
        points.push_back(0.0);
      else if (alignCorners)
        points.push_back(-1.0 + 2.0 * i / (steps - 1));
      else
        points.push_back((2.0 * i + 1) / steps - 1.0);
    }
    return points;
  };
  ArrayRef<int64_t> dims = ArrayRef<int64_t>(*size).drop_front(2);
  int64_t positions = ShapedType::getNumElements(dims);
  std::vector<double> base;
  SmallVector<int64_t> at(spatial, 0);
  SmallVector<std::vector<double>> coordinates;
  for (int64_t d : dims)
    coordinates.push_back(along(d));
  for (int64_t p = 0; p < positions; ++p) {
    int64_t rest = p;
    for (int64_t d = spatial - 1; d >= 0; --d) {
      at[d] = rest % dims[d];
      rest /= dims[d];
    }
    // x (the last dim) first.
    for (int64_t d = spatial - 1; d >= 0; --d)
      base.push_back(coordinates[d][at[d]]);
    base.push_back(1.0);
  }
  Emitter emit(importer);
  Type element = type.getElementType();
  int64_t n = type.getDimSize(0), k = spatial + 1;
  auto gridType = RankedTensorType::get({positions, k}, element);
  SmallVector<Attribute> values;
  for (double v : base)
    values.push_back(FloatAttr::get(element, v));
  Value grid = ConstantOp::create(emit.builder, emit.loc, gridType,
                                  DenseElementsAttr::get(gridType, values));
  // out[n, p, s] = sum_k base[p, k] theta[n, s, k].
  Value products = emit.binary<MulOp>(
      emit.broadcastTo(emit.reshape(grid, {1, positions, 1, k}),
                       {n, positions, spatial, k}),
      emit.broadcastTo(emit.reshape(*theta, {n, 1, spatial, k}),
                       {n, positions, spatial, k}));
  SmallVector<int64_t> shape{n};
  shape.append(dims.begin(), dims.end());
  shape.push_back(spatial);
  return single(emit.reshape(emit.reduceSum(products, {3}, false), shape));
}

} // namespace

void mlir::titan::import::addGridSampleConversions(
    llvm::StringMap<Conversion> &table) {
  table["aten::grid_sampler"] = convertGridSampler;
  table["aten::grid_sampler_2d"] = convertGridSampler;
  table["aten::affine_grid_generator"] = convertAffineGrid;
}
