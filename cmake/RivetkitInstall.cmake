# `cmake --install` support: the libraries, their headers and a CMake package, so another project
# can
#
#   find_package(rivetkit REQUIRED)
#   target_link_libraries(my_host PRIVATE rivetkit::rivetkit)
#
# The public headers (include/rivetkit) include core, runtime, base, envoy and the generated
# protocol headers, so all of them are installed under include/ with the same layout, and every
# static library the typed API pulls in (including PRIVATE link dependencies, which a static
# library passes on) is exported. Included from the top-level CMakeLists.txt after the targets.

include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

# Target → exported name (rivetkit::<name>).
set(rivetkit_install_targets
    rivetkit_base base
    rivetkit_bare bare
    rivetkit_proto_envoy proto_envoy
    rivetkit_proto_client proto_client
    rivetkit_proto_persist proto_persist
    rivetkit_proto_inspector proto_inspector
    rivetkit_asio asio
    rivetkit_beast beast
    rivetkit_runtime runtime
    rivetkit_envoy envoy
    rivetkit_sqlite sqlite
    rivetkit_core core
    rivetkit_inspector_ui inspector_ui
    rivetkit_api rivetkit
    rivetkit_client client
    rivetkit_host host
    rivetkit_testing testing)

set(rivetkit_export_list)
list(LENGTH rivetkit_install_targets n)
math(EXPR last "${n} - 1")
foreach(i RANGE 0 ${last} 2)
    math(EXPR j "${i} + 1")
    list(GET rivetkit_install_targets ${i} target)
    list(GET rivetkit_install_targets ${j} export_name)
    set_target_properties(${target} PROPERTIES EXPORT_NAME ${export_name})
    # Build-tree include paths (src/, include/, the generated headers) become include/ once
    # installed.
    get_target_property(dirs ${target} INTERFACE_INCLUDE_DIRECTORIES)
    if(dirs)
        set(wrapped)
        foreach(dir IN LISTS dirs)
            if(dir MATCHES "^\\$<")
                list(APPEND wrapped "${dir}")
            else()
                list(APPEND wrapped "$<BUILD_INTERFACE:${dir}>")
            endif()
        endforeach()
        list(APPEND wrapped "$<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>")
        list(REMOVE_DUPLICATES wrapped)
        set_target_properties(${target} PROPERTIES INTERFACE_INCLUDE_DIRECTORIES "${wrapped}")
    endif()
    list(APPEND rivetkit_export_list ${target})
endforeach()

install(TARGETS ${rivetkit_export_list}
    EXPORT rivetkitTargets
    ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
    LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
    INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})

install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/rivetkit
    DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
foreach(layer base bare runtime envoy sqlite core)
    install(DIRECTORY ${PROJECT_SOURCE_DIR}/src/${layer}
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
        FILES_MATCHING PATTERN "*.hpp")
endforeach()
install(DIRECTORY ${PROJECT_BINARY_DIR}/generated/
    DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
    FILES_MATCHING PATTERN "*.hpp")

# The pinned engine, so a program built against the package can start a local engine with no
# endpoint given (rivetkit::Registry; the package config tells the program where it is).
set(RIVETKIT_ENGINE_BIN_SOURCE
    "${PROJECT_SOURCE_DIR}/.deps/npm/node_modules/@rivetkit/engine-cli-linux-x64-musl/rivet-engine"
    CACHE FILEPATH "The rivet-engine binary cmake --install copies into libexec/rivetkit")
set(RIVETKIT_INSTALL_ENGINE_DIR ${CMAKE_INSTALL_LIBEXECDIR}/rivetkit)
if(EXISTS "${RIVETKIT_ENGINE_BIN_SOURCE}")
    install(PROGRAMS "${RIVETKIT_ENGINE_BIN_SOURCE}"
        DESTINATION ${RIVETKIT_INSTALL_ENGINE_DIR} RENAME rivet-engine)
else()
    message(STATUS "rivetkit: no engine binary at ${RIVETKIT_ENGINE_BIN_SOURCE} "
                   "(scripts/deps.sh installs it); cmake --install will not include one")
endif()

# rivetkit-host (the example actors' host) in bin/; it finds the engine in ../libexec/rivetkit.
if(TARGET rivetkit-host)
    install(TARGETS rivetkit-host RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
endif()

set(rivetkit_cmake_dir ${CMAKE_INSTALL_LIBDIR}/cmake/rivetkit)
install(EXPORT rivetkitTargets
    NAMESPACE rivetkit::
    DESTINATION ${rivetkit_cmake_dir})
configure_package_config_file(${CMAKE_CURRENT_LIST_DIR}/rivetkitConfig.cmake.in
    ${PROJECT_BINARY_DIR}/rivetkitConfig.cmake
    INSTALL_DESTINATION ${rivetkit_cmake_dir}
    PATH_VARS RIVETKIT_INSTALL_ENGINE_DIR)
write_basic_package_version_file(${PROJECT_BINARY_DIR}/rivetkitConfigVersion.cmake
    VERSION ${PROJECT_VERSION}
    COMPATIBILITY SameMinorVersion)
install(FILES
    ${PROJECT_BINARY_DIR}/rivetkitConfig.cmake
    ${PROJECT_BINARY_DIR}/rivetkitConfigVersion.cmake
    DESTINATION ${rivetkit_cmake_dir})
