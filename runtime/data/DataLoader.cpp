//===- DataLoader.cpp - training batches from a dataset -------------------===//

#include "data/DataLoader.h"

#include "data/Tokenizer.h"

#include "titan/Support/Npy.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/Path.h"

#include <algorithm>
#include <cstring>

using namespace titan::rt;

namespace {

/// Appends the documents of a text file to `ids`, each as BOS ids EOS: a
/// .txt file is one document; a .json or .jsonl file holds records with a
/// "text" string, one per line or as one JSON array.
Status tokenizeFile(const std::string &path, Tokenizer &tokenizer,
                    std::vector<int64_t> &ids) {
  auto buffer = llvm::MemoryBuffer::getFile(path);
  if (!buffer)
    return Status::io("cannot read dataset file '" + path +
                      "': " + buffer.getError().message());
  llvm::StringRef text = (*buffer)->getBuffer();
  std::vector<int64_t> scratch;
  auto addDocument = [&](llvm::StringRef document) {
    if (std::optional<int64_t> bos = tokenizer.bosId())
      ids.push_back(*bos);
    scratch.clear();
    tokenizer.encode(std::string_view(document.data(), document.size()),
                     scratch);
    ids.insert(ids.end(), scratch.begin(), scratch.end());
    if (std::optional<int64_t> eos = tokenizer.eosId())
      ids.push_back(*eos);
  };
  llvm::StringRef extension = llvm::sys::path::extension(path);
  if (extension == ".txt") {
    addDocument(text);
    return Status::success();
  }
  // One record: its "text".
  auto addRecord = [&](const llvm::json::Value &record,
                       const std::string &where) -> Status {
    const llvm::json::Object *object = record.getAsObject();
    std::optional<llvm::StringRef> field =
        object ? object->getString("text") : std::nullopt;
    if (!field)
      return Status::invalidArgument(
          where + ": a record must be a JSON object with a \"text\" string "
                  "(as torchtitan's c4 loader reads)");
    addDocument(*field);
    return Status::success();
  };
  if (text.ltrim().starts_with("[")) {
    llvm::Expected<llvm::json::Value> array = llvm::json::parse(text);
    if (!array)
      return Status::invalidArgument(path + ": " +
                                     llvm::toString(array.takeError()));
    if (!array->getAsArray())
      return Status::invalidArgument(path + ": expected an array of records");
    for (auto [i, record] : llvm::enumerate(*array->getAsArray()))
      TITANRT_RETURN_IF_ERROR(
          addRecord(record, path + ", record " + std::to_string(i)));
    return Status::success();
  }
  int64_t lineNumber = 0;
  while (!text.empty()) {
    llvm::StringRef line;
    std::tie(line, text) = text.split('\n');
    ++lineNumber;
    if (line.trim().empty())
      continue;
    std::string where = path + ":" + std::to_string(lineNumber);
    llvm::Expected<llvm::json::Value> record = llvm::json::parse(line);
    if (!record)
      return Status::invalidArgument(where + ": " +
                                     llvm::toString(record.takeError()));
    TITANRT_RETURN_IF_ERROR(addRecord(*record, where));
  }
  return Status::success();
}

/// Whether `path` is a text file the loader tokenizes.
bool isTextFile(llvm::StringRef path) {
  llvm::StringRef extension = llvm::sys::path::extension(path);
  return extension == ".txt" || extension == ".json" || extension == ".jsonl";
}

/// The element width of Megatron's .idx `dtype` code, or 0.
int megatronElementBytes(uint8_t code, bool &isSigned) {
  // Megatron's DType: 1 uint8, 2 int8, 3 int16, 4 int32, 5 int64, 8 uint16
  // (6 and 7 are floats).
  isSigned = code != 1 && code != 8;
  switch (code) {
  case 1:
  case 2:
    return 1;
  case 3:
  case 8:
    return 2;
  case 4:
    return 4;
  case 5:
    return 8;
  default:
    return 0;
  }
}

} // namespace

