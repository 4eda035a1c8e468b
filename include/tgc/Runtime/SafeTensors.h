//===- SafeTensors.h - reading and writing .safetensors files ---*- C++ -*-===//
//
// The safetensors format: an 8-byte little-endian header length, a JSON
// header mapping tensor names to {dtype, shape, data_offsets}, then the raw
// little-endian data. Plain C++17 with no LLVM dependency: it is linked into
// every training executable. Every malformed file is reported as an error
// naming the file and the problem; nothing is trusted before it is checked.
//
//===----------------------------------------------------------------------===//
#ifndef TGC_RUNTIME_SAFETENSORS_H
#define TGC_RUNTIME_SAFETENSORS_H

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace tgc::rt {

enum class DType { F64, F32, F16, BF16, I64, I32, U16, U8 };

/// Bytes per element; the dtype's name as safetensors spells it ("F32").
size_t dtypeSize(DType dtype);
const char *dtypeName(DType dtype);
bool parseDType(const std::string &name, DType &dtype);

struct TensorData {
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  /// The elements: owned, or (a tensor readSafeTensors read) in the file's
  /// read-only mapping, which `mapping` keeps alive.
  std::vector<uint8_t> bytes;
  const uint8_t *mapped = nullptr;
  std::shared_ptr<const void> mapping;

  const uint8_t *data() const { return mapped ? mapped : bytes.data(); }
  size_t byteSize() const;
  int64_t numElements() const;
  /// Element `i` converted to double (any dtype).
  double get(int64_t i) const;
  /// Gives the memory of a mapped tensor's pages back (they are read again
  /// from the file if touched): a checkpoint larger than the free memory
  /// loads one tensor at a time.
  void release() const;
};

struct SafeTensorsFile {
  /// Tensors by name, in name order.
  std::map<std::string, TensorData> tensors;
  std::map<std::string, std::string> metadata;
};

/// Reads `path`. Returns false and sets `error` ("FILE: problem") on any
/// malformed input: truncation, a header that lies about sizes or offsets,
/// overlapping or out-of-range data, unknown dtypes, bad JSON.
bool readSafeTensors(const std::string &path, SafeTensorsFile &file,
                     std::string &error);

/// Same, from bytes in memory (`path` is used in messages only).
bool parseSafeTensors(const std::string &path, const std::vector<uint8_t> &data,
                      SafeTensorsFile &file, std::string &error);

/// Writes `file` atomically: to a temporary file beside `path`, then renamed.
bool writeSafeTensors(const std::string &path, const SafeTensorsFile &file,
                      std::string &error);

/// A tensor's header entry: what a file holds before its bytes are made.
struct TensorEntry {
  std::string name;
  DType dtype;
  std::vector<int64_t> shape;
};

/// The same, one tensor at a time: `produce(i)` makes entries[i]'s bytes
/// (of its dtype and shape) as the file is written, so a file larger than
/// the free memory can be written. Entries in the order given.
bool writeSafeTensors(const std::string &path,
                      const std::map<std::string, std::string> &metadata,
                      const std::vector<TensorEntry> &entries,
                      const std::function<TensorData(size_t)> &produce,
                      std::string &error);

/// A checkpoint as Hugging Face stores it: one .safetensors file, a sharded
/// one (`model.safetensors.index.json`, whose `weight_map` names the shard
/// file of every tensor, shards beside it), or a model directory holding
/// either. Every tensor must be in the shard its index names.
bool readCheckpoint(const std::string &path, SafeTensorsFile &file,
                    std::string &error);

/// Builds an F32 tensor (F64 with `f64`) from doubles.
TensorData makeTensor(const std::vector<int64_t> &shape,
                      const std::vector<double> &values, DType dtype);

/// `count` floats as `dtype` (F32, BF16 or F16; rounded to nearest even,
/// overflow to infinity, NaN kept).
TensorData narrowFloats(const float *values, int64_t count,
                        const std::vector<int64_t> &shape, DType dtype);

} // namespace tgc::rt

#endif // TGC_RUNTIME_SAFETENSORS_H
