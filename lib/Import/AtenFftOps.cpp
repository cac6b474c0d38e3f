//===- AtenFftOps.cpp - discrete Fourier transforms as matmuls ------------===//
//
// aten::fft_fft, fft_ifft, fft_rfft, fft_irfft and fft_fftn / fft_fft2
// (torch.fft; Hyena's and FNet's token mixing), and aten::complex of two
// parts: the transform along a dim of n positions as a matmul by the n x m
// matrices cos(2 pi t k / n) and sin(2 pi t k / n), which the program
// computes from iotas (t k mod n in int64, the angle in f64). A complex
// tensor is the (real, imag) pair the importer carries. torch.stft frames
// the signal with strided slices and transforms the windowed frames;
// torch.istft inverts each frame and overlap-adds them. The cost
// is a GEMM of n x m per row (PyTorch's FFT is n log n), and the gradients are
// the matmuls' own.
//
//===----------------------------------------------------------------------===//

#include "AtenSupport.h"

#include "llvm/Support/FormatVariadic.h"

#include <cmath>
#include <numeric>
#include <tuple>

using namespace mlir;
using namespace mlir::titan;
using namespace mlir::titan::import;

namespace {

/// The longest transform titan writes as a matmul (its matrices hold n x m
/// elements each).
constexpr int64_t kMaxTransformLength = 16384;

/// cos and sin of 2 pi t k / n for t < rows, k < columns, in `element`.
std::pair<Value, Value> twiddles(Emitter &emit, int64_t rows, int64_t columns,
                                 int64_t n, Type element) {
  auto i64 = RankedTensorType::get({rows, columns}, emit.builder.getI64Type());
  Value product = emit.binary<MulOp>(emit.iota(i64, 0), emit.iota(i64, 1));
  Value turns = RemainderOp::create(emit.builder, emit.loc, i64, product,
                                    emit.splat(i64, static_cast<double>(n)),
                                    /*truncate=*/false);
  Value angle = emit.scale(emit.cast(turns, emit.f64()), 2 * M_PI / n);
  return {emit.cast(emit.unary<CosOp>(angle), element),
          emit.cast(emit.unary<SinOp>(angle), element)};
}

/// `x` along its last dim cut or padded with zeros to `size`.
Value resized(Emitter &emit, Value x, int64_t size) {
  int64_t last = tensorType(x).getRank() - 1;
  if (tensorType(x).getDimSize(last) > size)
    return emit.slice(x, last, 0, size, 1);
  return emit.padTo(x, last, size);
}

/// The transforms and their direction.
enum class Transform { Fft, Ifft, Rfft, Irfft };

/// The scale of `norm` ("backward", "ortho", "forward") for a transform of
/// n in the `inverse` direction.
llvm::Expected<double> normScale(const ImportedValue *norm, int64_t n,
                                 bool inverse) {
  std::string mode = norm && norm->kind == ImportedValue::Kind::String
                         ? norm->text
                         : "backward";
  if (mode == "backward")
    return inverse ? 1.0 / n : 1.0;
  if (mode == "forward")
    return inverse ? 1.0 : 1.0 / n;
  if (mode == "ortho")
    return 1.0 / std::sqrt(static_cast<double>(n));
  return makeError("norm '" + mode +
                   "' is not one of 'backward', 'forward' and 'ortho'");
}

/// One transform of `input` (real or complex) along `dim` with n points.
llvm::Expected<ImportedValue>
transform(Emitter &emit, const ImportedValue &input, int64_t dim,
          std::optional<int64_t> n, const ImportedValue *norm, Transform kind) {
  Value re = input.tensor;
  Value im = input.isComplex() ? input.imag : Value();
  if (!isa<FloatType>(tensorType(re).getElementType())) {
    re = emit.cast(re, Float32Type::get(&emit.context));
  }
  Type element = tensorType(re).getElementType();
  int64_t rank = tensorType(re).getRank();
  if (rank == 0)
    return makeError("a Fourier transform of a 0-d tensor");
  if (dim < 0)
    dim += rank;
  if (dim < 0 || dim >= rank)
    return makeError(llvm::formatv(
        "dimension {0} is out of range for a rank-{1} tensor", dim, rank));
  int64_t have = tensorType(re).getDimSize(dim);
  // irfft's default length is 2 (m - 1) of its m frequencies.
  int64_t points = n ? *n : kind == Transform::Irfft ? 2 * (have - 1) : have;
  if (points < 1 || points > kMaxTransformLength)
    return makeError(llvm::formatv(
        "a Fourier transform of {0} points: titan writes transforms of 1 to "
        "{1} points as matmuls",
        points, kMaxTransformLength));
  bool inverse = kind == Transform::Ifft || kind == Transform::Irfft;
  llvm::Expected<double> scale = normScale(norm, points, inverse);
  if (!scale)
    return scale.takeError();
  re = moveDim(emit, re, dim, /*toLast=*/true);
  if (im)
    im = moveDim(emit, im, dim, /*toLast=*/true);
  int64_t half = points / 2 + 1;
  Value outRe, outIm;
  switch (kind) {
  case Transform::Rfft:
  case Transform::Fft:
  case Transform::Ifft: {
    int64_t outputs = kind == Transform::Rfft ? half : points;
    auto [cos, sin] = twiddles(emit, points, outputs, points, element);
    re = resized(emit, re, points);
    // X = (a + ib)(cos -+ i sin): the forward transform's exponent is
    // negative, the inverse's positive.
    double sign = inverse ? 1.0 : -1.0;
    outRe = matmulLast(emit, re, cos);
    outIm = emit.scale(matmulLast(emit, re, sin), sign);
    if (im) {
      im = resized(emit, im, points);
      outRe = emit.binary<SubOp>(outRe,
                                 emit.scale(matmulLast(emit, im, sin), sign));
      outIm = emit.binary<AddOp>(outIm, matmulLast(emit, im, cos));
    }
    break;
  }
  case Transform::Irfft: {
    // The Hermitian signal of the first m = n / 2 + 1 frequencies: x[t] =
    // sum_k w_k (Re X_k cos - Im X_k sin)(2 pi k t / n), w_k = 1 for the
    // zero (and, n even, the Nyquist) frequency and 2 for the others
    // (whose imaginary parts sin 0 and sin pi t drop, as PyTorch's).
    auto [cos, sin] = twiddles(emit, half, points, points, element);
    re = resized(emit, re, half);
    SmallVector<double> weights(half, 2.0);
    weights.front() = 1.0;
    if (points % 2 == 0)
      weights.back() = 1.0;
    auto weighted = [&](Value v) {
      auto type = RankedTensorType::get({half, 1}, element);
      SmallVector<Attribute> values;
      for (double w : weights)
        values.push_back(FloatAttr::get(element, w));
      Value column = ConstantOp::create(emit.builder, emit.loc,
                                        DenseElementsAttr::get(type, values));
      return emit.binary<MulOp>(v, emit.broadcastTo(column, {half, points}));
    };
    outRe = matmulLast(emit, re, weighted(cos));
    if (im)
      outRe = emit.binary<SubOp>(
          outRe, matmulLast(emit, resized(emit, im, half), weighted(sin)));
    break;
  }
  }
  if (*scale != 1.0) {
    outRe = emit.scale(outRe, *scale);
    if (outIm)
      outIm = emit.scale(outIm, *scale);
  }
  outRe = moveDim(emit, outRe, dim, /*toLast=*/false);
  if (!outIm)
    return ImportedValue::ofTensor(outRe);
  return ImportedValue::ofComplex(outRe,
                                  moveDim(emit, outIm, dim, /*toLast=*/false));
}

/// aten::fft_fft / fft_ifft / fft_rfft / fft_irfft(x, n, dim, norm).
Outputs convertFft(GraphImporter &importer, Node *node, Transform kind) {
  const ImportedValue &input = importer.input(node, 0);
  if (!input.isTensor() && !input.isComplex())
    return makeError("a Fourier transform needs a tensor");
  if (kind == Transform::Rfft && input.isComplex())
    return makeError("rfft takes a real tensor; use torch.fft.fft for a "
                     "complex one");
  std::optional<int64_t> n;
  if (const ImportedValue *size = importer.namedInput(node, "n");
      size && !size->isNone()) {
    if (size->kind != ImportedValue::Kind::Int)
      return makeError("a Fourier transform's n must be an integer known at "
                       "import time");
    n = size->intValue;
  }
  int64_t dim = -1;
  if (const ImportedValue *d = importer.namedInput(node, "dim");
      d && d->kind == ImportedValue::Kind::Int)
    dim = d->intValue;
  Emitter emit(importer);
  llvm::Expected<ImportedValue> result =
      transform(emit, input, dim, n, importer.namedInput(node, "norm"), kind);
  if (!result)
    return result.takeError();
  return single(*result);
}

/// aten::fft_fftn / fft_fft2 / fft_ifftn / fft_ifft2(x, s, dim, norm): one
/// transform per dim (the last two for fft2; all for fftn without dims).
Outputs convertFftn(GraphImporter &importer, Node *node, bool inverse,
                    bool twoDims) {
  ImportedValue value = importer.input(node, 0);
  if (!value.isTensor() && !value.isComplex())
    return makeError("a Fourier transform needs a tensor");
  int64_t rank = tensorType(value.tensor).getRank();
  SmallVector<int64_t> dims;
  const ImportedValue *dimInput = importer.namedInput(node, "dim");
  if (dimInput && dimInput->kind == ImportedValue::Kind::List) {
    for (const ImportedValue &d : dimInput->items)
      dims.push_back(d.intValue);
  } else if (dimInput && dimInput->kind == ImportedValue::Kind::Int) {
    dims.push_back(dimInput->intValue);
  } else {
    for (int64_t d = twoDims ? rank - 2 : 0; d < rank; ++d)
      dims.push_back(d);
  }
  SmallVector<std::optional<int64_t>> sizes(dims.size());
  if (const ImportedValue *s = importer.namedInput(node, "s");
      s && s->kind == ImportedValue::Kind::List) {
    if (s->items.size() != dims.size())
      return makeError("a Fourier transform's s needs one size per dim");
    for (auto [i, item] : llvm::enumerate(s->items))
      sizes[i] = item.intValue;
  }
  Emitter emit(importer);
  for (auto [i, dim] : llvm::enumerate(dims)) {
    llvm::Expected<ImportedValue> next =
        transform(emit, value, dim, sizes[i], importer.namedInput(node, "norm"),
                  inverse ? Transform::Ifft : Transform::Fft);
    if (!next)
      return next.takeError();
    value = *next;
  }
  return single(value);
}

/// Inputs 0 and 1 of `node` (`what` names them in errors): real float
/// tensors broadcast to one shape and type.
static llvm::Expected<std::pair<Value, Value>>
floatPair(GraphImporter &importer, Node *node, StringRef what) {
  llvm::Expected<Value> first = importer.tensorInput(node, 0);
  llvm::Expected<Value> second = importer.tensorInput(node, 1);
  if (llvm::Error error =
          requireAll(llvm::formatv("{0} needs two real tensors",
                                   node->kind().toUnqualString()),
                     first, second))
    return std::move(error);
  Emitter emit(importer);
  Value a = *first, b = *second;
  if (llvm::Error error = unify(emit, a, b))
    return std::move(error);
  if (!isa<FloatType>(tensorType(a).getElementType()))
    return makeError(llvm::formatv("{0} needs floating-point {1}",
                                   node->kind().toUnqualString(), what));
  return std::make_pair(a, b);
}

/// aten::complex(real, imag): the pair, broadcast to one shape.
Outputs convertComplex(GraphImporter &importer, Node *node) {
  llvm::Expected<std::pair<Value, Value>> parts =
      floatPair(importer, node, "parts");
  if (!parts)
    return parts.takeError();
  return single(ImportedValue::ofComplex(parts->first, parts->second));
}

/// aten::polar(abs, angle): abs * (cos(angle) + i sin(angle)) (Llama 4's
/// rotary table, torch.polar(ones_like(freqs), freqs)).
Outputs convertPolar(GraphImporter &importer, Node *node) {
  llvm::Expected<std::pair<Value, Value>> polar =
      floatPair(importer, node, "abs and angle");
  if (!polar)
    return polar.takeError();
  auto [r, theta] = *polar;
  Emitter emit(importer);
  return single(ImportedValue::ofComplex(
      emit.binary<MulOp>(r, emit.unary<CosOp>(theta)),
      emit.binary<MulOp>(r, emit.unary<SinOp>(theta))));
}

/// The window of torch.stft / istft (`node`'s input `window`, of
/// win_length samples, or ones), in `element`, centred in n_fft samples
/// between zeros.
llvm::Expected<Value> centredWindow(GraphImporter &importer, Node *node,
                                    Type element, int64_t winLength,
                                    int64_t nFft) {
  Emitter emit(importer);
  Value window;
  if (const ImportedValue *given = importer.namedInput(node, "window");
      given && !given->isNone()) {
    if (!given->isTensor() || tensorType(given->tensor).getRank() != 1 ||
        tensorType(given->tensor).getDimSize(0) != winLength)
      return makeError(llvm::formatv("{0} expects a 1-d window of win_length "
                                     "{1} samples",
                                     node->kind().toUnqualString(), winLength));
    window = emit.cast(given->tensor, element);
  } else {
    window = emit.splat(RankedTensorType::get({winLength}, element), 1.0);
  }
  if (winLength == nFft)
    return window;
  int64_t left = (nFft - winLength) / 2;
  SmallVector<Value> pieces;
  if (left > 0)
    pieces.push_back(emit.splat(RankedTensorType::get({left}, element), 0.0));
  pieces.push_back(window);
  pieces.push_back(emit.splat(
      RankedTensorType::get({nFft - winLength - left}, element), 0.0));
  return emit.concat(pieces, 0);
}

/// The frames of `signal` [B, L] that torch.stft transforms: [B, frames,
/// nFft], frame f the samples f hop .. f hop + nFft - 1. The samples are
/// viewed as blocks of g = gcd(nFft, hop) ([B, L / g, g]), and the frames'
/// j-th blocks are one strided slice of them: nFft / g slices (4 for a
/// hop of a quarter of n_fft; 5 for Whisper's 400 / 160).
Value stftFrames(Emitter &emit, Value signal, int64_t nFft, int64_t hop,
                 int64_t frames) {
  int64_t batch = tensorType(signal).getDimSize(0);
  int64_t block = std::gcd(nFft, hop);
  int64_t used = hop * (frames - 1) + nFft;
  Value blocks = emit.reshape(emit.slice(signal, 1, 0, used, 1),
                              {batch, used / block, block});
  int64_t stride = hop / block;
  SmallVector<Value> parts;
  for (int64_t j = 0; j < nFft / block; ++j)
    parts.push_back(
        emit.slice(blocks, 1, j, j + stride * (frames - 1) + 1, stride));
  return emit.concat(parts, 2);
}

/// aten::stft(x, n_fft, hop_length, win_length, window, normalized,
/// onesided, return_complex) (torch.stft, whose Python side first pads the
/// signal for center=True): the frames of n_fft samples every hop_length
/// (n_fft / 4 unless given) along x's last dim ([L] or [B, L]), times the
/// window (win_length ones unless given, centred in n_fft between zeros),
/// transformed: the n_fft / 2 + 1 frequencies of rfft when onesided (the
/// default), else all n_fft; [B, frequencies, frames], complex or (with
/// return_complex=False) its [..., 2] real view; normalized scales by
/// n_fft^-1/2.
Outputs convertStft(GraphImporter &importer, Node *node) {
  const ImportedValue &input = importer.input(node, 0);
  if (input.isComplex())
    return makeError("stft of a complex signal is not supported; pass its "
                     "real and imaginary parts through two transforms");
  llvm::Expected<Value> signal = promotedFloatInput(importer, node, 0);
  llvm::Expected<int64_t> nFft = importer.intInput(node, 1);
  if (llvm::Error error = requireAll(
          "stft needs a real signal and an n_fft known at import time", signal,
          nFft))
    return std::move(error);
  Emitter emit(importer);
  Value x = *signal;
  int64_t rank = tensorType(x).getRank();
  if (rank != 1 && rank != 2)
    return makeError(llvm::formatv(
        "stft needs a 1-d signal or a 2-d batch of them, not rank {0}", rank));
  if (rank == 1)
    x = emit.reshape(x, {1, tensorType(x).getDimSize(0)});
  int64_t length = tensorType(x).getDimSize(1);
  int64_t hop = intOr(importer, node, "hop_length", *nFft / 4);
  int64_t winLength = intOr(importer, node, "win_length", *nFft);
  if (*nFft < 1 || *nFft > length)
    return makeError(llvm::formatv(
        "stft expects 0 < n_fft <= {0} (the signal's length), but got "
        "n_fft={1}",
        length, *nFft));
  if (hop < 1)
    return makeError(llvm::formatv(
        "stft expects hop_length > 0, but got hop_length={0}", hop));
  if (winLength < 1 || winLength > *nFft)
    return makeError(llvm::formatv(
        "stft expects 0 < win_length <= n_fft ({0}), but got win_length={1}",
        *nFft, winLength));
  const ImportedValue *returnComplex =
      importer.namedInput(node, "return_complex");
  if (!returnComplex || returnComplex->isNone())
    return makeError("stft requires the return_complex parameter be given "
                     "for real inputs (return_complex=True)");
  // torch.stft pads for center=True in Python; the op's own centring
  // overload (aten::stft.center) is not taken.
  if (flagOr(importer, node, "center", false))
    return makeError("stft with center=True in the op itself "
                     "(aten::stft.center) is not supported; call torch.stft, "
                     "which pads the signal first");
  Type element = tensorType(x).getElementType();
  llvm::Expected<Value> window =
      centredWindow(importer, node, element, winLength, *nFft);
  if (!window)
    return window.takeError();
  int64_t batch = tensorType(x).getDimSize(0);
  int64_t frames = 1 + (length - *nFft) / hop;
  Value windowed =
      emit.binary<MulOp>(stftFrames(emit, x, *nFft, hop, frames),
                         emit.broadcastTo(emit.reshape(*window, {1, 1, *nFft}),
                                          {batch, frames, *nFft}));
  bool onesided = flagOr(importer, node, "onesided", true);
  llvm::Expected<ImportedValue> spectrum =
      transform(emit, ImportedValue::ofTensor(windowed), -1, *nFft,
                /*norm=*/nullptr, onesided ? Transform::Rfft : Transform::Fft);
  if (!spectrum)
    return spectrum.takeError();
  double scale = flagOr(importer, node, "normalized", false)
                     ? 1.0 / std::sqrt(static_cast<double>(*nFft))
                     : 1.0;
  auto arrange = [&](Value part) {
    if (scale != 1.0)
      part = emit.scale(part, scale);
    part = emit.transpose(part, {0, 2, 1});
    return rank == 1 ? dropBatchOfOne(emit, part) : part;
  };
  Value re = arrange(spectrum->tensor), im = arrange(spectrum->imag);
  if (returnComplex->asDouble() != 0)
    return single(ImportedValue::ofComplex(re, im));
  SmallVector<int64_t> column(tensorType(re).getShape());
  column.push_back(1);
  return single(
      emit.concat({emit.reshape(re, column), emit.reshape(im, column)},
                  static_cast<int64_t>(column.size()) - 1));
}

/// The overlap-add of `frames` [B, T, nFft] at every hop samples: [B, hop
/// (T - 1) + nFft], istft's (stftFrames' transpose). In blocks of g =
/// gcd(nFft, hop) samples, the frames' j-th blocks land every hop / g
/// blocks from block j: nFft / g spread, shifted frames summed.
Value overlapAdd(Emitter &emit, Value frames, int64_t hop) {
  auto [batch, count, nFft] = std::tuple{tensorType(frames).getDimSize(0),
                                         tensorType(frames).getDimSize(1),
                                         tensorType(frames).getDimSize(2)};
  int64_t block = std::gcd(nFft, hop);
  int64_t stride = hop / block;
  int64_t blocks = (hop * (count - 1) + nFft) / block;
  Value parts = emit.reshape(frames, {batch, count, nFft / block, block});
  Value sum;
  for (int64_t j = 0; j < nFft / block; ++j) {
    Value spread = spreadAlong(
        emit,
        emit.reshape(emit.slice(parts, 2, j, j + 1, 1), {batch, count, block}),
        1, stride);
    SmallVector<Value> placed;
    Type element = tensorType(spread).getElementType();
    if (j > 0)
      placed.push_back(
          emit.splat(RankedTensorType::get({batch, j, block}, element), 0.0));
    placed.push_back(spread);
    Value shifted = emit.padTo(emit.concat(placed, 1), 1, blocks);
    sum = sum ? emit.binary<AddOp>(sum, shifted) : shifted;
  }
  return emit.reshape(sum, {batch, blocks * block});
}

/// aten::istft(x, n_fft, hop_length, win_length, window, center=True,
/// normalized, onesided, length, return_complex=False) (torch.istft, the
/// inverse of torch.stft, as Vocos' head synthesizes its waveform): the
/// first n_fft / 2 + 1 frequencies of each frame of the complex x ([B, F,
/// T] or [F, T]) through irfft's matmuls (1 / n_fft, or n_fft^-1/2 when
/// normalized), times the window, overlap-added and divided by the
/// overlap-added squared window; centre padding trimmed, or the first
/// `length` samples kept (zeros past the frames).
Outputs convertIstft(GraphImporter &importer, Node *node) {
  const ImportedValue &input = importer.input(node, 0);
  llvm::Expected<int64_t> nFft = importer.intInput(node, 1);
  if (!nFft)
    return nFft.takeError();
  if (!input.isComplex())
    return makeError("istft needs a complex spectrogram (torch.stft's "
                     "output with return_complex=True)");
  if (flagOr(importer, node, "return_complex", false))
    return makeError("istft with return_complex=True (a complex signal) is "
                     "not supported; titan synthesizes real signals");
  Emitter emit(importer);
  Value re = input.tensor, im = input.imag;
  int64_t rank = tensorType(re).getRank();
  if (rank != 2 && rank != 3)
    return makeError(llvm::formatv(
        "istft needs a spectrogram [frequencies, frames] or a batch of them, "
        "not rank {0}",
        rank));
  if (rank == 2) {
    re = addBatchOfOne(emit, re);
    im = addBatchOfOne(emit, im);
  }
  int64_t frequencies = tensorType(re).getDimSize(1);
  int64_t frames = tensorType(re).getDimSize(2);
  int64_t hop = intOr(importer, node, "hop_length", *nFft / 4);
  int64_t winLength = intOr(importer, node, "win_length", *nFft);
  bool onesided = flagOr(importer, node, "onesided", frequencies != *nFft);
  if (*nFft < 1 || frequencies != (onesided ? *nFft / 2 + 1 : *nFft))
    return makeError(llvm::formatv(
        "istft of {0} frequencies does not fit n_fft = {1} ({2} expected)",
        frequencies, *nFft, onesided ? *nFft / 2 + 1 : *nFft));
  if (hop < 1 || hop > winLength || winLength > *nFft)
    return makeError(llvm::formatv(
        "istft expects 0 < hop_length <= win_length <= n_fft, but got "
        "hop_length={0}, win_length={1}, n_fft={2}",
        hop, winLength, *nFft));
  Type element = tensorType(re).getElementType();
  llvm::Expected<Value> window =
      centredWindow(importer, node, element, winLength, *nFft);
  if (!window)
    return window.takeError();
  // [B, T, F]: irfft of the first n_fft / 2 + 1 frequencies of each frame.
  int64_t half = *nFft / 2 + 1;
  auto frameMajor = [&](Value part) {
    return emit.slice(emit.transpose(part, {0, 2, 1}), 2, 0, half, 1);
  };
  llvm::Expected<ImportedValue> signal =
      transform(emit, ImportedValue::ofComplex(frameMajor(re), frameMajor(im)),
                -1, *nFft, /*norm=*/nullptr, Transform::Irfft);
  if (!signal)
    return signal.takeError();
  Value samples = signal->tensor;
  if (flagOr(importer, node, "normalized", false))
    samples = emit.scale(samples, std::sqrt(static_cast<double>(*nFft)));
  int64_t batch = tensorType(samples).getDimSize(0);
  Value windowRows = emit.broadcastTo(emit.reshape(*window, {1, 1, *nFft}),
                                      {batch, frames, *nFft});
  Value summed = overlapAdd(emit, emit.binary<MulOp>(samples, windowRows), hop);
  Value envelope = overlapAdd(
      emit,
      emit.broadcastTo(
          emit.reshape(emit.binary<MulOp>(*window, *window), {1, 1, *nFft}),
          {1, frames, *nFft}),
      hop);
  int64_t produced = tensorType(summed).getDimSize(1);
  bool center = flagOr(importer, node, "center", true);
  int64_t start = center ? *nFft / 2 : 0;
  int64_t end = center ? produced - *nFft / 2 : produced;
  const ImportedValue *length = importer.namedInput(node, "length");
  if (length && length->kind == ImportedValue::Kind::Int)
    end = start + length->intValue;
  if (end < start)
    return makeError(llvm::formatv(
        "istft's signal of {0} samples has none left past the centre padding",
        produced));
  int64_t kept = std::min(end, produced);
  Value trimmed = emit.slice(summed, 1, start, kept, 1);
  Value divisor = emit.broadcastTo(emit.slice(envelope, 1, start, kept, 1),
                                   {batch, kept - start});
  Value result = emit.binary<DivOp>(trimmed, divisor);
  if (end > produced)
    result = emit.padTo(result, 1, end - start);
  return single(rank == 2 ? dropBatchOfOne(emit, result) : result);
}

} // namespace

void mlir::titan::import::addFftConversions(
    llvm::StringMap<Conversion> &table) {
  auto one = [](Transform kind) -> Conversion {
    return [kind](GraphImporter &importer, Node *node) {
      return convertFft(importer, node, kind);
    };
  };
  table["aten::complex"] = convertComplex;
  table["aten::polar"] = convertPolar;
  table["aten::fft_fft"] = one(Transform::Fft);
  table["aten::fft_ifft"] = one(Transform::Ifft);
  table["aten::fft_rfft"] = one(Transform::Rfft);
  table["aten::fft_irfft"] = one(Transform::Irfft);
  table["aten::stft"] = convertStft;
  table["aten::istft"] = convertIstft;
  for (auto [name, inverse, twoDims] :
       {std::tuple{"aten::fft_fftn", false, false},
        std::tuple{"aten::fft_fft2", false, true},
        std::tuple{"aten::fft_ifftn", true, false},
        std::tuple{"aten::fft_ifft2", true, true}})
    table[name] = [inverse, twoDims](GraphImporter &importer, Node *node) {
      return convertFftn(importer, node, inverse, twoDims);
    };
}
