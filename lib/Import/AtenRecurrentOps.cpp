//===- AtenRecurrentOps.cpp - nn.LSTM, nn.GRU and nn.RNN ------------------===//
//
// aten::lstm, gru, rnn_tanh and rnn_relu of a padded input (the .input
// overloads nn.LSTM / nn.GRU / nn.RNN trace to): every layer and direction
// unrolled over the sequence, whose length the traced shape fixes. A
// layer's input projections of all steps are one matmul; each step adds
// the hidden state's projection (a matmul with that sum as its addend) and
// applies the cell's gates, in PyTorch's order and formulas. Layers after
// the first read the previous layer's outputs (both directions
// concatenated), with dropout between layers in training mode. Everything
// is ops the training step differentiates: backpropagation through time
// is the unrolled graph's backward.
//
//===----------------------------------------------------------------------===//

#include "AtenSupport.h"

#include "llvm/Support/FormatVariadic.h"

using namespace mlir;
using namespace mlir::titan;
using namespace mlir::titan::import;

namespace {

/// The cells of PyTorch's recurrent layers.
enum class Cell { Lstm, Gru, RnnTanh, RnnRelu };

/// The op name of `cell`, for errors.
StringRef cellName(Cell cell) {
  switch (cell) {
  case Cell::Lstm:
    return "lstm";
  case Cell::Gru:
    return "gru";
  case Cell::RnnTanh:
    return "rnn_tanh";
  case Cell::RnnRelu:
    return "rnn_relu";
  }
  llvm_unreachable("unknown cell");
}

/// The gates of `cell` stacked in its weights (LSTM i, f, g, o; GRU r, z,
/// n; a plain RNN one).
int64_t gateCount(Cell cell) {
  return cell == Cell::Lstm ? 4 : cell == Cell::Gru ? 3 : 1;
}

/// The weights of one layer and direction.
struct DirectionWeights {
  Value inputWeight, hiddenWeight, inputBias, hiddenBias, projection;
};

/// The constant inputs of a recurrent op.
struct RecurrentConfig {
  Cell cell;
  int64_t layers = 1, directions = 1;
  bool hasBiases = true, batchFirst = false, train = false;
  double dropout = 0;
};

/// `x` [B, K] times `weight` [N, K] transposed, plus `addend` [B, N].
Value linear(Emitter &emit, Value x, Value weight, Value addend) {
  RankedTensorType type = tensorType(x);
  auto result = RankedTensorType::get(
      {type.getDimSize(0), tensorType(weight).getDimSize(0)},
      type.getElementType());
  return MatmulOp::create(emit.builder, emit.loc, result, x, weight, addend,
                          /*transpose_lhs=*/false, /*transpose_rhs=*/true);
}

/// Gate `k` of `gates` [B, G H]: its H columns.
Value gate(Emitter &emit, Value gates, int64_t k, int64_t hidden) {
  return emit.slice(gates, 1, k * hidden, (k + 1) * hidden, 1);
}

/// One layer and direction over `steps` ([B, K] each, in time order): the
/// hidden state after every step (in time order), and the final hidden and
/// cell states. `h` and `c` start as the initial states (`c` only for
/// LSTM).
struct DirectionResult {
  SmallVector<Value> outputs;
  Value h, c;
};

DirectionResult runDirection(Emitter &emit, const RecurrentConfig &config,
                             const DirectionWeights &weights,
                             ArrayRef<Value> inputProjections, bool reverse,
                             Value h, Value c) {
  int64_t hidden =
      tensorType(weights.hiddenWeight).getDimSize(0) / gateCount(config.cell);
  int64_t steps = inputProjections.size();
  DirectionResult result;
  result.outputs.resize(steps);
  for (int64_t i = 0; i < steps; ++i) {
    int64_t t = reverse ? steps - 1 - i : i;
    Value projected = inputProjections[t];
    Value out;
    if (config.cell == Cell::Gru) {
      // n reads r times the hidden state's own projection (with its bias).
      Value recurrent =
          linear(emit, h, weights.hiddenWeight,
                 weights.hiddenBias
                     ? emit.broadcastTo(weights.hiddenBias,
                                        tensorType(projected).getShape())
                     : Value());
      Value r = emit.unary<SigmoidOp>(emit.binary<AddOp>(
          gate(emit, projected, 0, hidden), gate(emit, recurrent, 0, hidden)));
      Value z = emit.unary<SigmoidOp>(emit.binary<AddOp>(
          gate(emit, projected, 1, hidden), gate(emit, recurrent, 1, hidden)));
      Value n = emit.unary<TanhOp>(emit.binary<AddOp>(
          gate(emit, projected, 2, hidden),
          emit.binary<MulOp>(r, gate(emit, recurrent, 2, hidden))));
      // (1 - z) n + z h = n + z (h - n).
      out = emit.binary<AddOp>(n,
                               emit.binary<MulOp>(z, emit.binary<SubOp>(h, n)));
    } else {
      Value addend = projected;
      if (weights.hiddenBias)
        addend = emit.binary<AddOp>(
            addend, emit.broadcastTo(weights.hiddenBias,
                                     tensorType(projected).getShape()));
      Value gates = linear(emit, h, weights.hiddenWeight, addend);
      if (config.cell == Cell::Lstm) {
        Value in = emit.unary<SigmoidOp>(gate(emit, gates, 0, hidden));
        Value forget = emit.unary<SigmoidOp>(gate(emit, gates, 1, hidden));
        Value cell = emit.unary<TanhOp>(gate(emit, gates, 2, hidden));
        Value output = emit.unary<SigmoidOp>(gate(emit, gates, 3, hidden));
        c = emit.binary<AddOp>(emit.binary<MulOp>(forget, c),
                               emit.binary<MulOp>(in, cell));
        out = emit.binary<MulOp>(output, emit.unary<TanhOp>(c));
        if (weights.projection)
          out = linear(emit, out, weights.projection, Value());
      } else if (config.cell == Cell::RnnTanh) {
        out = emit.unary<TanhOp>(gates);
      } else {
        out = emit.binary<MaxOp>(gates, emit.splatLike(gates, 0.0));
      }
    }
    h = out;
    result.outputs[t] = out;
  }
  result.h = h;
  result.c = c;
  return result;
}

/// aten::lstm(input, [h0, c0], params, has_biases, num_layers, dropout,
/// train, bidirectional, batch_first) -> (output, h_n, c_n); aten::gru,
/// rnn_tanh, rnn_relu(input, h0, params, ...) -> (output, h_n). `input` is
/// [T, B, K] ([B, T, K] batch first) or unbatched [T, K]; the initial
/// states [layers * directions, B, H] (or [.., H] unbatched).
Outputs convertRecurrent(GraphImporter &importer, Node *node, Cell cell) {
  std::string what = "aten::" + cellName(cell).str();
  bool lstm = cell == Cell::Lstm;
  if (importer.namedInput(node, "batch_sizes"))
    return makeError(what + " of a PackedSequence is not supported: pass "
                            "the padded batch (and mask the padding)");
  llvm::Expected<Value> inputOr = importer.tensorInput(node, 0);
  if (!inputOr)
    return makeError(what + " needs an input tensor");
  const ImportedValue &states = importer.input(node, 1);
  const ImportedValue &params = importer.input(node, 2);
  RecurrentConfig config{cell};
  llvm::Expected<int64_t> hasBiases = importer.intInput(node, 3);
  llvm::Expected<int64_t> layers = importer.intInput(node, 4);
  llvm::Expected<double> dropout = importer.numberInput(node, 5);
  llvm::Expected<int64_t> train = importer.intInput(node, 6);
  llvm::Expected<int64_t> bidirectional = importer.intInput(node, 7);
  llvm::Expected<int64_t> batchFirst = importer.intInput(node, 8);
  if (!hasBiases || !layers || !dropout || !train || !bidirectional ||
      !batchFirst) {
    llvm::consumeError(hasBiases.takeError());
    llvm::consumeError(layers.takeError());
    llvm::consumeError(dropout.takeError());
    llvm::consumeError(train.takeError());
    llvm::consumeError(bidirectional.takeError());
    llvm::consumeError(batchFirst.takeError());
    return makeError(what + " needs constant flags, layer count and dropout");
  }
  config.hasBiases = *hasBiases;
  config.layers = *layers;
  config.dropout = *dropout;
  config.train = *train;
  config.directions = *bidirectional ? 2 : 1;
  config.batchFirst = *batchFirst;

  // The initial states, as a list [h0, c0] (LSTM) or one tensor.
  SmallVector<Value> initial;
  if (states.kind == ImportedValue::Kind::List) {
    for (const ImportedValue &item : states.items)
      if (item.isTensor())
        initial.push_back(item.tensor);
  } else if (states.isTensor()) {
    initial.push_back(states.tensor);
  }
  if (initial.size() != (lstm ? 2u : 1u))
    return makeError(what + (lstm ? " needs its initial states as [h0, c0]"
                                  : " needs its initial state h0"));
  if (params.kind != ImportedValue::Kind::List)
    return makeError(what + " needs its weights as a list of tensors");
  SmallVector<Value> flat;
  for (const ImportedValue &item : params.items) {
    if (!item.isTensor())
      return makeError(what + " needs its weights as a list of tensors");
    flat.push_back(item.tensor);
  }
  int64_t perDirection = flat.size() / (config.layers * config.directions);
  int64_t plain = config.hasBiases ? 4 : 2;
  bool projected = lstm && perDirection == plain + 1;
  if (config.layers < 1 ||
      static_cast<int64_t>(flat.size()) !=
          perDirection * config.layers * config.directions ||
      (perDirection != plain && !projected))
    return makeError(llvm::formatv(
        "{0} with {1} weight tensors for {2} layers and {3} directions: "
        "expected {4} per layer and direction (weight_ih, weight_hh{5}{6})",
        what, flat.size(), config.layers, config.directions, plain,
        config.hasBiases ? ", bias_ih, bias_hh" : "",
        lstm ? ", and weight_hr with proj_size" : ""));

  Value input = *inputOr;
  RankedTensorType inputType = tensorType(input);
  bool unbatched = inputType.getRank() == 2;
  if (inputType.getRank() != 3 && !unbatched)
    return makeError(llvm::formatv(
        "{0} of input {1}: expected [T, B, K] ([B, T, K] with batch_first) "
        "or unbatched [T, K]",
        what, inputType));
  if (!isa<FloatType>(inputType.getElementType()))
    return makeError(what + " needs a floating-point input");
  Emitter emit(importer);
  // Time-major [T, B, K].
  if (unbatched)
    input = emit.reshape(input,
                         {inputType.getDimSize(0), 1, inputType.getDimSize(1)});
  else if (config.batchFirst)
    input = emit.transpose(input, {1, 0, 2});
  ArrayRef<int64_t> timeMajor = tensorType(input).getShape();
  int64_t steps = timeMajor[0], batch = timeMajor[1];
  int64_t stateCount = config.layers * config.directions;
  // The initial states [layers * directions, B, H].
  for (Value &state : initial) {
    RankedTensorType type = tensorType(state);
    if (unbatched && type.getRank() == 2)
      state = emit.reshape(state, {type.getDimSize(0), 1, type.getDimSize(1)});
    RankedTensorType batched = tensorType(state);
    if (batched.getRank() != 3 || batched.getDimSize(0) != stateCount ||
        batched.getDimSize(1) != batch)
      return makeError(llvm::formatv(
          "{0}: an initial state of {1} for {2} layers and directions and a "
          "batch of {3}",
          what, type, stateCount, batch));
  }

  SmallVector<Value> finalH, finalC;
  Value layerInput = input;
  for (int64_t layer = 0; layer < config.layers; ++layer) {
    if (layer > 0 && config.train && config.dropout > 0)
      layerInput = importer.emitTrainingDropout(layerInput, config.dropout);
    int64_t width = tensorType(layerInput).getDimSize(2);
    Value rows = emit.reshape(layerInput, {steps * batch, width});
    SmallVector<Value> directionOutputs;
    for (int64_t direction = 0; direction < config.directions; ++direction) {
      int64_t index = layer * config.directions + direction;
      ArrayRef<Value> own(flat.data() + index * perDirection, perDirection);
      DirectionWeights weights;
      weights.inputWeight = own[0];
      weights.hiddenWeight = own[1];
      if (config.hasBiases) {
        weights.inputBias = own[2];
        weights.hiddenBias = own[3];
      }
      if (projected)
        weights.projection = own.back();
      int64_t gatesWidth = tensorType(weights.inputWeight).getDimSize(0);
      if (tensorType(weights.inputWeight).getDimSize(1) != width)
        return makeError(llvm::formatv(
            "{0}: layer {1}'s weight_ih is {2} for inputs of {3} features",
            what, layer, tensorType(weights.inputWeight), width));
      // Every step's input projection in one matmul.
      Value bias =
          weights.inputBias
              ? emit.broadcastTo(weights.inputBias, {steps * batch, gatesWidth})
              : Value();
      Value projections = linear(emit, rows, weights.inputWeight, bias);
      SmallVector<Value> perStep;
      for (int64_t t = 0; t < steps; ++t)
        perStep.push_back(
            emit.slice(projections, 0, t * batch, (t + 1) * batch, 1));
      auto stateOf = [&](Value all) {
        RankedTensorType type = tensorType(all);
        return emit.reshape(emit.slice(all, 0, index, index + 1, 1),
                            {type.getDimSize(1), type.getDimSize(2)});
      };
      DirectionResult result = runDirection(
          emit, config, weights, perStep, /*reverse=*/direction == 1,
          stateOf(initial[0]), lstm ? stateOf(initial[1]) : Value());
      finalH.push_back(result.h);
      if (lstm)
        finalC.push_back(result.c);
      SmallVector<Value> rowsOfSteps;
      for (Value out : result.outputs) {
        RankedTensorType type = tensorType(out);
        rowsOfSteps.push_back(
            emit.reshape(out, {1, type.getDimSize(0), type.getDimSize(1)}));
      }
      directionOutputs.push_back(emit.concat(rowsOfSteps, 0));
    }
    layerInput = directionOutputs.size() == 1
                     ? directionOutputs.front()
                     : emit.concat(directionOutputs, 2);
  }

  // The states stacked [layers * directions, B, H].
  auto stack = [&](ArrayRef<Value> states) {
    SmallVector<Value> rows;
    for (Value state : states) {
      RankedTensorType type = tensorType(state);
      Value row =
          emit.reshape(state, {1, type.getDimSize(0), type.getDimSize(1)});
      rows.push_back(row);
    }
    Value stacked = emit.concat(rows, 0);
    if (!unbatched)
      return stacked;
    RankedTensorType type = tensorType(stacked);
    return emit.reshape(stacked, {type.getDimSize(0), type.getDimSize(2)});
  };
  Value output = layerInput;
  RankedTensorType outputType = tensorType(output);
  if (unbatched)
    output = emit.reshape(output,
                          {outputType.getDimSize(0), outputType.getDimSize(2)});
  else if (config.batchFirst)
    output = emit.transpose(output, {1, 0, 2});
  std::vector<ImportedValue> outputs = {ImportedValue::ofTensor(output),
                                        ImportedValue::ofTensor(stack(finalH))};
  if (lstm)
    outputs.push_back(ImportedValue::ofTensor(stack(finalC)));
  return outputs;
}

} // namespace

void mlir::titan::import::addRecurrentConversions(
    llvm::StringMap<Conversion> &table) {
  for (auto [name, cell] : {std::make_pair("aten::lstm", Cell::Lstm),
                            std::make_pair("aten::gru", Cell::Gru),
                            std::make_pair("aten::rnn_tanh", Cell::RnnTanh),
                            std::make_pair("aten::rnn_relu", Cell::RnnRelu)})
    table[name] = [cell](GraphImporter &importer, Node *node) {
      return convertRecurrent(importer, node, cell);
    };
}
