#pragma once
// The finding codes of the learned limits: learned_findings(), declared beside the runner's in
// include/preflight/check.hpp and defined in src/run/learned_findings.cpp (the registry puts
// them in the catalogue; docs/findings.md, "Learned limits").
#include "preflight/check.hpp"
