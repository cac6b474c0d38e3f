//===- Reductions.cpp - elementwise reductions of the collectives ---------===//

#include "comm/Reductions.h"

#include "core/LowPrecision.h"

#include <cmath>
#include <type_traits>

namespace titan::rt {

namespace {

/// Elements stored and computed as `T`.
template <typename T> struct NativeElement {
  using Storage = T;
  using Value = T;
  static Value load(Storage stored) { return stored; }
  static Storage store(Value value) { return value; }
};

/// bf16: the upper half of an f32, computed in f32.
struct BFloat16Element {
  using Storage = uint16_t;
  using Value = float;
  static Value load(Storage stored) { return bf16ToFloat(stored); }
  static Storage store(Value value) { return floatToBf16(value); }
};

/// f16 (IEEE binary16), computed in f32.
struct Float16Element {
  using Storage = _Float16;
  using Value = float;
  static Value load(Storage stored) { return static_cast<float>(stored); }
  static Storage store(Value value) { return static_cast<Storage>(value); }
};

/// Whether `value` is a NaN (never for integers).
template <typename V> bool isNan(V value) {
  if constexpr (std::is_floating_point_v<V>)
    return std::isnan(value);
  else
    return false;
}

struct Sum {
  template <typename V> static V apply(V a, V b) {
    if constexpr (std::is_integral_v<V>) {
      // Integers wrap around on overflow instead of being undefined.
      using Unsigned = std::make_unsigned_t<V>;
      return static_cast<V>(static_cast<Unsigned>(a) +
                            static_cast<Unsigned>(b));
    } else {
      return a + b;
    }
  }
};

struct Max {
  template <typename V> static V apply(V a, V b) {
    return (a > b || isNan(a)) ? a : b;
  }
};

struct Min {
  template <typename V> static V apply(V a, V b) {
    return (a < b || isNan(a)) ? a : b;
  }
};

template <typename Element, typename Op>
void combine(void *out, const void *a, const void *b, size_t count) {
  using Storage = typename Element::Storage;
  auto *result = static_cast<Storage *>(out);
  auto *left = static_cast<const Storage *>(a);
  auto *right = static_cast<const Storage *>(b);
  for (size_t index = 0; index < count; ++index)
    result[index] = Element::store(
        Op::apply(Element::load(left[index]), Element::load(right[index])));
}

template <typename Element>
void divide(void *data, size_t count, int64_t divisor) {
  using Value = typename Element::Value;
  auto *values = static_cast<typename Element::Storage *>(data);
  const auto by = static_cast<Value>(divisor);
  for (size_t index = 0; index < count; ++index)
    values[index] = Element::store(Element::load(values[index]) / by);
}

template <typename Element>
Status makeReduction(int32_t reduce, Reduction &reduction) {
  reduction.elementSize = sizeof(typename Element::Storage);
  reduction.divide = nullptr;
  switch (reduce) {
  case TITANRT_SUM:
    reduction.combine = combine<Element, Sum>;
    return Status::success();
  case TITANRT_AVG:
    reduction.combine = combine<Element, Sum>;
    reduction.divide = divide<Element>;
    return Status::success();
  case TITANRT_MAX:
    reduction.combine = combine<Element, Max>;
    return Status::success();
  case TITANRT_MIN:
    reduction.combine = combine<Element, Min>;
    return Status::success();
  default:
    return Status::invalidArgument("unknown reduction " +
                                   std::to_string(reduce) +
                                   " (expected sum, avg, max or min)");
  }
}

} // namespace

Status getReduction(int32_t dtype, int32_t reduce, Reduction &reduction) {
  switch (dtype) {
  case TITANRT_F32:
    return makeReduction<NativeElement<float>>(reduce, reduction);
  case TITANRT_F64:
    return makeReduction<NativeElement<double>>(reduce, reduction);
  case TITANRT_I64:
    return makeReduction<NativeElement<int64_t>>(reduce, reduction);
  case TITANRT_I32:
    return makeReduction<NativeElement<int32_t>>(reduce, reduction);
  case TITANRT_BF16:
    return makeReduction<BFloat16Element>(reduce, reduction);
  case TITANRT_F16:
    return makeReduction<Float16Element>(reduce, reduction);
  case TITANRT_BOOL:
    return Status::unsupported("reductions of i1 are not supported (reduce "
                               "them as i32)");
  default:
    return Status::invalidArgument("unknown element type " +
                                   std::to_string(dtype));
  }
}

} // namespace titan::rt
