//===- TorchSave.h - torch.save archives of one tensor ----------*- C++ -*-===//
//
// torch.save's zip format, restricted to what DCP stores per chunk: an
// uncompressed zip whose entries lie under one top folder `<name>/`:
// `data.pkl` (a pickle calling torch._utils._rebuild_tensor_v2 on a
// persistent-id storage), `data/<key>` (the raw little-endian storage) and
// `version` ("3\n"). Data entries start 64-byte aligned within the archive,
// padded with an extra field as torch's writer does.
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_CHECKPOINT_TORCHSAVE_H
#define TITAN_CHECKPOINT_TORCHSAVE_H

#include "titan/Checkpoint/Pickle.h"
#include "titan/Support/ElementType.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace mlir::titan {

/// True for the element types of tensors in checkpoints: F32, F64, F16,
/// BF16, I64, I32 and I1 (torch.bool; the others have no torch name below).
bool isTorchDType(ElementType dtype);
/// The attribute name in module `torch`, e.g. "float32"; `dtype` must be a
/// torch dtype (isTorchDType).
llvm::StringRef torchDTypeName(ElementType dtype);
/// The legacy storage class in module `torch`, e.g. "FloatStorage"; `dtype`
/// must be a torch dtype (isTorchDType).
llvm::StringRef torchStorageName(ElementType dtype);
/// Inverse of torchDTypeName.
std::optional<ElementType> parseTorchDTypeName(llvm::StringRef name);
/// Inverse of torchStorageName.
std::optional<ElementType> parseTorchStorageName(llvm::StringRef name);
/// The complex dtype that a torch dtype or storage name denotes (e.g.
/// "complex64" for "complex64", "cfloat" or "ComplexFloatStorage"), or an
/// empty string: titan has no complex dtype, and says so by name.
llvm::StringRef torchComplexDTypeName(llvm::StringRef name);
/// The dtypes titan reads and writes, for messages: "float32, float64, ...".
llvm::StringRef supportedTorchDTypeNames();

/// A dense, C-contiguous tensor (or chunk of one).
struct DenseTensor {
  ElementType dtype = ElementType::F32;
  llvm::SmallVector<int64_t> shape;
  std::vector<char> data;

  /// The number of elements (1 for a 0-d tensor).
  int64_t numElements() const;
};

/// A read-only view of a dense, C-contiguous tensor whose data lives
/// elsewhere (a DenseTensor, a mapped file, a runtime's buffer).
struct DenseTensorRef {
  ElementType dtype = ElementType::F32;
  llvm::ArrayRef<int64_t> shape;
  llvm::StringRef data;

  DenseTensorRef(ElementType dtype, llvm::ArrayRef<int64_t> shape,
                 llvm::StringRef data)
      : dtype(dtype), shape(shape), data(data) {}
  DenseTensorRef(const DenseTensor &tensor)
      : dtype(tensor.dtype), shape(tensor.shape),
        data(tensor.data.data(), tensor.data.size()) {}
};

/// A writable view of a dense, C-contiguous tensor whose data lives
/// elsewhere (a DenseTensor, a tool's reused buffer, a runtime's buffer).
struct MutableDenseTensorRef {
  ElementType dtype = ElementType::F32;
  llvm::ArrayRef<int64_t> shape;
  llvm::MutableArrayRef<char> data;

  MutableDenseTensorRef(ElementType dtype, llvm::ArrayRef<int64_t> shape,
                        llvm::MutableArrayRef<char> data)
      : dtype(dtype), shape(shape), data(data) {}
  MutableDenseTensorRef(DenseTensor &tensor)
      : dtype(tensor.dtype), shape(tensor.shape), data(tensor.data) {}
};

/// A view of one entry of a zip archive held in memory.
struct ZipEntryView {
  llvm::StringRef name;
  llvm::StringRef data;
  /// The CRC-32 the archive records for the data (readStoredZip sets it;
  /// writeStoredZip computes its own).
  uint32_t crc = 0;
};

/// The CRC-32 of zip archives of `data`, continuing `crc` (the CRC of the
/// bytes before `data`), computed with carry-less multiplication where the
/// CPU has it (libdeflate).
uint32_t zipCrc32(llvm::StringRef data, uint32_t crc = 0);

/// Sizes and offsets from which zip needs its zip64 records.
constexpr uint64_t kZip64Limit = 0xffffffffu;

