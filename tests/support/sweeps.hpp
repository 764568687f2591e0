#pragma once
// How far the exhaustive sweeps of pure logic go. Sanitizer builds (scripts/sanitize.sh, CMake
// option PREFLIGHT_TEST_SHORT_SWEEPS) run the same code paths with smaller sweeps: at N = 14 the
// fleet simulation plays 2^14 placements, 75 s under ASan for what N = 11 already exercises. The
// default build checks every size.
namespace preflight::test {

#ifdef PREFLIGHT_TEST_SHORT_SWEEPS
inline constexpr bool kShortSweeps = true;
#else
inline constexpr bool kShortSweeps = false;
#endif

}  // namespace preflight::test
