// The zerosim version, as set by the top-level CMake project() call.
#pragma once

namespace zerosim::analysis {

/// "MAJOR.MINOR.PATCH" of this build (CMake PROJECT_VERSION).
[[nodiscard]] const char* version();

} // namespace zerosim::analysis
