# GPU backend: CUDA (nvcc) or HIP (hipcc, gfx906) from the same sources in
# src/backend/gpu. Kernels (*.cu) build into dotlm_gpu_kernels; the C op
# table (gpu_backend.c) joins dotlm_lib, which then links the kernels.
option(DOTLM_CUDA "Build the CUDA backend (needs nvcc; runs without a GPU only to skip)" OFF)
option(DOTLM_HIP "Build the HIP backend for AMD (needs hipcc)" OFF)
set(DOTLM_HIP_ARCH "gfx906" CACHE STRING "HIP offload architecture(s), ';'-separated")

if(DOTLM_CUDA AND DOTLM_HIP)
  message(FATAL_ERROR "DOTLM_CUDA and DOTLM_HIP are exclusive")
endif()

set(DOTLM_GPU_DIR ${CMAKE_CURRENT_LIST_DIR}/../src/backend/gpu)
file(GLOB DOTLM_GPU_CU CONFIGURE_DEPENDS ${DOTLM_GPU_DIR}/*.cu)

if(DOTLM_CUDA)
  if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
    # sm_80 and sm_90 machine code plus compute_90 PTX for newer GPUs.
    # (CUDA 13 dropped sm_70.)
    set(CMAKE_CUDA_ARCHITECTURES "80-real;90-real;90-virtual")
  endif()
  enable_language(CUDA)
  find_package(CUDAToolkit REQUIRED)
  # Targets created before enable_language(CUDA) have no architectures set.
  get_directory_property(_tgts BUILDSYSTEM_TARGETS)
  foreach(t ${_tgts})
    set_property(TARGET ${t} PROPERTY CUDA_ARCHITECTURES ${CMAKE_CUDA_ARCHITECTURES})
  endforeach()
  add_library(dotlm_gpu_kernels STATIC ${DOTLM_GPU_CU})
  # The top-level C flags (-Wall, sanitizers) are not nvcc flags: replace them.
  set_property(TARGET dotlm_gpu_kernels PROPERTY COMPILE_OPTIONS
    --Werror all-warnings -Xcompiler=-Wall,-Wextra -lineinfo)
  set_property(TARGET dotlm_gpu_kernels PROPERTY CUDA_STANDARD 17)
  set_property(TARGET dotlm_gpu_kernels PROPERTY POSITION_INDEPENDENT_CODE ON)
  target_include_directories(dotlm_gpu_kernels PRIVATE ${CMAKE_CURRENT_LIST_DIR}/../src)
  target_link_libraries(dotlm_gpu_kernels PUBLIC CUDA::cudart)
  target_sources(dotlm_lib PRIVATE ${DOTLM_GPU_DIR}/gpu_backend.c ${DOTLM_GPU_DIR}/gpu_gdn.c
    ${DOTLM_GPU_DIR}/gpu_prof.c ${DOTLM_GPU_DIR}/gpu_graph.c)
  target_compile_definitions(dotlm_lib PUBLIC DOTLM_CUDA=1)
  target_link_libraries(dotlm_lib PUBLIC dotlm_gpu_kernels)
  set(DOTLM_GPU_ON ON)
endif()

if(DOTLM_HIP)
  find_program(HIPCC hipcc REQUIRED)
  set(_objs)
  set(_archflags)
  foreach(a ${DOTLM_HIP_ARCH})
    list(APPEND _archflags --offload-arch=${a})
  endforeach()
  foreach(src ${DOTLM_GPU_CU})
    get_filename_component(n ${src} NAME_WE)
    set(obj ${CMAKE_CURRENT_BINARY_DIR}/hip/${n}.o)
    add_custom_command(OUTPUT ${obj}
      COMMAND ${CMAKE_COMMAND} -E make_directory ${CMAKE_CURRENT_BINARY_DIR}/hip
      COMMAND ${HIPCC} -x hip ${_archflags} -std=c++17 -O3 -fPIC -DDOTLM_HIP=1
              -Wall -Wextra -Werror -Wno-unused-command-line-argument
              -I${CMAKE_CURRENT_LIST_DIR}/../src -c ${src} -o ${obj}
      DEPENDS ${src} ${DOTLM_GPU_DIR}/hip_compat.h ${DOTLM_GPU_DIR}/gpu_common.cuh ${DOTLM_GPU_DIR}/gpu_kernels.h
      COMMENT "hipcc ${n}.cu"
      VERBATIM)
    list(APPEND _objs ${obj})
  endforeach()
  add_library(dotlm_gpu_kernels STATIC ${_objs})
  set_target_properties(dotlm_gpu_kernels PROPERTIES LINKER_LANGUAGE C)
  find_library(AMDHIP64 amdhip64 REQUIRED)
  target_link_libraries(dotlm_gpu_kernels PUBLIC ${AMDHIP64} stdc++)
  target_sources(dotlm_lib PRIVATE ${DOTLM_GPU_DIR}/gpu_backend.c ${DOTLM_GPU_DIR}/gpu_gdn.c
    ${DOTLM_GPU_DIR}/gpu_prof.c ${DOTLM_GPU_DIR}/gpu_graph.c)
  target_compile_definitions(dotlm_lib PUBLIC DOTLM_HIP=1)
  target_link_libraries(dotlm_lib PUBLIC dotlm_gpu_kernels)
  set(DOTLM_GPU_ON ON)
endif()

if(DOTLM_GPU_ON)
  # GPU benchmark + numeric sweep (run by tools/gpu_test.sh on the GPU machine).
  add_executable(dotlm_gpu_bench ${DOTLM_GPU_DIR}/gpu_bench.c)
  target_link_libraries(dotlm_gpu_bench PRIVATE dotlm_lib)
endif()
