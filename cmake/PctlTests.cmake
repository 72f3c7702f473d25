# Each cmocka case is its own CTest entry: the test binary takes the case name as a filter. Cases
# are listed with cmocka_unit_test*(NAME...) or, with a shared fixture, fixture_case(NAME).
function(pctl_add_unit_test src)
  get_filename_component(bin ${src} NAME_WE)
  add_executable(${bin} ${src})
  target_link_libraries(${bin} PRIVATE pctlcore PkgConfig::CMOCKA)
  target_include_directories(${bin} PRIVATE ${CMAKE_SOURCE_DIR}/tests/unit)
  # cmocka hands every case its fixture's state, which a case without one leaves unused.
  target_compile_options(${bin} PRIVATE -Wno-unused-parameter)
  # The whole file, not line by line: clang-format may put a long case's name on the line after
  # its macro, and a case the scan missed would silently never run.
  file(READ ${src} text)
  string(REGEX MATCHALL "(cmocka_unit_test[a-z_]*|fixture_case)\\(" calls "${text}")
  string(REGEX MATCHALL "(cmocka_unit_test[a-z_]*|fixture_case)\\([ \t\r\n]*[A-Za-z0-9_]+" cases "${text}")
  list(LENGTH calls n_calls)
  set(count 0)
  foreach(c ${cases})
    string(REGEX MATCH "\\([ \t\r\n]*([A-Za-z0-9_]+)" m "${c}")
    set(case ${CMAKE_MATCH_1})
    add_test(NAME unit.${bin}.${case} COMMAND ${bin} ${case})
    set_tests_properties(unit.${bin}.${case} PROPERTIES SKIP_RETURN_CODE 77 LABELS unit)
    math(EXPR count "${count} + 1")
  endforeach()
  if(NOT count EQUAL n_calls)
    message(FATAL_ERROR "${src}: ${n_calls} cmocka_unit_test()/fixture_case() calls, but only ${count} case names read after them")
  endif()
  if(count EQUAL 0)
    message(FATAL_ERROR "${src}: no cmocka_unit_test() cases found")
  endif()
endfunction()

# Integration tests are shell scripts run against the real binaries; exit 77 is a visible skip.
# They run one at a time (RUN_SERIAL): several measure P or CPU time from real parallel work
# (pbench, pctld, calibrate), which another test loading the same 2 CPUs would distort.
function(pctl_add_script_test label src)
  get_filename_component(name ${src} NAME_WE)
  add_test(NAME ${label}.${name} COMMAND bash ${src})
  set_tests_properties(${label}.${name} PROPERTIES SKIP_RETURN_CODE 77 LABELS ${label} RUN_SERIAL TRUE
    ENVIRONMENT "PCTL=$<TARGET_FILE:pctl>;PBENCH=${CMAKE_BINARY_DIR}/pbench;PCTLD=${CMAKE_BINARY_DIR}/pctld;BUILD_DIR=${CMAKE_BINARY_DIR};SRC_DIR=${CMAKE_SOURCE_DIR};TEST_LIB=${CMAKE_SOURCE_DIR}/tests/integration/lib.sh")
endfunction()

# Programs that print their figures ("bench: ..." lines: a ratio against an in-process baseline,
# or an error against ground truth) and fail only when a stated target is missed. label: quality
# (the model machine: run side by side) or perf (timing budgets: one at a time).
function(pctl_add_bench label src)
  get_filename_component(bin ${src} NAME_WE)
  add_executable(${bin} ${src})
  target_link_libraries(${bin} PRIVATE pctlcore)
  target_compile_definitions(${bin} PRIVATE SRC_DIR="${CMAKE_SOURCE_DIR}")
  add_test(NAME ${label}.${bin} COMMAND ${bin})
  set_tests_properties(${label}.${bin} PROPERTIES SKIP_RETURN_CODE 77 LABELS ${label})
  if(label STREQUAL "perf")
    set_tests_properties(${label}.${bin} PROPERTIES RUN_SERIAL TRUE)
  endif()
endfunction()
