// RUN: titan-opt %s --titan-sink-to-first-use | FileCheck %s

// The gathers of w and v sit at the top, as titan-spmdize leaves them; each
// moves (with the reshape of w, which moves first) right before its first
// user, since its result is at least as large as what it keeps alive
// longer (w and v are arguments). The reduction of %big stays: it holds 4
// bytes but would keep %big's 64 alive until %r's user. The dead negation
// stays too.

// CHECK-LABEL: func.func @train_step
// CHECK-NEXT: %[[BIG:.*]] = titan.exp %arg2
// CHECK-NEXT: %[[SUM:.*]] = titan.reduce_sum %[[BIG]]
// CHECK-NEXT: %[[DEAD:.*]] = titan.neg %arg2
// CHECK-NEXT: %[[E:.*]] = titan.exp %arg2
// CHECK-NEXT: %[[G:.*]] = titan.all_gather %arg0
// CHECK-NEXT: %[[R:.*]] = titan.reshape %[[G]]
// CHECK-NEXT: %[[A:.*]] = titan.add %[[E]], %[[R]]
// CHECK-NEXT: %[[V:.*]] = titan.all_gather %arg1
// CHECK-NEXT: %[[M:.*]] = titan.mul %[[A]], %[[V]]
// CHECK-NEXT: return %[[M]], %[[SUM]]

titan.mesh @mesh ["fsdp"=2]
func.func @train_step(
    %w: tensor<8xf32> {titan.name = "w", titan.role = "param"},
    %v: tensor<8xf32> {titan.name = "v", titan.role = "param"},
    %x: tensor<16xf32> {titan.name = "x", titan.role = "input"})
    -> (tensor<16xf32>, tensor<f32>) {
  %g = titan.all_gather %w on @mesh ["fsdp"] dim 0 : tensor<8xf32> -> tensor<16xf32>
  %r = titan.reshape %g : tensor<16xf32> -> tensor<16xf32>
  %vg = titan.all_gather %v on @mesh ["fsdp"] dim 0 : tensor<8xf32> -> tensor<16xf32>
  %big = titan.exp %x : tensor<16xf32>
  %sum = titan.reduce_sum %big dims [0] : tensor<16xf32> -> tensor<f32>
  %dead = titan.neg %x : tensor<16xf32>
  %e = titan.exp %x : tensor<16xf32>
  %a = titan.add %e, %r : tensor<16xf32>
  %m = titan.mul %a, %vg : tensor<16xf32>
  return %m, %sum : tensor<16xf32>, tensor<f32>
}
