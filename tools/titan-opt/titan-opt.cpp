//===- titan-opt.cpp - titan's pass driver --------------------------------===//
//
// mlir-opt for titan: parses textual or bytecode IR, runs a pass pipeline and
// prints the result.
//
//===----------------------------------------------------------------------===//

#include "titan/InitAll.h"

#include "mlir/Tools/mlir-opt/MlirOptMain.h"

int main(int argc, char **argv) {
  mlir::DialectRegistry registry;
  mlir::titan::registerAllDialects(registry);
  mlir::titan::registerAllPasses();
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "titan optimizer driver\n", registry));
}
