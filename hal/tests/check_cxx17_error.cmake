# hal.hpp below C++20 must stop with its own clear #error, not with errors
# deep inside the headers. -DSOURCE_DIR= -DWORK_DIR=
file(MAKE_DIRECTORY ${WORK_DIR})
file(WRITE ${WORK_DIR}/cxx17.cpp "#include <polychip/hal.hpp>\nint main() { return 0; }\n")
execute_process(COMMAND g++ -std=c++17 -fsyntax-only -I${SOURCE_DIR}/hal/include
                        ${WORK_DIR}/cxx17.cpp
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
if(rc EQUAL 0)
  message(FATAL_ERROR "hal.hpp compiled with -std=c++17")
endif()
if(NOT out MATCHES "#error \"polychip's C\\+\\+ API needs C\\+\\+20: compile with -std=c\\+\\+20")
  message(FATAL_ERROR "hal.hpp under -std=c++17 failed without the #error:\n${out}")
endif()
