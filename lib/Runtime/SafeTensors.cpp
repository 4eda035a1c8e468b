//===- SafeTensors.cpp - reading and writing .safetensors files -----------===//
//
// The format's checks over its JSON header (tgc/Runtime/Json.h). No LLVM:
// this file is part of the runtime linked into training executables.
//
//===----------------------------------------------------------------------===//

#include "tgc/Runtime/SafeTensors.h"
#include "tgc/Runtime/Json.h"
#include "Files.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <limits>
#include <memory>

using namespace tgc::rt;

size_t tgc::rt::dtypeSize(DType dtype) {
  switch (dtype) {
  case DType::F64:
  case DType::I64:
    return 8;
  case DType::F32:
  case DType::I32:
    return 4;
  case DType::F16:
  case DType::BF16:
  case DType::U16:
    return 2;
  case DType::U8:
    return 1;
  }
  return 0;
}

const char *tgc::rt::dtypeName(DType dtype) {
  switch (dtype) {
  case DType::F64:
    return "F64";
  case DType::F32:
    return "F32";
  case DType::F16:
    return "F16";
  case DType::BF16:
    return "BF16";
  case DType::I64:
    return "I64";
  case DType::I32:
    return "I32";
  case DType::U16:
    return "U16";
  case DType::U8:
    return "U8";
  }
  return "?";
}

bool tgc::rt::parseDType(const std::string &name, DType &dtype) {
  static const std::pair<const char *, DType> names[] = {
      {"F64", DType::F64},   {"F32", DType::F32}, {"F16", DType::F16},
      {"BF16", DType::BF16}, {"I64", DType::I64}, {"I32", DType::I32},
      {"U16", DType::U16},   {"U8", DType::U8}};
  for (auto &[n, d] : names)
    if (name == n) {
      dtype = d;
      return true;
    }
  return false;
}

size_t TensorData::byteSize() const {
  return mapped ? numElements() * dtypeSize(dtype) : bytes.size();
}

void TensorData::release() const {
  if (!mapped)
    return;
  // Whole pages inside the tensor only: its neighbours may still be read.
  long page = ::sysconf(_SC_PAGESIZE);
  uintptr_t begin = reinterpret_cast<uintptr_t>(mapped);
  uintptr_t end = begin + byteSize();
  uintptr_t first = (begin + page - 1) / page * page, last = end / page * page;
  if (first < last)
    ::madvise(reinterpret_cast<void *>(first), last - first, MADV_DONTNEED);
}

