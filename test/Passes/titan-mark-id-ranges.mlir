// RUN: titan-opt %s --titan-mark-id-ranges --split-input-file --verify-diagnostics | FileCheck %s

// Tokens index the embedding (through a reshape); labels are the loss's,
// with its ignore index; a float input and an unused integer get nothing.
// CHECK-LABEL: func.func @step
// CHECK-SAME: %{{.*}}: tensor<2x4xi64> {titan.id_range = array<i64: 0, 32>, titan.name = "tokens"}
// CHECK-SAME: %{{.*}}: tensor<2x4xi64> {titan.id_range = array<i64: 0, 16, -100>, titan.name = "labels"}
// CHECK-SAME: %{{.*}}: tensor<f32> {titan.name = "lr"}
// CHECK-SAME: %{{.*}}: tensor<3xi64> {titan.name = "unused"}
func.func @step(%table: tensor<32x16xf32>, %tokens: tensor<2x4xi64> {titan.name = "tokens"},
                %labels: tensor<2x4xi64> {titan.name = "labels"}, %lr: tensor<f32> {titan.name = "lr"},
                %unused: tensor<3xi64> {titan.name = "unused"}) -> tensor<f32> {
  %flat = titan.reshape %tokens : tensor<2x4xi64> -> tensor<8xi64>
  %x = titan.embedding %table, %flat : tensor<32x16xf32>, tensor<8xi64> -> tensor<8x16xf32>
  %logits = titan.reshape %x : tensor<8x16xf32> -> tensor<2x4x16xf32>
  %loss = titan.cross_entropy %logits, %labels : tensor<2x4x16xf32>, tensor<2x4xi64> -> tensor<f32>
  return %loss : tensor<f32>
}

// -----

// Ids indexing two tables get the smaller range; a label also used as an
// embedding id loses the ignore index (the embedding does not ignore it).
// CHECK-LABEL: func.func @two_tables
// CHECK-SAME: tensor<4xi64> {titan.id_range = array<i64: 0, 8>}
// CHECK-SAME: tensor<2x4xi64> {titan.id_range = array<i64: 0, 8>}
func.func @two_tables(%a: tensor<32x16xf32>, %b: tensor<8x16xf32>, %ids: tensor<4xi64>,
                      %labels: tensor<2x4xi64>) -> (tensor<4x16xf32>, tensor<4x16xf32>, tensor<f32>) {
  %x = titan.embedding %a, %ids : tensor<32x16xf32>, tensor<4xi64> -> tensor<4x16xf32>
  %y = titan.embedding %b, %ids : tensor<8x16xf32>, tensor<4xi64> -> tensor<4x16xf32>
  %flat = titan.reshape %labels : tensor<2x4xi64> -> tensor<8xi64>
  %e = titan.embedding %b, %flat : tensor<8x16xf32>, tensor<8xi64> -> tensor<8x16xf32>
  %logits = titan.reshape %e : tensor<8x16xf32> -> tensor<2x4x16xf32>
  %loss = titan.cross_entropy %logits, %labels : tensor<2x4x16xf32>, tensor<2x4xi64> -> tensor<f32>
  return %x, %y, %loss : tensor<4x16xf32>, tensor<4x16xf32>, tensor<f32>
}

// -----

// A range already marked is kept.
// CHECK-LABEL: func.func @marked
// CHECK-SAME: {titan.id_range = array<i64: 0, 4>}
func.func @marked(%table: tensor<32x16xf32>, %ids: tensor<4xi64> {titan.id_range = array<i64: 0, 4>}) -> tensor<4x16xf32> {
  %x = titan.embedding %table, %ids : tensor<32x16xf32>, tensor<4xi64> -> tensor<4x16xf32>
  return %x : tensor<4x16xf32>
}

// -----

// expected-error @+1 {{argument #0: 'titan.id_range' must be array<i64: lo, hi> or array<i64: lo, hi, ignore> with lo < hi}}
func.func @empty_range(%ids: tensor<4xi64> {titan.id_range = array<i64: 4, 4>}) {
  return
}

// -----

// expected-error @+1 {{argument #0: 'titan.id_range' is on 'tensor<4xf32>', not a tensor of integers}}
func.func @float_ids(%ids: tensor<4xf32> {titan.id_range = array<i64: 0, 4>}) {
  return
}

// -----

// A table without rows admits no id.
// expected-error @+1 {{argument #1 indexes a table without rows: no id is valid}}
func.func @no_rows(%table: tensor<0x16xf32>, %ids: tensor<4xi64>) -> tensor<4x16xf32> {
  %x = titan.embedding %table, %ids : tensor<0x16xf32>, tensor<4xi64> -> tensor<4x16xf32>
  return %x : tensor<4x16xf32>
}
