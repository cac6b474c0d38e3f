//===- TitanOps.cpp - generated op definitions ----------------------------===//
//
// Instantiates the ODS-generated op classes. The hand-written parts of the ops
// (verifiers, folders, interface methods) live beside their theme:
// MeshOps.cpp, ComputeOps.cpp, CollectiveOps.cpp.
//
//===----------------------------------------------------------------------===//

#include "AsmDirectives.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OpImplementation.h"

using namespace mlir;
using namespace mlir::titan;

#define GET_OP_CLASSES
#include "titan/TitanOps.cpp.inc"
