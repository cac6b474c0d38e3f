// RUN: titan-opt %s --titan-fuse-adamw | FileCheck %s
// RUN: titan-opt %s --titan-fuse-adamw=adjacent-only=true | FileCheck %s --check-prefix=ADJACENT
// RUN: titan-opt %s --titan-fuse-kernels="runtime-ops=adamw" --titan-fuse-adamw --titan-lower-kernels --titan-plan-memory | FileCheck %s --check-prefix=PLAN
// RUN: titan-opt %s --titan-fuse-kernels="runtime-ops=adamw" --titan-fuse-adamw --titan-lower-kernels --titan-plan-memory --titan-lower-to-runtime | FileCheck %s --check-prefix=CALLS

// The AdamW steps that share lr, step, the clipping coefficient and the
// hyperparameters become one titan.fused_adamw where the last of them
// stood, gradients of different float types and the bf16 copy of one
// parameter included. A step whose result is read before the next step
// ends its group (%b's update, read by the add); a step with other
// hyperparameters (%d, no weight decay) is a group of its own.
// CHECK-LABEL: func.func @train_step
// CHECK-NEXT: %[[CLIP:.*]] = titan.scale
// CHECK-NEXT: %[[AB:.*]]:2, %[[ABM:.*]]:2, %[[ABV:.*]]:2, %[[COPY:.*]] = titan.fused_adamw params(%arg0, %arg1) grads(%arg8, %arg9) exp_avgs(%arg2, %arg3) exp_avg_sqs(%arg4, %arg5) lr %arg6 step %arg7 grad_scale %[[CLIP]] betas 9.000000e-01, 0.94999999999999996 eps 1.000000e-08 weight_decay 1.000000e-01 copies [0] : tensor<16x8xf32>, tensor<8xf32> grads tensor<16x8xbf16>, tensor<8xf32> copies tensor<16x8xbf16>
// CHECK-NEXT: %[[SUM:.*]] = titan.add %[[AB]]#1, %[[AB]]#1
// CHECK-NEXT: %[[C:.*]], %[[CM:.*]], %[[CV:.*]] = titan.fused_adamw params(%arg10) grads(%[[SUM]]) exp_avgs(%arg11) exp_avg_sqs(%arg12) lr %arg6 step %arg7 grad_scale %[[CLIP]] {{.*}} weight_decay 1.000000e-01 : tensor<8xf32> grads tensor<8xf32>
// CHECK-NEXT: %[[D:.*]], %[[DM:.*]], %[[DV:.*]] = titan.fused_adamw params(%arg13) grads(%arg14) exp_avgs(%arg15) exp_avg_sqs(%arg16) lr %arg6 step %arg7 grad_scale %[[CLIP]] {{.*}} weight_decay 0.000000e+00 : tensor<8xf32> grads tensor<8xf32>
// CHECK-NOT: titan.adamw
// CHECK: return %[[AB]]#0, %[[AB]]#1, %[[ABM]]#0, %[[ABM]]#1, %[[ABV]]#0, %[[ABV]]#1, %[[COPY]], %[[C]], %[[CM]], %[[CV]], %[[D]], %[[DM]], %[[DV]] :

// Each parameter and its moments are updated in place in their state
// arguments' places; the copy goes to its own argument's place.
// PLAN: titan.fused_adamw {{.*}} {titan.buffers = [#titan.buffer<state[0, 512]>, #titan.buffer<state[512, 32]>, #titan.buffer<state[576, 512]>, #titan.buffer<state[1088, 32]>, #titan.buffer<state[1152, 512]>, #titan.buffer<state[1664, 32]>, #titan.buffer<state[{{[0-9]+}}, 256]>]}

