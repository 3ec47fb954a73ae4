# Compiles and runs README.md's C++ example with README's own compile line,
# verbatim, in a folder laid out like the repository root (hal/ and build/
# linked in), so the doc and what works cannot drift apart.
# -DSOURCE_DIR= -DBINARY_DIR= -DWORK_DIR= [-DEXTRA_FLAGS=] (sanitizer builds)
file(READ ${SOURCE_DIR}/README.md readme)
string(FIND "${readme}" "## Using the HAL from C++" start)
if(start EQUAL -1)
  message(FATAL_ERROR "README.md has no 'Using the HAL from C++' section")
endif()
string(SUBSTRING "${readme}" ${start} -1 section)
# The section's first ```cpp block is the program; the first ```sh block
# after it holds the compile line.
string(FIND "${section}" "```cpp\n" code_start)
string(FIND "${section}" "```sh\ng++ " line_start)
if(code_start EQUAL -1 OR line_start LESS code_start)
  message(FATAL_ERROR "README.md: no ```cpp block followed by a ```sh block with a g++ line")
endif()
math(EXPR code_start "${code_start} + 7")
math(EXPR line_start "${line_start} + 6")
string(SUBSTRING "${section}" ${code_start} -1 code)
string(FIND "${code}" "\n```" code_end)
string(SUBSTRING "${code}" 0 ${code_end} code)
string(SUBSTRING "${section}" ${line_start} -1 compile_line)
string(FIND "${compile_line}" "\n" line_end)
string(SUBSTRING "${compile_line}" 0 ${line_end} compile_line)

file(REMOVE_RECURSE ${WORK_DIR})
file(MAKE_DIRECTORY ${WORK_DIR})
file(WRITE ${WORK_DIR}/example.cpp "${code}\n")
file(CREATE_LINK ${SOURCE_DIR}/hal ${WORK_DIR}/hal SYMBOLIC)
file(CREATE_LINK ${BINARY_DIR} ${WORK_DIR}/build SYMBOLIC)

message(STATUS "${compile_line} ${EXTRA_FLAGS}")
execute_process(COMMAND sh -c "${compile_line} ${EXTRA_FLAGS}" WORKING_DIRECTORY ${WORK_DIR}
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "README's compile line failed (${rc}):\n${out}")
endif()
execute_process(COMMAND ${CMAKE_COMMAND} -E env --unset=POLYCHIP_PATCHES
                        --unset=POLYCHIP_ADAPTERS ${WORK_DIR}/example
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0 OR NOT out STREQUAL "y[0] = 16\n")
  message(FATAL_ERROR "README's example: exit ${rc}, printed '${out}' (expected 'y[0] = 16'), stderr:\n${err}")
endif()
