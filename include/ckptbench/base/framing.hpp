// Framing (pure): the bytes a framework's serializer writes around tensor data, and the requests
// its file stream issues on save and on restore. One framing so far, `torch-zip`: the zip archive
// torch.save writes (PyTorch 1.13: torch/serialization.py _save, caffe2/serialize/
// inline_container.cc PyTorchStreamWriter over miniz, a std::ofstream underneath) and the reads
// torch.load makes of it (PyTorchFileReader over a Python buffered file). Every offset below was
// checked against zipfile's listing and strace of torch 1.13.1 here; docs/layouts.md, "torch.save
// framing", has the rules and the measurements.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "ckptbench/base/enum_names.hpp"

namespace ckpt {

enum class Framing { none, torch_zip };
const EnumNames<Framing>& framing_names();
Framing parse_framing(const std::string& s);  // throws ConfigError naming 'framing'
std::string framing_name(Framing f);

// One request of a file stream: [offset, offset + len).
struct Req {
  uint64_t offset = 0;
  uint64_t len = 0;
  bool operator==(const Req&) const = default;
};

// One record of a torch.save archive: its local header at `header`, its data at `data`
// (64-byte aligned), `len` data bytes, then a data descriptor.
struct ZipRecord {
  uint64_t header = 0;
  uint64_t data = 0;
  uint64_t len = 0;
};

// A tensor to save: its storage bytes and its key in the state dict (for the pickle's size).
struct ZipItem {
  uint64_t bytes = 0;
  size_t name_len = 0;
};

struct TorchZip {
  uint64_t size = 0;                // the archive's bytes
  ZipRecord pickle, version;        // <archive>/data.pkl, <archive>/version
  std::vector<ZipRecord> tensors;   // <archive>/data/<i> of item i (written in key order)
  uint64_t cdir = 0, cdir_len = 0;  // central directory
  // What libstdc++'s std::filebuf issues for miniz's writes (one writev per record whose data
  // is not buffered), in order.
  std::vector<Req> writes;
  // What torch.load issues (Python BufferedReader of `read_buffer` bytes): the end records and
  // the central directory first, then `version`, `data.pkl` and each tensor in state-dict order.
  std::vector<Req> reads;
};

// The pickle torch.save writes for a dict of `items` (protocol 2; within a few bytes per tensor:
// fitted on torch 1.13.1, see docs/layouts.md).
uint64_t torch_pickle_bytes(const std::vector<ZipItem>& items);

// The archive torch.save(dict_of_items, path) writes, `archive` being the archive's name (the
// file name without its last extension). read_buffer: the Python buffered reader's size
// (st_blksize of the file: 4096 on ext4/xfs); pickle_bytes: data.pkl's size when known (0: the
// estimate of torch_pickle_bytes).
TorchZip torch_zip(const std::string& archive, const std::vector<ZipItem>& items,
                   uint64_t read_buffer = 4096, uint64_t pickle_bytes = 0);

// A file PyTorch DCP 1.13's FileSystemWriter writes (torch/distributed/_shard/checkpoint/
// filesystem.py): each item is torch.save(tensor, stream) into the file's Python stream (one
// archive "archive" per item, back to back; one item per file unless single_file_per_rank),
// written through CPython's BufferedWriter of `buffer` bytes (st_blksize) flushed after each
// item; restored item by item with torch.load on a view of the file.
struct DcpFile {
  uint64_t size = 0;
  std::vector<uint64_t> data;  // each item's tensor data offset
  std::vector<Req> writes, reads;
};
inline constexpr uint64_t kDcpTensorPickleBytes = 159;
// read_buffer: the reader's buffer (8 KiB here: the reads strace shows are 8 KiB fills).
DcpFile dcp_file(const std::vector<ZipItem>& items, uint64_t buffer = 4096,
                 uint64_t read_buffer = 8192);
// .metadata's bytes for items with these FQN lengths (fitted on torch 1.13.1, docs/layouts.md).
uint64_t dcp_metadata_bytes(const std::vector<size_t>& fqn_lens, bool single_file);

// One object pickled to a file of `size` bytes and loaded back through Python's buffered file
// objects (DCP's .metadata: FileSystemWriter.finish pickle.dump, FileSystemReader.read_metadata
// pickle.load): the pickler hands its one frame to a single write; the unpickler reads through a
// BufferedReader of `buffer` bytes (st_blksize): one fill, the rest of the frame directly in whole
// buffers, one more fill for the tail (strace of torch 1.13.1 here: 4096 + 40960 + 1602 bytes
// for a 46,658-byte .metadata).
struct PickleFile {
  std::vector<Req> writes, reads;
};
PickleFile pickle_file(uint64_t size, uint64_t buffer = 4096);

// The archive name torch.save uses for a path: its last component without the last extension.
std::string torch_archive_name(const std::string& path);

// The largest request a framed file issues is cut into pieces of at most this (a buffer
// holds one request; Linux moves at most 2 GiB - 4 KiB per call anyway).
inline constexpr uint64_t kMaxFramedRequest = 1ull << 30;

}  // namespace ckpt
