# Writes the integration tests as a CTest include file, from `itest --list`.
#
#   cmake -D ITEST=<itest> -D BINARY=<slowsrv> -D OTHER=<slowsrv-h2o> -D OUT=<file>
#         [-D WORKING_DIRECTORY=<dir>] [-D TIMEOUT=<s>] [-D ENV_<case>=<NAME=value>...]
#         -P discover.cmake
#
# `itest --list BINARY OTHER` gives BINARY's entries and the both.* ones, `itest --list OTHER`
# OTHER's. Each line is "<ctest name> <case argument>"; the entry runs
# `itest <binary> <case argument>`, with OTHER as third argument for both.* entries. ENV_<case>,
# where set, is the ENVIRONMENT of every entry of that case.

foreach(var ITEST BINARY OTHER OUT)
    if(NOT DEFINED ${var})
        message(FATAL_ERROR "discover.cmake: -D ${var}=... is missing")
    endif()
endforeach()

set(script "# Written by discover.cmake from `itest --list`; do not edit.\n")
foreach(binary "${BINARY}" "${OTHER}")
    set(list_args "${binary}")
    if(binary STREQUAL BINARY)
        list(APPEND list_args "${OTHER}")
    endif()
    execute_process(COMMAND "${ITEST}" --list ${list_args}
                    OUTPUT_VARIABLE listed ERROR_VARIABLE err RESULT_VARIABLE rc)
    if(NOT rc EQUAL 0)
        message(FATAL_ERROR "discover.cmake: itest --list ${list_args} failed (${rc}): ${err}")
    endif()
    string(REPLACE "\n" ";" lines "${listed}")
    foreach(line IN LISTS lines)
        if(line STREQUAL "")
            continue()
        endif()
        if(NOT line MATCHES "^([^ ]+) ([^ :]+)(:[^ ]+)?$")
            message(FATAL_ERROR "discover.cmake: itest --list printed '${line}'")
        endif()
        set(name "${CMAKE_MATCH_1}")
        set(case "${CMAKE_MATCH_2}")
        set(argument "${CMAKE_MATCH_2}${CMAKE_MATCH_3}")
        set(command "[==[${ITEST}]==] [==[${binary}]==] [==[${argument}]==]")
        if(name MATCHES "^both\\.")
            string(APPEND command " [==[${OTHER}]==]")
        endif()
        string(APPEND script "add_test([==[${name}]==] ${command})\n")
        set(props "")
        if(DEFINED WORKING_DIRECTORY)
            string(APPEND props " WORKING_DIRECTORY [==[${WORKING_DIRECTORY}]==]")
        endif()
        if(DEFINED TIMEOUT)
            string(APPEND props " TIMEOUT ${TIMEOUT}")
        endif()
        if(NOT "${ENV_${case}}" STREQUAL "")
            string(APPEND props " ENVIRONMENT [==[${ENV_${case}}]==]")
        endif()
        if(NOT props STREQUAL "")
            string(APPEND script "set_tests_properties([==[${name}]==] PROPERTIES${props})\n")
        endif()
    endforeach()
endforeach()

# Written whole, then moved: ctest never includes half a list.
file(WRITE "${OUT}.new" "${script}")
file(RENAME "${OUT}.new" "${OUT}")
