# Install layout (`cmake --install`) and the Debian package (`cpack -G DEB`). docs/install.md
# describes both; tests/packaging/ checks them.
#
#   <prefix>/bin/preflight                          the binary
#   <prefix>/libexec/preflight/                     prolog.sh, healthcheck.sh, common.sh,
#                                                   trust.sh, state.sh, ci-gate.sh
#                                                   (+ lib/hostlist.sh); they find
#                                                   the binary at ../../bin/preflight
#   <prefix>/share/doc/preflight/                   README.md, LICENSE, docs/,
#                                                   examples/preflight.default
#   /etc/default/preflight                          the .deb only (a conffile)
#   /usr/share/doc/<package>/copyright              the .deb only (Debian's machine-readable
#                                                   copyright file, packaging/copyright.in)
#
# Included from the top-level CMakeLists.txt after every target and every other install rule
# exists: CPack takes the list of components from the rules defined before include(CPack).
include(GNUInstallDirs)

set(PREFLIGHT_LIBEXEC_SUBDIR "${CMAKE_INSTALL_LIBEXECDIR}/preflight")
set(PREFLIGHT_ENV_EXAMPLE "${PROJECT_SOURCE_DIR}/scripts/slurm/preflight.default")

# --- No RUNPATH -------------------------------------------------------------------------------
# The binary links no CUDA library: the CUDA runtime is static, and cuBLAS, NCCL and NVML are
# opened with dlopen at run time (PREFLIGHT_CUBLAS_LIBRARY / PREFLIGHT_NCCL_LIBRARY, then
# <bin>/../lib/preflight/, then the loader's path, then $CUDA_HOME/lib64, /usr/local/cuda-<major>/
# lib64, /usr/local/cuda/lib64; docs/install.md). So the installed binary needs no RUNPATH, and
# CMake's default (the build RPATH dropped on install, none added) is what it gets.

# --- Package name ------------------------------------------------------------------------------
# One package per CUDA major version: a node's driver decides which one runs there (CUDA 13
# needs R580 or newer, CUDA 12 R525 or newer), and the cuBLAS it loads is libcublas.so.<major>.
if(PREFLIGHT_WITH_CUDA)
  set(PREFLIGHT_CUDA_MAJOR "${CUDAToolkit_VERSION_MAJOR}")
  set(PREFLIGHT_DEB_PACKAGE "preflight-cuda${PREFLIGHT_CUDA_MAJOR}")
else()
  set(PREFLIGHT_CUDA_MAJOR "")
  set(PREFLIGHT_DEB_PACKAGE "preflight-nocuda")
endif()

# --- Install rules -----------------------------------------------------------------------------
install(TARGETS preflight RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})

# The operations scripts, flat in libexec/preflight. OPTIONAL: a rule is evaluated when
# installing, so a script that appears later is installed without re-configuring; the packaging
# tests require every one of them. common.sh, trust.sh and state.sh are sourced by the hooks,
# never run (no #! line). tests/slurm/test-harness.sh is never installed: beside the hooks it
# would let the tests' variables in (docs/slurm.md, Security).
install(PROGRAMS scripts/slurm/prolog.sh scripts/slurm/healthcheck.sh scripts/ci-gate.sh
  DESTINATION ${PREFLIGHT_LIBEXEC_SUBDIR} OPTIONAL)
install(FILES scripts/slurm/common.sh scripts/slurm/trust.sh scripts/slurm/state.sh
  DESTINATION ${PREFLIGHT_LIBEXEC_SUBDIR} OPTIONAL)
# Helpers that ci-gate.sh sources as lib/<name>.sh next to itself (hostlist.sh, which also runs
# on its own as a test hook, hence executable).
install(DIRECTORY scripts/lib/ DESTINATION ${PREFLIGHT_LIBEXEC_SUBDIR}/lib OPTIONAL
  FILE_PERMISSIONS OWNER_READ OWNER_WRITE OWNER_EXECUTE GROUP_READ GROUP_EXECUTE
                   WORLD_READ WORLD_EXECUTE
  FILES_MATCHING PATTERN "*.sh")

