// RUN: titan-opt %s --titan-convert-to-linalg | FileCheck %s

// Elementwise ops: one all-parallel linalg.generic with identity maps into a
// tensor.empty; bf16 computes in f32 and rounds once.

// CHECK-DAG: #[[ID2:.*]] = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-DAG: #[[ID1:.*]] = affine_map<(d0) -> (d0)>

// CHECK-LABEL: func.func @add
// CHECK-SAME: (%[[A:.*]]: tensor<2x3xf32>, %[[B:.*]]: tensor<2x3xf32>)
// CHECK: %[[E:.*]] = tensor.empty() : tensor<2x3xf32>
// CHECK: %[[R:.*]] = linalg.generic {indexing_maps = [#[[ID2]], #[[ID2]], #[[ID2]]], iterator_types = ["parallel", "parallel"]}
// CHECK-SAME: ins(%[[A]], %[[B]] : tensor<2x3xf32>, tensor<2x3xf32>) outs(%[[E]] : tensor<2x3xf32>)
// CHECK-NEXT: ^bb0(%[[X:.*]]: f32, %[[Y:.*]]: f32, %{{.*}}: f32):
// CHECK-NEXT: %[[S:.*]] = arith.addf %[[X]], %[[Y]] : f32
// CHECK-NEXT: linalg.yield %[[S]] : f32
// CHECK: return %[[R]]
func.func @add(%a: tensor<2x3xf32>, %b: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %0 = titan.add %a, %b : tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// CHECK-LABEL: func.func @mul_bf16
// CHECK: ^bb0(%[[X:.*]]: bf16, %[[Y:.*]]: bf16, %{{.*}}: bf16):
// CHECK-NEXT: %[[XW:.*]] = arith.extf %[[X]] : bf16 to f32
// CHECK-NEXT: %[[YW:.*]] = arith.extf %[[Y]] : bf16 to f32
// CHECK-NEXT: %[[P:.*]] = arith.mulf %[[XW]], %[[YW]] : f32
// CHECK-NEXT: %[[R:.*]] = arith.truncf %[[P]] : f32 to bf16
// CHECK-NEXT: linalg.yield %[[R]] : bf16
func.func @mul_bf16(%a: tensor<4xbf16>, %b: tensor<4xbf16>) -> tensor<4xbf16> {
  %0 = titan.mul %a, %b : tensor<4xbf16>
  return %0 : tensor<4xbf16>
}

// torch.maximum propagates NaN: arith.maximumf, not maxnumf.
// CHECK-LABEL: func.func @max
// CHECK: arith.maximumf %{{.*}}, %{{.*}} : f32
func.func @max(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {
  %0 = titan.max %a, %b : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// Integer arithmetic: two's complement arith ops on the elements as they
// are; neg is 0 - x, max is signed.
// CHECK-LABEL: func.func @integers
// CHECK: %[[Z:.*]] = arith.constant 0 : i64
// CHECK: ^bb0(%[[X:.*]]: i64, %[[Y:.*]]: i64, %{{.*}}: i64):
// CHECK-NEXT: %[[S:.*]] = arith.addi %[[X]], %[[Y]] : i64
// CHECK-NEXT: linalg.yield %[[S]] : i64
// CHECK: arith.subi %{{.*}}, %{{.*}} : i64
// CHECK: arith.muli %{{.*}}, %{{.*}} : i32
// CHECK: arith.maxsi %{{.*}}, %{{.*}} : i32
// CHECK: ^bb0(%[[N:.*]]: i64, %{{.*}}: i64):
// CHECK-NEXT: %[[M:.*]] = arith.subi %[[Z]], %[[N]] : i64
// CHECK-NEXT: linalg.yield %[[M]] : i64
func.func @integers(%a: tensor<4xi64>, %b: tensor<4xi64>, %c: tensor<4xi32>, %d: tensor<4xi32>)
    -> (tensor<4xi64>, tensor<4xi64>, tensor<4xi32>, tensor<4xi32>, tensor<4xi64>) {
  %0 = titan.add %a, %b : tensor<4xi64>
  %1 = titan.sub %a, %b : tensor<4xi64>
  %2 = titan.mul %c, %d : tensor<4xi32>
  %3 = titan.max %c, %d : tensor<4xi32>
  %4 = titan.neg %a : tensor<4xi64>
  return %0, %1, %2, %3, %4 : tensor<4xi64>, tensor<4xi64>, tensor<4xi32>, tensor<4xi32>, tensor<4xi64>
}

// Rounding division and remainder (include/titan/Dialect/Rounding.h):
// integers divide by 1 where the divisor is 0 or -1 (negating for -1), so
// that no division traps, and the floor rounding corrects the truncated
// quotient where the remainder's sign differs from the divisor's; floats
// use fmod (arith.remf) as PyTorch does.
// CHECK-LABEL: func.func @rounding
// CHECK: ^bb0(%[[A:.*]]: i64, %[[B:.*]]: i64, %{{.*}}: i64):
// CHECK-NEXT: %[[BYM1:.*]] = arith.cmpi eq, %[[B]], %{{.*}} : i64
// CHECK-NEXT: %[[BY0:.*]] = arith.cmpi eq, %[[B]], %{{.*}} : i64
// CHECK-NEXT: %[[BYONE:.*]] = arith.ori %[[BY0]], %[[BYM1]] : i1
// CHECK-NEXT: %[[SAFE:.*]] = arith.select %[[BYONE]], %{{.*}}, %[[B]] : i64
// CHECK-NEXT: %[[Q:.*]] = arith.divsi %[[A]], %[[SAFE]] : i64
// CHECK-NEXT: %[[R:.*]] = arith.remsi %[[A]], %[[SAFE]] : i64
// CHECK: %[[ADJUST:.*]] = arith.andi
// CHECK: %[[FLOOR:.*]] = arith.select %[[ADJUST]], %{{.*}}, %{{.*}} : i64
// CHECK-NEXT: linalg.yield %[[FLOOR]] : i64
// The truncating remainder: remsi alone.
// CHECK: arith.remsi
// CHECK-NEXT: linalg.yield
// CHECK: %[[QF:.*]] = arith.divf %{{.*}}, %{{.*}} : f32
// CHECK-NEXT: %[[T:.*]] = math.trunc %[[QF]] : f32
// CHECK-NEXT: linalg.yield %[[T]] : f32
// CHECK: %[[RF:.*]] = arith.remf %{{.*}}, %{{.*}} : f32
// CHECK: %[[SUM:.*]] = arith.addf %[[RF]], %{{.*}} : f32
// CHECK-NEXT: %[[M:.*]] = arith.select %{{.*}}, %[[SUM]], %[[RF]] : f32
// CHECK-NEXT: linalg.yield %[[M]] : f32
func.func @rounding(%a: tensor<4xi64>, %b: tensor<4xi64>, %x: tensor<4xf32>, %y: tensor<4xf32>)
    -> (tensor<4xi64>, tensor<4xi64>, tensor<4xf32>, tensor<4xf32>) {
  %0 = titan.rounded_div %a, %b : tensor<4xi64>
  %1 = titan.remainder %a, %b truncate : tensor<4xi64>
  %2 = titan.rounded_div %x, %y truncate : tensor<4xf32>
  %3 = titan.remainder %x, %y : tensor<4xf32>
  return %0, %1, %2, %3 : tensor<4xi64>, tensor<4xi64>, tensor<4xf32>, tensor<4xf32>
}

// CHECK-LABEL: func.func @silu
// CHECK-DAG: %[[ONE:.*]] = arith.constant 1.000000e+00 : f32
// CHECK: ^bb0(%[[X:.*]]: f32, %{{.*}}: f32):
// CHECK-NEXT: %[[N:.*]] = arith.negf %[[X]] : f32
// CHECK-NEXT: %[[E:.*]] = math.exp %[[N]] : f32
// CHECK-NEXT: %[[D:.*]] = arith.addf %[[E]], %[[ONE]] : f32
// CHECK-NEXT: %[[R:.*]] = arith.divf %[[X]], %[[D]] : f32
// CHECK-NEXT: linalg.yield %[[R]] : f32
func.func @silu(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = titan.silu %a : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// f32 cos and sin reduce their argument modulo 2 pi in f64 before the
// (polynomial) math op.
// CHECK-LABEL: func.func @cos
// CHECK-DAG: %[[TWOPI:.*]] = arith.constant 6.2831853071795862 : f64
// CHECK-DAG: %[[INV:.*]] = arith.constant 0.15915494309189535 : f64
// CHECK: ^bb0(%[[X:.*]]: f32, %{{.*}}: f32):
// CHECK-NEXT: %[[W:.*]] = arith.extf %[[X]] : f32 to f64
// CHECK-NEXT: %[[T:.*]] = arith.mulf %[[W]], %[[INV]] : f64
// CHECK-NEXT: %[[K:.*]] = math.roundeven %[[T]] : f64
// CHECK-NEXT: %[[M:.*]] = arith.mulf %[[K]], %[[TWOPI]] : f64
// CHECK-NEXT: %[[RW:.*]] = arith.subf %[[W]], %[[M]] : f64
// CHECK-NEXT: %[[R:.*]] = arith.truncf %[[RW]] : f64 to f32
// CHECK-NEXT: %[[C:.*]] = math.cos %[[R]] : f32
// CHECK-NEXT: linalg.yield %[[C]] : f32
func.func @cos(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = titan.cos %a : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// CHECK-LABEL: func.func @gelu
// CHECK: linalg.generic
// CHECK: math.erf
// CHECK: linalg.generic
// CHECK: math.tanh
func.func @gelu(%a: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %0 = titan.gelu %a approximate none : tensor<4xf32>
  %1 = titan.gelu %a approximate tanh : tensor<4xf32>
  return %0, %1 : tensor<4xf32>, tensor<4xf32>
}

// f64 has no lowering of math.erf: a series and a continued fraction.
// CHECK-LABEL: func.func @gelu_f64
// CHECK-NOT: math.erf
// CHECK: math.exp
// CHECK: math.copysign
// CHECK: arith.select
// CHECK: return
func.func @gelu_f64(%a: tensor<4xf64>) -> tensor<4xf64> {
  %0 = titan.gelu %a approximate none : tensor<4xf64>
  return %0 : tensor<4xf64>
}

// The factor is rounded to bf16 (0.1 -> 0.100097656) and applied in f32.
// CHECK-LABEL: func.func @scale_bf16
// CHECK: %[[F:.*]] = arith.constant 0.100097656 : f32
// CHECK: %[[XW:.*]] = arith.extf %{{.*}} : bf16 to f32
// CHECK-NEXT: %[[P:.*]] = arith.mulf %[[XW]], %[[F]] : f32
// CHECK-NEXT: arith.truncf %[[P]] : f32 to bf16
func.func @scale_bf16(%a: tensor<4xbf16>) -> tensor<4xbf16> {
  %0 = titan.scale %a by 0.1 : tensor<4xbf16>
  return %0 : tensor<4xbf16>
}

// Toward zero, saturating, NaN to 0.
// CHECK-LABEL: func.func @cast_to_int
// CHECK-DAG: %[[ZERO:.*]] = arith.constant 0 : i32
// CHECK-DAG: %[[MIN:.*]] = arith.constant -2147483648 : i32
// CHECK-DAG: %[[MAX:.*]] = arith.constant 2147483647 : i32
// CHECK-DAG: %[[LO:.*]] = arith.constant -2.14748365E+9 : f32
// CHECK-DAG: %[[HI:.*]] = arith.constant 2.14748365E+9 : f32
// CHECK: ^bb0(%[[X:.*]]: f32, %{{.*}}: i32):
// CHECK-NEXT: %[[I:.*]] = arith.fptosi %[[X]] : f32 to i32
// CHECK-NEXT: %[[BIG:.*]] = arith.cmpf oge, %[[X]], %[[HI]] : f32
// CHECK-NEXT: %[[SMALL:.*]] = arith.cmpf olt, %[[X]], %[[LO]] : f32
// CHECK-NEXT: %[[NAN:.*]] = arith.cmpf uno, %[[X]], %[[X]] : f32
// CHECK-NEXT: %[[S1:.*]] = arith.select %[[BIG]], %[[MAX]], %[[I]] : i32
// CHECK-NEXT: %[[S2:.*]] = arith.select %[[SMALL]], %[[MIN]], %[[S1]] : i32
// CHECK-NEXT: %[[S3:.*]] = arith.select %[[NAN]], %[[ZERO]], %[[S2]] : i32
// CHECK-NEXT: linalg.yield %[[S3]] : i32
func.func @cast_to_int(%a: tensor<4xf32>) -> tensor<4xi32> {
  %0 = titan.cast %a : tensor<4xf32> to tensor<4xi32>
  return %0 : tensor<4xi32>
}

// As the interpreter rounds: double -> float -> bf16.
// CHECK-LABEL: func.func @cast_f64_to_bf16
// CHECK: %[[F:.*]] = arith.truncf %{{.*}} : f64 to f32
// CHECK-NEXT: %[[B:.*]] = arith.truncf %[[F]] : f32 to bf16
// CHECK-NEXT: linalg.yield %[[B]] : bf16
func.func @cast_f64_to_bf16(%a: tensor<4xf64>) -> tensor<4xbf16> {
  %0 = titan.cast %a : tensor<4xf64> to tensor<4xbf16>
  return %0 : tensor<4xbf16>
}

// ne is true on NaN (une); i1 compares unsigned (0 < 1).
// CHECK-LABEL: func.func @compare
// CHECK: arith.cmpf une, %{{.*}}, %{{.*}} : f32
// CHECK: arith.cmpi ult, %{{.*}}, %{{.*}} : i1
func.func @compare(%a: tensor<4xf32>, %b: tensor<4xf32>, %c: tensor<4xi1>, %d: tensor<4xi1>) -> (tensor<4xi1>, tensor<4xi1>) {
  %0 = titan.compare ne, %a, %b : tensor<4xf32> -> tensor<4xi1>
  %1 = titan.compare lt, %c, %d : tensor<4xi1> -> tensor<4xi1>
  return %0, %1 : tensor<4xi1>, tensor<4xi1>
}

// CHECK-LABEL: func.func @select
// CHECK: ^bb0(%[[C:.*]]: i1, %[[T:.*]]: bf16, %[[F:.*]]: bf16, %{{.*}}: bf16):
// CHECK-NEXT: %[[R:.*]] = arith.select %[[C]], %[[T]], %[[F]] : bf16
func.func @select(%c: tensor<4xi1>, %a: tensor<4xbf16>, %b: tensor<4xbf16>) -> tensor<4xbf16> {
  %0 = titan.select %c, %a, %b : tensor<4xi1>, tensor<4xbf16>
  return %0 : tensor<4xbf16>
}

// A splat is a fill (fusion folds it into users), a dense constant stays.
// CHECK-LABEL: func.func @constants
// CHECK-DAG: %[[DENSE:.*]] = arith.constant dense<[3, 4]> : tensor<2xi64>
// CHECK-DAG: %[[NINF:.*]] = arith.constant 0xFF800000 : f32
// CHECK: %[[E:.*]] = tensor.empty() : tensor<2x2xf32>
// CHECK: %[[FILL:.*]] = linalg.fill ins(%[[NINF]] : f32) outs(%[[E]] : tensor<2x2xf32>)
// CHECK: return %[[FILL]], %[[DENSE]]
func.func @constants() -> (tensor<2x2xf32>, tensor<2xi64>) {
  %0 = titan.constant dense<0xFF800000> : tensor<2x2xf32>
  %1 = titan.constant dense<[3, 4]> : tensor<2xi64>
  return %0, %1 : tensor<2x2xf32>, tensor<2xi64>
}

// CHECK-LABEL: func.func @iota
// CHECK: linalg.generic {indexing_maps = [#[[ID2]]], iterator_types = ["parallel", "parallel"]} outs(
// CHECK-NEXT: ^bb0(%{{.*}}: bf16):
// CHECK-NEXT: %[[I:.*]] = linalg.index 1 : index
// CHECK-NEXT: %[[L:.*]] = arith.index_cast %[[I]] : index to i64
// CHECK-NEXT: %[[F:.*]] = arith.sitofp %[[L]] : i64 to f32
// CHECK-NEXT: %[[B:.*]] = arith.truncf %[[F]] : f32 to bf16
// CHECK-NEXT: linalg.yield %[[B]] : bf16
func.func @iota() -> tensor<3x5xbf16> {
  %0 = titan.iota dim 1 : tensor<3x5xbf16>
  return %0 : tensor<3x5xbf16>
}