int64_t TensorData::numElements() const {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

namespace {

double halfToDouble(uint16_t h) {
  int sign = h >> 15, exp = (h >> 10) & 0x1f, mant = h & 0x3ff;
  double v;
  if (exp == 0)
    v = std::ldexp(mant, -24);
  else if (exp == 31)
    v = mant ? std::numeric_limits<double>::quiet_NaN()
             : std::numeric_limits<double>::infinity();
  else
    v = std::ldexp(mant + 1024, exp - 25);
  return sign ? -v : v;
}

template <typename T> T load(const uint8_t *p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}

} // namespace

double TensorData::get(int64_t i) const {
  const uint8_t *p = data() + i * dtypeSize(dtype);
  switch (dtype) {
  case DType::F64:
    return load<double>(p);
  case DType::F32:
    return load<float>(p);
  case DType::F16:
    return halfToDouble(load<uint16_t>(p));
  case DType::BF16: {
    uint32_t bits = uint32_t(load<uint16_t>(p)) << 16;
    return load<float>(reinterpret_cast<const uint8_t *>(&bits));
  }
  case DType::I64:
    return static_cast<double>(load<int64_t>(p));
  case DType::I32:
    return load<int32_t>(p);
  case DType::U16:
    return load<uint16_t>(p);
  case DType::U8:
    return *p;
  }
  return 0;
}

TensorData tgc::rt::makeTensor(const std::vector<int64_t> &shape,
                               const std::vector<double> &values, DType dtype) {
  TensorData t;
  t.dtype = dtype;
  t.shape = shape;
  t.bytes.resize(values.size() * dtypeSize(dtype));
  for (size_t i = 0; i < values.size(); ++i) {
    uint8_t *p = t.bytes.data() + i * dtypeSize(dtype);
    switch (dtype) {
    case DType::F64: {
      double v = values[i];
      std::memcpy(p, &v, 8);
      break;
    }
    case DType::I64: {
      int64_t v = static_cast<int64_t>(values[i]);
      std::memcpy(p, &v, 8);
      break;
    }
    case DType::I32: {
      int32_t v = static_cast<int32_t>(values[i]);
      std::memcpy(p, &v, 4);
      break;
    }
    default: {
      float v = static_cast<float>(values[i]);
      std::memcpy(p, &v, 4);
      t.dtype = DType::F32;
      break;
    }
    }
  }
  return t;
}

namespace {
uint16_t floatToBF16(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  if ((x & 0x7fffffff) > 0x7f800000) // NaN: keep it one (quiet)
    return static_cast<uint16_t>((x >> 16) | 0x40);
  x += 0x7fff + ((x >> 16) & 1);
  return static_cast<uint16_t>(x >> 16);
}

uint16_t floatToHalf(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  uint32_t sign = (x >> 16) & 0x8000, mantissa = x & 0x7fffff;
  int32_t exponent = static_cast<int32_t>((x >> 23) & 0xff);
  if (exponent == 0xff) // infinity, NaN
    return static_cast<uint16_t>(sign | 0x7c00 | (mantissa ? 0x200 : 0));
  int32_t e = exponent - 127 + 15;
  if (e >= 0x1f)
    return static_cast<uint16_t>(sign | 0x7c00);
  auto round = [](uint32_t value, uint32_t shift) {
    uint32_t kept = value >> shift, rest = value & ((1u << shift) - 1),
             half = 1u << (shift - 1);
    return kept + (rest > half || (rest == half && (kept & 1)));
  };
  if (e <= 0) { // a subnormal half, or zero
    if (e < -10)
      return static_cast<uint16_t>(sign);
    return static_cast<uint16_t>(sign | round(mantissa | 0x800000, 14 - e));
  }
  // A carry out of the mantissa rounds into the exponent (up to infinity).
  return static_cast<uint16_t>(
      sign | round((static_cast<uint32_t>(e) << 23) | mantissa, 13));
}
} // namespace

TensorData tgc::rt::narrowFloats(const float *values, int64_t count,
                                 const std::vector<int64_t> &shape,
                                 DType dtype) {
  TensorData t;
  t.dtype = dtype;
  t.shape = shape;
  t.bytes.resize(count * dtypeSize(dtype));
  if (dtype == DType::F32) {
    std::memcpy(t.bytes.data(), values, count * 4);
    return t;
  }
  for (int64_t i = 0; i < count; ++i) {
    uint16_t narrow =
        dtype == DType::BF16 ? floatToBF16(values[i]) : floatToHalf(values[i]);
    std::memcpy(t.bytes.data() + 2 * i, &narrow, 2);
  }
  return t;
}

namespace {
/// Nesting a safetensors header or checkpoint index may have (they use 3).
constexpr unsigned kHeaderMaxDepth = 16;
} // namespace

namespace {
/// The checks of parseSafeTensors over `size` bytes at `data`; tensors point
/// into them when `mapping` keeps them alive, else they copy their bytes.
bool parseBytes(const std::string &path, const uint8_t *bytes, uint64_t size,
                const std::shared_ptr<const void> &mapping,
                SafeTensorsFile &file, std::string &error) {
  struct Span {
    const uint8_t *ptr;
    uint64_t n;
    uint64_t size() const { return n; }
    const uint8_t *data() const { return ptr; }
  } data{bytes, size};
  auto fail = [&](const std::string &message) {
    error = path + ": " + message;
    return false;
  };
  if (data.size() < 8)
    return fail(
        "not a safetensors file (shorter than its 8-byte header length)");
  uint64_t headerSize = load<uint64_t>(data.data());
  if (headerSize > data.size() - 8)
    return fail("header length " + std::to_string(headerSize) +
                " exceeds the file size (" + std::to_string(data.size()) +
                " bytes): truncated or not a safetensors file");
  const char *header = reinterpret_cast<const char *>(data.data() + 8);
  json::Document doc;
  std::string jsonError;
  if (!json::parse(std::string_view(header, headerSize), doc, jsonError,
                   kHeaderMaxDepth))
    return fail("invalid header JSON (" + jsonError + ")");
  const json::Value &root = doc.root();
  if (!root.isObject())
    return fail("header must be a JSON object");
  uint64_t dataSize = data.size() - 8 - headerSize;
  const uint8_t *base = data.data() + 8 + headerSize;
  std::vector<std::pair<uint64_t, uint64_t>> ranges;
  for (auto &[nameView, entry] : root.members()) {
    std::string name(nameView);
    if (name == "__metadata__") {
      if (!entry.isObject())
        return fail("__metadata__ must be an object of strings");
      for (auto &[k, v] : entry.members()) {
        if (!v.isString())
          return fail("__metadata__ value '" + std::string(k) +
                      "' must be a string");
        file.metadata[std::string(k)] = v.string();
      }
      continue;
    }
    std::string where = "tensor '" + name + "': ";
    if (!entry.isObject())
      return fail(where + "entry must be an object");
    const json::Value *dtype = entry.get("dtype"), *shape = entry.get("shape"),
                      *offsets = entry.get("data_offsets");
    if (!dtype || !dtype->isString())
      return fail(where + "missing or non-string 'dtype'");
    TensorData t;
    if (!parseDType(std::string(dtype->string()), t.dtype))
      return fail(where + "unsupported dtype '" + std::string(dtype->string()) +
                  "'");
    if (!shape || !shape->isArray())
      return fail(where + "missing or non-array 'shape'");
    uint64_t numel = 1;
    for (const json::Value &d : shape->items()) {
      int64_t extent = d.integer();
      if (!d.isInteger() || extent < 0 || extent > (int64_t(1) << 40))
        return fail(where + "shape entries must be non-negative integers");
      t.shape.push_back(extent);
      if (extent && numel > (uint64_t(1) << 50) / uint64_t(extent))
        return fail(where + "shape is too large");
      numel *= extent;
    }
    if (!offsets || offsets->items().size() != 2 ||
        !offsets->items()[0].isInteger() || !offsets->items()[1].isInteger())
      return fail(where + "'data_offsets' must be [begin, end]");
    int64_t b = offsets->items()[0].integer(),
            e = offsets->items()[1].integer();
    if (b < 0 || e < b || uint64_t(e) > dataSize)
      return fail(where + "data_offsets [" + std::to_string(b) + ", " +
                  std::to_string(e) + ") lie outside the " +
                  std::to_string(dataSize) + "-byte data section");
    if (uint64_t(e - b) != numel * dtypeSize(t.dtype))
      return fail(where + "data_offsets cover " + std::to_string(e - b) +
                  " bytes but shape and dtype need " +
                  std::to_string(numel * dtypeSize(t.dtype)));
    ranges.emplace_back(b, e);
    if (mapping) {
      t.mapped = base + b;
      t.mapping = mapping;
    } else {
      t.bytes.assign(base + b, base + e);
    }
    if (!file.tensors.emplace(name, std::move(t)).second)
      return fail(where + "appears twice");
  }
  std::sort(ranges.begin(), ranges.end());
  for (size_t i = 1; i < ranges.size(); ++i)
    if (ranges[i].first < ranges[i - 1].second)
      return fail("tensor data ranges overlap");
  return true;
}

/// A read-only private mapping of a whole file, unmapped with its last
/// tensor.
struct FileMapping {
  void *base = MAP_FAILED;
  size_t size = 0;
  ~FileMapping() {
    if (base != MAP_FAILED)
      ::munmap(base, size);
  }
};
} // namespace

bool tgc::rt::parseSafeTensors(const std::string &path,
                               const std::vector<uint8_t> &data,
                               SafeTensorsFile &file, std::string &error) {
  return parseBytes(path, data.data(), data.size(), nullptr, file, error);
}

bool tgc::rt::readSafeTensors(const std::string &path, SafeTensorsFile &file,
                              std::string &error) {
  // Mapped, not read: a tensor's pages are resident while it is copied and
  // can be given back after (TensorData::release).
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    error = path + ": cannot open: " + std::strerror(errno);
    return false;
  }
  struct stat st;
  bool mappable =
      ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0;
  auto mapping = std::make_shared<FileMapping>();
  if (mappable) {
    mapping->size = static_cast<size_t>(st.st_size);
    mapping->base =
        ::mmap(nullptr, mapping->size, PROT_READ, MAP_PRIVATE, fd, 0);
  }
  ::close(fd);
  if (mapping->base != MAP_FAILED)
    return parseBytes(path, static_cast<const uint8_t *>(mapping->base),
                      mapping->size, mapping, file, error);
  // An empty file, a pipe: read whole.
  std::string bytes;
  if (!readFileBytes(path, bytes, error))
    return false;
  return parseBytes(path, reinterpret_cast<const uint8_t *>(bytes.data()),
                    bytes.size(), nullptr, file, error);
}