# README.md next to docs/, as in the source tree, so the relative links between them hold.
install(FILES README.md LICENSE DESTINATION ${CMAKE_INSTALL_DOCDIR})
install(DIRECTORY docs/ DESTINATION ${CMAKE_INSTALL_DOCDIR}/docs)
install(FILES ${PREFLIGHT_ENV_EXAMPLE} DESTINATION ${CMAKE_INSTALL_DOCDIR}/examples OPTIONAL)

# /etc/default/preflight for the .deb only: the component is left out of a plain
# `cmake --install` (which must never write outside its prefix) and put in the package by CPack,
# which marks the file as a conffile below.
install(FILES ${PREFLIGHT_ENV_EXAMPLE} DESTINATION /etc/default RENAME preflight
  COMPONENT conffiles EXCLUDE_FROM_ALL OPTIONAL)

# --- Debian package ----------------------------------------------------------------------------
# Depends: what the binary links (readelf -d: NEEDED), by Debian 12 package, with the versions
# dpkg-shlibdeps derives from the symbols a GCC 12 build uses. No CUDA library is among them
# (the runtime is static; cuBLAS, NCCL, NVML and libibverbs are opened with dlopen), so those
# are Recommends/Suggests or nothing. PREFLIGHT_DEB_DEPENDS replaces the whole line (another
# distribution or compiler).
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

# Recommends: the rdma check loads libibverbs.so.1 and the NIC's provider (without them it
# skips). A CUDA build also recommends what it loads with dlopen: cuBLAS and NCCL. Carried or
# depended on: depended on, and only recommended (docs/install.md, "cuBLAS and NCCL"): cuBLAS
# and cuBLASLt 13 are about 600 MB, nodes usually have them from NVIDIA's repository or a
# runfile already, and the binary starts, and reports the library as missing, without them.
# cuBLAS has different package names in Debian and in NVIDIA's CUDA repository, so the
# Recommends are alternatives, first the one Debian has (libcublas12 in trixie and sid
# non-free; Debian has none for 13), then NVIDIA's libcublas-<major>-<minor>, newest first (a
# name a node's sources lack is skipped by apt). NCCL's name is libnccl2 in both.
set(_preflight_deb_recommends "libibverbs1, ibverbs-providers")
if(PREFLIGHT_WITH_CUDA)
  set(_cublas_alternatives "")
  if(PREFLIGHT_CUDA_MAJOR EQUAL 12)
    list(APPEND _cublas_alternatives "libcublas12")
  endif()
  foreach(_minor 9 8 7 6 5 4 3 2 1 0)
    list(APPEND _cublas_alternatives "libcublas-${PREFLIGHT_CUDA_MAJOR}-${_minor}")
  endforeach()
  list(JOIN _cublas_alternatives " | " _cublas_alternatives)
  string(APPEND _preflight_deb_recommends ", ${_cublas_alternatives}, libnccl2")
endif()

# Debian's copyright file, in the machine-readable format (DEP-5), where Debian policy puts it:
# /usr/share/doc/<package name>/copyright (the package's name, so not CMAKE_INSTALL_DOCDIR,
# which is share/doc/preflight for every package). .deb only, like /etc/default/preflight; a
# plain install has LICENSE in its doc folder.
set(PREFLIGHT_COPYRIGHT_SOURCE_LINE "")
if(PREFLIGHT_PACKAGE_HOMEPAGE)
  set(PREFLIGHT_COPYRIGHT_SOURCE_LINE "Source: ${PREFLIGHT_PACKAGE_HOMEPAGE}\n")
endif()
set(PREFLIGHT_COPYRIGHT_CUDA_COMMENT "")
if(PREFLIGHT_WITH_CUDA)
  # The CUDA runtime is linked statically (libcudart_static.a), so NVIDIA's code is in the
  # binary; NVIDIA lets applications redistribute it (CUDA EULA, Attachment A).
  string(CONCAT PREFLIGHT_COPYRIGHT_CUDA_COMMENT
    "\n .\n It also has NVIDIA's CUDA runtime library compiled in (libcudart_static.a of"
    "\n CUDA ${CUDAToolkit_VERSION}, linked statically), Copyright NVIDIA Corporation,"
    "\n redistributed under Attachment A of the NVIDIA CUDA Toolkit End User License"
    "\n Agreement, https://docs.nvidia.com/cuda/eula/ . cuBLAS, NCCL and the driver's"
    "\n NVML are not part of this package: they are loaded at run time.")
