# `cmake --install build --prefix P`: public headers, libpolychip (SONAME =
# the adapter ABI major version), the `polychip` tool, the static comm
# library, a relocatable CMake package (find_package(polychip CONFIG)) and
# polychip.pc. The package files are written by hand (cmake/package/)
# rather than exported, because the build targets carry source-tree
# include paths that an export would reject.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

file(STRINGS ${PROJECT_SOURCE_DIR}/hal/include/polychip/adapter_abi.h abi_lines
     REGEX "^#define POLYCHIP_ABI_VERSION_(MAJOR|MINOR) ")
string(REGEX MATCH "MAJOR ([0-9]+)" _ "${abi_lines}")
set(POLYCHIP_ABI_MAJOR ${CMAKE_MATCH_1})
string(REGEX MATCH "MINOR ([0-9]+)" _ "${abi_lines}")
set(POLYCHIP_ABI_MINOR ${CMAKE_MATCH_1})
if(POLYCHIP_ABI_MAJOR STREQUAL "" OR POLYCHIP_ABI_MINOR STREQUAL "")
  message(FATAL_ERROR "no POLYCHIP_ABI_VERSION_MAJOR/MINOR in hal/include/polychip/adapter_abi.h")
endif()

# libpolychip.so -> libpolychip.so.<abi major> -> libpolychip.so.<major>.<minor>
set_target_properties(polychip PROPERTIES
  VERSION ${POLYCHIP_ABI_MAJOR}.${POLYCHIP_ABI_MINOR} SOVERSION ${POLYCHIP_ABI_MAJOR})
set(POLYCHIP_LIBRARY_SONAME libpolychip.so.${POLYCHIP_ABI_MAJOR})
# bin/polychip finds lib/ of an install prefix; polychip/bin/polychip in the
# Python wheel finds the library in polychip/ (python/CMakeLists.txt).
set_target_properties(polychip_cli PROPERTIES
  INSTALL_RPATH "$ORIGIN/../${CMAKE_INSTALL_LIBDIR};$ORIGIN/..")

install(DIRECTORY ${PROJECT_SOURCE_DIR}/hal/include/polychip
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} FILES_MATCHING PATTERN "*.h" PATTERN "*.hpp")
install(TARGETS polychip LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(TARGETS polychip_cli RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
set(POLYCHIP_WITH_COMM OFF)
if(TARGET polychip_comm)
  set(POLYCHIP_WITH_COMM ON)
  install(DIRECTORY ${PROJECT_SOURCE_DIR}/comm_interop/include/polychip/comm
          DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/polychip)
  install(TARGETS polychip_comm ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})
endif()

set(package_dir ${CMAKE_INSTALL_LIBDIR}/cmake/polychip)
configure_package_config_file(
  ${CMAKE_CURRENT_LIST_DIR}/package/polychipConfig.cmake.in
  ${CMAKE_BINARY_DIR}/package/polychipConfig.cmake
  INSTALL_DESTINATION ${package_dir}
  PATH_VARS CMAKE_INSTALL_INCLUDEDIR CMAKE_INSTALL_LIBDIR)
write_basic_package_version_file(${CMAKE_BINARY_DIR}/package/polychipConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_BINARY_DIR}/package/polychipConfig.cmake
              ${CMAKE_BINARY_DIR}/package/polychipConfigVersion.cmake
        DESTINATION ${package_dir})

# polychip.pc finds the prefix from its own location, so it stays right
# whatever --prefix the install is given.
set(pkgconfig_dir ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
file(RELATIVE_PATH POLYCHIP_PC_TO_PREFIX /${pkgconfig_dir} /)
configure_file(${CMAKE_CURRENT_LIST_DIR}/package/polychip.pc.in
               ${CMAKE_BINARY_DIR}/package/polychip.pc @ONLY)
install(FILES ${CMAKE_BINARY_DIR}/package/polychip.pc DESTINATION ${pkgconfig_dir})
if(POLYCHIP_WITH_COMM)
  # The static collectives library and what it links (fmt, OpenSSL's libcrypto, libfabric).
  configure_file(${CMAKE_CURRENT_LIST_DIR}/package/polychip-comm.pc.in
                 ${CMAKE_BINARY_DIR}/package/polychip-comm.pc @ONLY)
  install(FILES ${CMAKE_BINARY_DIR}/package/polychip-comm.pc DESTINATION ${pkgconfig_dir})
endif()
