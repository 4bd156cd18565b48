# rivetkit_bare_schema(<target> SCHEMA <file.bare> NAMESPACE <c++ ns> HEADER <include path>)
#
# Generates <build>/generated/<include path> (+ .cpp) from the schema at build time and adds the
# source to <target>, which must already exist (usually a library linking rivetkit::bare).
# Generated code lives only in the build tree.
function(rivetkit_bare_schema target)
    cmake_parse_arguments(ARG "" "SCHEMA;NAMESPACE;HEADER" "" ${ARGN})
    if(NOT ARG_SCHEMA OR NOT ARG_NAMESPACE OR NOT ARG_HEADER)
        message(FATAL_ERROR "rivetkit_bare_schema: SCHEMA, NAMESPACE and HEADER are required")
    endif()
    get_filename_component(schema "${ARG_SCHEMA}" ABSOLUTE)
    set(gen_root "${PROJECT_BINARY_DIR}/generated")
    set(header "${gen_root}/${ARG_HEADER}")
    string(REGEX REPLACE "\\.hpp$" ".cpp" source "${header}")
    get_filename_component(out_dir "${header}" DIRECTORY)
    add_custom_command(
        OUTPUT "${header}" "${source}"
        COMMAND ${CMAKE_COMMAND} -E make_directory "${out_dir}"
        COMMAND baregen "${schema}" --namespace "${ARG_NAMESPACE}" --header "${header}"
                --source "${source}" --include "${ARG_HEADER}"
        DEPENDS baregen "${schema}"
        COMMENT "baregen ${ARG_HEADER}"
        VERBATIM)
    target_sources(${target} PRIVATE "${source}" "${header}")
    target_include_directories(${target} PUBLIC "${gen_root}")
endfunction()
