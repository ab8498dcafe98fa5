#include "analysis/version.hpp"

#ifndef ZEROSIM_VERSION
#define ZEROSIM_VERSION "0.0.0"
#endif

namespace zerosim::analysis {

const char* version() { return ZEROSIM_VERSION; }

} // namespace zerosim::analysis
