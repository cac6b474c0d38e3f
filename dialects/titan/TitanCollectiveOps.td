//===- TitanCollectiveOps.td - collectives on local tensors -*- tablegen -*-===//
//
// After titan-spmdize, communication is explicit. Every collective names the
// mesh and the mesh axes it runs over; the group of a rank is the set of ranks
// whose coordinates differ from its own only on those axes. When several axes
// are named, the group is ordered row-major over them (the first named axis is
// the outer one), which is also the order of the gathered/scattered chunks.
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_COLLECTIVE_OPS
#define TITAN_COLLECTIVE_OPS

/// An op over the groups of mesh axes. Common verifier: the mesh exists,
/// axes are non-empty, unique and name axes of it.
class Titan_MeshAxesOp<string mnemonic, list<Trait> traits = []>
    : Titan_Op<mnemonic, traits # [
        DeclareOpInterfaceMethods<Titan_CostOpInterface>]> {
  let hasVerifier = 1;
}

/// An op that moves data between the ranks of a group.
class Titan_CollectiveOp<string mnemonic, list<Trait> traits = []>
    : Titan_MeshAxesOp<mnemonic, traits # [
        DeclareOpInterfaceMethods<Titan_CollectiveOpInterface>]>;

def Titan_AllGatherOp : Titan_CollectiveOp<"all_gather", [Pure]> {
  let summary = "Concatenates the local tensors of a group along one dim";
  let description = [{
    Every rank of the group contributes its local tensor; every rank receives
    their concatenation along `gather_dim`, in group order. The result's
    `gather_dim` is the operand's times the group size; other dims agree.

    Example (group of 4 ranks along "fsdp"):

    ```mlir
    %w = titan.all_gather %shard on @mesh["fsdp"] dim 0
        : tensor<64x256xf32> -> tensor<256x256xf32>
    ```
  }];
  let arguments = (ins Titan_Tensor:$input, FlatSymbolRefAttr:$mesh,
                       Titan_MeshAxesAttr:$axes, I64Attr:$gather_dim);
  let results = (outs Titan_Tensor:$result);
  let assemblyFormat = [{
    $input `on` $mesh $axes `dim` $gather_dim attr-dict
    `:` type($input) `->` type($result)
  }];
}

def Titan_ReduceScatterOp : Titan_CollectiveOp<"reduce_scatter", [Pure]> {
  let summary = "Reduces the tensors of a group and scatters the result";
  let description = [{
    The group's tensors are reduced elementwise with `reduce`; rank `i` of the
    group receives chunk `i` of the reduction along `scatter_dim`. The
    operand's `scatter_dim` must be divisible by the group size (uneven shards
    are padded before this op, never here).

    Example:

    ```mlir
    %g = titan.reduce_scatter %partial on @mesh["fsdp"] dim 0 sum
        : tensor<256x256xf32> -> tensor<64x256xf32>
    ```
  }];
  let arguments = (ins Titan_FloatTensor:$input, FlatSymbolRefAttr:$mesh,
                       Titan_MeshAxesAttr:$axes, I64Attr:$scatter_dim,
                       Titan_ReduceKindAttr:$reduce);
  let results = (outs Titan_FloatTensor:$result);
  let assemblyFormat = [{
    $input `on` $mesh $axes `dim` $scatter_dim custom<ReduceKind>($reduce) attr-dict
    `:` type($input) `->` type($result)
  }];
}

def Titan_AllReduceOp : Titan_CollectiveOp<"all_reduce",
    [Pure, SameOperandsAndResultType]> {
  let summary = "Reduces the tensors of a group; every rank gets the result";
  let description = [{
    Example:

    ```mlir
    %g = titan.all_reduce %partial on @mesh["dp_replicate", "fsdp"] avg
        : tensor<256x256xf32>
    ```
  }];
  let arguments = (ins Titan_Tensor:$input, FlatSymbolRefAttr:$mesh,
                       Titan_MeshAxesAttr:$axes, Titan_ReduceKindAttr:$reduce);
  let results = (outs Titan_Tensor:$result);
  let assemblyFormat = [{
    $input `on` $mesh $axes custom<ReduceKind>($reduce) attr-dict `:` type($result)
  }];
}

def Titan_AllToAllOp : Titan_CollectiveOp<"all_to_all", [Pure]> {
  let summary = "Splits along one dim, exchanges, concatenates along another";
  let description = [{
    Each rank splits its tensor into group-size chunks along `split_dim` and
    sends chunk `j` to rank `j` of the group, then concatenates what it
    received along `concat_dim`, in group order. Turns `S(concat_dim)` into
    `S(split_dim)`. The operand's `split_dim` must be divisible by the group
    size; the result's `split_dim` is divided and its `concat_dim`
    multiplied by it. With `split_dim` = `concat_dim` the chunks of that dim
    are exchanged in place and the type is unchanged (the form
    titan-normalize-collectives gives the runtime: chunk `j` of dim 0 goes
    to rank `j`).

    Example:

    ```mlir
    %y = titan.all_to_all %x on @mesh["cp"] split 2 concat 1
        : tensor<2x8x16x64xf32> -> tensor<2x16x8x64xf32>
    ```
  }];
  let arguments = (ins Titan_Tensor:$input, FlatSymbolRefAttr:$mesh,
                       Titan_MeshAxesAttr:$axes, I64Attr:$split_dim,
                       I64Attr:$concat_dim);
  let results = (outs Titan_Tensor:$result);
  let assemblyFormat = [{
    $input `on` $mesh $axes `split` $split_dim `concat` $concat_dim attr-dict
    `:` type($input) `->` type($result)
  }];
}

