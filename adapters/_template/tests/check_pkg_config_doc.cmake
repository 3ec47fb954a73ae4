# Runs docs/adapter-guide.md's pkg-config block as written (the ```sh block
# that sets PKG_CONFIG_PATH), against the prefix check_install.cmake
# installed, so the doc and what works cannot drift apart: its programs must
# build and start. Its claim about the rpath is checked too: without it the
# program does not start, and does with LD_LIBRARY_PATH.
# -DDOC= -DPREFIX= -DWORK_DIR= -DAPP= -DCOMM_APP= -DCXX_COMPILER= [-DCONSUMER_FLAGS=]
# The block's `c++` is the build's compiler, with CONSUMER_FLAGS (a
# sanitizer build's library needs them); nothing else is changed.
file(READ ${DOC} doc)
set(opening "```sh\nexport PKG_CONFIG_PATH=/opt/polychip/lib/pkgconfig\n")
string(FIND "${doc}" "${opening}" start)
if(start EQUAL -1)
  message(FATAL_ERROR "${DOC}: no ```sh block starting with "
                      "'export PKG_CONFIG_PATH=/opt/polychip/lib/pkgconfig'")
endif()
math(EXPR start "${start} + 6")
string(SUBSTRING "${doc}" ${start} -1 block)
string(FIND "${block}" "```" end)
string(SUBSTRING "${block}" 0 ${end} block)
string(REPLACE "/opt/polychip" "${PREFIX}" block "${block}")
string(REGEX REPLACE "(^|\n)c\\+\\+ " "\\1${CXX_COMPILER} ${CONSUMER_FLAGS} " block "${block}")

file(REMOVE_RECURSE ${WORK_DIR})
file(MAKE_DIRECTORY ${WORK_DIR})
configure_file(${APP} ${WORK_DIR}/app.cpp COPYONLY)
configure_file(${COMM_APP} ${WORK_DIR}/comm_app.cpp COPYONLY)
# The adapters a user's environment names are no part of the check.
unset(ENV{POLYCHIP_PATCHES})
unset(ENV{POLYCHIP_ADAPTERS})
unset(ENV{LD_LIBRARY_PATH})

function(run_script what script)
  execute_process(COMMAND sh -ec "${script}" WORKING_DIRECTORY ${WORK_DIR}
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  set(rc ${rc} PARENT_SCOPE)
  set(out "${out}" PARENT_SCOPE)
  message(STATUS "${what}:\n${script}\n-> exit ${rc}\n${out}")
endfunction()

run_script("the doc's block" "${block}")
if(NOT rc EQUAL 0 OR NOT out MATCHES "cpu:0 .*comm: ''")
  message(FATAL_ERROR "docs/adapter-guide.md's pkg-config block failed (exit ${rc}) or its "
                      "programs listed no cpu:0:\n${out}")
endif()

string(REPLACE " -Wl,-rpath,${PREFIX}/lib" "" no_rpath "${block}")
if(no_rpath STREQUAL block)
  message(FATAL_ERROR "the doc's block has no -Wl,-rpath,/opt/polychip/lib")
endif()
string(REGEX MATCH "export [^\n]*\n[^\n]*-o app [^\n]*\n" build_app "${no_rpath}")
run_script("app built without the rpath" "${build_app}./app")
if(rc EQUAL 0 OR NOT out MATCHES "libpolychip\\.so\\.[0-9]+: cannot open shared object file")
  message(FATAL_ERROR "without the rpath the doc says app does not start; exit ${rc}:\n${out}")
endif()
run_script("run with LD_LIBRARY_PATH" "LD_LIBRARY_PATH=${PREFIX}/lib ./app")
if(NOT rc EQUAL 0 OR NOT out MATCHES "cpu:0 ")
  message(FATAL_ERROR "LD_LIBRARY_PATH=${PREFIX}/lib ./app failed (exit ${rc}):\n${out}")
endif()
