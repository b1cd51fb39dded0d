#include "ckptbench/base/framing.hpp"

#include <algorithm>
#include <map>

#include "ckptbench/base/error.hpp"

namespace ckpt {

const EnumNames<Framing>& framing_names() {
  static const EnumNames<Framing> n = {{Framing::none, "none"}, {Framing::torch_zip, "torch-zip"}};
  return n;
}

Framing parse_framing(const std::string& s) {
  if (auto f = framing_names().find(s)) return *f;
  throw ConfigError("'framing': unknown value '" + s + "' (allowed: " + framing_names().list() +
                    ")");
}

std::string framing_name(Framing f) { return framing_names().name(f); }

std::string torch_archive_name(const std::string& path) {
  // PyTorchStreamWriter's basename(): after the last '/', before the last '.'.
  const size_t slash = path.rfind('/');
  std::string b = slash == std::string::npos ? path : path.substr(slash + 1);
  const size_t dot = b.rfind('.');
  return dot == std::string::npos ? b : b.substr(0, dot);
}

uint64_t torch_pickle_bytes(const std::vector<ZipItem>& items) {
  // protocol-2 pickle of {name: tensor}: per tensor the key, _rebuild_tensor_v2's arguments (the
  // persistent id tuple with the storage key, dtype, 'cpu' and numel; offset, size and stride
  // tuples; requires_grad; an empty OrderedDict). The first tensor also names the classes (memo
  // references afterwards); memo references take 5 bytes instead of 2 past 256 entries (about 8
  // per tensor). Fitted on torch 1.13.1 with 1-D tensors and 5-byte keys: 1, 2, 10, 100 and 1000
  // tensors give 169, 231, 719, 7,949 and 86,251 bytes; this gives 169, 231, 727, 7,961 and
  // 86,261.
  uint64_t b = 82 + (items.empty() ? 0 : 25);
  for (size_t i = 0; i < items.size(); i++) {
    b += 62 + items[i].name_len - 5 + std::to_string(i).size() - 1;
    if (i >= 32) b += 23;
  }
  return b;
}

namespace {

constexpr uint64_t kZip32 = 0xFFFFFFFFull;
constexpr uint64_t kLocalHeader = 30, kCentralHeader = 46, kAlign = 64;
constexpr uint64_t kEndRecords = 56 + 20 + 22;  // zip64 end record, its locator, end record

// libstdc++'s basic_filebuf (BUFSIZ = 8192 bytes, one kept back): a write of at least
// min(1024, room left) goes out at once with what is buffered (one writev), a smaller one is
// buffered; close flushes.
class FilebufModel {
 public:
  explicit FilebufModel(std::vector<Req>& out) : out_(out) {}
  void write(uint64_t n) {
    const uint64_t room = kCap - buffered_;
    if (n >= std::min<uint64_t>(1024, room)) {
      emit(buffered_ + n);
      buffered_ = 0;
    } else {
      buffered_ += n;
    }
  }
  void close() {
    if (buffered_ > 0) emit(buffered_);
    buffered_ = 0;
  }

 private:
  static constexpr uint64_t kCap = 8191;
  void emit(uint64_t n) {
    out_.push_back({pos_, n});
    pos_ += n;
  }
  std::vector<Req>& out_;
  uint64_t pos_ = 0, buffered_ = 0;
};

// CPython's BufferedReader used through readinto: bytes in the buffer are copied; for the rest,
// more than a buffer's worth is read directly, else the buffer is refilled from there.
class BufferedReaderModel {
 public:
  BufferedReaderModel(std::vector<Req>& out, uint64_t buf, uint64_t size)
      : out_(out), b_(std::max<uint64_t>(buf, 1)), size_(size) {}
  void read(uint64_t off, uint64_t n) {
    if (off >= size_) return;
    n = std::min(n, size_ - off);
    uint64_t have = 0;
    if (off >= lo_ && off < hi_) have = std::min(n, hi_ - off);
    if (have == n) return;
    const uint64_t at = off + have, rem = n - have;
    if (rem > b_) {
      out_.push_back({at, rem});
      lo_ = hi_ = 0;
    } else {
      fill(at, b_);
    }
  }
  // A read straight into the caller's memory, the buffer dropped.
  void direct(uint64_t off, uint64_t n) {
    n = std::min(n, size_ - off);
    if (n > 0) out_.push_back({off, n});
    lo_ = hi_ = 0;
  }
  void drop() { lo_ = hi_ = 0; }

