// The CPU work a framework does on the bytes of each request inside a phase (`framework_cpu`),
// beside the data paths: the phase driver calls it per transfer and takes its time out of the io
// step. Both return the seconds spent, which they also record as the cpu step (Step::cpu).
#pragma once
#include <cstddef>

#include "ckptbench/base/metrics.hpp"
#include "ckptbench/io/source.hpp"
#include "ckptbench/plan/layout.hpp"
#include "ckptbench/plan/transfer.hpp"

namespace ckpt {

// Save: torch.save's stream (miniz, mz_zip_writer_add_mem_ex_v2) computes the CRC-32 of each
// record's data before it writes the record: the same pass over the tensor bytes of transfer t
// of file f, staged at data.
double framework_cpu(PhaseRecorder& rec, const FileSpec& f, const Transfer& t,
                     const std::byte* data);

// Restore of a plan that loads in place (IoPlan::load_in_place): DCP's FileSystemReader.read_data
// (1.13, filesystem.py): torch.load of each item into a new tensor, then
// target_tensor.copy_(tensor) into the state dict the trainer holds - a copy of the request's
// tensor bytes (read into data) into `into` - after which the new tensor is dropped: its pages go
// back to the system (glibc returns blocks this large with munmap), here with MADV_DONTNEED on
// the pages the request covers whole.
double load_in_place(PhaseRecorder& rec, const ShardMemory& into, const FileSpec& f,
                     const Transfer& t, std::byte* data);

}  // namespace ckpt
