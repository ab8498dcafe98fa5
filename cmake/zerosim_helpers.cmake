# Shared CMake helpers for zerosim.

# zerosim_set_warnings(target): the project's warning set, PRIVATE so users of the libraries are not affected.
function(zerosim_set_warnings target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wpedantic -Wshadow -Wconversion -Wno-sign-conversion)
  # GCC 12's -Wrestrict flags `"text" + std::string(...)` inside libstdc++ (a false positive, GCC bug 105329, fixed in
  # GCC 13): with -O2 it fired on test helpers and made a fresh build print screens of warnings.
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU" AND CMAKE_CXX_COMPILER_VERSION VERSION_LESS 13)
    target_compile_options(${target} PRIVATE -Wno-restrict)
  endif()
  if(ZEROSIM_WERROR)
    target_compile_options(${target} PRIVATE -Werror)
  endif()
endfunction()

# zerosim_add_library(name SOURCES ... DEPS ...): a static library zerosim_<name> with alias zerosim::<name>.
function(zerosim_add_library name)
  cmake_parse_arguments(ARG "" "" "SOURCES;DEPS;PRIVATE_DEPS" ${ARGN})
  add_library(zerosim_${name} STATIC ${ARG_SOURCES})
  add_library(zerosim::${name} ALIAS zerosim_${name})
  target_include_directories(zerosim_${name} PUBLIC ${PROJECT_SOURCE_DIR})
  target_link_libraries(zerosim_${name} PUBLIC ${ARG_DEPS} PRIVATE ${ARG_PRIVATE_DEPS})
  target_compile_definitions(zerosim_${name} PRIVATE ZEROSIM_DATA_DIR="${ZEROSIM_DATA_DIR}")
  zerosim_set_warnings(zerosim_${name})
endfunction()

# zerosim_add_test(module SOURCES ... DEPS ...): one Catch2 binary per module; ctest runs a process per
# TEST_CASE (catch_discover_tests), which SimGrid needs: its Engine is a process singleton. --warn NoTests makes a
# registered filter that matches no test case fail (Catch2 v2 exits 0 there), and "<module>: test case names"
# fails on a name catch_discover_tests cannot carry into its filter (cmake/check_test_names.cmake).
function(zerosim_add_test module)
  cmake_parse_arguments(ARG "" "" "SOURCES;DEPS" ${ARGN})
  add_executable(${module}_tests ${ARG_SOURCES})
  target_link_libraries(${module}_tests PRIVATE Catch2::Catch2WithMain ${ARG_DEPS})
  target_compile_definitions(${module}_tests PRIVATE ZEROSIM_DATA_DIR="${ZEROSIM_DATA_DIR}"
                                                     ZEROSIM_BINARY_DIR="${PROJECT_BINARY_DIR}")
  zerosim_set_warnings(${module}_tests)
  catch_discover_tests(${module}_tests TEST_PREFIX "${module}: " EXTRA_ARGS --warn NoTests
                       PROPERTIES ENVIRONMENT "ZEROSIM_DATA_DIR=${ZEROSIM_DATA_DIR}")
  add_test(NAME "${module}: test case names" COMMAND ${CMAKE_COMMAND} -DTEST_BINARY=$<TARGET_FILE:${module}_tests>
                                                     -P ${PROJECT_SOURCE_DIR}/cmake/check_test_names.cmake)
endfunction()
