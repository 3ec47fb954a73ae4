# Fails when docs/op-contract.md differs from `polychip ops --markdown`. The
# generated text may be followed by hand-written sections that start with the
# line "<!-- hand-written below: ... -->" (the required-ops profiles).
execute_process(COMMAND ${CLI} ops --markdown OUTPUT_VARIABLE generated RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "polychip ops --markdown failed (${rc})")
endif()
file(READ ${DOC} committed)
string(LENGTH "${generated}" generated_length)
string(LENGTH "${committed}" committed_length)
set(current FALSE)
if(NOT committed_length LESS generated_length)
  string(SUBSTRING "${committed}" 0 ${generated_length} head)
  string(SUBSTRING "${committed}" ${generated_length} -1 tail)
  if(head STREQUAL generated AND (tail STREQUAL "" OR tail MATCHES "^\n<!-- hand-written below"))
    set(current TRUE)
  endif()
endif()
if(NOT current)
  message(FATAL_ERROR "docs/op-contract.md is stale: regenerate it with "
                      "`build/bin/polychip ops --markdown > docs/op-contract.md` (and keep the "
                      "hand-written sections after it)")
endif()
