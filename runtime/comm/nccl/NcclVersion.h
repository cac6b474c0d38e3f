//===- NcclVersion.h - the NCCL titan's communicators need ------*- C++ -*-===//
//
// titan's NCCL communicators use ncclCommSplit (NCCL 2.18), nonblocking
// communicators and ncclCommGetAsyncError (2.14), ncclGetLastError (2.13),
// and ncclBfloat16 and ncclAvg (2.10): every file of runtime/comm/nccl
// includes nccl.h through this header, which refuses an older one.
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_RUNTIME_COMM_NCCL_NCCLVERSION_H
#define TITAN_RUNTIME_COMM_NCCL_NCCLVERSION_H

#include <nccl.h>

#if !defined(NCCL_VERSION_CODE) || NCCL_VERSION_CODE < NCCL_VERSION(2, 18, 0)
#error "titan's NCCL communicators need NCCL 2.18 or later (ncclCommSplit)"
#endif

#endif // TITAN_RUNTIME_COMM_NCCL_NCCLVERSION_H