// One call per group, after the table of its tensors is filled in the
// step's frame (allocated in its entry block, the first call's last):
// eleven fields per tensor (eight pointers, the elements, the gradient's
// and the parameter's dtypes: bf16 = 2, f32 = 0).
// CALLS: llvm.func @titan_program_step
// CALLS-COUNT-2: llvm.alloca %{{.*}} x !llvm.struct<(ptr, ptr, ptr, ptr, ptr, ptr, ptr, ptr, i64, i32, i32)>
// CALLS: %[[TABLE:.*]] = llvm.alloca %{{.*}} x !llvm.struct<(ptr, ptr, ptr, ptr, ptr, ptr, ptr, ptr, i64, i32, i32)> {alignment = 8 : i64} : (i64) -> !llvm.ptr
// CALLS-NOT: llvm.alloca
// The first tensor's gradient is at arena offset 128, then its elements:
// CALLS: llvm.mlir.constant(128 : i64) : i64
// CALLS: %[[NUMEL:.*]] = llvm.mlir.constant(128 : i64) : i64
// CALLS-NEXT: %[[BF16:.*]] = llvm.mlir.constant(2 : i32) : i32
// CALLS-NEXT: %[[PARAM_F32:.*]] = llvm.mlir.constant(0 : i32) : i32
// CALLS-NEXT: llvm.getelementptr %[[TABLE]][0, 0]
// CALLS: %[[FIELD8:.*]] = llvm.getelementptr %[[TABLE]][0, 8]
// CALLS-NEXT: llvm.store %[[NUMEL]], %[[FIELD8]] : i64, !llvm.ptr
// CALLS-NEXT: %[[FIELD9:.*]] = llvm.getelementptr %[[TABLE]][0, 9]
// CALLS-NEXT: llvm.store %[[BF16]], %[[FIELD9]] : i32, !llvm.ptr
// CALLS-NEXT: %[[FIELD10:.*]] = llvm.getelementptr %[[TABLE]][0, 10]
// CALLS-NEXT: llvm.store %[[PARAM_F32]], %[[FIELD10]] : i32, !llvm.ptr
// CALLS: %[[ELEMENTS:.*]] = llvm.mlir.constant(8 : i64) : i64
// CALLS-NEXT: %[[F32:.*]] = llvm.mlir.constant(0 : i32) : i32
// CALLS-NEXT: llvm.mlir.constant(0 : i32) : i32
// CALLS-NEXT: llvm.getelementptr %[[TABLE]][1, 0]
// CALLS: %[[COUNT:.*]] = llvm.mlir.constant(2 : i64) : i64
// CALLS: llvm.call @titanrt_fused_adamw(%arg0, %[[TABLE]], %[[COUNT]], %{{.*}}) : (!llvm.ptr, !llvm.ptr, i64, !llvm.ptr, !llvm.ptr, !llvm.ptr, f64, f64, f64, f64) -> i32
// CALLS-COUNT-2: llvm.call @titanrt_fused_adamw(

