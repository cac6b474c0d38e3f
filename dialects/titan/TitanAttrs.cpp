//===- TitanAttrs.cpp - titan attributes ----------------------------------===//

#include "titan/Dialect/TitanDialect.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::titan;

#define GET_ATTRDEF_CLASSES
#include "titan/TitanAttrs.cpp.inc"

void TitanDialect::registerAttributes() {
  addAttributes<
#define GET_ATTRDEF_LIST
#include "titan/TitanAttrs.cpp.inc"
      >();
}

//===----------------------------------------------------------------------===//
// ReduceKindAttr
//===----------------------------------------------------------------------===//

Attribute ReduceKindAttr::parse(AsmParser &parser, Type) {
  StringRef keyword;
  SMLoc loc = parser.getCurrentLocation();
  if (parser.parseLess() || parser.parseKeyword(&keyword) ||
      parser.parseGreater())
    return {};
  std::optional<ReduceKind> kind = parseReduce(keyword);
  if (!kind) {
    parser.emitError(loc) << "unknown reduction '" << keyword
                          << "', expected sum, avg, max or min";
    return {};
  }
  return ReduceKindAttr::get(parser.getContext(), *kind);
}

void ReduceKindAttr::print(AsmPrinter &printer) const {
  printer << "<" << stringifyReduce(getValue()) << ">";
}

//===----------------------------------------------------------------------===//
// PlacementsAttr
//===----------------------------------------------------------------------===//

/// Parses one placement: `R`, `S(<dim>)` or `P(<reduce>)`.
static ParseResult parsePlacement(AsmParser &parser, Placement &result) {
  StringRef keyword;
  SMLoc loc = parser.getCurrentLocation();
  if (parser.parseKeyword(&keyword))
    return failure();
  if (keyword == "R") {
    result = Placement::replicate();
    return success();
  }
  if (keyword == "S") {
    int64_t dim = 0;
    if (parser.parseLParen() || parser.parseInteger(dim) ||
        parser.parseRParen())
      return failure();
    if (dim < 0)
      return parser.emitError(loc)
             << "shard dim must be non-negative, got " << dim;
    result = Placement::shard(dim);
    return success();
  }
  if (keyword == "P") {
    StringRef reduce;
    if (parser.parseLParen() || parser.parseKeyword(&reduce) ||
        parser.parseRParen())
      return failure();
    std::optional<ReduceKind> kind = parseReduce(reduce);
    if (!kind)
      return parser.emitError(loc) << "unknown partial reduction '" << reduce
                                   << "', expected sum, avg, max or min";
    result = Placement::partial(*kind);
    return success();
  }
  return parser.emitError(loc) << "unknown placement '" << keyword
                               << "', expected R, S(<dim>) or P(<reduce>)";
}

Attribute PlacementsAttr::parse(AsmParser &parser, Type) {
  FlatSymbolRefAttr mesh;
  SmallVector<Placement> placements;
  if (parser.parseLess() || parser.parseAttribute(mesh) ||
      parser.parseComma() ||
      parser.parseCommaSeparatedList(AsmParser::Delimiter::Square,
                                     [&] {
                                       Placement placement =
                                           Placement::replicate();
                                       if (parsePlacement(parser, placement))
                                         return failure();
                                       placements.push_back(placement);
                                       return success();
                                     }) ||
      parser.parseGreater())
    return {};
  return PlacementsAttr::getChecked(
      [&] { return parser.emitError(parser.getNameLoc()); },
      parser.getContext(), mesh, placements);
}

void PlacementsAttr::print(AsmPrinter &printer) const {
  printer << "<" << getMesh() << ", [";
  llvm::interleaveComma(getPlacements(), printer,
                        [&](const Placement &p) { printer << p.str(); });
  printer << "]>";
}

LogicalResult
PlacementsAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                       FlatSymbolRefAttr mesh, ArrayRef<Placement> placements) {
  if (!mesh)
    return emitError() << "placements need a mesh symbol";
  for (const Placement &p : placements)
    if (p.isShard() && p.getDim() < 0)
      return emitError() << "shard dim must be non-negative, got "
                         << p.getDim();
  return success();
}

bool PlacementsAttr::isFullyReplicated() const {
  return llvm::all_of(getPlacements(),
                      [](const Placement &p) { return p.isReplicate(); });
}

LogicalResult
PlacementsAttr::verifyFor(function_ref<InFlightDiagnostic()> emitError,
                          MeshOp mesh, int64_t rank) const {
  if (size() != mesh.getRank())
    return emitError() << "expected " << mesh.getRank()
                       << " placements (one per axis of mesh @"
                       << mesh.getSymName() << "), got " << size();
  for (auto [axis, p] : llvm::enumerate(getPlacements()))
    if (p.isShard() && p.getDim() >= rank)
      return emitError()
             << "placement " << p.str() << " on mesh axis \""
             << cast<StringAttr>(mesh.getAxisNames()[axis]).getValue()
             << "\" shards dim " << p.getDim() << " of a rank-" << rank
             << " tensor";
  return success();
}
