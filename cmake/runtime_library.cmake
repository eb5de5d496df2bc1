# cmake/runtime_library.cmake — libtilecore_runtime, what an application links to load and run
# a `.tcx`: the layers ffi, arch, sim and runtime, whose C API is
# include/tilecore/runtime/c_runtime_api.h. A shared and a static library, and what
# `cmake --install` puts in place for others to build against them: the headers of those
# layers, a CMake package (find_package(tilecore): tilecore::runtime, tilecore::runtime_static)
# and pkg-config files (tilecore-runtime, tilecore-runtime-static). docs/deploy.md.
add_library(tilecore_runtime SHARED $<TARGET_OBJECTS:tilecore_runtime_objects>)
tilecore_usage(tilecore_runtime PUBLIC)
set_target_properties(tilecore_runtime PROPERTIES
  VERSION ${PROJECT_VERSION} SOVERSION ${PROJECT_VERSION_MAJOR} EXPORT_NAME runtime)
if(NOT TILECORE_SANITIZE)
  # Every symbol the runtime layers use is defined in them (or the C and C++ libraries):
  # the link fails on a reference to a compiler layer or to Python.
  target_link_options(tilecore_runtime PRIVATE -Wl,--no-undefined)
endif()

add_library(tilecore_runtime_static STATIC $<TARGET_OBJECTS:tilecore_runtime_objects>)
tilecore_usage(tilecore_runtime_static PUBLIC)
set_target_properties(tilecore_runtime_static PROPERTIES
  OUTPUT_NAME tilecore_runtime EXPORT_NAME runtime_static_archive)
# Module loaders and devices register themselves from static initialisers, which a linker
# leaves out of an archive unless told to keep every member of it. (An export does not rename
# the target inside $<LINK_LIBRARY>: the installed package config sets its own.)
add_library(tilecore_runtime_whole_archive INTERFACE)
target_link_libraries(tilecore_runtime_whole_archive INTERFACE
  "$<BUILD_INTERFACE:$<LINK_LIBRARY:WHOLE_ARCHIVE,tilecore_runtime_static>>")
set_target_properties(tilecore_runtime_whole_archive PROPERTIES EXPORT_NAME runtime_static)

add_library(tilecore::runtime ALIAS tilecore_runtime)
add_library(tilecore::runtime_static ALIAS tilecore_runtime_whole_archive)

# The Python package installs its own files (python/CMakeLists.txt); a wheel holds no C library.
if(NOT SKBUILD)
  include(GNUInstallDirs)
  include(CMakePackageConfigHelpers)
  install(TARGETS tilecore_runtime tilecore_runtime_static tilecore_runtime_whole_archive
          EXPORT tilecoreTargets
          LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
          ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
          RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR}
          INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
  foreach(layer IN LISTS TILECORE_RUNTIME_LAYERS)
    install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/tilecore/${layer}
            DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/tilecore)
  endforeach()
  set(config_dir ${CMAKE_INSTALL_LIBDIR}/cmake/tilecore)
  install(EXPORT tilecoreTargets NAMESPACE tilecore:: DESTINATION ${config_dir})
  configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/tilecoreConfig.cmake.in
    ${PROJECT_BINARY_DIR}/tilecoreConfig.cmake INSTALL_DESTINATION ${config_dir})
  write_basic_package_version_file(${PROJECT_BINARY_DIR}/tilecoreConfigVersion.cmake
    COMPATIBILITY SameMajorVersion)
  install(FILES ${PROJECT_BINARY_DIR}/tilecoreConfig.cmake
          ${PROJECT_BINARY_DIR}/tilecoreConfigVersion.cmake DESTINATION ${config_dir})
  foreach(pc tilecore-runtime tilecore-runtime-static)
    configure_file(${PROJECT_SOURCE_DIR}/cmake/${pc}.pc.in ${PROJECT_BINARY_DIR}/${pc}.pc @ONLY)
    install(FILES ${PROJECT_BINARY_DIR}/${pc}.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
  endforeach()
endif()
