//===- TitanComputeOps.td - tensor compute ops -------------*- tablegen -*-===//
//
// The compute of a Llama-class training step on global (or, after spmdize,
// local) tensors.
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_COMPUTE_OPS
#define TITAN_COMPUTE_OPS

/// Elementwise binary arithmetic on operands of one type.
class Titan_BinaryOp<string mnemonic, list<Trait> traits = []>
    : Titan_Op<mnemonic, traits # [Pure, SameOperandsAndResultType,
        Elementwise, DeclareOpInterfaceMethods<Titan_CostOpInterface>]> {
  let arguments = (ins Titan_FloatTensor:$lhs, Titan_FloatTensor:$rhs);
  let results = (outs Titan_FloatTensor:$result);
  let assemblyFormat = "$lhs `,` $rhs attr-dict `:` type($result)";
}

def Titan_AddOp : Titan_BinaryOp<"add", [Commutative]> {
  let summary = "Elementwise addition";
  let description = [{
    Example:

    ```mlir
    %2 = titan.add %0, %1 : tensor<2x64x256xf32>
    ```
  }];
}

#endif // TITAN_COMPUTE_OPS
