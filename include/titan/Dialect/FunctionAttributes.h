//===- FunctionAttributes.h - set one attribute of every argument -*- C++ -*-===//
//
// FunctionOpInterface's setArgAttr / setResultAttr rebuild the attribute
// array of all arguments (results) on every call, which makes a loop over
// the arguments of a large program (the 405B step has thousands) quadratic.
// These set one attribute on all of them and rebuild the array once.
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_DIALECT_FUNCTIONATTRIBUTES_H
#define TITAN_DIALECT_FUNCTIONATTRIBUTES_H

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/Interfaces/FunctionInterfaces.h"

namespace mlir::titan {

namespace detail {
/// Sets `name` in each of `attrs` to `value(i)`, or removes it where
/// `value(i)` is null.
inline void setInEach(MutableArrayRef<DictionaryAttr> attrs,
                      MLIRContext *context, StringRef name,
                      function_ref<Attribute(unsigned)> value) {
  for (unsigned i = 0; i < attrs.size(); ++i) {
    NamedAttrList list(attrs[i]);
    if (Attribute attr = value(i))
      list.set(name, attr);
    else
      list.erase(name);
    attrs[i] = list.getDictionary(context);
  }
}
} // namespace detail

/// Sets attribute `name` of argument i of `function` to `value(i)`, or
/// removes it where `value(i)` is null.
inline void setEachArgAttr(FunctionOpInterface function, StringRef name,
                           function_ref<Attribute(unsigned)> value) {
  SmallVector<DictionaryAttr> attrs;
  function.getAllArgAttrs(attrs);
  detail::setInEach(attrs, function.getContext(), name, value);
  function.setAllArgAttrs(attrs);
}

/// Sets attribute `name` of result i of `function` to `value(i)`, or
/// removes it where `value(i)` is null.
inline void setEachResultAttr(FunctionOpInterface function, StringRef name,
                              function_ref<Attribute(unsigned)> value) {
  SmallVector<DictionaryAttr> attrs;
  function.getAllResultAttrs(attrs);
  detail::setInEach(attrs, function.getContext(), name, value);
  function.setAllResultAttrs(attrs);
}

} // namespace mlir::titan

#endif // TITAN_DIALECT_FUNCTIONATTRIBUTES_H