namespace {
bool endsWith(const std::string &s, const std::string &suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

/// A sharded checkpoint: its index's weight_map, then each shard.
bool readShardedCheckpoint(const std::string &indexPath, SafeTensorsFile &file,
                           std::string &error) {
  auto fail = [&](const std::string &message) {
    error = indexPath + ": " + message;
    return false;
  };
  std::ifstream in(indexPath, std::ios::binary);
  if (!in)
    return fail(std::string("cannot open: ") + std::strerror(errno));
  std::string text((std::istreambuf_iterator<char>(in)),
                   std::istreambuf_iterator<char>());
  json::Document doc;
  std::string jsonError;
  if (!json::parse(text, doc, jsonError, kHeaderMaxDepth))
    return fail("invalid JSON (" + jsonError + ")");
  const json::Value *map = doc.root().get("weight_map");
  if (!map || !map->isObject())
    return fail("not a sharded checkpoint index (no \"weight_map\" object)");
  std::string dir;
  size_t slash = indexPath.rfind('/');
  if (slash != std::string::npos)
    dir = indexPath.substr(0, slash + 1);
  // Shard file → the tensors the index puts there.
  std::map<std::string, std::vector<std::string>> shards;
  for (auto &[name, shard] : map->members()) {
    std::string_view shardFile = shard.string();
    if (shardFile.empty() || shardFile.find('/') != std::string::npos)
      return fail("weight_map entry '" + std::string(name) +
                  "' is not the file name of a shard");
    shards[std::string(shardFile)].emplace_back(name);
  }
  if (shards.empty())
    return fail("the weight_map is empty");
  // A tensor missing from its shard is reported before one a shard holds
  // unlisted: when an index misplaces a tensor, that names the cause.
  std::string unlisted;
  for (auto &[shardName, names] : shards) {
    SafeTensorsFile shard;
    if (!readSafeTensors(dir + shardName, shard, error))
      return false;
    for (const std::string &name : names) {
      auto it = shard.tensors.find(name);
      if (it == shard.tensors.end())
        return fail("tensor '" + name + "' is not in its shard " + shardName);
      file.tensors[name] = std::move(it->second);
      shard.tensors.erase(it);
    }
    if (!shard.tensors.empty() && unlisted.empty())
      unlisted = "shard " + shardName + " holds '" +
                 shard.tensors.begin()->first +
                 "', which the weight_map does not list";
    for (auto &[key, value] : shard.metadata)
      file.metadata.emplace(key, value);
  }
  if (!unlisted.empty())
    return fail(unlisted);
  return true;
}
} // namespace

bool tgc::rt::readCheckpoint(const std::string &path, SafeTensorsFile &file,
                             std::string &error) {
  if (isDirectory(path)) {
    std::string base = endsWith(path, "/") ? path : path + "/";
    if (isFile(base + "model.safetensors.index.json"))
      return readShardedCheckpoint(base + "model.safetensors.index.json", file,
                                   error);
    if (isFile(base + "model.safetensors"))
      return readSafeTensors(base + "model.safetensors", file, error);
    error = path + ": a directory without model.safetensors or "
                   "model.safetensors.index.json";
    return false;
  }
  if (endsWith(path, ".json"))
    return readShardedCheckpoint(path, file, error);
  return readSafeTensors(path, file, error);
}

bool tgc::rt::writeSafeTensors(
    const std::string &path, const std::map<std::string, std::string> &metadata,
    const std::vector<TensorEntry> &entries,
    const std::function<TensorData(size_t)> &produce, std::string &error) {
  json::Writer header;
  header.beginObject();
  if (!metadata.empty()) {
    header.key("__metadata__").beginObject();
    for (auto &[k, v] : metadata)
      header.key(k).string(v);
    header.endObject();
  }
  uint64_t offset = 0;
  for (const TensorEntry &e : entries) {
    uint64_t bytes = dtypeSize(e.dtype);
    header.key(e.name).beginObject();
    header.key("dtype").string(dtypeName(e.dtype));
    header.key("shape").beginArray();
    for (int64_t d : e.shape) {
      header.integer(d);
      bytes *= d;
    }
    header.endArray();
    header.key("data_offsets").beginArray();
    header.unsignedInteger(offset).unsignedInteger(offset + bytes);
    header.endArray().endObject();
    offset += bytes;
  }
  header.endObject();
  std::string h = header.str();
  while (h.size() % 8)
    h += ' ';
  return writeFileAtomically(
      path,
      [&](std::FILE *f) {
        uint64_t n = h.size();
        bool ok = std::fwrite(&n, 8, 1, f) == 1 &&
                  std::fwrite(h.data(), 1, h.size(), f) == h.size();
        for (size_t i = 0; ok && i < entries.size(); ++i) {
          TensorData t = produce(i);
          ok = t.byteSize() == 0 ||
               std::fwrite(t.data(), 1, t.byteSize(), f) == t.byteSize();
        }
        return ok;
      },
      error);
}

bool tgc::rt::writeSafeTensors(const std::string &path,
                               const SafeTensorsFile &file,
                               std::string &error) {
  std::vector<TensorEntry> entries;
  std::vector<const TensorData *> tensors;
  for (auto &[name, t] : file.tensors) {
    entries.push_back({name, t.dtype, t.shape});
    tensors.push_back(&t);
  }
  // Written from where they are: a view shares the caller's bytes.
  return writeSafeTensors(
      path, file.metadata, entries,
      [&](size_t i) {
        TensorData view;
        view.dtype = tensors[i]->dtype;
        view.shape = tensors[i]->shape;
        view.mapped = tensors[i]->data();
        return view;
      },
      error);
}
