//===- TitanAttrs.td - titan attributes --------------------*- tablegen -*-===//

#ifndef TITAN_ATTRS
#define TITAN_ATTRS

include "TitanDialect.td"
include "mlir/IR/EnumAttr.td"
include "mlir/IR/BuiltinAttributeInterfaces.td"

class Titan_Attr<string name, string attrMnemonic, list<Trait> traits = []>
    : AttrDef<Titan_Dialect, name, traits> {
  let mnemonic = attrMnemonic;
}

def Titan_ReduceKindAttr : Titan_Attr<"ReduceKind", "reduce"> {
  let summary = "A reduction: sum, avg, max or min";
  let description = [{
    The reduction of a collective or of a Partial placement.

    Example: `#titan.reduce<sum>`; inside ops it prints as the bare keyword.
  }];
  let parameters = (ins "::mlir::titan::ReduceKind":$value);
  let hasCustomAssemblyFormat = 1;
}

def Titan_PlacementsAttr : Titan_Attr<"Placements", "placements"> {
  let summary = "DTensor placements of a tensor over a named mesh";
  let description = [{
    One placement per mesh axis, in the mesh's axis order:

    - `S(d)`: tensor dimension `d` is split across the ranks of the axis
      (torch.chunk sizes: the last ranks may hold less, or nothing);
    - `R`: every rank of the axis holds the whole tensor;
    - `P(sum|avg|max|min)`: every rank holds a partial value; the tensor is
      their reduction.

    Several axes may shard the same tensor dimension; they split it in mesh
    axis order (the outer axis first), as DTensor does.

    Example:

    ```mlir
    #titan.placements<@mesh, [S(0), R, P(sum)]>
    ```

    The attribute checks what it can alone (a shard dim is non-negative); the
    number of placements and the shard dims are checked against the mesh and
    the tensor where the attribute is used.
  }];
  let parameters = (ins "::mlir::FlatSymbolRefAttr":$mesh,
                        ArrayRefParameter<"::mlir::titan::Placement">:$placements);
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// Number of mesh axes the attribute describes.
    size_t size() const { return getPlacements().size(); }
    /// True when no axis shards or leaves the value partial.
    bool isFullyReplicated() const;
    /// Verifies the placements against `mesh` and a tensor of rank `rank`;
    /// reports through `emitError`.
    ::llvm::LogicalResult verifyFor(
        ::llvm::function_ref<::mlir::InFlightDiagnostic()> emitError,
        MeshOp mesh, int64_t rank) const;
  }];
}

#endif // TITAN_ATTRS
