# How an OpenCL-family adapter (opencl, level_zero) is built: the shared
# kernel file list (kernel_files.cmake), embedding its kernels in a C++
# source, and the settings of its library.
include(${CMAKE_CURRENT_LIST_DIR}/kernel_files.cmake)

# Writes `out`, a C++ source that embeds ENTRIES (name=path, see
# embed_files.cmake) behind std::string_view <namespace>::<function>(name),
# at build time; it is rebuilt when a file of DEPENDS changes.
function(polychip_opencl_c_embed out namespace function comment)
  cmake_parse_arguments(arg "" "" "ENTRIES;DEPENDS" ${ARGN})
  string(REPLACE ";" "|" entries_arg "${arg_ENTRIES}")
  add_custom_command(
    OUTPUT ${out}
    COMMAND ${CMAKE_COMMAND} -DOUT=${out} -DNAMESPACE=${namespace}
            -DFUNCTION=${function} "-DENTRIES=${entries_arg}"
            -P ${POLYCHIP_OPENCL_C_EMBED_SCRIPT}
    DEPENDS ${arg_DEPENDS} ${POLYCHIP_OPENCL_C_EMBED_SCRIPT}
    COMMENT "${comment}"
    VERBATIM)
endfunction()

# The settings of an OpenCL-family adapter's library `target`, in the
# calling directory: its folder public, the kernel sources' folder private,
# the shared host library and libdl linked, and registered as a built-in
# adapter with `entry_function`.
function(polychip_opencl_family_adapter target entry_function)
  polychip_target_defaults(${target})
  target_include_directories(${target} PUBLIC ${CMAKE_CURRENT_SOURCE_DIR}
                             PRIVATE ${POLYCHIP_OPENCL_C_DIR})
  target_link_libraries(${target} PUBLIC polychip_hal polychip_opencl_family_host
                        ${CMAKE_DL_LIBS})
  polychip_register_builtin_adapter(${target} ${entry_function})
endfunction()
