// RUN: titan-opt %s --titan-fuse-kernels="runtime-ops=adamw" | FileCheck %s --check-prefix=HOST
// RUN: titan-opt %s --titan-fuse-kernels | FileCheck %s --check-prefix=FUSED
// RUN: titan-opt %s --titan-fuse-kernels="runtime-ops=adamw" --titan-fuse-adamw --titan-lower-kernels --titan-plan-memory | FileCheck %s --check-prefix=PLAN
// RUN: titan-opt %s --titan-fuse-kernels="runtime-ops=adamw" --titan-fuse-adamw --titan-lower-kernels --titan-plan-memory --titan-lower-to-runtime | FileCheck %s --check-prefix=CALLS

// With runtime-ops=adamw, an AdamW of an f32 or bf16 parameter (its
// gradient f32 or bf16) stays a host op for the runtime (titan-fuse-adamw
// makes it a titanrt_fused_adamw call); one of an f16 parameter is not the
// runtime's and is expanded: its update, the step's scalars included, one
// kernel of three results. Without the option all are expanded.
// HOST-LABEL: func.func @train_step
// HOST: %[[CLIP:.*]] = titan.launch @kernel_scale(%arg8)
// HOST-NEXT: titan.adamw %arg0, %arg6, %arg2, %arg4 lr %arg8 step %arg9 grad_scale %[[CLIP]] betas 9.000000e-01, 0.94999999999999996 eps 1.000000e-08 weight_decay 1.000000e-01 : tensor<16x8xf32>, tensor<16x8xbf16>
// HOST-NEXT: titan.adamw %arg1, %arg7, %arg3, %arg5 lr %arg8 step %arg9 betas {{.*}} : tensor<8xbf16>, tensor<8xbf16>
// A gradient widened from bf16 only for it is read before the cast: the
// runtime widens it.
// HOST-NOT: titan.cast
// HOST: titan.adamw %arg10, %arg13, %arg11, %arg12 lr %arg8 step %arg9 betas {{.*}} : tensor<8xf32>, tensor<8xbf16>
// HOST-NEXT: titan.launch @[[F16:.*]](%arg8, %arg9, %arg17, %arg14, %arg15, %arg16) : {{.*}} -> (tensor<8xf16>, tensor<8xf16>, tensor<8xf16>)
// HOST-NOT: titan.adamw
// HOST: func.func private @[[F16]]
// HOST: titan.exp {{.*}} : tensor<f64>

// A bf16 or f16 parameter and its moments update in f32, each result
// rounded to their type once (torch's fused AdamW): the kernel widens them,
// computes in f32 and narrows the three results.
// FUSED-LABEL: func.func @train_step
// FUSED-NOT: titan.adamw
// FUSED: titan.launch {{.*}} -> (tensor<16x8xf32>, tensor<16x8xf32>, tensor<16x8xf32>)
// FUSED: titan.launch @[[BF16:[a-z_0-9]+]]({{.*}} -> (tensor<8xbf16>, tensor<8xbf16>, tensor<8xbf16>)
// FUSED-NOT: titan.adamw
// FUSED: func.func private @[[BF16]](
// FUSED: titan.cast %arg{{.*}} : tensor<8xbf16> to tensor<8xf32>
// FUSED: titan.cast %arg{{.*}} : tensor<8xbf16> to tensor<8xf32>
// FUSED: titan.cast %arg{{.*}} : tensor<8xbf16> to tensor<8xf32>
// FUSED: titan.cast %arg{{.*}} : tensor<8xbf16> to tensor<8xf32>
// FUSED-NOT: tensor<8xbf16>
// FUSED: titan.sqrt {{.*}} : tensor<8xf32>
// FUSED-NOT: tensor<8xbf16>
// FUSED-COUNT-3: titan.cast {{.*}} : tensor<8xf32> to tensor<8xbf16>
// FUSED-NEXT: return

// The runtime's AdamW writes the parameter and both moments in place: its
// buffers are the state arguments' places, and the arena holds only the
// clipping coefficient.
// PLAN: func.func @train_step(%arg0: {{.*}}titan.buffer<state[0, 512]>{{.*}}%arg2: {{.*}}titan.buffer<state[576, 512]>{{.*}}%arg4: {{.*}}titan.buffer<state[1152, 512]>
// PLAN-SAME: titan.memory_plan = {arena_bytes = 64 : i64
// PLAN: titan.fused_adamw params(%arg0) {{.*}} {titan.buffers = [#titan.buffer<state[0, 512]>, #titan.buffer<state[576, 512]>, #titan.buffer<state[1152, 512]>]}

// The calls: w's step (the clipping coefficient), b's and c's (none), each
// one titanrt_fused_adamw of one tensor (titan-fuse-adamw.mlir tests the
// table).
// CALLS-COUNT-3: llvm.call @titanrt_fused_adamw(%arg0, %{{.*}}) : (!llvm.ptr, !llvm.ptr, i64, !llvm.ptr, !llvm.ptr, !llvm.ptr, f64, f64, f64, f64) -> i32
// CALLS-NOT: llvm.call @titanrt_fused_adamw(

