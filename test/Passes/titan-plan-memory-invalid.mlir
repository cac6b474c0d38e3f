// RUN: titan-opt %s --split-input-file --titan-plan-memory -verify-diagnostics

// A step whose values cannot be placed in one address space is refused
// before anything is planned (sizes, offsets and alignments would overflow).
// expected-error @+1 {{titan-plan-memory: the values of one rank's step need more than 2^62 bytes (the largest, 'tensor<1099511627776x2048x2048xf32>', alone needs more than 2^63-1 bytes); reduce training.local_batch_size or training.seq_len, or shard over more ranks}}
func.func @train_step(%x: tensor<1099511627776x2048x2048xf32>) -> tensor<1099511627776x2048x2048xf32> {
  return %x : tensor<1099511627776x2048x2048xf32>
}

// -----

// Each value fits, but together they do not.
// expected-error @+1 {{need more than 2^62 bytes (the largest, 'tensor<1073741824x1073741824xf32>', alone needs 4611686018427387904 bytes)}}
func.func @train_step(%x: tensor<1073741824x1073741824xf32>) -> tensor<1073741824x1073741824xf32> {
  %y = titan.neg %x : tensor<1073741824x1073741824xf32>
  return %y : tensor<1073741824x1073741824xf32>
}
