# Packaging: install rules (install.cmake) and a CPack Debian package.
#   cmake --build build --target deb     -> build/headscope_<version>_amd64.deb
# The `deb` target builds the two programs and the man pages, then runs CPack; `install` and `package`
# do not rebuild everything first (CMAKE_SKIP_INSTALL_ALL_DEPENDENCY): tests and benchmarks are not shipped.
# packaging/check_deb.sh checks the result (file list, Depends, relocatability) without installing it.

include("${CMAKE_CURRENT_LIST_DIR}/install.cmake")

set(CMAKE_SKIP_INSTALL_ALL_DEPENDENCY ON)

set(CPACK_GENERATOR "DEB")
set(CPACK_PACKAGE_NAME "headscope")
set(CPACK_PACKAGE_VENDOR "HeadScope")
set(CPACK_PACKAGE_VERSION "${PROJECT_VERSION}")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "Interpretability workbench for in-context learning in transformers")
set(CPACK_PACKAGE_DESCRIPTION "HeadScope loads transformer checkpoints (Hugging Face folders, llama2.c .bin,
GGUF), runs them with TransformerLens-named hook points, ablates or patches
single attention heads and shows layer-by-head maps of task-recognition,
task-learning, induction and function-vector heads. It ships a small toy model
trained on a synthetic in-context-learning world, the desktop application
headscope and the command line tool headscope-cli.")
set(CPACK_PACKAGING_INSTALL_PREFIX "/usr")
set(HEADSCOPE_PACKAGE_MAINTAINER "HeadScope maintainers <maintainers@users.noreply.a-seed-8a423b70.example>"
    CACHE STRING "Maintainer field of the Debian package")
set(CPACK_PACKAGE_CONTACT "${HEADSCOPE_PACKAGE_MAINTAINER}")
set(CPACK_OUTPUT_FILE_PREFIX "${CMAKE_BINARY_DIR}")
set(CPACK_STRIP_FILES ON)

set(CPACK_DEBIAN_FILE_NAME "DEB-DEFAULT")  # headscope_<version>_amd64.deb
set(CPACK_DEBIAN_PACKAGE_SECTION "science")
set(CPACK_DEBIAN_PACKAGE_PRIORITY "optional")
# Depends is computed by dpkg-shlibdeps from the binaries' NEEDED libraries (libtorch1.13, libqt6*,
# libqcustomplot2.1-qt6, libpcre2-8-0, libc6, libstdc++6, ...).
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
# ... plus what no NEEDED entry shows: libtorch reaches BLAS through the libblas.so.3 alternative (dlopen-like,
# satisfied by the slow reference libblas3 too); without OpenBLAS matmuls are ~17x slower.
set(CPACK_DEBIAN_PACKAGE_DEPENDS "libopenblas0-pthread, libopenblas0-openmp")
# Desktop integration caches (MIME database, icon theme, desktop menu) are refreshed by these packages'
# dpkg file triggers; no maintainer scripts of our own, so `apt-get remove` leaves nothing behind.
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "shared-mime-info, hicolor-icon-theme, desktop-file-utils")

include(CPack)

# `deb`: the one command that builds what is shipped and packs it.
if(HEADSCOPE_BUILD_GUI)
  add_custom_target(deb
    COMMAND "${CMAKE_CPACK_COMMAND}" --config "${CMAKE_BINARY_DIR}/CPackConfig.cmake" -G DEB
    WORKING_DIRECTORY "${CMAKE_BINARY_DIR}"
    COMMENT "Packing headscope_${PROJECT_VERSION}_amd64.deb"
    USES_TERMINAL)
  add_dependencies(deb headscope headscope-cli headscope_man)
else()
  add_custom_target(deb
    COMMAND "${CMAKE_COMMAND}" -E echo "error: the package needs the GUI: configure with -DHEADSCOPE_BUILD_GUI=ON"
    COMMAND "${CMAKE_COMMAND}" -E false)
endif()
