# Install layout (`cmake --install`) and the Debian package (`cpack -G DEB`). docs/install.md
# describes both; tests/packaging/ checks them.
#
#   <prefix>/bin/preflight                          the binary
#   <prefix>/libexec/preflight/                     prolog.sh, healthcheck.sh, common.sh,
#                                                   ci-gate.sh (+ lib/hostlist.sh); they find
#                                                   the binary at ../../bin/preflight
#   <prefix>/share/doc/preflight/                   README.md, docs/, examples/preflight.default
#   /etc/default/preflight                          the .deb only (a conffile)
#
# Included from the top-level CMakeLists.txt after every target and every other install rule
# exists: CPack takes the list of components from the rules defined before include(CPack).
include(GNUInstallDirs)

set(PREFLIGHT_LIBEXEC_SUBDIR "${CMAKE_INSTALL_LIBEXECDIR}/preflight")
set(PREFLIGHT_ENV_EXAMPLE "${PROJECT_SOURCE_DIR}/scripts/slurm/preflight.default")

# --- RUNPATH -----------------------------------------------------------------------------------
# The binary needs libcublas.so.<CUDA major> (and libcublasLt) from the CUDA toolkit, which is
# not in the loader's default path. CMake drops the build RPATH on install, so the installed
# binary gets the toolkit's library directory found at configure time as its RUNPATH.
# PREFLIGHT_INSTALL_RPATH overrides it: another directory (the nodes' toolkit, the
# /usr/local/cuda link), or NONE where ld.so.conf.d registers the toolkit (docs/install.md).
# Empty means that default, so it follows PREFLIGHT_WITH_CUDA when that is switched.
set(PREFLIGHT_INSTALL_RPATH "" CACHE STRING
    "RUNPATH of the installed binary: empty for the CUDA toolkit's library dir, NONE for none")
if(PREFLIGHT_INSTALL_RPATH STREQUAL "NONE")
  set(_preflight_rpath "")
elseif(PREFLIGHT_INSTALL_RPATH)
  set(_preflight_rpath "${PREFLIGHT_INSTALL_RPATH}")
elseif(PREFLIGHT_WITH_CUDA AND CUDAToolkit_LIBRARY_DIR)
  set(_preflight_rpath "${CUDAToolkit_LIBRARY_DIR}")
else()
  set(_preflight_rpath "")
endif()
set_target_properties(preflight PROPERTIES INSTALL_RPATH "${_preflight_rpath}")
# What the packaging tests expect to find in the installed binary.
set(PREFLIGHT_EFFECTIVE_INSTALL_RPATH "${_preflight_rpath}" CACHE INTERNAL "")

# --- Install rules -----------------------------------------------------------------------------
install(TARGETS preflight RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})

# The operations scripts, flat in libexec/preflight. OPTIONAL: a rule is evaluated when
# installing, so a script that appears later is installed without re-configuring; the packaging
# tests require every one of them. common.sh is sourced by the hooks, never run (no #! line).
install(PROGRAMS scripts/slurm/prolog.sh scripts/slurm/healthcheck.sh scripts/ci-gate.sh
  DESTINATION ${PREFLIGHT_LIBEXEC_SUBDIR} OPTIONAL)
install(FILES scripts/slurm/common.sh DESTINATION ${PREFLIGHT_LIBEXEC_SUBDIR} OPTIONAL)
# Helpers that ci-gate.sh sources as lib/<name>.sh next to itself (hostlist.sh, which also runs
# on its own as a test hook, hence executable).
install(DIRECTORY scripts/lib/ DESTINATION ${PREFLIGHT_LIBEXEC_SUBDIR}/lib OPTIONAL
  FILE_PERMISSIONS OWNER_READ OWNER_WRITE OWNER_EXECUTE GROUP_READ GROUP_EXECUTE
                   WORLD_READ WORLD_EXECUTE
  FILES_MATCHING PATTERN "*.sh")

# README.md next to docs/, as in the source tree, so the relative links between them hold.
install(FILES README.md DESTINATION ${CMAKE_INSTALL_DOCDIR})
install(DIRECTORY docs/ DESTINATION ${CMAKE_INSTALL_DOCDIR}/docs)
install(FILES ${PREFLIGHT_ENV_EXAMPLE} DESTINATION ${CMAKE_INSTALL_DOCDIR}/examples OPTIONAL)

# /etc/default/preflight for the .deb only: the component is left out of a plain
# `cmake --install` (which must never write outside its prefix) and put in the package by CPack,
# which marks the file as a conffile below.
install(FILES ${PREFLIGHT_ENV_EXAMPLE} DESTINATION /etc/default RENAME preflight
  COMPONENT conffiles EXCLUDE_FROM_ALL OPTIONAL)

# --- Debian package ----------------------------------------------------------------------------
# Depends: what the binary links (readelf -d: NEEDED), by Debian 12 package, with the versions
# dpkg-shlibdeps derives from the symbols a GCC 12 build uses. libcublas.so.13 is not a Debian
# package (NVIDIA's CUDA repository or the runfile), so it is not declared; NVML, NCCL and
# libibverbs are opened with dlopen, so they are Recommends/Suggests or nothing.
# PREFLIGHT_DEB_DEPENDS replaces the whole line (another distribution or compiler).
set(PREFLIGHT_DEB_DEPENDS "" CACHE STRING
    "Depends of the .deb; empty for the Debian 12 line derived from the build options")
