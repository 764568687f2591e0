# CUDA toolkit (cudart, cuBLAS, NVML header) and NCCL. NCCL ships outside the toolkit on most
# systems, so it gets an imported target of its own.
if(PREFLIGHT_WITH_CUDA)
  enable_language(CUDA)
  find_package(CUDAToolkit 12.0 REQUIRED)
  find_path(NCCL_INCLUDE_DIR nccl.h
    HINTS ${NCCL_ROOT} $ENV{NCCL_ROOT} ${CUDAToolkit_INCLUDE_DIRS}
    PATH_SUFFIXES include)
  find_library(NCCL_LIBRARY nccl
    HINTS ${NCCL_ROOT} $ENV{NCCL_ROOT} ${CUDAToolkit_LIBRARY_DIR}
    PATH_SUFFIXES lib lib64)
  if(NCCL_INCLUDE_DIR AND NCCL_LIBRARY)
    add_library(NCCL::nccl UNKNOWN IMPORTED)
    set_target_properties(NCCL::nccl PROPERTIES
      IMPORTED_LOCATION "${NCCL_LIBRARY}"
      INTERFACE_INCLUDE_DIRECTORIES "${NCCL_INCLUDE_DIR}")
    message(STATUS "NCCL: ${NCCL_LIBRARY}")
  else()
    message(STATUS "NCCL not found: the nccl check and fleet mode will not be built")
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