Status TokenStream::open(const std::string &path, Tokenizer &tokenizer,
                         int64_t vocabSize, TokenStream &stream) {
  stream = TokenStream();
  stream.description = path;
  llvm::sys::fs::file_status status;
  if (std::error_code error = llvm::sys::fs::status(path, status))
    return Status::io("cannot read [training] dataset_path '" + path +
                      "': " + error.message());
  llvm::StringRef extension = llvm::sys::path::extension(path);
  bool isFolder = llvm::sys::fs::is_directory(status);
  if (isFolder || isTextFile(path)) {
    if (tokenizer.vocabSize() > vocabSize)
      return Status::invalidArgument(
          "the tokenizer has " + std::to_string(tokenizer.vocabSize()) +
          " ids but the model's embedding has " + std::to_string(vocabSize) +
          " rows: set [model] tokenizer_path to the model's tokenizer (without "
          "one, text is tokenized as bytes: ids 0-255, BOS 256, EOS 257)");
    std::vector<std::string> files;
    if (isFolder) {
      std::error_code error;
      for (llvm::sys::fs::directory_iterator entry(path, error), end;
           !error && entry != end; entry.increment(error))
        if (isTextFile(entry->path()))
          files.push_back(entry->path());
      if (error)
        return Status::io("cannot list '" + path + "': " + error.message());
      llvm::sort(files);
      if (files.empty())
        return Status::invalidArgument(
            "dataset folder '" + path +
            "' holds no .txt, .json or .jsonl file (pre-tokenized data is a "
            ".bin or .npy file: name it in dataset_path)");
    } else {
      files.push_back(path);
    }
    std::vector<int64_t> ids;
    for (const std::string &file : files)
      TITANRT_RETURN_IF_ERROR(tokenizeFile(file, tokenizer, ids));
    stream.owned.assign(ids.begin(), ids.end());
    stream.data = reinterpret_cast<const char *>(stream.owned.data());
    stream.count = int64_t(stream.owned.size());
    stream.description = path + " (" + std::to_string(files.size()) + " file" +
                         (files.size() == 1 ? "" : "s") + ", " +
                         std::to_string(stream.count) + " tokens)";
    return Status::success();
  }
  if (extension == ".npy") {
    llvm::Expected<mlir::titan::MappedNpy> file = mlir::titan::mapNpy(path);
    if (!file)
      return Status::io(llvm::toString(file.takeError()));
    using mlir::titan::ElementType;
    if (file->shape.size() != 1 ||
        !llvm::is_contained({ElementType::I64, ElementType::I32,
                             ElementType::U16, ElementType::U8},
                            file->dtype))
      return Status::invalidArgument(
          path + ": a token file must be a 1-d array of int64, int32, "
                 "uint16 or uint8 ids");
    stream.elementBytes = int(mlir::titan::getElementTypeSize(file->dtype));
    stream.elementSigned =
        file->dtype == ElementType::I64 || file->dtype == ElementType::I32;
    stream.data = file->data.data();
    stream.count = file->shape[0];
    stream.mapped = std::move(file->buffer);
  } else if (extension == ".bin") {
    auto buffer = llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                              /*RequiresNullTerminator=*/false);
    if (!buffer)
      return Status::io("cannot read '" + path +
                        "': " + buffer.getError().message());
    // Megatron's indexed dataset: the .idx beside the .bin names the width.
    llvm::SmallString<256> index(path);
    llvm::sys::path::replace_extension(index, ".idx");
    if (llvm::sys::fs::exists(index)) {
      auto header = llvm::MemoryBuffer::getFile(index);
      if (!header)
        return Status::io("cannot read '" + std::string(index) +
                          "': " + header.getError().message());
      llvm::StringRef bytes = (*header)->getBuffer();
      static const char kMagic[9] = {'M', 'M', 'I',  'D', 'I',
                                     'D', 'X', '\0', '\0'};
      if (bytes.size() < 18 || std::memcmp(bytes.data(), kMagic, 9) != 0)
        return Status::invalidArgument(
            std::string(index) +
            " is not a Megatron index (it must start with MMIDIDX)");
      stream.elementBytes =
          megatronElementBytes(uint8_t(bytes[17]), stream.elementSigned);
      if (!stream.elementBytes)
        return Status::invalidArgument(
            std::string(index) + ": dtype code " +
            std::to_string(unsigned(uint8_t(bytes[17]))) +
            " is not an integer type");
    } else {
      // nanoGPT's flat file: uint16 when every id fits, else uint32.
      stream.elementBytes = vocabSize <= 65536 ? 2 : 4;
      stream.elementSigned = false;
    }
    size_t bytes = (*buffer)->getBufferSize();
    if (bytes % stream.elementBytes)
      return Status::invalidArgument(
          path + " has " + std::to_string(bytes) +
          " bytes, not a whole number of " +
          std::to_string(stream.elementBytes) +
          "-byte ids (a flat .bin holds uint16 ids for vocabularies up to "
          "65,536, else uint32)");
    stream.data = (*buffer)->getBufferStart();
    stream.count = int64_t(bytes / stream.elementBytes);
    stream.mapped = std::move(*buffer);
  } else {
    return Status::invalidArgument(
        "[training] dataset_path '" + path +
        "': expected text (.txt, .json, .jsonl or a folder of them) or "
        "token ids (.bin, .npy)");
  }
  stream.description = path + " (" + std::to_string(stream.count) + " tokens)";
  return Status::success();
}

TokenStream TokenStream::fromIds(std::vector<int32_t> ids) {
  TokenStream stream;
  stream.owned = std::move(ids);
  stream.data = reinterpret_cast<const char *>(stream.owned.data());
  stream.count = int64_t(stream.owned.size());
  stream.description = "ids";
  return stream;
}

int64_t TokenStream::at(int64_t index) const {
  const char *element = data + index * elementBytes;
  switch (elementBytes) {
  case 1:
    return elementSigned ? int64_t(int8_t(*element))
                         : int64_t(uint8_t(*element));
  case 2: {
    uint16_t value;
    std::memcpy(&value, element, 2);
    return elementSigned ? int64_t(int16_t(value)) : int64_t(value);
  }
  case 4: {
    uint32_t value;
    std::memcpy(&value, element, 4);
    return elementSigned ? int64_t(int32_t(value)) : int64_t(value);
  }
  default: {
    int64_t value;
    std::memcpy(&value, element, 8);
    return value;
  }
  }
}

Status BatchWindows::check() const {
  if (stream.size() < seqLen + 1)
    return Status::invalidArgument(
        "the dataset " + stream.getDescription() + " holds fewer than " +
        std::to_string(seqLen + 1) +
        " tokens, one window of training.seq_len + 1");
  return Status::success();
}

void BatchWindows::read(int64_t position, int64_t rowBegin, int64_t rows,
                        llvm::MutableArrayRef<int64_t> tokens,
                        llvm::MutableArrayRef<int64_t> labels) const {
  int64_t size = stream.size();
  for (int64_t row = 0; row < rows; ++row) {
    int64_t start = position + (rowBegin + row) * (seqLen + 1);
    int64_t *tokenRow = tokens.data() + row * seqLen;
    int64_t *labelRow = labels.data() + row * seqLen;
    int64_t previous = stream.at(start % size);
    for (int64_t i = 0; i < seqLen; ++i) {
      int64_t id = stream.at((start + i + 1) % size);
      tokenRow[i] = previous;
      labelRow[i] = id;
      previous = id;
    }
  }
}
