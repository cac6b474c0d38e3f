//===- GpuKernelLowering.h - kernels as CUDA launches -----------*- C++ -*-===//
//
// The GPU counterpart of lowerKernelsToLLVM (KernelLowering.h): the
// bufferized kernels of a program become device code, compiled through
// MLIR's NVVM path into one fatbin, and host functions with the kernels'
// bare-pointer signatures that launch it on the rank's CUDA stream
// (docs/cuda-backend.md, "The compiler's kernels on the GPU").
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_CODEGEN_GPUKERNELLOWERING_H
#define TITAN_CODEGEN_GPUKERNELLOWERING_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/DialectRegistry.h"

#include <string>

namespace mlir::titan {

/// How lowerKernelsToNvvm compiles device code.
struct GpuKernelOptions {
  /// The GPU architecture of the fatbin (NVVM's chip name).
  std::string chip = "sm_90";
  /// The CUDA toolkit whose ptxas, fatbinary and libdevice compile the
  /// device code; empty: the toolkit CMake found when titan was
  /// configured, else /usr/local/cuda.
  std::string toolkitPath;
  /// The optimization level of the device code (LLVM's NVPTX and ptxas).
  unsigned optLevel = 3;
  /// Threads of each block of a launch (a multiple of 32, at most 1024).
  int64_t threadsPerBlock = 256;
  /// Whether the gpu.binary holds the device code's PTX assembly instead of
  /// a fatbin: text to read (tests check what the device code does), which
  /// no executable loads.
  bool ptxOnly = false;
};

/// Adds what lowerKernelsToNvvm creates and runs to `registry`: the GPU,
/// NVVM, SCF and control-flow dialects, the NVVM target (serialization to
/// a fatbin) and the LLVM IR translations registerGpuKernelTranslations
/// adds. A pass calling lowerKernelsToNvvm declares these as its
/// dependencies.
void registerGpuKernelLoweringDialects(DialectRegistry &registry);

/// Adds the LLVM IR translations of a module that lowerKernelsToNvvm
/// lowered: builtin, LLVM, NVVM, and GPU's (a `gpu.binary` becomes a
/// global holding the fatbin with constructors loading it, each
/// `gpu.launch_func` a call of `mgpuLaunchKernel`).
void registerGpuKernelTranslations(DialectRegistry &registry);

/// The CUDA toolkit `options` name, or the default one.
std::string getCudaToolkitPath(const GpuKernelOptions &options);

/// The first half of lowerKernelsToNvvm: maps the loop nests of the
/// bufferized kernels of `kernels` onto blocks and threads of
/// `threadsPerBlock` (scf.parallel nests with GPU mapping attributes, each
/// thread running up to 8 consecutive iterations of a straight-line nest's
/// innermost dimension), and, when `blockReductions`, makes row reductions
/// block-wide gpu.launch ops. Without them the result holds only loops, so
/// lowerKernelsToLLVM runs it on the CPU, one iteration after another:
/// the tests check the mapping's index arithmetic that way, without a GPU.
LogicalResult mapKernelsToGpuLoops(ModuleOp kernels, int64_t threadsPerBlock,
                                   bool blockReductions);

/// Lowers the bufferized kernels of `kernels` (what lowerKernelsToLLVM
/// takes: linalg on memrefs, memref.global constants) to CUDA: each loop
/// nest of a kernel becomes a GPU kernel (mapKernelsToGpuLoops: its
/// parallel dimensions collapsed to one and split into blocks of
/// `threadsPerBlock` threads, one element per thread, or up to 8
/// consecutive ones of a straight-line nest, which the device code loads
/// and stores with vector accesses where the parameters' `llvm.align`
/// allows; a row reduction with one commutative float combiner one block
/// per output element with gpu.all_reduce, other reductions sequential in
/// each thread; code outside loop nests runs in a one-thread launch), all
/// of them in one `gpu.binary @titan_kernels` holding a fatbin for `chip`.
/// Each kernel becomes a host `llvm.func` with the signature
/// lowerKernelsToLLVM gives it (one `!llvm.ptr` per buffer parameter)
/// whose body launches its GPU kernels in order on the stream
/// `titanrt_cuda_stream()` returns, without synchronizing. Fails with an
/// error when the toolkit has no ptxas, when device compilation fails, or
/// when a host function would still touch memory (naming the kernel).
LogicalResult lowerKernelsToNvvm(ModuleOp kernels,
                                 const GpuKernelOptions &options);

} // namespace mlir::titan

#endif // TITAN_CODEGEN_GPUKERNELLOWERING_H
