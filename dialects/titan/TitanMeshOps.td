//===- TitanMeshOps.td - mesh and redistribute -------------*- tablegen -*-===//

#ifndef TITAN_MESH_OPS
#define TITAN_MESH_OPS

def Titan_MeshOp : Titan_Op<"mesh", [Symbol, HasParent<"::mlir::ModuleOp">]> {
  let summary = "A named device mesh";
  let description = [{
    Declares a device mesh: named axes with sizes, in DTensor's mesh-dim order.
    Ranks are laid out row-major over the axes (as `init_device_mesh` does), so
    with axes `["fsdp"=4, "tp"=2]` rank 5 has coordinate (2, 1).

    Pipeline stages are not an axis of an SPMD program; each stage is its own
    program over the remaining axes.

    Example:

    ```mlir
    titan.mesh @mesh ["dp_replicate"=1, "fsdp"=4, "cp"=1, "tp"=2]
    ```

    Axis names must be unique and non-empty; sizes must be positive, and
    the mesh has at most `kMaxDevices` (2^20) devices: titan plans every
    rank's boxes and buffers ahead of time, so a larger mesh is refused
    rather than partitioned without end.
  }];
  let arguments = (ins SymbolNameAttr:$sym_name,
                       StrArrayAttr:$axis_names,
                       DenseI64ArrayAttr:$axis_sizes);
  let hasCustomAssemblyFormat = 1;
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// Number of axes.
    size_t getRank() { return getAxisSizes().size(); }
    /// Index of the axis called `name`, or nullopt.
    std::optional<unsigned> getAxisIndex(::llvm::StringRef name);
    /// The most devices a mesh may have.
    static constexpr int64_t kMaxDevices = int64_t(1) << 20;
    /// Product of all axis sizes: the number of ranks of the program.
    int64_t getNumDevices();
    /// Finds the mesh `symbol` from `from`'s nearest symbol table.
    static MeshOp lookup(::mlir::Operation *from,
                         ::mlir::FlatSymbolRefAttr symbol);
    /// The placement algebra's view of this mesh; emits an error on the op
    /// when the algebra refuses it.
    ::mlir::FailureOr<::mlir::titan::DeviceMesh> getDeviceMesh();
  }];
}

def Titan_RedistributeOp : Titan_Op<"redistribute",
    [Pure, SameOperandsAndResultType]> {
  let summary = "Changes the placements of a value in the global program";
  let description = [{
    The only op that changes how a value of the global program is laid out
    over the mesh. Its result has the placements `to`; the operand keeps
    whatever placements it had. `titan-spmdize` lowers it to collectives
    with the DTensor table (S->R all_gather, P->R all_reduce,
    P->S reduce_scatter, R->S local slice, S(i)->S(j) all_to_all), one mesh
    axis after the other.

    Example:

    ```mlir
    %1 = titan.redistribute %0 to <@mesh, [S(0), R]> : tensor<16x256xf32>
    ```

    The placements must name an existing mesh, have one entry per mesh axis,
    and shard only dimensions of the tensor.
  }];
  let arguments = (ins Titan_Tensor:$input, Titan_PlacementsAttr:$to);
  let results = (outs Titan_Tensor:$result);
  let assemblyFormat = [{
    $input `to` $to attr-dict `:` type($result)
  }];
  let hasVerifier = 1;
  let hasFolder = 1;
}

def Titan_LocalRedistributeOp : Titan_Op<"local_redistribute", [Pure]> {
  let summary = "Changes the placements of a value in the program of one rank";
  let description = [{
    The local form of `titan.redistribute`, which `titan-spmdize` leaves for
    `titan-redistribute-to-collectives`: the operand is the rank's shard of a
    value of type `global` under the placements `from`, the result its shard
    under `to` (both on one mesh). `titan-redistribute-to-collectives`
    replaces it with the collectives of the placement algebra's plan.

    Example (a weight gathered over "fsdp"=4):

    ```mlir
    %w = titan.local_redistribute %shard of tensor<256x256xf32>
        from <@mesh, [S(0)]> to <@mesh, [R]>
        : tensor<64x256xf32> -> tensor<256x256xf32>
    ```

    The placements must name one existing mesh and be valid for `global`;
    the operand and result types must be the local types of `global` under
    `from` and `to` (torch.chunk sizes, even shards).
  }];
  let arguments = (ins Titan_Tensor:$input, TypeAttrOf<AnyRankedTensor>:$global,
                       Titan_PlacementsAttr:$from, Titan_PlacementsAttr:$to);
  let results = (outs Titan_Tensor:$result);
  let assemblyFormat = [{
    $input `of` $global `from` $from `to` $to attr-dict
    `:` type($input) `->` type($result)
  }];
  let hasVerifier = 1;
}

#endif // TITAN_MESH_OPS
