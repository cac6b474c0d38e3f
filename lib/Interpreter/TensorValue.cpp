//===- TensorValue.cpp - host tensors of the reference interpreter --------===//

#include "titan/Interpreter/TensorValue.h"

#include "titan/Support/Bfloat16.h"

#include "titan/Dialect/ElementTypes.h"

#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/APFloat.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/bit.h"
#include "llvm/Support/raw_ostream.h"

#include <cstring>

using namespace mlir;
using namespace mlir::titan;

std::optional<ElementType> mlir::titan::getInterpretedElementType(Type type) {
  std::optional<ElementType> element = getElementTypeOf(type);
  if (element == ElementType::U16 || element == ElementType::U8)
    return std::nullopt;
  return element;
}

/// Rounds a float to bfloat16 (ties to even) and widens it back.
static float roundFloatToBF16(float value) {
  return bf16ToFloat(floatToBf16(value));
}

/// The IEEE half bits of `value`, rounded to nearest even.
static uint16_t floatToHalfBits(float value) {
  llvm::APFloat half(value);
  bool losesInfo;
  half.convert(llvm::APFloat::IEEEhalf(), llvm::APFloat::rmNearestTiesToEven,
               &losesInfo);
  return half.bitcastToAPInt().getZExtValue();
}

/// The float value of IEEE half bits.
static float halfBitsToFloat(uint16_t bits) {
  llvm::APFloat value(llvm::APFloat::IEEEhalf(), llvm::APInt(16, bits));
  bool losesInfo;
  value.convert(llvm::APFloat::IEEEsingle(), llvm::APFloat::rmNearestTiesToEven,
                &losesInfo);
  return value.convertToFloat();
}

float mlir::titan::roundToFloatType(double value, ElementType kind) {
  float single = static_cast<float>(value);
  switch (kind) {
  case ElementType::BF16:
    return roundFloatToBF16(single);
  case ElementType::F16:
    return halfBitsToFloat(floatToHalfBits(single));
  default:
    return single;
  }
}

/// Storage of `n` zero elements for `kind`.
static ElementStorage makeStorage(ElementType kind, int64_t n) {
  switch (kind) {
  case ElementType::F32:
  case ElementType::BF16:
  case ElementType::F16:
    return std::vector<float>(n);
  case ElementType::F64:
    return std::vector<double>(n);
  case ElementType::I64:
  case ElementType::I32:
    return std::vector<int64_t>(n);
  case ElementType::I1:
    return std::vector<uint8_t>(n);
  case ElementType::U16:
  case ElementType::U8:
    break;
  }
  llvm_unreachable("the interpreter has no unsigned tensors");
}

TensorValue::TensorValue(ElementType kind, ArrayRef<int64_t> shape)
    : kind(kind), shape(shape.begin(), shape.end()),
      storage(makeStorage(kind, getNumElements())) {}

int64_t TensorValue::getNumElements() const {
  int64_t n = 1;
  for (int64_t size : shape)
    n *= size;
  return n;
}

void TensorValue::reshape(ArrayRef<int64_t> newShape) {
  shape.assign(newShape.begin(), newShape.end());
  assert(std::visit([](auto &v) { return int64_t(v.size()); }, storage) ==
             getNumElements() &&
         "reshape changes the number of elements");
}

void TensorValue::roundToKind() {
  if (kind != ElementType::BF16 && kind != ElementType::F16)
    return;
  for (float &value : getMutable<float>())
    value = roundToFloatType(value, kind);
}

bool TensorValue::operator==(const TensorValue &other) const {
  if (kind != other.kind || shape != other.shape)
    return false;
  return std::visit(
      [&](const auto &values) {
        const auto &otherValues =
            std::get<std::decay_t<decltype(values)>>(other.storage);
        return values.empty() ||
               std::memcmp(values.data(), otherValues.data(),
                           values.size() * sizeof(values[0])) == 0;
      },
      storage);
}

std::string mlir::titan::formatTensorType(ElementType kind,
                                          ArrayRef<int64_t> shape) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << "tensor<";
  for (int64_t size : shape)
    os << size << "x";
  os << stringifyElementType(kind) << ">";
  return text;
}

std::string TensorValue::getTypeString() const {
  return formatTensorType(kind, shape);
}

