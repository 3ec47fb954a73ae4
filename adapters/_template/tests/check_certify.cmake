# Certifies the out-of-tree template plugin with the precision suite: it
# forwards to the cpu kernels, so every case must pass (exit code 0).
file(REMOVE_RECURSE ${RESULTS_DIR})
execute_process(
  COMMAND ${CMAKE_COMMAND} -E env POLYCHIP_ADAPTER_PATH=${BUILD_DIR}
          ${POLYCHIP_TOOL} certify --suite precision --level quick --adapters template
          --out ${RESULTS_DIR} --no-progress
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(rc)
  message(FATAL_ERROR "polychip certify of the template adapter failed (${rc}):\n${out}\n${err}")
endif()
if(NOT EXISTS ${RESULTS_DIR}/results.json)
  message(FATAL_ERROR "certify wrote no ${RESULTS_DIR}/results.json")
endif()
message(STATUS "${out}")
