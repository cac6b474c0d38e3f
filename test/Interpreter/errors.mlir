// titan-eval's diagnostics: missing, mistyped and misshaped inputs, ops it
// does not run, out-of-range ids, and multi-rank mismatches.
// RUN: rm -rf %t && mkdir -p %t
// RUN: %python -c "import numpy as np; np.save('%t/w.npy', np.ones((8, 4), np.float32))"
// RUN: not titan-eval %s --entry=lookup --inputs=%t --outputs=%t/out 2>&1 | FileCheck %s --check-prefix=MISSING
// MISSING: error: missing input file '{{.*}}tokens.npy' for argument #1 'tokens' (expected tensor<2x4xi64>)

// RUN: %python -c "import numpy as np; np.save('%t/tokens.npy', np.zeros((2, 4), np.int32))"
// RUN: not titan-eval %s --entry=lookup --inputs=%t --outputs=%t/out 2>&1 | FileCheck %s --check-prefix=DTYPE
// DTYPE: error: argument 'tokens' ({{.*}}tokens.npy): the file holds dtype '<i4' but the program expects i64 (dtype '<i8')

// RUN: %python -c "import numpy as np; np.save('%t/tokens.npy', np.zeros((2, 5), np.int64))"
// RUN: not titan-eval %s --entry=lookup --inputs=%t --outputs=%t/out 2>&1 | FileCheck %s --check-prefix=SHAPE
// SHAPE: error: argument 'tokens' expects tensor<2x4xi64>, got tensor<2x5xi64>
// One line, naming the file, line and column: the source line (a model's
// signature can be tens of kilobytes) is not echoed.
// RUN: not titan-eval %s --entry=lookup --inputs=%t --outputs=%t/out 2>&1 | count 1

// RUN: %python -c "import numpy as np; np.save('%t/tokens.npy', np.array([[0, 1, 2, 3], [4, 5, 9, 7]]))"
// RUN: not titan-eval %s --entry=lookup --inputs=%t --outputs=%t/out 2>&1 | FileCheck %s --check-prefix=RANGE
// RANGE: error: 'titan.embedding' op id 9 at flat index 6 is outside the table's [0, 8)
func.func @lookup(%w: tensor<8x4xf32> {titan.name = "w"}, %tokens: tensor<2x4xi64> {titan.name = "tokens"}) -> tensor<2x4x4xf32> {
  %0 = titan.embedding %w, %tokens : tensor<8x4xf32>, tensor<2x4xi64> -> tensor<2x4x4xf32>
  return %0 : tensor<2x4x4xf32>
}

// RUN: not titan-eval %s --entry=nope --inputs=%t --outputs=%t/out 2>&1 | FileCheck %s --check-prefix=ENTRY
// ENTRY: error: no func.func @nope in the module

// RUN: not titan-eval %s --entry=calls --inputs=%t --outputs=%t/out 2>&1 | FileCheck %s --check-prefix=UNKNOWN
// UNKNOWN: error: the titan interpreter does not handle 'func.call'
func.func private @callee(tensor<8x4xf32>) -> tensor<8x4xf32>
func.func @calls(%w: tensor<8x4xf32> {titan.name = "w"}) -> tensor<8x4xf32> {
  %0 = func.call @callee(%w) : (tensor<8x4xf32>) -> tensor<8x4xf32>
  return %0 : tensor<8x4xf32>
}

titan.mesh @mesh ["x"=2]

// RUN: %python -c "import numpy as np; np.save('%t/v.npy', np.ones((6, 4), np.float32))"
// RUN: not titan-eval %s --entry=sharded --ranks=2 --inputs=%t --outputs=%t/out 2>&1 | FileCheck %s --check-prefix=LOCAL
// LOCAL: error: argument 'v': the global tensor<6x4xf32> under #titan.placements<@mesh, [S(0)]> gives rank 0 a tensor<3x4xf32>, but the program expects tensor<4x4xf32>
// RUN: not titan-eval %s --entry=sharded --ranks=3 --inputs=%t --outputs=%t/out 2>&1 | FileCheck %s --check-prefix=RANKS
// RANKS: error: mesh @mesh has 2 devices but the program runs on 3 ranks
// RUN: rm %t/v.npy
// RUN: not titan-eval %s --entry=sharded --ranks=2 --inputs=%t --outputs=%t/out 2>&1 | FileCheck %s --check-prefix=GLOBAL
// GLOBAL: error: missing input file '{{.*}}v.npy' for argument #0 'v' (expected tensor<8x4xf32> when evenly sharded (each rank holds tensor<4x4xf32> under #titan.placements<@mesh, [S(0)]>))
func.func @sharded(%v: tensor<4x4xf32> {titan.name = "v", titan.placements = #titan.placements<@mesh, [S(0)]>}) -> tensor<4x4xf32> {
  return %v : tensor<4x4xf32>
}

// A program compiled for uneven shards takes the global shape it records.
// RUN: %python -c "import numpy as np; np.save('%t/u.npy', np.ones((6, 4), np.float32))"
// RUN: not titan-eval %s --entry=uneven --ranks=2 --inputs=%t --outputs=%t/out 2>&1 | FileCheck %s --check-prefix=UNEVEN
// UNEVEN: error: argument 'u': the program was compiled for a global tensor<5x4xf32>, got tensor<6x4xf32>
// RUN: rm %t/u.npy
// RUN: not titan-eval %s --entry=uneven --ranks=2 --inputs=%t --outputs=%t/out 2>&1 | FileCheck %s --check-prefix=UNEVEN-MISSING
// UNEVEN-MISSING: error: missing input file '{{.*}}u.npy' for argument #0 'u' (expected tensor<5x4xf32> (each rank holds at most tensor<3x4xf32> under #titan.placements<@mesh, [S(0)]>))
func.func @uneven(%u: tensor<3x4xf32> {titan.global_shape = array<i64: 5, 4>, titan.name = "u", titan.placements = #titan.placements<@mesh, [S(0)]>}) -> tensor<3x4xf32> {
  return %u : tensor<3x4xf32>
}

// RUN: %python -c "import numpy as np; np.save('%t/arg0.npy', np.ones((4,), np.float32))"
// RUN: not titan-eval %s --entry=unmatched --ranks=2 --inputs=%t --outputs=%t/out 2>&1 | FileCheck %s --check-prefix=RECV
// RECV: error: on rank 0: no titan.send from rank 1 with tag 3 precedes it
func.func @unmatched(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = titan.recv on @mesh ["x"] peer 1 tag 3 : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// RUN: not titan-eval %s --entry=diverge --ranks=2 --inputs=%t --outputs=%t/out 2>&1 | FileCheck %s --check-prefix=REPLICA
// REPLICA: error: result 'result0' has no placements (replicated), but ranks 0 and 1 hold different values
func.func @diverge(%a: tensor<4xf32> {titan.placements = #titan.placements<@mesh, [P(sum)]>}) -> tensor<4xf32> {
  return %a : tensor<4xf32>
}

// RUN: not titan-eval %s --entry=global --ranks=2 --inputs=%t --outputs=%t/out 2>&1 | FileCheck %s --check-prefix=GLOBALOP
// GLOBALOP: error: 'titan.redistribute' op is a global-program op: spmdize the program before running it on several ranks
func.func @global(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = titan.redistribute %a to <@mesh, [S(0)]> : tensor<4xf32>
  return %0 : tensor<4xf32>
}
