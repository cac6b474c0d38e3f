//===- AtenPoolingOps.cpp - pooling written with titan ops ----------------===//
//
// aten::avg_pool{1,2,3}d, max_pool{1,2,3}d (with indices too),
// adaptive_avg_pool{1,2,3}d and adaptive_max_pool{1,2,3}d (nn.AvgPool2d,
// F.max_pool1d, nn.AdaptiveAvgPool2d, ...): the input
// between padding (0 for averages, -inf for maxima) along each spatial dim,
// then one strided slice per tap of the window, combined by add or max;
// adaptive windows are averaged one spatial dim at a time; and F.unfold /
// F.fold's sliding blocks (aten::im2col / col2im). Slices, adds and maxima
// are what the training step differentiates.
//
//===----------------------------------------------------------------------===//

#include "AtenSupport.h"

#include "llvm/Support/FormatVariadic.h"

#include <limits>

using namespace mlir;
using namespace mlir::titan;
using namespace mlir::titan::import;

namespace {

/// A pooling window, one entry per spatial dim.
struct PoolWindow {
  SmallVector<int64_t> kernel, stride, padding, dilation;
};

/// Input 0 of `node` batched: [N, C, S..] as it is, [C, S..] with a batch
/// of one (`unbatched` set); `what` names the op in the error.
llvm::Expected<Value> batchedInput(GraphImporter &importer, Node *node,
                                   int64_t spatial, bool &unbatched,
                                   StringRef what = "pooling") {
  llvm::Expected<Value> x = floatTensorInput(importer, node);
  if (!x)
    return x.takeError();
  RankedTensorType type = tensorType(*x);
  unbatched = type.getRank() == spatial + 1;
  if (type.getRank() != spatial + 2 && !unbatched)
    return makeError(llvm::formatv(
        "{0}-d {1} needs an input [N, C, S..] of rank {2} (or {3} "
        "unbatched), not rank {4}",
        spatial, what, spatial + 2, spatial + 1, type.getRank()));
  if (!unbatched)
    return *x;
  Emitter emit(importer);
  return addBatchOfOne(emit, *x);
}

/// `result` without the batch of one batchedInput added.
Value unbatch(Emitter &emit, Value result, bool unbatched) {
  return unbatched ? dropBatchOfOne(emit, result) : result;
}

/// The output sizes of pooling [N, C, S..] by `window`, and the positions
/// past the padding that ceil_mode's last, partial windows reach (`extra`,
/// per spatial dim).
struct PoolShape {
  SmallVector<int64_t> outSizes, extra;
};
llvm::Expected<PoolShape> poolShape(RankedTensorType type,
                                    const PoolWindow &window, bool ceilMode) {
  PoolShape shape;
  for (size_t i = 0; i < window.kernel.size(); ++i) {
    int64_t size = type.getDimSize(2 + i), k = window.kernel[i];
    int64_t s = window.stride[i], p = window.padding[i], d = window.dilation[i];
    int64_t span = d * (k - 1) + 1;
    if (k < 1 || s < 1 || d < 1 || p < 0 || 2 * p > k || size + 2 * p < span)
      return makeError(llvm::formatv(
          "a pooling window of {0} (stride {1}, padding {2}, dilation {3}) "
          "does not fit spatial dim {4} of {5}; the padding may be at most "
          "half the window",
          k, s, p, d, i, size));
    int64_t room = size + 2 * p - span;
    int64_t out = room / s + 1;
    // ceil_mode adds a last window that starts inside the input or its
    // left padding and runs past the right padding (as PyTorch counts).
    if (ceilMode && room % s != 0 && (out * s) < size + p)
      ++out;
    shape.outSizes.push_back(out);
    shape.extra.push_back(
        std::max<int64_t>(0, (out - 1) * s + span - (size + 2 * p)));
  }
  return shape;
}

/// The windows of padded `x` combined: their maxima or sums.
Value combineTaps(Emitter &emit, Value x, const PoolWindow &window,
                  ArrayRef<int64_t> outSizes, bool maximum) {
  int64_t taps = 1;
  for (int64_t k : window.kernel)
    taps *= k;
  Value result;
  for (int64_t t = 0; t < taps; ++t) {
    Value slice = windowTap(emit, x, t, window.kernel, window.dilation,
                            window.stride, outSizes);
    result = !result   ? slice
             : maximum ? emit.binary<MaxOp>(result, slice)
                       : emit.binary<AddOp>(result, slice);
  }
  return result;
}

/// The running maximum of a scan in PyTorch's order: `value` (at
/// positions `at`) replaces `best` where it is larger or NaN, so the first
/// of equal maxima stays, and the last NaN.
void keepLarger(Emitter &emit, Value value, Value at, Value &best,
                Value &bestAt) {
  if (!best) {
    best = value;
    bestAt = at;
    return;
  }
  Value larger = emit.compare("gt", value, best);
  Value update = emit.select(larger, larger, emit.compare("ne", value, value));
  best = emit.select(update, value, best);
  bestAt = emit.select(update, at, bestAt);
}

/// The positions in the input's spatial dims (row-major, as
/// max_pool's indices count them) that tap `t` of `window` reads for every
/// output position, broadcast to `shape` ([N, C, O..]): int64.
Value tapPositions(Emitter &emit, const PoolWindow &window, int64_t t,
                   ArrayRef<int64_t> inSizes, ArrayRef<int64_t> shape) {
  int64_t spatial = window.kernel.size();
  SmallVector<int64_t> grid{1, 1};
  grid.append(shape.begin() + 2, shape.end());
  auto i64 = RankedTensorType::get(grid, emit.builder.getI64Type());
  Value flat = emit.splat(i64, 0.0);
  int64_t elementStride = 1;
  for (int64_t i = spatial - 1; i >= 0; --i) {
    int64_t k = t % window.kernel[i];
    t /= window.kernel[i];
    Value coordinate = emit.binary<AddOp>(
        emit.binary<MulOp>(
            emit.iota(i64, 2 + i),
            emit.splat(i64, static_cast<double>(window.stride[i]))),
        emit.splat(i64, static_cast<double>(k * window.dilation[i] -
                                            window.padding[i])));
    flat = emit.binary<AddOp>(
        flat,
        emit.binary<MulOp>(
            coordinate, emit.splat(i64, static_cast<double>(elementStride))));
    elementStride *= inSizes[i];
  }
  return emit.broadcastTo(flat, shape);
}

/// aten::avg_pool{1,2,3}d(x, kernel_size, stride, padding, ceil_mode,
/// count_include_pad, divisor_override) and max_pool{1,2,3}d(x,
/// kernel_size, stride, padding, dilation, ceil_mode).
Outputs convertPool(GraphImporter &importer, Node *node, int64_t spatial,
                    bool maximum, bool withIndices) {
  bool unbatched = false;
  llvm::Expected<Value> x = batchedInput(importer, node, spatial, unbatched);
  if (!x)
    return x.takeError();
  PoolWindow window;
  llvm::Expected<SmallVector<int64_t>> kernel =
      perSpatialDim(importer, node, "kernel_size", spatial, {}, "pooling's");
  if (!kernel)
    return kernel.takeError();
  if (static_cast<int64_t>(kernel->size()) != spatial)
    return makeError("pooling needs a kernel_size");
  window.kernel = *kernel;
  for (auto [name, field, fallback] :
       {std::tuple{"stride", &window.stride, window.kernel},
        std::tuple{"padding", &window.padding,
                   SmallVector<int64_t>(spatial, 0)},
        std::tuple{"dilation", &window.dilation,
                   SmallVector<int64_t>(spatial, 1)}}) {
    llvm::Expected<SmallVector<int64_t>> values =
        perSpatialDim(importer, node, name, spatial, fallback, "pooling's");
    if (!values)
      return values.takeError();
    *field = std::move(*values);
  }
  const ImportedValue *ceil = importer.namedInput(node, "ceil_mode");
  bool ceilMode = ceil && ceil->intValue;
  Emitter emit(importer);
  llvm::Expected<PoolShape> shape = poolShape(tensorType(*x), window, ceilMode);
  if (!shape)
    return shape.takeError();
  // The padding, and past it the positions ceil_mode's windows reach.
  SmallVector<int64_t> high(window.padding);
  for (auto [h, e] : llvm::zip_equal(high, shape->extra))
    h += e;
  if (withIndices) {
    // The scan over the taps in PyTorch's order: the values where each
    // maximum is found (their gradient goes to that position alone) and
    // those positions.
    Value padded = padSpatial(emit, *x, window.padding, high,
                              -std::numeric_limits<double>::infinity());
    SmallVector<int64_t> inSizes(tensorType(*x).getShape().drop_front(2));
    int64_t taps = 1;
    for (int64_t k : window.kernel)
      taps *= k;
    Value best, bestAt;
    for (int64_t t = 0; t < taps; ++t) {
      Value value = windowTap(emit, padded, t, window.kernel, window.dilation,
                              window.stride, shape->outSizes);
      keepLarger(
          emit, value,
          tapPositions(emit, window, t, inSizes, tensorType(value).getShape()),
          best, bestAt);
    }
    return std::vector<ImportedValue>{
        ImportedValue::ofTensor(unbatch(emit, best, unbatched)),
        ImportedValue::ofTensor(unbatch(emit, bestAt, unbatched))};
  }
  if (maximum)
    return single(unbatch(
        emit,
        combineTaps(emit,
                    padSpatial(emit, *x, window.padding, high,
                               -std::numeric_limits<double>::infinity()),
                    window, shape->outSizes, /*maximum=*/true),
        unbatched));
  Value sum = combineTaps(emit, padSpatial(emit, *x, window.padding, high, 0.0),
                          window, shape->outSizes, /*maximum=*/false);
  // The average: the sum over the divisor given, or over the count of the
  // window's positions in the input and (count_include_pad, the default)
  // its padding, not past it (a ceil_mode window's); the window's size
  // where every window is whole.
  Value average;
  const ImportedValue *divisor = importer.namedInput(node, "divisor_override");
  const ImportedValue *includePadInput =
      importer.namedInput(node, "count_include_pad");
  bool includePad = !includePadInput || includePadInput->isNone() ||
                    includePadInput->intValue;
  bool whole = llvm::all_of(shape->extra, [](int64_t e) { return e == 0; }) &&
               (includePad ||
                llvm::all_of(window.padding, [](int64_t p) { return p == 0; }));
  if (divisor && divisor->isNumber()) {
    if (divisor->intValue == 0)
      return makeError("avg_pool's divisor_override must not be 0");
    average = emit.scale(sum, 1.0 / divisor->asDouble());
  } else if (whole) {
    int64_t size = 1;
    for (int64_t k : window.kernel)
      size *= k;
    average = emit.scale(sum, 1.0 / static_cast<double>(size));
  } else {
    Value inPadding = padSpatial(emit, emit.splatLike(*x, 1.0), window.padding,
                                 window.padding, includePad ? 1.0 : 0.0);
    SmallVector<int64_t> none(window.padding.size(), 0);
    Value counts =
        combineTaps(emit, padSpatial(emit, inPadding, none, shape->extra, 0.0),
                    window, shape->outSizes, /*maximum=*/false);
    average = emit.binary<DivOp>(sum, counts);
  }
  return single(unbatch(emit, average, unbatched));
}

/// aten::adaptive_avg_pool{1,2,3}d(x, output_size): output position i of a
/// dim of n averages input positions floor(i n / o) to ceil((i + 1) n / o)
/// (exclusive); one dim at a time (the average over a box is the average
/// of averages over its rows).
Outputs convertAdaptiveAvgPool(GraphImporter &importer, Node *node,
                               int64_t spatial) {
  bool unbatched = false;
  llvm::Expected<Value> x = batchedInput(importer, node, spatial, unbatched);
  if (!x)
    return x.takeError();
  SmallVector<int64_t> inSizes(tensorType(*x).getShape().drop_front(2));
  llvm::Expected<SmallVector<int64_t>> outSizes = perSpatialDim(
      importer, node, "output_size", spatial, inSizes, "adaptive_avg_pool's");
  if (!outSizes)
    return outSizes.takeError();
  Emitter emit(importer);
  Value result = *x;
  for (int64_t i = 0; i < spatial; ++i) {
    int64_t n = inSizes[i], o = (*outSizes)[i], dim = 2 + i;
    if (o < 1)
      return makeError(llvm::formatv(
          "adaptive_avg_pool's output size must be positive, not {0}", o));
    if (o == n)
      continue;
    if (n % o == 0) {
      // Windows of n / o that tile the dim: a reshape and a sum.
      SmallVector<int64_t> split(tensorType(result).getShape());
      split[dim] = o;
      split.insert(split.begin() + dim + 1, n / o);
      Value sum = emit.reduceSum(emit.reshape(result, split), {dim + 1}, false);
      result = emit.scale(sum, static_cast<double>(o) / n);
      continue;
    }
    SmallVector<Value> windows;
    for (int64_t j = 0; j < o; ++j) {
      int64_t start = j * n / o, end = ((j + 1) * n + o - 1) / o;
      windows.push_back(emit.scale(
          emit.reduceSum(emit.slice(result, dim, start, end, 1), {dim}, true),
          1.0 / static_cast<double>(end - start)));
    }
    result = emit.concat(windows, dim);
  }
  return single(unbatch(emit, result, unbatched));
}

/// aten::adaptive_max_pool{1,2,3}d(x, output_size): the maximum of each
/// adaptive window (positions floor(i n / o) to ceil((i + 1) n / o)) and
/// its position in the input's spatial dims, one dim at a time from the
/// last (the first maximum in row-major order is the first row's that
/// holds it, at its first position), each window scanned as max_pool's.
Outputs convertAdaptiveMaxPool(GraphImporter &importer, Node *node,
                               int64_t spatial) {
  bool unbatched = false;
  llvm::Expected<Value> x = batchedInput(importer, node, spatial, unbatched);
  if (!x)
    return x.takeError();
  RankedTensorType type = tensorType(*x);
  SmallVector<int64_t> inSizes(type.getShape().drop_front(2));
  llvm::Expected<SmallVector<int64_t>> outSizes = perSpatialDim(
      importer, node, "output_size", spatial, inSizes, "adaptive_max_pool's");
  if (!outSizes)
    return outSizes.takeError();
  Emitter emit(importer);
  // Every element's position in the spatial dims, row-major.
  PoolWindow identity;
  identity.kernel.assign(spatial, 1);
  identity.stride.assign(spatial, 1);
  identity.padding.assign(spatial, 0);
  identity.dilation.assign(spatial, 1);
  Value values = *x;
  Value positions = tapPositions(emit, identity, 0, inSizes, type.getShape());
  for (int64_t i = spatial - 1; i >= 0; --i) {
    int64_t n = inSizes[i], o = (*outSizes)[i], dim = 2 + i;
    if (o < 1)
      return makeError(llvm::formatv(
          "adaptive_max_pool's output size must be positive, not {0}", o));
    SmallVector<Value> windowValues, windowPositions;
    for (int64_t j = 0; j < o; ++j) {
      int64_t start = j * n / o, end = ((j + 1) * n + o - 1) / o;
      Value best, bestAt;
      for (int64_t p = start; p < end; ++p)
        keepLarger(emit, emit.slice(values, dim, p, p + 1, 1),
                   emit.slice(positions, dim, p, p + 1, 1), best, bestAt);
      windowValues.push_back(best);
      windowPositions.push_back(bestAt);
    }
    values = emit.concat(windowValues, dim);
    positions = emit.concat(windowPositions, dim);
  }
  return std::vector<ImportedValue>{
      ImportedValue::ofTensor(unbatch(emit, values, unbatched)),
      ImportedValue::ofTensor(unbatch(emit, positions, unbatched))};
}

/// The sliding blocks of F.unfold (aten::im2col) and F.fold (col2im) over
/// two spatial dims.
struct BlockWindow {
  SmallVector<int64_t> kernel, dilation, padding, stride;
};

/// kernel_size, dilation, padding and stride of `op` (F.unfold / F.fold),
/// inputs `first` to `first + 3` of `node`, two values each.
llvm::Expected<BlockWindow> blockWindow(GraphImporter &importer, Node *node,
                                        size_t first, StringRef op) {
  BlockWindow window;
  SmallVector<int64_t> *fields[] = {&window.kernel, &window.dilation,
                                    &window.padding, &window.stride};
  for (auto [i, field] : llvm::enumerate(fields)) {
    llvm::Expected<std::vector<int64_t>> values =
        importer.intListInput(node, first + i);
    if (!values)
      return values.takeError();
    if (values->size() != 2)
      return makeError(llvm::formatv(
          "{0} needs two values (height, width) per window parameter", op));
    field->assign(values->begin(), values->end());
  }
  for (int64_t i : {0, 1})
    if (window.kernel[i] < 1 || window.dilation[i] < 1 ||
        window.stride[i] < 1 || window.padding[i] < 0)
      return makeError(llvm::formatv(
          "{0}'s kernel_size, dilation and stride must be positive and its "
          "padding non-negative",
          op));
  return window;
}

/// How many blocks of `window` fit spatial dim `i` of `size`.
llvm::Expected<int64_t> blocksAlong(const BlockWindow &window, int64_t i,
                                    int64_t size, StringRef op) {
  int64_t span = window.dilation[i] * (window.kernel[i] - 1) + 1;
  int64_t room = size + 2 * window.padding[i] - span;
  if (room < 0)
    return makeError(llvm::formatv(
        "{0}'s window of {1} (dilation {2}) is longer than spatial dim {3} "
        "of {4} with padding {5}",
        op, window.kernel[i], window.dilation[i], i, size, window.padding[i]));
  return room / window.stride[i] + 1;
}

/// aten::im2col(x [N, C, H, W], kernel_size, dilation, padding, stride)
/// (F.unfold, nn.Unfold): every block of x's padded planes as a column,
/// [N, C kh kw, L], channel-major as PyTorch orders them; a strided slice
/// per tap of the window.
Outputs convertIm2col(GraphImporter &importer, Node *node) {
  bool unbatched = false;
  llvm::Expected<Value> x =
      batchedInput(importer, node, 2, unbatched, "unfold");
  if (!x)
    return x.takeError();
  llvm::Expected<BlockWindow> window = blockWindow(importer, node, 1, "unfold");
  if (!window)
    return window.takeError();
  ArrayRef<int64_t> shape = tensorType(*x).getShape();
  SmallVector<int64_t> outSizes;
  for (int64_t i : {0, 1}) {
    llvm::Expected<int64_t> blocks =
        blocksAlong(*window, i, shape[2 + i], "unfold");
    if (!blocks)
      return blocks.takeError();
    outSizes.push_back(*blocks);
  }
  Emitter emit(importer);
  Value padded =
      padSpatial(emit, *x, window->padding, window->padding, /*fill=*/0.0);
  int64_t batch = shape[0], channels = shape[1];
  int64_t taps = window->kernel[0] * window->kernel[1];
  int64_t blocks = outSizes[0] * outSizes[1];
  SmallVector<Value> columns;
  for (int64_t t = 0; t < taps; ++t)
    columns.push_back(
        emit.reshape(windowTap(emit, padded, t, window->kernel,
                               window->dilation, window->stride, outSizes),
                     {batch, channels, 1, blocks}));
  Value result =
      emit.reshape(emit.concat(columns, 2), {batch, channels * taps, blocks});
  return single(unbatch(emit, result, unbatched));
}

/// aten::col2im(columns [N, C kh kw, L], output_size, kernel_size,
/// dilation, padding, stride) (F.fold, nn.Fold): im2col's transpose, each
/// column's values added back where their block lies in the output's
/// padded planes (overlapping blocks sum); per tap, the values spread to
/// the stride and placed at the tap's offset.
Outputs convertCol2im(GraphImporter &importer, Node *node) {
  llvm::Expected<Value> input = floatTensorInput(importer, node);
  llvm::Expected<std::vector<int64_t>> outputSize =
      importer.intListInput(node, 1);
  if (llvm::Error error =
          requireAll("fold needs a float tensor and a constant output_size",
                     input, outputSize))
    return std::move(error);
  if (outputSize->size() != 2)
    return makeError("fold needs an output_size of two dims (height, width)");
  llvm::Expected<BlockWindow> window = blockWindow(importer, node, 2, "fold");
  if (!window)
    return window.takeError();
  Emitter emit(importer);
  Value columns = *input;
  bool unbatched = tensorType(columns).getRank() == 2;
  if (unbatched)
    columns = addBatchOfOne(emit, columns);
  RankedTensorType type = tensorType(columns);
  if (type.getRank() != 3)
    return makeError(llvm::formatv(
        "fold needs columns [N, C kh kw, L] (or unbatched [C kh kw, L]), not "
        "rank {0}",
        tensorType(*input).getRank()));
  SmallVector<int64_t> outSizes;
  for (int64_t i : {0, 1}) {
    llvm::Expected<int64_t> blocks =
        blocksAlong(*window, i, (*outputSize)[i], "fold");
    if (!blocks)
      return blocks.takeError();
    outSizes.push_back(*blocks);
  }
  int64_t taps = window->kernel[0] * window->kernel[1];
  int64_t batch = type.getDimSize(0);
  if (type.getDimSize(1) % taps != 0 ||
      type.getDimSize(2) != outSizes[0] * outSizes[1])
    return makeError(llvm::formatv(
        "fold of columns [{0}, {1}, {2}] into {3} x {4} with a {5} x {6} "
        "window needs a multiple of {7} channels and {8} blocks",
        batch, type.getDimSize(1), type.getDimSize(2), (*outputSize)[0],
        (*outputSize)[1], window->kernel[0], window->kernel[1], taps,
        outSizes[0] * outSizes[1]));
  int64_t channels = type.getDimSize(1) / taps;
  Value perTap =
      emit.reshape(columns, {batch, channels, taps, outSizes[0], outSizes[1]});
  Value sum;
  for (int64_t t = 0; t < taps; ++t) {
    Value tap = emit.reshape(emit.slice(perTap, 2, t, t + 1, 1),
                             {batch, channels, outSizes[0], outSizes[1]});
    SmallVector<int64_t> low(2), high(2);
    for (int64_t i : {1, 0}) {
      int64_t k = i == 1 ? t % window->kernel[1] : t / window->kernel[1];
      tap = spreadAlong(emit, tap, 2 + i, window->stride[i]);
      int64_t padded = (*outputSize)[i] + 2 * window->padding[i];
      low[i] = k * window->dilation[i];
      high[i] = padded - low[i] - tensorType(tap).getDimSize(2 + i);
    }
    tap = padSpatial(emit, tap, low, high, /*fill=*/0.0);
    sum = sum ? emit.binary<AddOp>(sum, tap) : tap;
  }
  for (int64_t i : {0, 1})
    sum = emit.slice(sum, 2 + i, window->padding[i],
                     window->padding[i] + (*outputSize)[i], 1);
  return single(unbatched ? dropBatchOfOne(emit, sum) : sum);
}

} // namespace