endif()
configure_file(packaging/copyright.in "${PROJECT_BINARY_DIR}/packaging/copyright" @ONLY)
install(FILES "${PROJECT_BINARY_DIR}/packaging/copyright"
  DESTINATION ${CMAKE_INSTALL_DATAROOTDIR}/doc/${PREFLIGHT_DEB_PACKAGE}
  COMPONENT debian EXCLUDE_FROM_ALL)

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
    "This is the build for CUDA ${PREFLIGHT_CUDA_MAJOR}: it needs an NVIDIA driver that runs\n"
    "CUDA ${PREFLIGHT_CUDA_MAJOR} (docs/install.md has the table). The GPU libraries come\n"
    "from NVIDIA, not from Debian, and are loaded at run time: libcublas.so.${PREFLIGHT_CUDA_MAJOR}\n"
    "and libnccl.so.2 (recommended), the driver's NVML. Without cuBLAS or NCCL the binary\n"
    "still runs and reports the missing library. Only one preflight-cuda<major> package can be\n"
    "installed at a time.")
else()
  string(APPEND CPACK_PACKAGE_DESCRIPTION
    "This build has no CUDA support (PREFLIGHT_WITH_CUDA=OFF): its GPU checks say it was\n"
    "built without CUDA support. The GPU builds, preflight-cuda<major>, load cuBLAS, the\n"
    "NVIDIA driver and NCCL from NVIDIA, not from Debian.")
endif()
set(CPACK_DEBIAN_PACKAGE_DESCRIPTION "${CPACK_PACKAGE_DESCRIPTION}")
set(CPACK_DEBIAN_PACKAGE_NAME "${PREFLIGHT_DEB_PACKAGE}")
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)  # <package>_<version>_<arch>.deb
set(CPACK_DEBIAN_PACKAGE_SECTION "admin")
set(CPACK_DEBIAN_PACKAGE_PRIORITY "optional")
if(PREFLIGHT_PACKAGE_HOMEPAGE)
  set(CPACK_DEBIAN_PACKAGE_HOMEPAGE "${PREFLIGHT_PACKAGE_HOMEPAGE}")
endif()
# One preflight at a time: preflight-cuda12, preflight-cuda13 and preflight-nocuda install the
# same files. Each provides "preflight" (for whatever needs "a preflight"), and conflicts with
# and replaces the others by their real names, so that dpkg -i as well as apt swaps one for
# another in one step, keeping the admin's /etc/default/preflight. Not "Conflicts: preflight":
# dpkg refuses to swap packages whose conflict is through a virtual package they all provide
# (tests/packaging/test_replace.sh). "Replaces: preflight" also takes over the files of the
# single package named "preflight" that earlier versions built.
set(_preflight_deb_siblings preflight-cuda12 preflight-cuda13 preflight-nocuda)
list(REMOVE_ITEM _preflight_deb_siblings "${PREFLIGHT_DEB_PACKAGE}")
list(JOIN _preflight_deb_siblings ", " _preflight_deb_siblings)
set(CPACK_DEBIAN_PACKAGE_PROVIDES "preflight (= ${PROJECT_VERSION})")
set(CPACK_DEBIAN_PACKAGE_CONFLICTS "${_preflight_deb_siblings}")
set(CPACK_DEBIAN_PACKAGE_REPLACES "preflight, ${_preflight_deb_siblings}")
# By hand rather than dpkg-shlibdeps, so that building the package needs only dpkg, not dpkg-dev.
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS OFF)
set(CPACK_DEBIAN_PACKAGE_DEPENDS "${_preflight_deb_depends}")
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "${_preflight_deb_recommends}")
set(_preflight_deb_suggests "rdma-core, slurm-client")
if(PREFLIGHT_WITH_MPI)
  string(APPEND _preflight_deb_suggests ", openmpi-bin")  # mpirun for `preflight fleet`
endif()
set(CPACK_DEBIAN_PACKAGE_SUGGESTS "${_preflight_deb_suggests}")

# The package's binary is stripped, as Debian ships binaries (the RelWithDebInfo build is over
# 60 MB with its debug information); the build tree and `cmake --install` keep it whole.
set(CPACK_STRIP_FILES TRUE)

# One package from all components, /etc/default/preflight and the copyright file included.
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
