//===- MlirHeaders.cpp - Anchor of the shared precompiled header ----------===//
//
// Empty on purpose: TitanMlirHeaders (lib/CMakeLists.txt) compiles this file
// only to build the precompiled MLIR and titan dialect headers that the
// compiler's libraries and tools reuse.
//
//===----------------------------------------------------------------------===//