 private:
  void fill(uint64_t at, uint64_t n) {
    n = std::min(n, size_ - at);
    out_.push_back({at, n});
    lo_ = at;
    hi_ = at + n;
  }
  std::vector<Req>& out_;
  uint64_t b_, size_, lo_ = 0, hi_ = 0;
};

// CPython's BufferedWriter (buffer: the file's st_blksize): a write that fits is buffered; one
// that does not flushes the buffer first and, if larger than the buffer, goes out directly.
class PyWriterModel {
 public:
  PyWriterModel(std::vector<Req>& out, uint64_t buf) : out_(out), b_(std::max<uint64_t>(buf, 1)) {}
  void write(uint64_t n) {
    if (buffered_ + n <= b_) {
      buffered_ += n;
      return;
    }
    flush();
    if (n > b_)
      emit(n);
    else
      buffered_ = n;
  }
  void flush() {
    if (buffered_ > 0) emit(buffered_);
    buffered_ = 0;
  }

 private:
  void emit(uint64_t n) {
    out_.push_back({pos_, n});
    pos_ += n;
  }
  std::vector<Req>& out_;
  uint64_t b_, pos_ = 0, buffered_ = 0;
};

// The archive's layout from `base` on, and the sizes of miniz's write calls in order.
template <class Writer>
TorchZip zip_layout(const std::string& archive, const std::vector<ZipItem>& items,
                    uint64_t pickle_bytes, uint64_t base, Writer& w) {
  TorchZip z;
  // Offsets inside the archive (miniz aligns to the archive's own cursor); `base` added at the end.
  uint64_t cur = 0, cdir = 0;
  // writeRecord (inline_container.cc): a local header whose extra field ("FB" + padding) puts
  // the data at a multiple of 64, the data, a data descriptor (miniz writes sizes after the data).
  auto record = [&](const std::string& name, uint64_t len) {
    ZipRecord r;
    r.header = cur;
    r.len = len;
    uint64_t start = cur + kLocalHeader + name.size() + 4;
    const bool big = len >= kZip32, far = cur >= kZip32;
    if (big || far) start += 4 + (big ? 16 : 0) + (far ? 8 : 0);
    r.data = (start + kAlign - 1) / kAlign * kAlign;
    w.write(r.data - cur);
    w.write(len);
    const uint64_t desc = big ? 24 : 16;
    w.write(desc);
    cur = r.data + len + desc;
    cdir += kCentralHeader + name.size() + (big || far ? 4 + (big ? 16 : 0) + (far ? 8 : 0) : 0);
    return r;
  };
  const std::string pre = archive + "/";
  z.pickle = record(pre + "data.pkl", pickle_bytes);
  // _save: storages under their keys "0", "1", ... (state-dict order), written in sorted order.
  std::map<std::string, size_t> keys;
  for (size_t i = 0; i < items.size(); i++) keys[std::to_string(i)] = i;
  z.tensors.resize(items.size());
  for (const auto& [key, i] : keys) z.tensors[i] = record(pre + "data/" + key, items[i].bytes);
  z.version = record(pre + "version", 2);  // "3\n"
  z.cdir = cur;
  z.cdir_len = cdir;
  w.write(cdir);
  w.write(56);
  w.write(20);
  w.write(22);
  z.size = cur + cdir + kEndRecords;
  auto shift = [base](ZipRecord& r) {
    r.header += base;
    r.data += base;
  };
  shift(z.pickle);
  shift(z.version);
  for (auto& t : z.tensors) shift(t);
  z.cdir += base;
  return z;
}

// torch.load of the archive z (at its offsets) through the reader r: the zip check and the size
// (two reads at its start), miniz's search for the end record (a 4 KiB read at the end), the end
// records, the central directory; then each record's 30-byte local header and its data:
// version, data.pkl, the tensors in unpickling order.
void zip_load(const TorchZip& z, uint64_t base, BufferedReaderModel& r, bool locate_direct) {
  const uint64_t end = base + z.size;
  r.read(base, 4);
  r.drop();
  r.read(base, 4);
  const uint64_t tail = std::min<uint64_t>(4096, z.size);
  if (locate_direct)
    r.direct(end - tail, tail);
  else
    r.read(end - tail, tail);
  r.read(end - 22, 22);
  r.read(end - 42, 20);
  r.read(end - kEndRecords, 56);
  r.read(z.cdir, z.cdir_len);
  auto load = [&](const ZipRecord& rec) {
    r.read(rec.header, kLocalHeader);
    r.read(rec.data, rec.len);
  };
  load(z.version);
  load(z.pickle);
  for (const auto& t : z.tensors) load(t);
}

}  // namespace

TorchZip torch_zip(const std::string& archive, const std::vector<ZipItem>& items,
                   uint64_t read_buffer, uint64_t pickle_bytes) {
  std::vector<Req> writes;
  FilebufModel w(writes);
  TorchZip z =
      zip_layout(archive, items, pickle_bytes > 0 ? pickle_bytes : torch_pickle_bytes(items), 0, w);
  w.close();
  z.writes = std::move(writes);
  BufferedReaderModel r(z.reads, read_buffer, z.size);
  zip_load(z, 0, r, true);
  return z;
}

DcpFile dcp_file(const std::vector<ZipItem>& items, uint64_t buffer, uint64_t read_buffer) {
  DcpFile f;
  PyWriterModel w(f.writes, buffer);
  std::vector<TorchZip> zips;
  for (const auto& it : items) {
    // torch.save(tensor, stream): an archive named "archive" holding one storage; the pickle of
    // a lone tensor (159 bytes for a 1-D tensor in torch 1.13.1); _open_zipfile_writer_buffer
    // flushes the stream when the archive is done.
    zips.push_back(zip_layout("archive", {{it.bytes, 0}}, kDcpTensorPickleBytes, f.size, w));
    w.flush();
    f.data.push_back(zips.back().tensors[0].data);
    f.size += zips.back().size;
  }
  // load_state_dict: each item through torch.load on a view of the file at the item's offset,
  // one buffered reader for the file.
  BufferedReaderModel r(f.reads, read_buffer, f.size);
  uint64_t base = 0;
  for (const auto& z : zips) {
    // miniz's 4 KiB read at the archive's end: straight to the caller when the archive ends
    // at the end of the file (one item per file), through the buffer otherwise - as strace
    // shows for both file modes (docs/layouts.md).
    zip_load(z, base, r, zips.size() == 1);
    base += z.size;
  }
  return f;
}

uint64_t dcp_metadata_bytes(const std::vector<size_t>& fqn_lens, bool single_file) {
  // pickle of Metadata: per item its FQN twice (state_dict_metadata, storage_data's
  // MetadataIndex), the chunk's offsets and sizes, the storage's file name and offset/length.
  // Fitted on torch 1.13.1 here: 165 items with 8,056 FQN bytes gave 46,282 bytes one file per
  // item and 45,024 one file per rank (the file name is memoised).
  uint64_t b = 1024;
  for (size_t l : fqn_lens) b += 2 * l + (single_file ? 169 : 176);
  return b;
}

PickleFile pickle_file(uint64_t size, uint64_t buffer) {
  PickleFile p;
  if (size == 0) return p;
  p.writes.push_back({0, size});
  const uint64_t first = std::min(size, buffer);
  p.reads.push_back({0, first});
  const uint64_t direct = (size - first) / buffer * buffer;
  if (direct > 0) p.reads.push_back({first, direct});
  if (first + direct < size) p.reads.push_back({first + direct, size - first - direct});
  return p;
}

}  // namespace ckpt