def Titan_BroadcastOp : Titan_CollectiveOp<"broadcast",
    [Pure, SameOperandsAndResultType]> {
  let summary = "Copies the tensor of the group's root rank to the group";
  let description = [{
    `root` is the root's index in the group (row-major over `axes`) and must
    be smaller than the group size.

    Example:

    ```mlir
    %w = titan.broadcast %w0 on @mesh["dp_replicate"] root 0
        : tensor<256x256xf32>
    ```
  }];
  let arguments = (ins Titan_Tensor:$input, FlatSymbolRefAttr:$mesh,
                       Titan_MeshAxesAttr:$axes, I64Attr:$root);
  let results = (outs Titan_Tensor:$result);
  let assemblyFormat = [{
    $input `on` $mesh $axes `root` $root attr-dict `:` type($result)
  }];
}

def Titan_SendOp : Titan_CollectiveOp<"send"> {
  let summary = "Sends a tensor to the rank at another coordinate of one axis";
  let description = [{
    Point-to-point send to the rank whose coordinate on the single named axis
    is `peer` and whose other coordinates equal the sender's. Matched with the
    `titan.recv` of the same `tag` on the peer. Pipeline stages use it over
    the world mesh's "pp" axis.

    Example:

    ```mlir
    titan.send %act on @world["pp"] peer 1 tag 7 : tensor<2x64x256xf32>
    ```
  }];
  let arguments = (ins Titan_Tensor:$input, FlatSymbolRefAttr:$mesh,
                       Titan_MeshAxesAttr:$axes, I64Attr:$peer, I64Attr:$tag);
  let assemblyFormat = [{
    $input `on` $mesh $axes `peer` $peer `tag` $tag attr-dict `:` type($input)
  }];
}

def Titan_RecvOp : Titan_CollectiveOp<"recv"> {
  let summary = "Receives a tensor from the rank at another coordinate";
  let description = [{
    The counterpart of `titan.send`: receives the tensor sent with the same
    `tag` by the rank whose coordinate on the single named axis is `peer`.

    Example:

    ```mlir
    %act = titan.recv on @world["pp"] peer 0 tag 7 : tensor<2x64x256xf32>
    ```
  }];
  let arguments = (ins FlatSymbolRefAttr:$mesh, Titan_MeshAxesAttr:$axes,
                       I64Attr:$peer, I64Attr:$tag);
  let results = (outs Titan_Tensor:$result);
  let assemblyFormat = [{
    `on` $mesh $axes `peer` $peer `tag` $tag attr-dict `:` type($result)
  }];
}

def Titan_AxisIndexOp : Titan_MeshAxesOp<"axis_index", [Pure]> {
  let summary = "The rank's coordinate along mesh axes";
  let description = [{
    A 0-d integer tensor holding the calling rank's index in its group over
    the named axes: its coordinate on the axis when one axis is named, the
    row-major index over the named axes (the first one outer) otherwise, so
    it lies in [0, group size). The only rank-dependent value of an SPMD
    program: `titan-spmdize` uses it where a rank needs its own shard of a
    value every rank holds (R -> S, R -> P(sum), non-splat constants).

    Example (rank 5 of a mesh `["fsdp"=4, "tp"=2]` gets 2 for "fsdp"):

    ```mlir
    %i = titan.axis_index on @mesh ["fsdp"] : tensor<i64>
    ```
  }];
  let arguments = (ins FlatSymbolRefAttr:$mesh, Titan_MeshAxesAttr:$axes);
  let results = (outs 0DTensorOf<[I64, I32]>:$result);
  let assemblyFormat = [{
    `on` $mesh $axes attr-dict `:` type($result)
  }];
}

def Titan_WaitOp : Titan_Op<"wait", [Pure, AllTypesMatch<["input", "result"]>]> {
  let summary = "The point by which an asynchronous collective completes";
  let description = [{
    Returns its operand, the result of a collective. When that collective
    carries `titan.async` (titan-schedule-overlap), the executable issues it
    where it stands and lets it run on the communication stream while the
    ops between it and this wait compute; this wait is where the rank first
    needs its result, and blocks until it is there. The collective's
    operands and result stay allocated until the wait. Without
    `titan.async` the collective completes where it stands and the wait is
    free: the numbers are the same either way.

    Example (FSDP's all-gather of the next block's weight, issued before the
    current block computes):

    ```mlir
    %g = titan.all_gather %w on @mesh ["fsdp"] dim 0 {titan.async}
        : tensor<64x256xf32> -> tensor<256x256xf32>
    ...                                   // the current block's compute
    %w_full = titan.wait %g : tensor<256x256xf32>
    ```
  }];
  let arguments = (ins Titan_Tensor:$input);
  let results = (outs Titan_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($result)";
  let hasVerifier = 1;
}

#endif // TITAN_COLLECTIVE_OPS
