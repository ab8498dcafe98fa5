# cmake -DTEST_BINARY=<Catch2 v2 test binary> -P check_test_names.cmake
# cmake -DNAMES_FILE=<text file, one test case name a line> -P check_test_names.cmake   (the check's own test)
#
# Fails, naming each one, when a TEST_CASE name holds a character that catch_discover_tests cannot carry into the
# ctest filter that runs it (Catch2 v2.13 CatchAddTests.cmake). ctest then runs a filter that matches no test case,
# which Catch2 v2 reports as a pass (exit 0) unless --warn NoTests is given:
#   ';'       CatchAddTests.cmake holds the names in a CMake list: the name is split into two tests, both filters
#             that match nothing;
#   '\'       not escaped, so Catch2's test spec reads it as an escape and the filter differs from the name;
#   '[' ']'   a '[' without its ']' makes the CMake list keep the ';' between names; in a filter '[' starts a tag;
#   '"'       a Catch2 test spec drops it (quoting);
#   a leading '~' or '#', a leading or trailing '*': negation and wildcard in a test spec (a '*' inside a name is
#             plain text), and --list-test-names-only prints a '#' name in quotes.
# Only TEST_CASE names are registered with ctest; SECTION names are not.

if(DEFINED NAMES_FILE)
  file(READ "${NAMES_FILE}" output)
elseif(DEFINED TEST_BINARY)
  execute_process(COMMAND "${TEST_BINARY}" --list-test-names-only OUTPUT_VARIABLE output RESULT_VARIABLE result)
  # Catch2 v2 exits with the number of test cases listed (modulo 256), or a text when the process died.
  if(NOT result MATCHES "^[0-9]+$")
    message(FATAL_ERROR "${TEST_BINARY} --list-test-names-only failed: ${result}")
  endif()
else()
  message(FATAL_ERROR "check_test_names.cmake: give -DTEST_BINARY=<binary> or -DNAMES_FILE=<file>")
endif()

# Walk the text line by line with string(FIND): a CMake list would split the very names this looks for.
set(names 0)
set(bad 0)
while(NOT output STREQUAL "")
  string(FIND "${output}" "\n" nl)
  if(nl EQUAL -1)
    set(line "${output}")
    set(output "")
  else()
    string(SUBSTRING "${output}" 0 ${nl} line)
    math(EXPR nl "${nl} + 1")
    string(SUBSTRING "${output}" ${nl} -1 output)
  endif()
  string(REGEX REPLACE "\r$" "" line "${line}")
  if(line STREQUAL "")
    continue()
  endif()
  math(EXPR names "${names} + 1")
  set(why "")
  if(line MATCHES ";")
    string(APPEND why " ';'")
  endif()
  if(line MATCHES "\\\\")
    string(APPEND why " '\\'")
  endif()
  if(line MATCHES "[[]" OR line MATCHES "[]]")
    string(APPEND why " '[' or ']'")
  endif()
  if(line MATCHES "\"")
    string(APPEND why " '\"'")
  endif()
  if(line MATCHES "^[~#*]" OR line MATCHES "[*]$")
    string(APPEND why " a leading '~', '#' or '*' or a trailing '*'")
  endif()
  if(NOT why STREQUAL "")
    math(EXPR bad "${bad} + 1")
    message("test case name with${why}: ${line}")
  endif()
endwhile()

if(bad GREATER 0)
  message(FATAL_ERROR "${bad} of ${names} test case names hold characters ctest's registration cannot carry "
                      "(cmake/check_test_names.cmake says why); rename them")
endif()
if(names EQUAL 0)
  message(FATAL_ERROR "no test case names listed")
endif()
message("${names} test case names, each one ctest can run by name")
