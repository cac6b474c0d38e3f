//===- TitanExecutableOps.td - ops of the executable program -*- tablegen -*-===//
//
// After titan-fuse-kernels, the local program of a rank is a host function
// that sequences runtime ops (matmul, attention, collectives, ...) and calls
// of generated kernels; the kernels are functions of their own, compiled to
// native loops.
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_EXECUTABLE_OPS
#define TITAN_EXECUTABLE_OPS

def Titan_LaunchOp : Titan_Op<"launch", [Pure,
    DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "Calls a generated kernel";
  let description = [{
    Runs the kernel function `kernel` (a `func.func` marked `titan.kernel`)
    on `inputs` and returns its results. titan-fuse-kernels outlines each
    group of fused elementwise, reduction and shape ops into such a kernel;
    identical groups share one kernel.

    While the kernel is a function on tensors, its type is the launch's.
    Once titan-lower-kernels has compiled it to loops on memrefs, it takes
    one memref per input, then one per result (destination-passing style),
    then its scratch buffers; shapes and element types agree with the
    launch's tensors.

    Example:

    ```mlir
    %y = titan.launch @kernel_3(%x, %w) : (tensor<2x64x256xf32>, tensor<256xf32>)
        -> tensor<2x64x256xf32>
    ```
  }];
  let arguments = (ins FlatSymbolRefAttr:$kernel,
                       Variadic<Titan_Tensor>:$inputs);
  let results = (outs Variadic<Titan_Tensor>:$results);
  let assemblyFormat = [{
    $kernel `(` $inputs `)` attr-dict `:` functional-type($inputs, $results)
  }];
}

#endif // TITAN_EXECUTABLE_OPS
