# One place for compiler flags: slowsrv_target_flags(<target>) attaches the warning set, the
# optional -Werror and the optional sanitizers to one target. Never touch CMAKE_C_FLAGS.
include(CheckCCompilerFlag)

set(SLOWSRV_WARNINGS
    -Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes -Wformat=2 -Wconversion
    -Wundef -Wvla -Wwrite-strings -Wcast-qual)

function(slowsrv_target_flags target)
    target_compile_options(${target} PRIVATE ${SLOWSRV_WARNINGS})
    if(SLOWSRV_WERROR)
        target_compile_options(${target} PRIVATE -Werror)
    endif()
    if(SLOWSRV_SANITIZE)
        target_compile_options(${target} PRIVATE
            -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer)
        target_link_options(${target} PRIVATE -fsanitize=address,undefined)
    endif()
    if(SLOWSRV_TSAN)
        target_compile_options(${target} PRIVATE -fsanitize=thread -fno-omit-frame-pointer)
        target_link_options(${target} PRIVATE -fsanitize=thread)
    endif()
endfunction()

# slowsrv_require(<prefix> <pkg-config module> <debian package>): a missing dependency stops the
# configuration with one line that names the package to install.
function(slowsrv_require prefix module debpkg)
    pkg_check_modules(${prefix} QUIET IMPORTED_TARGET ${module})
    if(NOT ${prefix}_FOUND)
        message(FATAL_ERROR
            "missing dependency ${module}: install it with 'apt-get install -y ${debpkg}'")
    endif()
    message(STATUS "found ${module} ${${prefix}_VERSION}")
endfunction()