titan.mesh @mesh ["dp"=1]
func.func @train_step(%a: tensor<16x8xf32> {titan.name = "a", titan.role = "param", titan.placements = #titan.placements<@mesh, [R]>},
                      %b: tensor<8xf32> {titan.name = "b", titan.role = "param", titan.placements = #titan.placements<@mesh, [R]>},
                      %ma: tensor<16x8xf32> {titan.name = "exp_avg.a", titan.role = "state", titan.placements = #titan.placements<@mesh, [R]>},
                      %mb: tensor<8xf32> {titan.name = "exp_avg.b", titan.role = "state", titan.placements = #titan.placements<@mesh, [R]>},
                      %va: tensor<16x8xf32> {titan.name = "exp_avg_sq.a", titan.role = "state", titan.placements = #titan.placements<@mesh, [R]>},
                      %vb: tensor<8xf32> {titan.name = "exp_avg_sq.b", titan.role = "state", titan.placements = #titan.placements<@mesh, [R]>},
                      %lr: tensor<f32> {titan.name = "lr", titan.role = "input", titan.placements = #titan.placements<@mesh, [R]>},
                      %step: tensor<f32> {titan.name = "step", titan.role = "input", titan.placements = #titan.placements<@mesh, [R]>},
                      %ga: tensor<16x8xbf16> {titan.name = "ga", titan.role = "input", titan.placements = #titan.placements<@mesh, [R]>},
                      %gb: tensor<8xf32> {titan.name = "gb", titan.role = "input", titan.placements = #titan.placements<@mesh, [R]>},
                      %c: tensor<8xf32> {titan.name = "c", titan.role = "param", titan.placements = #titan.placements<@mesh, [R]>},
                      %mc: tensor<8xf32> {titan.name = "exp_avg.c", titan.role = "state", titan.placements = #titan.placements<@mesh, [R]>},
                      %vc: tensor<8xf32> {titan.name = "exp_avg_sq.c", titan.role = "state", titan.placements = #titan.placements<@mesh, [R]>},
                      %d: tensor<8xf32> {titan.name = "d", titan.role = "param", titan.placements = #titan.placements<@mesh, [R]>},
                      %gd: tensor<8xf32> {titan.name = "gd", titan.role = "input", titan.placements = #titan.placements<@mesh, [R]>},
                      %md: tensor<8xf32> {titan.name = "exp_avg.d", titan.role = "state", titan.placements = #titan.placements<@mesh, [R]>},
                      %vd: tensor<8xf32> {titan.name = "exp_avg_sq.d", titan.role = "state", titan.placements = #titan.placements<@mesh, [R]>},
                      %ca: tensor<16x8xbf16> {titan.name = "a", titan.role = "param_copy", titan.placements = #titan.placements<@mesh, [R]>})
    -> (tensor<16x8xf32> {titan.name = "param.a"}, tensor<8xf32> {titan.name = "param.b"},
        tensor<16x8xf32> {titan.name = "exp_avg.a"}, tensor<8xf32> {titan.name = "exp_avg.b"},
        tensor<16x8xf32> {titan.name = "exp_avg_sq.a"}, tensor<8xf32> {titan.name = "exp_avg_sq.b"},
        tensor<16x8xbf16> {titan.name = "a"},
        tensor<8xf32> {titan.name = "param.c"}, tensor<8xf32> {titan.name = "exp_avg.c"}, tensor<8xf32> {titan.name = "exp_avg_sq.c"},
        tensor<8xf32> {titan.name = "param.d"}, tensor<8xf32> {titan.name = "exp_avg.d"}, tensor<8xf32> {titan.name = "exp_avg_sq.d"}) {
  %clip = titan.scale %lr by 2.000000e+00 : tensor<f32>
  %a1:4 = titan.adamw %a, %ga, %ma, %va lr %lr step %step grad_scale %clip betas 9.000000e-01, 9.500000e-01 eps 1.000000e-08 weight_decay 1.000000e-01 : tensor<16x8xf32>, tensor<16x8xbf16> copy tensor<16x8xbf16>
  %b1:3 = titan.adamw %b, %gb, %mb, %vb lr %lr step %step grad_scale %clip betas 9.000000e-01, 9.500000e-01 eps 1.000000e-08 weight_decay 1.000000e-01 : tensor<8xf32>, tensor<8xf32>
  %gc = titan.add %b1#0, %b1#0 : tensor<8xf32>
  %c1:3 = titan.adamw %c, %gc, %mc, %vc lr %lr step %step grad_scale %clip betas 9.000000e-01, 9.500000e-01 eps 1.000000e-08 weight_decay 1.000000e-01 : tensor<8xf32>, tensor<8xf32>
  %d1:3 = titan.adamw %d, %gd, %md, %vd lr %lr step %step grad_scale %clip betas 9.000000e-01, 9.500000e-01 eps 1.000000e-08 weight_decay 0.000000e+00 : tensor<8xf32>, tensor<8xf32>
  return %a1#0, %b1#0, %a1#1, %b1#1, %a1#2, %b1#2, %a1#3, %c1#0, %c1#1, %c1#2, %d1#0, %d1#1, %d1#2 : tensor<16x8xf32>, tensor<8xf32>, tensor<16x8xf32>, tensor<8xf32>, tensor<16x8xf32>, tensor<8xf32>, tensor<16x8xbf16>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>
}

// Steps that titan-step-in-backward spread through the backward: by
// default the two fuse where the second stands; with adjacent-only each
// stays where it is (the negation between them), a call of its own.
// CHECK-LABEL: func.func @spread
// CHECK-NEXT: titan.neg
// CHECK-NEXT: titan.fused_adamw params(%arg0, %arg3)
// ADJACENT-LABEL: func.func @spread
// ADJACENT-NEXT: titan.fused_adamw params(%arg0)
// ADJACENT-NEXT: titan.neg
// ADJACENT-NEXT: titan.fused_adamw params(%arg3)
func.func @spread(%p: tensor<8xf32>, %m: tensor<8xf32>, %v: tensor<8xf32>,
                  %q: tensor<8xf32>, %n: tensor<8xf32>, %w: tensor<8xf32>,
                  %lr: tensor<f32>, %step: tensor<f32>, %g: tensor<8xf32>)
    -> (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) {
  %p1:3 = titan.adamw %p, %g, %m, %v lr %lr step %step betas 9.000000e-01, 9.500000e-01 eps 1.000000e-08 weight_decay 1.000000e-01 : tensor<8xf32>, tensor<8xf32>
  %h = titan.neg %g : tensor<8xf32>
  %q1:3 = titan.adamw %q, %h, %n, %w lr %lr step %step betas 9.000000e-01, 9.500000e-01 eps 1.000000e-08 weight_decay 1.000000e-01 : tensor<8xf32>, tensor<8xf32>
  return %p1#0, %p1#1, %p1#2, %q1#0, %q1#1, %q1#2, %h : tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>
}