void mlir::titan::import::addPoolingConversions(
    llvm::StringMap<Conversion> &table) {
  table["aten::im2col"] = convertIm2col;
  table["aten::col2im"] = convertCol2im;
  for (int64_t spatial : {1, 2, 3}) {
    std::string suffix = std::to_string(spatial) + "d";
    table["aten::avg_pool" + suffix] = [spatial](GraphImporter &importer,
                                                 Node *node) {
      return convertPool(importer, node, spatial, /*maximum=*/false,
                         /*withIndices=*/false);
    };
    table["aten::max_pool" + suffix] = [spatial](GraphImporter &importer,
                                                 Node *node) {
      return convertPool(importer, node, spatial, /*maximum=*/true,
                         /*withIndices=*/false);
    };
    table["aten::max_pool" + suffix + "_with_indices"] =
        [spatial](GraphImporter &importer, Node *node) {
          return convertPool(importer, node, spatial, /*maximum=*/true,
                             /*withIndices=*/true);
        };
    table["aten::adaptive_max_pool" + suffix] =
        [spatial](GraphImporter &importer, Node *node) {
          return convertAdaptiveMaxPool(importer, node, spatial);
        };
    table["aten::adaptive_avg_pool" + suffix] =
        [spatial](GraphImporter &importer, Node *node) {
          return convertAdaptiveAvgPool(importer, node, spatial);
        };
  }
}
