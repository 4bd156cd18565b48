# Shared compile settings for every rivetkit target.

# -Wnull-dereference is left out: at -O2 GCC 12 reports paths it invents after inlining (seen in
# Asio and in our own tree walks), so it cannot be fatal in the optimised CI build.
# -Wno-mismatched-new-delete: at -O2 GCC 12 pairs Asio's awaitable-frame operator delete with the
# aligned_alloc inlined from its operator new and reports a mismatch that is not there.
# -Wno-use-after-free: at -O2 GCC 12 follows an inlined `delete this` on a path the counts rule
# out (the channel's last handle); the ASan CI build checks real use-after-free at run time.
set(RIVETKIT_WARNINGS -Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor -Wold-style-cast
    -Wcast-align -Wunused -Woverloaded-virtual -Wconversion -Wsign-conversion
    -Wdouble-promotion -Wformat=2 -Wimplicit-fallthrough)
# The two GCC 12 false positives above (clang, which builds the sanitizer and fuzz trees, has
# neither option).
set(RIVETKIT_GCC_ONLY_WARNINGS "")
if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    set(RIVETKIT_GCC_ONLY_WARNINGS -Wno-mismatched-new-delete -Wno-use-after-free)
    list(APPEND RIVETKIT_WARNINGS ${RIVETKIT_GCC_ONLY_WARNINGS})
endif()

# Unity builds (CI turns them on: CMAKE_UNITY_BUILD) include each .cpp into a batch file, so GCC
# sees every source as a header and warns (-Wsubobject-linkage) that a coroutine frame declared
# there holds a type from that source's anonymous namespace. That is only a problem for real
# headers included from several translation units, which a unity batch is not.
if(CMAKE_UNITY_BUILD AND CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    list(APPEND RIVETKIT_WARNINGS -Wno-subobject-linkage)
    set(RIVETKIT_TEST_UNITY_WARNINGS -Wno-subobject-linkage)
endif()

# UBSan without its null, alignment and pointer-overflow checks: those three instrument every
# memory access and pointer step and made a third of this build's compile time (GCC 12, -O0).
# A null dereference still stops the run through ASan's SEGV report, and the fuzzers (scripts/
# fuzz.sh), which run the byte-level decoders where misaligned or wrapping pointers could arise,
# keep all of -fsanitize=undefined.
if(RIVETKIT_SANITIZE)
    add_compile_options(-fsanitize=address,undefined -fno-omit-frame-pointer
                        -fno-sanitize=null,alignment,pointer-overflow
                        -fno-sanitize-recover=undefined)
    if(CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
        # clang 14's `function` check (indirect calls through a mismatched function type, which
        # GCC does not have) fails to assemble coroutines: "Cannot represent a difference across
        # sections".
        add_compile_options(-fno-sanitize=function)
    endif()
    add_link_options(-fsanitize=address,undefined)
endif()

function(rivetkit_target_defaults target)
    target_compile_options(${target} PRIVATE ${RIVETKIT_WARNINGS})
    if(RIVETKIT_WERROR)
        target_compile_options(${target} PRIVATE -Werror)
    endif()
endfunction()

# Optimization for test code only (test executables and their helper libraries, not benchmarks):
# CI's release build passes -Og, so the code under test stays at -O2 while the tests themselves,
# most of that build's compile time, compile 18-39 % faster per unit.
set(RIVETKIT_TEST_OPTIMIZATION "" CACHE STRING
    "Optimization flag for test code (e.g. -Og); empty: the build type's")

# Tests and benchmarks get the same warnings minus the ones that fight test macros.
# rivetkit_test_defaults(<target> [BENCH])
function(rivetkit_test_defaults target)
    target_compile_options(${target} PRIVATE -Wall -Wextra -Wshadow ${RIVETKIT_GCC_ONLY_WARNINGS}
                                             ${RIVETKIT_TEST_UNITY_WARNINGS})
    if(RIVETKIT_WERROR)
        target_compile_options(${target} PRIVATE -Werror)
    endif()
    if(RIVETKIT_TEST_OPTIMIZATION AND NOT "BENCH" IN_LIST ARGN)
        target_compile_options(${target} PRIVATE ${RIVETKIT_TEST_OPTIMIZATION})
    endif()
endfunction()
