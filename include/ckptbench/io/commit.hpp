// The framework's commit protocol inside a phase (PyTorch DCP: FileSpec::commit, the .metadata
// records; docs/layouts.md, "Commit records"): the records themselves, written and read with
// plain POSIX calls whatever the backend, and the framework's collectives around the data files.
#pragma once
#include <exception>
#include <functional>

#include "ckptbench/io/backend.hpp"

namespace ckpt {

// The framework's collectives inside a phase (DCP's planning and commit, FileSpec::commit): a
// plan with commit records meets three times on save (before the data files, before and after
// the commit records) and twice on restore (after the commit records, after the data files), on
// ctx.framework_comm. framework_meeting: one of them, this rank saying whether it
// failed; true when any rank did. framework_meetings: how many the phase has.
// attend_missed_meetings: a rank that failed before or inside the driver attends the ones it has
// not yet, saying it failed, so its peers stop at once instead of waiting for the stall guard.
bool framework_meeting(PhaseContext& ctx, bool failed, const char* where);
int framework_meetings(const PhaseContext& ctx);
void attend_missed_meetings(PhaseContext& ctx, bool failed) noexcept;

// One phase in the framework's stages (state_dict_saver.py and state_dict_loader.py in 1.13).
// Restore: the trailers (the last written first), the prologues and the commit records
// (FileRole), meet (load_state_dict's reduce_scatter of the plans), the data files, meet (its
// all_gather of the read results). Save: the prologues, meet (save_state_dict's reduce_scatter
// of the plans), the data files, meet (its all_reduce gathers every rank's results), the writer
// writes the commit records, meet (the all_reduce's broadcast), the trailers. A rank that fails
// still meets the others and says so: they stop with PeerLeftError instead of waiting for it.
// Without commit records there is no meeting; without records the data files are the whole
// phase.
// `stage` runs one step unless an earlier one failed, keeping the step's error in `err` (the
// phase driver's: it also drains and abandons the transport); `data_files` is the driver's work
// on the data files. A record is timed in the open, io, sync and close steps and counted in
// ctx.rec like a data file.
void run_commit_stages(PhaseContext& ctx, std::exception_ptr& err,
                       const std::function<void(const std::function<void()>&)>& stage,
                       const std::function<void()>& data_files);

}  // namespace ckpt
