# Helpers shared by every folder.

# Warnings on everywhere; sanitizers when asked.
function(polychip_target_defaults target)
  target_compile_options(${target} PRIVATE
    $<$<COMPILE_LANGUAGE:C,CXX>:-Wall -Wextra -Wno-unused-parameter>)
endfunction()

# -O1, as the ASan docs advise: unoptimised ASan code ran the quick precision
# run 17x slower than the default build (265 s against 16 s), most of the
# sanitizer pass's time; -O1 keeps the stacks and reports readable. Test
# sources stay at -O0 (polychip_add_test): gtest's macros doubled their
# compile time at -O1, and the work they drive runs in the libraries.
if(POLYCHIP_SANITIZE)
  add_compile_options(-O1 -fsanitize=address,undefined -fno-sanitize-recover=undefined
                      -fno-omit-frame-pointer)
  add_link_options(-fsanitize=address,undefined)
endif()

# In-tree adapters register statically: each calls this with its library
# target and the name of its C entry function (returning the adapter table).
set_property(GLOBAL PROPERTY POLYCHIP_BUILTIN_TARGETS "")
set_property(GLOBAL PROPERTY POLYCHIP_BUILTIN_ENTRIES "")
function(polychip_register_builtin_adapter target entry_function)
  set_property(GLOBAL APPEND PROPERTY POLYCHIP_BUILTIN_TARGETS ${target})
  set_property(GLOBAL APPEND PROPERTY POLYCHIP_BUILTIN_ENTRIES ${entry_function})
endfunction()

# Libraries linked into libpolychip besides the adapters (suites, comm, ...).
set_property(GLOBAL PROPERTY POLYCHIP_RUNTIME_PARTS "")
function(polychip_add_runtime_part target)
  set_property(GLOBAL APPEND PROPERTY POLYCHIP_RUNTIME_PARTS ${target})
endfunction()

function(polychip_finalize_runtime)
  get_property(targets GLOBAL PROPERTY POLYCHIP_BUILTIN_TARGETS)
  get_property(entries GLOBAL PROPERTY POLYCHIP_BUILTIN_ENTRIES)
  get_property(parts GLOBAL PROPERTY POLYCHIP_RUNTIME_PARTS)
  set(decls "")
  set(rows "")
  foreach(entry ${entries})
    string(APPEND decls "const polychip_adapter_api* ${entry}(void);\n")
    string(APPEND rows "      &${entry},\n")
  endforeach()
  set(out ${CMAKE_BINARY_DIR}/generated/builtin_adapters.cpp)
  configure_file(${PROJECT_SOURCE_DIR}/hal/src/builtin_adapters.cpp.in ${out} @ONLY)
  add_library(polychip SHARED ${out} ${PROJECT_SOURCE_DIR}/hal/src/global_runtime.cpp)
  polychip_target_defaults(polychip)
  target_link_libraries(polychip PUBLIC polychip_hal
                        PRIVATE "$<LINK_LIBRARY:WHOLE_ARCHIVE,polychip_hal_core>" ${targets})
  foreach(part ${parts})
    target_link_libraries(polychip PRIVATE "$<LINK_LIBRARY:WHOLE_ARCHIVE,${part}>")
  endforeach()
  foreach(part ${parts})
    target_include_directories(polychip PUBLIC $<TARGET_PROPERTY:${part},INTERFACE_INCLUDE_DIRECTORIES>)
  endforeach()
endfunction()

# Test sources' flags beyond the defaults: -O0 in the sanitizer tree, -Og
# elsewhere. The code under test is in the libraries, built as users get
# it; a test's own code only drives it, and at -O2 gtest's macros took
# half as long again to compile (49 s against 25 s for comm_unit_test.cpp).
function(polychip_test_compile_options target)
  polychip_target_defaults(${target})
  if(POLYCHIP_SANITIZE)
    target_compile_options(${target} PRIVATE -O0)
  else()
    target_compile_options(${target} PRIVATE -Og)
  endif()
endfunction()

# Every test compiles GoogleTest's headers (about 2.5 s of the 3.5 s a small
# test file takes here); one precompiled header, built once per tree with
# the tests' own flags, serves every test target (cmake/test_pch.hpp).
function(polychip_test_pch_target)
  if(TARGET polychip_test_pch)
    return()
  endif()
  add_library(polychip_test_pch OBJECT ${PROJECT_SOURCE_DIR}/cmake/test_pch.cpp)
  polychip_test_compile_options(polychip_test_pch)
  # Compiled as the test executables are (-fPIE, not a library's -fPIC):
  # GCC refuses a header precompiled with other code-model flags.
  set_target_properties(polychip_test_pch PROPERTIES POSITION_INDEPENDENT_CODE OFF)
  target_compile_options(polychip_test_pch PRIVATE -fPIE)
  target_link_libraries(polychip_test_pch PRIVATE GTest::gtest nlohmann_json::nlohmann_json)
  target_precompile_headers(polychip_test_pch PRIVATE
                            $<$<COMPILE_LANGUAGE:CXX>:${PROJECT_SOURCE_DIR}/cmake/test_pch.hpp>)
endfunction()

# A GoogleTest executable registered with CTest.
function(polychip_add_test name)
  cmake_parse_arguments(ARG "" "" "SOURCES;LIBS;LABELS" ${ARGN})
  polychip_test_pch_target()
  add_executable(${name} ${ARG_SOURCES})
  polychip_test_compile_options(${name})
  target_precompile_headers(${name} REUSE_FROM polychip_test_pch)
  target_link_libraries(${name} PRIVATE ${ARG_LIBS} GTest::gtest GTest::gtest_main)
  add_test(NAME ${name} COMMAND ${name})
  set_tests_properties(${name} PROPERTIES TIMEOUT 600 LABELS "${ARG_LABELS}")
endfunction()

function(polychip_add_subdirectory_if_present dir)
  file(RELATIVE_PATH rel ${PROJECT_SOURCE_DIR} ${CMAKE_CURRENT_SOURCE_DIR}/${dir})
  if(rel IN_LIST POLYCHIP_SKIP_DIRS)
    message(STATUS "polychip: skipping ${rel} (POLYCHIP_SKIP_DIRS)")
  elseif(EXISTS ${CMAKE_CURRENT_SOURCE_DIR}/${dir}/CMakeLists.txt)
    add_subdirectory(${dir})
  endif()
endfunction()

# Libraries the `polychip` tool links besides libpolychip (suites, comm).
set_property(GLOBAL PROPERTY POLYCHIP_TOOL_LIBS "")
function(polychip_add_tool_library target)
  set_property(GLOBAL APPEND PROPERTY POLYCHIP_TOOL_LIBS ${target})
endfunction()
