// The zerosim version, as set by the top-level CMake project() call, and the build id of the source tree.
#pragma once

namespace zerosim::analysis {

/// "MAJOR.MINOR.PATCH" of this build (CMake PROJECT_VERSION).
[[nodiscard]] const char* version();

/// Which source tree this binary was compiled from: the git commit's hash (12 hex digits), "<hash>-dirty.<8 hex>"
/// when tracked files differed from the commit (the 8 digits hash the difference), or "unknown-<version()>" when
/// built outside a git work tree (a tarball: two releases get two ids, edits to one do not show). Generated at every
/// build by cmake/build_id.cmake, so it is right after a `git pull` and an incremental build. Outputs carry it as
/// `zerosim_build`; a sweep re-simulates journal rows of another build and `zerosim merge` refuses shards of two
/// builds (docs/sweeps-and-planning.md).
[[nodiscard]] const char* build_id();

} // namespace zerosim::analysis
