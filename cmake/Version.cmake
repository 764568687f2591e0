# Records the git revision the binary was built from (verdict.tool.git). A tarball build
# without .git says "unknown" rather than failing.
find_package(Git QUIET)
set(PREFLIGHT_GIT_REVISION "unknown")
if(GIT_FOUND AND EXISTS "${CMAKE_CURRENT_SOURCE_DIR}/.git")
  execute_process(
    COMMAND ${GIT_EXECUTABLE} describe --always --dirty --abbrev=12
    WORKING_DIRECTORY ${CMAKE_CURRENT_SOURCE_DIR}
    OUTPUT_VARIABLE _git_rev OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET RESULT_VARIABLE _git_rc)
  if(_git_rc EQUAL 0 AND _git_rev)
    set(PREFLIGHT_GIT_REVISION "${_git_rev}")
  endif()
endif()
configure_file(${CMAKE_CURRENT_SOURCE_DIR}/src/model/build_info.hpp.in
               ${CMAKE_CURRENT_BINARY_DIR}/generated/model/build_info.hpp @ONLY)