/// Reads element `i` of little-endian raw bytes as `T`.
template <typename T>
static T loadElement(const std::vector<char> &bytes, int64_t i) {
  T value;
  std::memcpy(&value, bytes.data() + i * sizeof(T), sizeof(T));
  return value;
}

/// Writes `value` as element `i` of raw bytes.
template <typename T>
static void storeElement(std::vector<char> &bytes, int64_t i, T value) {
  std::memcpy(bytes.data() + i * sizeof(T), &value, sizeof(T));
}

llvm::Expected<TensorValue> mlir::titan::tensorFromNpy(const NpyArray &array,
                                                       ElementType kind,
                                                       StringRef name) {
  ElementType expected = getNpyStorageType(kind);
  if (array.dtype != expected)
    return llvm::createStringError(
        "%s: the file holds dtype '%s' but the program expects %s (dtype "
        "'%s')",
        name.str().c_str(), npyDescr(array.dtype).str().c_str(),
        stringifyElementType(kind).str().c_str(),
        npyDescr(expected).str().c_str());
  TensorValue tensor(kind, array.shape);
  int64_t n = tensor.getNumElements();
  const std::vector<char> &bytes = array.data;
  switch (kind) {
  case ElementType::F32:
    std::memcpy(tensor.getMutable<float>().data(), bytes.data(), n * 4);
    break;
  case ElementType::F64:
    std::memcpy(tensor.getMutable<double>().data(), bytes.data(), n * 8);
    break;
  case ElementType::BF16:
    for (auto [i, value] : llvm::enumerate(tensor.getMutable<float>()))
      value = llvm::bit_cast<float>(uint32_t(loadElement<uint16_t>(bytes, i))
                                    << 16);
    break;
  case ElementType::F16:
    for (auto [i, value] : llvm::enumerate(tensor.getMutable<float>()))
      value = halfBitsToFloat(loadElement<uint16_t>(bytes, i));
    break;
  case ElementType::I64:
    std::memcpy(tensor.getMutable<int64_t>().data(), bytes.data(), n * 8);
    break;
  case ElementType::I32:
    for (auto [i, value] : llvm::enumerate(tensor.getMutable<int64_t>()))
      value = loadElement<int32_t>(bytes, i);
    break;
  case ElementType::I1:
    for (auto [i, value] : llvm::enumerate(tensor.getMutable<uint8_t>()))
      value = bytes[i] != 0;
    break;
  case ElementType::U16:
  case ElementType::U8:
    llvm_unreachable("the interpreter has no unsigned tensors");
  }
  return tensor;
}

NpyArray mlir::titan::tensorToNpy(const TensorValue &tensor) {
  NpyArray array;
  array.dtype = getNpyStorageType(tensor.getKind());
  array.shape.assign(tensor.getShape().begin(), tensor.getShape().end());
  int64_t n = tensor.getNumElements();
  array.data.resize(n * getElementTypeSize(array.dtype));
  std::vector<char> &bytes = array.data;
  switch (tensor.getKind()) {
  case ElementType::F32:
    std::memcpy(bytes.data(), tensor.get<float>().data(), n * 4);
    break;
  case ElementType::F64:
    std::memcpy(bytes.data(), tensor.get<double>().data(), n * 8);
    break;
  case ElementType::BF16:
    for (auto [i, value] : llvm::enumerate(tensor.get<float>()))
      storeElement<uint16_t>(bytes, i, llvm::bit_cast<uint32_t>(value) >> 16);
    break;
  case ElementType::F16:
    for (auto [i, value] : llvm::enumerate(tensor.get<float>()))
      storeElement<uint16_t>(bytes, i, floatToHalfBits(value));
    break;
  case ElementType::I64:
    std::memcpy(bytes.data(), tensor.get<int64_t>().data(), n * 8);
    break;
  case ElementType::I32:
    for (auto [i, value] : llvm::enumerate(tensor.get<int64_t>()))
      storeElement<int32_t>(bytes, i, static_cast<int32_t>(value));
    break;
  case ElementType::I1:
    for (auto [i, value] : llvm::enumerate(tensor.get<uint8_t>()))
      bytes[i] = value ? 1 : 0;
    break;
  case ElementType::U16:
  case ElementType::U8:
    llvm_unreachable("the interpreter has no unsigned tensors");
  }
  return array;
}
