# Fails when docs/op-contract.md differs from `polychip ops --markdown`.
execute_process(COMMAND ${CLI} ops --markdown OUTPUT_VARIABLE generated RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "polychip ops --markdown failed (${rc})")
endif()
file(READ ${DOC} committed)
if(NOT generated STREQUAL committed)
  message(FATAL_ERROR "docs/op-contract.md is stale: regenerate it with "
                      "`build/bin/polychip ops --markdown > docs/op-contract.md`")
endif()
