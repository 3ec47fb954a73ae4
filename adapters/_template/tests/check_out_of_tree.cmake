# Configures and builds adapters/_template in BUILD_DIR with its own CMake
# against the polychip installed in PREFIX (find_package(polychip)), then
# checks that the installed `polychip info --json` lists it through POLYCHIP_ADAPTER_PATH with one
# device of type template.host.
set(POLYCHIP_TOOL ${PREFIX}/bin/polychip)
file(REMOVE_RECURSE ${BUILD_DIR})
execute_process(
  COMMAND ${CMAKE_COMMAND} -S ${TEMPLATE_SOURCE} -B ${BUILD_DIR} -G ${GENERATOR}
          -DCMAKE_CXX_COMPILER=${CXX_COMPILER} -DCMAKE_PREFIX_PATH=${PREFIX}
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
if(rc)
  message(FATAL_ERROR "configuring the template failed:\n${out}")
endif()
execute_process(COMMAND ${CMAKE_COMMAND} --build ${BUILD_DIR}
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
if(rc)
  message(FATAL_ERROR "building the template failed:\n${out}")
endif()
if(NOT EXISTS ${BUILD_DIR}/libpolychip_adapter_template.so)
  message(FATAL_ERROR "no ${BUILD_DIR}/libpolychip_adapter_template.so after the build")
endif()

execute_process(
  COMMAND ${CMAKE_COMMAND} -E env POLYCHIP_ADAPTER_PATH=${BUILD_DIR} ${POLYCHIP_TOOL} info --json
  RESULT_VARIABLE rc OUTPUT_VARIABLE json ERROR_VARIABLE err)
if(rc)
  message(FATAL_ERROR "polychip info --json failed (${rc}):\n${json}\n${err}")
endif()
string(JSON adapters GET "${json}" adapters)
string(JSON n LENGTH "${adapters}")
math(EXPR last "${n} - 1")
set(found "")
foreach(i RANGE ${last})
  string(JSON name GET "${adapters}" ${i} name)
  if(name STREQUAL "template")
    string(JSON found GET "${adapters}" ${i})
  endif()
endforeach()
if(NOT found)
  message(FATAL_ERROR "polychip info does not list the template adapter:\n${json}")
endif()
string(JSON origin GET "${found}" origin)
string(JSON devices GET "${found}" device_count)
if(NOT origin MATCHES "libpolychip_adapter_template.so$" OR NOT devices EQUAL 1)
  message(FATAL_ERROR "template adapter listed wrongly (origin ${origin}, ${devices} devices):\n${found}")
endif()
string(FIND "${json}" "template.host" at)
if(at LESS 0)
  message(FATAL_ERROR "no device of type template.host in:\n${json}")
endif()
message(STATUS "template adapter found at ${origin} with ${devices} device")
