# Shared compile settings for every rivetkit target.

set(RIVETKIT_WARNINGS -Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor -Wold-style-cast
    -Wcast-align -Wunused -Woverloaded-virtual -Wconversion -Wsign-conversion
    -Wnull-dereference -Wdouble-promotion -Wformat=2 -Wimplicit-fallthrough)

if(RIVETKIT_SANITIZE)
    add_compile_options(-fsanitize=address,undefined -fno-omit-frame-pointer
                        -fno-sanitize-recover=undefined)
    add_link_options(-fsanitize=address,undefined)
endif()

function(rivetkit_target_defaults target)
    target_compile_options(${target} PRIVATE ${RIVETKIT_WARNINGS})
    if(RIVETKIT_WERROR)
        target_compile_options(${target} PRIVATE -Werror)
    endif()
endfunction()

# Tests and benchmarks get the same warnings minus the ones that fight test macros.
function(rivetkit_test_defaults target)
    target_compile_options(${target} PRIVATE -Wall -Wextra -Wshadow)
    if(RIVETKIT_WERROR)
        target_compile_options(${target} PRIVATE -Werror)
    endif()
endfunction()
