# transformer.pc, installed to <libdir>/pkgconfig: the library for pkg-config users. Its paths are
# relative to the file's own folder (${pcfiledir}), so the installed tree may be moved (as
# `cmake --install --prefix` does). Libs.private (`pkg-config --static`) holds what the static library
# needs at the final link, the same libraries the CMake package's static target passes on.
if(IS_ABSOLUTE "${CMAKE_INSTALL_LIBDIR}" OR IS_ABSOLUTE "${CMAKE_INSTALL_INCLUDEDIR}")
  message(FATAL_ERROR "transformer.pc needs CMAKE_INSTALL_LIBDIR and CMAKE_INSTALL_INCLUDEDIR relative to the prefix, "
                      "got '${CMAKE_INSTALL_LIBDIR}' and '${CMAKE_INSTALL_INCLUDEDIR}'")
endif()
file(RELATIVE_PATH TFM_PC_PREFIX_FROM_PCDIR "/prefix/${CMAKE_INSTALL_LIBDIR}/pkgconfig" "/prefix")
string(REGEX REPLACE "/$" "" TFM_PC_PREFIX_FROM_PCDIR "${TFM_PC_PREFIX_FROM_PCDIR}")  # "../..", no slash
set(TFM_PC_LIBS_PRIVATE ${OpenMP_CXX_FLAGS} ${OPENBLAS_LDFLAGS} ${SENTENCEPIECE_LDFLAGS} ${XXHASH_LDFLAGS} ${ICU_LDFLAGS}
    "$<TARGET_LINKER_FILE:DNNL::dnnl>")
if(TFM_HAVE_MPI)
  list(APPEND TFM_PC_LIBS_PRIVATE ${MPI_CXX_LINK_FLAGS} ${MPI_CXX_LIBRARIES})
endif()
if(TFM_HAVE_CUDA)
  list(APPEND TFM_PC_LIBS_PRIVATE ${CUDA_cudart_static_LIBRARY} ${CUDA_cublas_LIBRARY} ${CUDA_cublasLt_LIBRARY}
       -lrt -lpthread -ldl)
endif()
if(TFM_HAVE_NCCL)
  list(APPEND TFM_PC_LIBS_PRIVATE -l${CMAKE_DL_LIBS})
endif()
list(REMOVE_DUPLICATES TFM_PC_LIBS_PRIVATE)
list(JOIN TFM_PC_LIBS_PRIVATE " " TFM_PC_LIBS_PRIVATE)
# @VARIABLES@ first, then the generator expression (oneDNN's library file).
configure_file(${CMAKE_CURRENT_LIST_DIR}/transformer.pc.in ${CMAKE_CURRENT_BINARY_DIR}/transformer.pc.in @ONLY)
file(GENERATE OUTPUT ${CMAKE_CURRENT_BINARY_DIR}/transformer.pc INPUT ${CMAKE_CURRENT_BINARY_DIR}/transformer.pc.in)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/transformer.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
