// Writing an output file all-or-nothing: into `path.tmp`, then rename(2) over `path`, so an error never leaves a
// half-written result behind.
#pragma once

#include <functional>
#include <ostream>
#include <string>

namespace zerosim::analysis {

/// Calls `fill` with a stream on `path + ".tmp"`, then renames it to `path`. On any failure (open, write, a throw
/// from `fill`, rename) removes the .tmp file and throws zerosim::Error naming the path. A symlink is written
/// through to its target; an existing path that is not a regular file (a device such as /dev/stdout, a FIFO) is
/// written in place, not replaced; a directory is an error.
void write_file_atomic(const std::string& path, const std::function<void(std::ostream&)>& fill);

/// write_file_atomic with fixed content.
void write_file_atomic(const std::string& path, const std::string& content);

} // namespace zerosim::analysis
