// RUN: titan-opt %s --split-input-file --titan-materialize-redistributes | FileCheck %s

// The placements an op needs of its operands become redistributes: one per
// (value, placements), right after the value's definition, shared by every
// use; a returned value is redistributed to its pinned result placements.

titan.mesh @mesh ["dp"=2]

// CHECK-LABEL: func.func @shared
// CHECK-SAME: %[[W:[^:]*]]: tensor<8x4xf32> {titan.placements = #titan.placements<@mesh, [S(0)]>}
// CHECK-NEXT: %[[G:.*]] = titan.redistribute %[[W]] to <@mesh, [R]> {titan.placements = [#titan.placements<@mesh, [R]>]} : tensor<8x4xf32>
// CHECK-NEXT: %[[A:.*]] = titan.neg %[[G]] {titan.placements = [#titan.placements<@mesh, [R]>]}
// CHECK-NEXT: %[[B:.*]] = titan.exp %[[G]] {titan.placements = [#titan.placements<@mesh, [R]>]}
// CHECK-NEXT: %[[S:.*]] = titan.add %[[A]], %[[B]] {titan.placements = [#titan.placements<@mesh, [R]>]}
// CHECK-NEXT: %[[P:.*]] = titan.redistribute %[[S]] to <@mesh, [S(0)]>
// CHECK-NEXT: return %[[P]]
// CHECK-NOT: titan.operand_placements
func.func @shared(%w: tensor<8x4xf32> {titan.placements = #titan.placements<@mesh, [S(0)]>})
    -> (tensor<8x4xf32> {titan.placements = #titan.placements<@mesh, [S(0)]>}) {
  %a = titan.neg %w {titan.operand_placements = [#titan.placements<@mesh, [R]>], titan.placements = [#titan.placements<@mesh, [R]>]} : tensor<8x4xf32>
  %b = titan.exp %w {titan.operand_placements = [#titan.placements<@mesh, [R]>], titan.placements = [#titan.placements<@mesh, [R]>]} : tensor<8x4xf32>
  %s = titan.add %a, %b {titan.placements = [#titan.placements<@mesh, [R]>]} : tensor<8x4xf32>
  return %s : tensor<8x4xf32>
}

// -----

titan.mesh @mesh ["dp"=2]

// An operand that already has the placements asked for is left alone; a
// value without placements is replicated.
// CHECK-LABEL: func.func @unchanged
// CHECK-NOT: titan.redistribute
// CHECK: titan.add %arg0, %arg1 {titan.placements
func.func @unchanged(%x: tensor<4xf32> {titan.placements = #titan.placements<@mesh, [S(0)]>}, %y: tensor<4xf32>)
    -> tensor<4xf32> {
  %s = titan.add %x, %y {titan.operand_placements = [#titan.placements<@mesh, [S(0)]>, #titan.placements<@mesh, [R]>], titan.placements = [#titan.placements<@mesh, [S(0)]>]} : tensor<4xf32>
  return %s : tensor<4xf32>
}
