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

def Titan_MemoryRegion : I32EnumAttr<"MemoryRegion",
    "a memory region of a rank", [
      I32EnumAttrCase<"Arena", 0, "arena">,
      I32EnumAttrCase<"State", 1, "state">,
      I32EnumAttrCase<"Inputs", 2, "inputs">]> {
  let cppNamespace = "::mlir::titan";
  let genSpecializedAttr = 0;
}

def Titan_BufferAttr : Titan_Attr<"Buffer", "buffer"> {
  let summary = "Where a value lives in a rank's memory";
  let description = [{
    The place `titan-plan-memory` gave a value of the executable program:
    `bytes` bytes at byte `offset` of one of the rank's three memory
    regions, each allocated once by the runtime:

    - `arena`: everything transient of a step (activations, gradients,
      collective buffers, kernel scratch), reused across lifetimes;
    - `state`: what persists across steps (parameters, optimizer moments,
      buffers such as RoPE tables);
    - `inputs`: what the runtime writes before each step (the batch, the
      learning rate, the step number).

    Example: `#titan.buffer<arena[4096, 65536]>`. The offset is a multiple
    of the planner's alignment (64 bytes); both are non-negative.
  }];
  let parameters = (ins EnumParameter<Titan_MemoryRegion>:$region,
                        "int64_t":$offset, "int64_t":$bytes);
  let assemblyFormat = "`<` $region `[` $offset `,` $bytes `]` `>`";
  let genVerifyDecl = 1;
}

#endif // TITAN_ATTRS
