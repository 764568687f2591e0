# CUDA toolkit (cudart; the cuBLAS, NVML and NCCL headers). cuBLAS and NCCL are loaded at run
# time with dlopen (src/gpu/runtime_library.hpp), so only nccl.h is needed here; NCCL ships
# outside the toolkit on most systems, so its header gets an interface target of its own.
if(PREFLIGHT_WITH_CUDA)
  enable_language(CUDA)
  find_package(CUDAToolkit 12.0 REQUIRED)
  find_path(NCCL_INCLUDE_DIR nccl.h
    HINTS ${NCCL_ROOT} $ENV{NCCL_ROOT} ${CUDAToolkit_INCLUDE_DIRS}
    PATH_SUFFIXES include)
  if(NCCL_INCLUDE_DIR)
    add_library(NCCL::nccl INTERFACE IMPORTED)
    set_target_properties(NCCL::nccl PROPERTIES INTERFACE_INCLUDE_DIRECTORIES "${NCCL_INCLUDE_DIR}")
    message(STATUS "NCCL header: ${NCCL_INCLUDE_DIR}/nccl.h")
  else()
    message(STATUS "nccl.h not found: the nccl check and fleet mode will not be built")
  endif()
endif()

if(PREFLIGHT_WITH_IBVERBS)
  find_path(IBVERBS_INCLUDE_DIR infiniband/verbs.h)
  find_library(IBVERBS_LIBRARY ibverbs)
  if(IBVERBS_INCLUDE_DIR AND IBVERBS_LIBRARY)
    add_library(IBVerbs::ibverbs UNKNOWN IMPORTED)
    set_target_properties(IBVerbs::ibverbs PROPERTIES
      IMPORTED_LOCATION "${IBVERBS_LIBRARY}"
      INTERFACE_INCLUDE_DIRECTORIES "${IBVERBS_INCLUDE_DIR}")
  else()
    message(FATAL_ERROR "libibverbs not found: install libibverbs-dev or configure with "
                        "-DPREFLIGHT_WITH_IBVERBS=OFF")
  endif()
endif()

if(PREFLIGHT_WITH_MPI)
  find_package(MPI COMPONENTS CXX)
  if(NOT MPI_CXX_FOUND)
    message(FATAL_ERROR "MPI not found: install libopenmpi-dev or configure with "
                        "-DPREFLIGHT_WITH_MPI=OFF")
  endif()
endif()
