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

def Titan_FusedAdamWOp : Titan_Op<"fused_adamw", [Pure,
    AttrSizedOperandSegments, AttrSizedResultSegments,
    DeclareOpInterfaceMethods<Titan_CostOpInterface>,
    RangedTypesMatchWith<"exp_avgs have the parameters' types", "params",
                         "exp_avgs", "$_self">,
    RangedTypesMatchWith<"exp_avg_sqs have the parameters' types", "params",
                         "exp_avg_sqs", "$_self">,
    RangedTypesMatchWith<"new_params have the parameters' types", "params",
                         "new_params", "$_self">,
    RangedTypesMatchWith<"new_exp_avgs have the parameters' types", "params",
                         "new_exp_avgs", "$_self">,
    RangedTypesMatchWith<"new_exp_avg_sqs have the parameters' types",
                         "params", "new_exp_avg_sqs", "$_self">]> {
  let summary = "The AdamW step of many parameters in one runtime call";
  let description = [{
    `titan.adamw` of each parameter `params[i]` with `grads[i]`,
    `exp_avgs[i]` and `exp_avg_sqs[i]`, all sharing `lr`, `step`,
    `grad_scale` and the hyperparameters: the updates are each
    `titan.adamw`'s, element for element. titan-fuse-adamw builds it from
    the `titan.adamw` ops titan-fuse-kernels left to the runtime, so that a
    rank's optimizer is one `titanrt_fused_adamw` call (on a GPU one launch
    for all its parameters, as `torch.optim.AdamW(fused=True)`) instead of
    one per parameter.

    Gradients may differ in float type from one parameter to the next.
    `copied` lists, in increasing order, the parameters whose updated value
    is also returned rounded to a narrower float type (`titan.adamw`'s
    `new_param_copy`): `new_param_copies[j]` is that of `params[copied[j]]`.

    Example:

    ```mlir
    %p:2, %m:2, %v:2, %c = titan.fused_adamw params(%p0, %p1)
        grads(%g0, %g1) exp_avgs(%m0, %m1) exp_avg_sqs(%v0, %v1)
        lr %lr step %step betas 9.000000e-01, 9.500000e-01
        eps 1.000000e-08 weight_decay 1.000000e-01 copies [1]
        : tensor<64xf32>, tensor<64x64xf32>
          grads tensor<64xf32>, tensor<64x64xbf16>
          copies tensor<64x64xbf16>
    ```
  }];
  let arguments = (ins Variadic<Titan_FloatTensor>:$params,
                       Variadic<Titan_FloatTensor>:$grads,
                       Variadic<Titan_FloatTensor>:$exp_avgs,
                       Variadic<Titan_FloatTensor>:$exp_avg_sqs,
                       Titan_ScalarF32:$lr, Titan_ScalarF32:$step,
                       Optional<Titan_ScalarF32>:$grad_scale, F64Attr:$beta1,
                       F64Attr:$beta2, F64Attr:$eps, F64Attr:$weight_decay,
                       OptionalAttr<DenseI64ArrayAttr>:$copied);
  let results = (outs Variadic<Titan_FloatTensor>:$new_params,
                      Variadic<Titan_FloatTensor>:$new_exp_avgs,
                      Variadic<Titan_FloatTensor>:$new_exp_avg_sqs,
                      Variadic<Titan_FloatTensor>:$new_param_copies);
  let assemblyFormat = [{
    `params` `(` $params `)` `grads` `(` $grads `)`
    `exp_avgs` `(` $exp_avgs `)` `exp_avg_sqs` `(` $exp_avg_sqs `)`
    `lr` $lr `step` $step (`grad_scale` $grad_scale^)? `betas` $beta1 `,`
    $beta2 `eps` $eps `weight_decay` $weight_decay (`copies` $copied^)?
    attr-dict `:` custom<UpdatedTypes>(type($params), type($new_params),
        type($new_exp_avgs), type($new_exp_avg_sqs))
    `grads` type($grads) (`copies` type($new_param_copies)^)?
  }];
  let hasVerifier = 1;
}

def Titan_SquaredNormOp : Titan_Op<"squared_norm", [Pure,
    DeclareOpInterfaceMethods<Titan_CostOpInterface>]> {
  let summary = "The sum of the squares of every element of many tensors";
  let description = [{
    Sums `x * x` over every element `x` of every tensor of `inputs`: each
    element widened to f32 and squared in f32, the squares summed in f64 (in
    an order the op leaves open), the total rounded to f32 once. It is the
    squared global norm of the gradients that gradient clipping computes
    (torch.nn.utils.clip_grad_norm_, whose `torch._foreach_norm` reads all
    of them in one launch): titan-fuse-kernels builds it with `runtime-ops`
    squared_norm (the CUDA backend's default) from the per-tensor
    `titan.reduce_sum` of `titan.mul(x, x)` that a sum adds, so that the
    runtime reads every gradient in one call (`titanrt_squared_norm`)
    instead of one reduction kernel per parameter.

    Example:

    ```mlir
    %s = titan.squared_norm %g0, %g1 : tensor<64xf32>, tensor<64x64xbf16>
    ```
  }];
  let arguments = (ins Variadic<Titan_FloatTensor>:$inputs);
  let results = (outs Titan_ScalarF32:$result);
  let assemblyFormat = [{
    $inputs attr-dict `:` type($inputs)
  }];
  let hasVerifier = 1;
}

#endif // TITAN_EXECUTABLE_OPS
