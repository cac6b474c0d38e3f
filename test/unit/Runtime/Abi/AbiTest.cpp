//===- AbiTest.cpp - titanrt.def against titanrt.h ------------------------===//
//
// The code generator declares the runtime functions from titanrt.def; the
// runtime defines them with titanrt.h's prototypes. This test derives the
// signature string of every prototype from its C++ type and compares it
// with the table, and takes each function's address, so that a function
// the table lists but libtitanrt lacks fails to link.
//
//===----------------------------------------------------------------------===//

#include "titan/Runtime/titanrt.h"

#include <gtest/gtest.h>

#include <string>
#include <type_traits>

namespace {

/// The titanrt.def character of one C type.
template <typename T> char code() {
  if constexpr (std::is_pointer_v<T>)
    return 'p';
  else if constexpr (std::is_same_v<T, int32_t>)
    return 'i';
  else if constexpr (std::is_same_v<T, int64_t>)
    return 'l';
  else if constexpr (std::is_same_v<T, float>)
    return 'f';
  else if constexpr (std::is_same_v<T, double>)
    return 'd';
  else
    return '?';
}

/// The titanrt.def signature of a function type: "r(args)".
template <typename Function> struct Signature;
template <typename Result, typename... Args> struct Signature<Result(Args...)> {
  static std::string get() {
    return std::string(1, code<Result>()) + "(" + std::string{code<Args>()...} +
           ")";
  }
};

struct Entry {
  const char *name;
  const char *declared;
  std::string actual;
  const void *address;
};

std::vector<Entry> entries() {
  return {
#define TITANRT_FUNCTION(name, signature)                                      \
  {#name, signature, Signature<decltype(name)>::get(),                         \
   reinterpret_cast<const void *>(&name)},
#include "titan/Runtime/titanrt.def"
  };
}

TEST(RuntimeAbiTest, EveryTableEntryHasTheHeadersSignatureAndLinks) {
  std::vector<Entry> table = entries();
  EXPECT_GE(table.size(), 13u);
  for (const Entry &entry : table) {
    EXPECT_EQ(entry.declared, entry.actual) << entry.name;
    EXPECT_NE(entry.address, nullptr) << entry.name;
  }
}

TEST(RuntimeAbiTest, SignatureCodesCoverTheHeadersTypes) {
  // A wrong code in the table would be caught above only if the derivation
  // itself is right: check it on known prototypes.
  EXPECT_EQ((Signature<int32_t(titanrt_context *, int64_t, double)>::get()),
            "i(pld)");
  EXPECT_EQ((Signature<int32_t(const void *, float)>::get()), "i(pf)");
}

} // namespace