titan.mesh @mesh ["dp"=1]
func.func @train_step(%w: tensor<16x8xf32> {titan.name = "w", titan.role = "param", titan.placements = #titan.placements<@mesh, [R]>},
                      %b: tensor<8xbf16> {titan.name = "b", titan.role = "param", titan.placements = #titan.placements<@mesh, [R]>},
                      %mw: tensor<16x8xf32> {titan.name = "exp_avg.w", titan.role = "state", titan.placements = #titan.placements<@mesh, [R]>},
                      %mb: tensor<8xbf16> {titan.name = "exp_avg.b", titan.role = "state", titan.placements = #titan.placements<@mesh, [R]>},
                      %vw: tensor<16x8xf32> {titan.name = "exp_avg_sq.w", titan.role = "state", titan.placements = #titan.placements<@mesh, [R]>},
                      %vb: tensor<8xbf16> {titan.name = "exp_avg_sq.b", titan.role = "state", titan.placements = #titan.placements<@mesh, [R]>},
                      %gw: tensor<16x8xbf16> {titan.name = "gw", titan.role = "input", titan.placements = #titan.placements<@mesh, [R]>},
                      %gb: tensor<8xbf16> {titan.name = "gb", titan.role = "input", titan.placements = #titan.placements<@mesh, [R]>},
                      %lr: tensor<f32> {titan.name = "lr", titan.role = "input", titan.placements = #titan.placements<@mesh, [R]>},
                      %step: tensor<f32> {titan.name = "step", titan.role = "input", titan.placements = #titan.placements<@mesh, [R]>},
                      %c: tensor<8xf32> {titan.name = "c", titan.role = "param", titan.placements = #titan.placements<@mesh, [R]>},
                      %mc: tensor<8xf32> {titan.name = "exp_avg.c", titan.role = "state", titan.placements = #titan.placements<@mesh, [R]>},
                      %vc: tensor<8xf32> {titan.name = "exp_avg_sq.c", titan.role = "state", titan.placements = #titan.placements<@mesh, [R]>},
                      %gc: tensor<8xbf16> {titan.name = "gc", titan.role = "input", titan.placements = #titan.placements<@mesh, [R]>},
                      %h: tensor<8xf16> {titan.name = "h", titan.role = "param", titan.placements = #titan.placements<@mesh, [R]>},
                      %mh: tensor<8xf16> {titan.name = "exp_avg.h", titan.role = "state", titan.placements = #titan.placements<@mesh, [R]>},
                      %vh: tensor<8xf16> {titan.name = "exp_avg_sq.h", titan.role = "state", titan.placements = #titan.placements<@mesh, [R]>},
                      %gh: tensor<8xf16> {titan.name = "gh", titan.role = "input", titan.placements = #titan.placements<@mesh, [R]>})
    -> (tensor<16x8xf32> {titan.name = "param.w"}, tensor<8xbf16> {titan.name = "param.b"},
        tensor<16x8xf32> {titan.name = "exp_avg.w"}, tensor<8xbf16> {titan.name = "exp_avg.b"},
        tensor<16x8xf32> {titan.name = "exp_avg_sq.w"}, tensor<8xbf16> {titan.name = "exp_avg_sq.b"},
        tensor<8xf32> {titan.name = "param.c"}, tensor<8xf32> {titan.name = "exp_avg.c"}, tensor<8xf32> {titan.name = "exp_avg_sq.c"},
        tensor<8xf16> {titan.name = "param.h"}, tensor<8xf16> {titan.name = "exp_avg.h"}, tensor<8xf16> {titan.name = "exp_avg_sq.h"}) {
  %clip = titan.scale %lr by 2.000000e+00 : tensor<f32>
  %w1:3 = titan.adamw %w, %gw, %mw, %vw lr %lr step %step grad_scale %clip betas 9.000000e-01, 9.500000e-01 eps 1.000000e-08 weight_decay 1.000000e-01 : tensor<16x8xf32>, tensor<16x8xbf16>
  %b1:3 = titan.adamw %b, %gb, %mb, %vb lr %lr step %step betas 9.000000e-01, 9.500000e-01 eps 1.000000e-08 weight_decay 0.000000e+00 : tensor<8xbf16>, tensor<8xbf16>
  %gc32 = titan.cast %gc : tensor<8xbf16> to tensor<8xf32>
  %c1:3 = titan.adamw %c, %gc32, %mc, %vc lr %lr step %step betas 9.000000e-01, 9.500000e-01 eps 1.000000e-08 weight_decay 1.000000e-01 : tensor<8xf32>, tensor<8xf32>
  %h1:3 = titan.adamw %h, %gh, %mh, %vh lr %lr step %step betas 9.000000e-01, 9.500000e-01 eps 1.000000e-08 weight_decay 1.000000e-01 : tensor<8xf16>, tensor<8xf16>
  return %w1#0, %b1#0, %w1#1, %b1#1, %w1#2, %b1#2, %c1#0, %c1#1, %c1#2, %h1#0, %h1#1, %h1#2 : tensor<16x8xf32>, tensor<8xbf16>, tensor<16x8xf32>, tensor<8xbf16>, tensor<16x8xf32>, tensor<8xbf16>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf16>, tensor<8xf16>, tensor<8xf16>
}
