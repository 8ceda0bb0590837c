# Runs tally-bench on a scenario without plots (in MODE, default sim), then checks its JSON
# (tally_bench_smoke, tally_bench_live_smoke).
if(NOT DEFINED MODE)
  set(MODE sim)
endif()
execute_process(COMMAND ${TALLY_BENCH} run ${SCENARIO} --mode ${MODE} --out ${OUT} --no-plot
                RESULT_VARIABLE status)
if(NOT status EQUAL 0)
  message(FATAL_ERROR "tally-bench run failed: ${status}")
endif()
execute_process(COMMAND python3 ${CHECKER} ${OUT}/result.json RESULT_VARIABLE status)
if(NOT status EQUAL 0)
  message(FATAL_ERROR "the result is incomplete or inconsistent")
endif()