if(PREFLIGHT_DEB_DEPENDS)
  set(_preflight_deb_depends "${PREFLIGHT_DEB_DEPENDS}")
else()
  set(_preflight_deb_depends "libc6 (>= 2.34), libgcc-s1 (>= 3.0), libstdc++6 (>= 12)")
  if(PREFLIGHT_WITH_MPI)
    string(APPEND _preflight_deb_depends ", libopenmpi3 (>= 4.1.4)")
  endif()
endif()
set(PREFLIGHT_PACKAGE_MAINTAINER "preflight maintainers <preflight-maintainers@localhost>"
    CACHE STRING "Maintainer field of the .deb")
set(PREFLIGHT_PACKAGE_HOMEPAGE "" CACHE STRING "Homepage field of the .deb (none when empty)")

set(CPACK_GENERATOR "DEB")
set(CPACK_PACKAGE_NAME "preflight")
set(CPACK_PACKAGE_VERSION "${PROJECT_VERSION}")
set(CPACK_PACKAGE_VENDOR "preflight")
set(CPACK_PACKAGE_CONTACT "${PREFLIGHT_PACKAGE_MAINTAINER}")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY
    "GPU node health checks for Slurm prologs, burn-in and CI gates")
string(CONCAT CPACK_PACKAGE_DESCRIPTION
  "One binary that a GPU cluster runs on every node before trusting it with a large training\n"
  "job: GPU inventory, cuBLAS GEMM with silent-data-corruption detectors, PCIe, NVLink and\n"
  "HBM bandwidth, RDMA and NCCL checks, a JSON verdict and exit codes that mean what they\n"
  "say; with the Slurm prolog and health-check hooks and the CI gate script in\n"
  "/usr/libexec/preflight.\n"
  "\n")
if(PREFLIGHT_WITH_CUDA)
  string(APPEND CPACK_PACKAGE_DESCRIPTION
    "The GPU libraries come from NVIDIA, not from Debian: the binary needs\n"
    "libcublas.so.${CUDAToolkit_VERSION_MAJOR} (CUDA toolkit ${CUDAToolkit_VERSION_MAJOR}, "
    "from NVIDIA's repository or runfile)\n"
    "and finds it through its RUNPATH or ld.so.conf; the NVIDIA driver's NVML and NCCL are\n"
    "loaded at run time where present.")
else()
  string(APPEND CPACK_PACKAGE_DESCRIPTION
    "This build has no CUDA support (PREFLIGHT_WITH_CUDA=OFF): its GPU checks say it was\n"
    "built without CUDA support. A GPU build needs cuBLAS, the NVIDIA driver and NCCL\n"
    "from NVIDIA, not from Debian.")
endif()
set(CPACK_DEBIAN_PACKAGE_DESCRIPTION "${CPACK_PACKAGE_DESCRIPTION}")
set(CPACK_DEBIAN_PACKAGE_NAME "preflight")
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)  # preflight_<version>_<arch>.deb
set(CPACK_DEBIAN_PACKAGE_SECTION "admin")
set(CPACK_DEBIAN_PACKAGE_PRIORITY "optional")
if(PREFLIGHT_PACKAGE_HOMEPAGE)
  set(CPACK_DEBIAN_PACKAGE_HOMEPAGE "${PREFLIGHT_PACKAGE_HOMEPAGE}")
endif()
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS OFF)  # dpkg-shlibdeps stops at libcublas: declared by hand
set(CPACK_DEBIAN_PACKAGE_DEPENDS "${_preflight_deb_depends}")
# The rdma check loads libibverbs.so.1 and the NIC's provider; without them it skips.
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "libibverbs1, ibverbs-providers")
set(_preflight_deb_suggests "rdma-core, slurm-client")
if(PREFLIGHT_WITH_MPI)
  string(APPEND _preflight_deb_suggests ", openmpi-bin")  # mpirun for `preflight fleet`
endif()
set(CPACK_DEBIAN_PACKAGE_SUGGESTS "${_preflight_deb_suggests}")

# The package's binary is stripped, as Debian ships binaries (the RelWithDebInfo build is over
# 60 MB with its debug information); the build tree and `cmake --install` keep it whole.
set(CPACK_STRIP_FILES TRUE)

# One package from all components, the /etc/default file included.
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_COMPONENTS_GROUPING ALL_COMPONENTS_IN_ONE)

# conffiles is decided when cpack runs, not here: the file is marked only if it is there to be
# packaged, whenever the build tree was configured.
set(PREFLIGHT_CONFFILES "${PROJECT_BINARY_DIR}/packaging/conffiles")
file(WRITE "${PREFLIGHT_CONFFILES}" "/etc/default/preflight\n")
set(CPACK_PROJECT_CONFIG_FILE "${PROJECT_BINARY_DIR}/packaging/PreflightCPackOptions.cmake")
file(CONFIGURE OUTPUT "${CPACK_PROJECT_CONFIG_FILE}" CONTENT [[
# Generated by cmake/Packaging.cmake; read by cpack.
if(CPACK_GENERATOR STREQUAL "DEB" AND EXISTS "@PREFLIGHT_ENV_EXAMPLE@")
  set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA "@PREFLIGHT_CONFFILES@")
  set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION TRUE)
endif()
]] @ONLY)

include(CPack)