/// Writes `entries` to `os` as an uncompressed zip archive with every
/// entry's data 64-byte aligned (offsets count from where the archive
/// starts). Entry data is written straight from the views, unbuffered when
/// large. Sizes and offsets of at least `zip64Threshold` bytes (and the
/// directory of 65535 entries or more) are written in zip64 records; a lower
/// threshold than kZip64Limit exercises that path on small archives.
void writeStoredZip(llvm::ArrayRef<ZipEntryView> entries, llvm::raw_ostream &os,
                    uint64_t zip64Threshold = kZip64Limit);

/// Lists the entries of an uncompressed (stored) zip archive, zip64 records
/// included, checking sizes and, when `checkData` is set, every entry's
/// CRC-32 (which reads all of the data; a caller reading the data itself
/// checks ZipEntryView::crc as it goes). `name` is used in error messages.
llvm::Expected<std::vector<ZipEntryView>> readStoredZip(llvm::StringRef archive,
                                                        llvm::StringRef name,
                                                        bool checkData = true);

/// A torch.save archive held in memory: its entries and the object graph of
/// its `data.pkl` (read with the restricted reader and
/// checkpointPickleGlobals()).
struct TorchSaveArchive {
  std::vector<ZipEntryView> entries;
  /// The top folder, with its trailing slash.
  llvm::StringRef folder;
  PickleRef root;

  /// The entry `<folder><suffix>`, or null.
  const ZipEntryView *find(llvm::StringRef suffix) const;
};

/// Opens a torch.save archive of any object (readStoredZip, with
/// `checkData`). `name` is used in errors.
llvm::Expected<TorchSaveArchive> readTorchSave(llvm::StringRef archive,
                                               llvm::StringRef name,
                                               bool checkData = true);

/// Writes `tensor` to `os` as torch.save does, under the folder
/// `archiveName`; fails when its data does not match its shape.
llvm::Error writeTorchSaveTensor(const DenseTensor &tensor,
                                 llvm::raw_ostream &os,
                                 llvm::StringRef archiveName = "archive");

/// The bytes of the torch.save archive of a tensor around its data, so that
/// the data can be streamed from wherever it lies: the archive is `prefix`,
/// the data, `suffix`.
struct TorchSaveFraming {
  std::string prefix;
  std::string suffix;
};

/// The framing of the torch.save archive (what writeTorchSaveTensor writes)
/// of a C-contiguous tensor of `dtype` and `shape` whose data has the
/// CRC-32 `dataCrc`, under the folder `archiveName`.
TorchSaveFraming
torchSaveTensorFraming(ElementType dtype, llvm::ArrayRef<int64_t> shape,
                       uint32_t dataCrc,
                       llvm::StringRef archiveName = "archive");

/// The torch.save archive of an object without storages (e.g. a Python int,
/// as DCP saves non-tensor values), under the folder `archiveName`.
std::string writeTorchSaveObject(const PickleRef &root,
                                 llvm::StringRef archiveName = "archive");

/// Where the tensor of a torch.save archive of one tensor lies in its
/// storage entry (strides and offset in elements).
struct TorchSaveTensorLayout {
  ElementType dtype = ElementType::F32;
  llvm::SmallVector<int64_t> shape;
  llvm::SmallVector<int64_t> strides;
  int64_t storageOffset = 0;
  ZipEntryView storage;

  /// Whether the tensor is C-contiguous from the storage's start (as DCP
  /// and torch.save of a contiguous tensor write it).
  bool isContiguous() const;
};

/// Checks that `archive` holds one tensor (torch._utils._rebuild_tensor_v2
/// of a storage) whose view lies within its storage, and returns where.
/// `name` is used in error messages.
llvm::Expected<TorchSaveTensorLayout>
getTorchSaveTensorLayout(const TorchSaveArchive &archive, llvm::StringRef name);

/// Reads a torch.save archive of one tensor (any strides and storage
/// offset) into a contiguous tensor. `name` is used in error messages.
llvm::Expected<DenseTensor> readTorchSaveTensor(llvm::StringRef archive,
                                                llvm::StringRef name);

/// Copies the one tensor of an opened torch.save archive (any strides and
/// storage offset) into a contiguous tensor. `name` is used in error
/// messages.
llvm::Expected<DenseTensor> readTorchSaveTensor(const TorchSaveArchive &archive,
                                                llvm::StringRef name);

} // namespace mlir::titan

#endif // TITAN_CHECKPOINT_TORCHSAVE_H
