# Installs the polychip build POLYCHIP_BUILD (of POLYCHIP_SOURCE) into PREFIX and checks what an
# outside project sees there: libpolychip's SONAME, the polychip tool, a
# program built with find_package(polychip) (with CONSUMER_FLAGS: a sanitizer
# build's library needs them) and pkg-config's include folder.
file(REMOVE_RECURSE ${PREFIX} ${CONSUMER_BUILD})
function(run_or_fail what)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  if(rc)
    message(FATAL_ERROR "${what} failed (${rc}):\n${out}")
  endif()
  set(run_output "${out}" PARENT_SCOPE)
endfunction()

run_or_fail("cmake --install" ${CMAKE_COMMAND} --install ${POLYCHIP_BUILD} --prefix ${PREFIX})
# A plain install is the C/C++ SDK alone: the Python package (the install
# component "python", python/CMakeLists.txt) is pip's.
file(GLOB top_level RELATIVE ${PREFIX} ${PREFIX}/*)
if(NOT top_level STREQUAL "bin;include;lib")
  message(FATAL_ERROR "cmake --install put more than bin/, include/ and lib/ into ${PREFIX}: "
                      "${top_level}")
endif()
file(STRINGS ${POLYCHIP_SOURCE}/hal/include/polychip/adapter_abi.h major_line
     REGEX "^#define POLYCHIP_ABI_VERSION_MAJOR ")
string(REGEX MATCH "[0-9]+$" abi_major "${major_line}")
if(NOT EXISTS ${PREFIX}/lib/libpolychip.so.${abi_major})
  file(GLOB_RECURSE installed RELATIVE ${PREFIX} ${PREFIX}/lib/*)
  message(FATAL_ERROR "no lib/libpolychip.so.${abi_major} in ${PREFIX}: ${installed}")
endif()
run_or_fail("readelf" readelf -d ${PREFIX}/lib/libpolychip.so)
if(NOT run_output MATCHES "Library soname: \\[libpolychip\\.so\\.${abi_major}\\]")
  message(FATAL_ERROR "libpolychip's SONAME is not libpolychip.so.${abi_major}:\n${run_output}")
endif()
foreach(header polychip/adapter_abi.h polychip/patch_abi.h polychip/hal.hpp polychip/comm/comm.h)
  if(NOT EXISTS ${PREFIX}/include/${header})
    message(FATAL_ERROR "${header} was not installed under ${PREFIX}/include")
  endif()
endforeach()
# The installed tool runs from the prefix alone (RPATH $ORIGIN/../lib).
run_or_fail("installed polychip info" ${PREFIX}/bin/polychip info --json)

# find_package(polychip) with polychip::hal and polychip::comm.
run_or_fail("configuring the consumer" ${CMAKE_COMMAND} -S ${CONSUMER_SOURCE}
            -B ${CONSUMER_BUILD} -G ${GENERATOR} -DCMAKE_CXX_COMPILER=${CXX_COMPILER}
            -DCMAKE_PREFIX_PATH=${PREFIX} "-DCMAKE_CXX_FLAGS=${CONSUMER_FLAGS}")
run_or_fail("building the consumer" ${CMAKE_COMMAND} --build ${CONSUMER_BUILD})
run_or_fail("running the consumer" ${CONSUMER_BUILD}/installed_consumer)
if(NOT run_output MATCHES "cpu:0 ")
  message(FATAL_ERROR "the consumer built with find_package lists no cpu:0:\n${run_output}")
endif()

# pkg-config: the flags point into the prefix.
set(ENV{PKG_CONFIG_PATH} ${PREFIX}/lib/pkgconfig)
run_or_fail("pkg-config --cflags polychip" pkg-config --cflags polychip)
string(STRIP "${run_output}" cflags)
if(NOT cflags MATCHES "^-I(.*)$")
  message(FATAL_ERROR "pkg-config --cflags polychip gave '${cflags}'")
endif()
file(REAL_PATH "${CMAKE_MATCH_1}" include_dir)
file(REAL_PATH ${PREFIX}/include expected_include_dir)
if(NOT include_dir STREQUAL expected_include_dir)
  message(FATAL_ERROR "pkg-config --cflags polychip points at ${include_dir}, "
                      "not ${expected_include_dir}")
endif()
# (check_pkg_config_doc.cmake builds and runs programs with these flags.)
message(STATUS "installed into ${PREFIX}; the find_package consumer runs")
