# Install layout (prefix /usr in the package):
#   bin/headscope, bin/headscope-cli                      (install(TARGETS) in app/gui, app/cli)
#   share/headscope/models/toy-icl/*                      the embedded toy model
#   share/headscope/published/*                           published dual-route scores as a session
#   share/applications/headscope.desktop                  menu entry, opens .hscope sessions
#   share/mime/packages/headscope.xml                     MIME type application/x-headscope-session (*.hscope)
#   share/metainfo/io.github.headscope.HeadScope.metainfo.xml
#   share/icons/hicolor/{scalable,NxN}/apps/headscope.{svg,png}
#   share/man/man1/headscope.1.gz, headscope-cli.1.gz
include(GNUInstallDirs)

set(_hs_pkg "${CMAKE_CURRENT_LIST_DIR}")
set(_hs_res "${PROJECT_SOURCE_DIR}/resources")

# Relocatable binaries: "toy" is found through <exe>/../share/headscope/models/toy-icl (then
# /usr/share/headscope), never through a path of this checkout baked into the binary. The build tree gets
# the same layout as an installed prefix: build/share/headscope/models -> the source tree's resources/models,
# so build/bin/* (programs, tests, benchmarks) still load the source tree's toy model.
option(HEADSCOPE_RELOCATABLE "Find resources relative to the executable only (no source-tree path in binaries)" ON)
if(HEADSCOPE_RELOCATABLE AND TARGET headscope_loader)
  get_target_property(_hs_defs headscope_loader COMPILE_DEFINITIONS)
  if(_hs_defs)
    list(FILTER _hs_defs EXCLUDE REGEX "^HEADSCOPE_RESOURCE_DIR=")
    set_property(TARGET headscope_loader PROPERTY COMPILE_DEFINITIONS "${_hs_defs}")
  endif()
  foreach(_hs_part models corpora published)
    set(_hs_link "${CMAKE_BINARY_DIR}/share/headscope/${_hs_part}")
    if(NOT IS_SYMLINK "${_hs_link}")
      file(MAKE_DIRECTORY "${CMAKE_BINARY_DIR}/share/headscope")
      file(REMOVE_RECURSE "${_hs_link}")
      file(CREATE_LINK "${_hs_res}/${_hs_part}" "${_hs_link}" SYMBOLIC)
    endif()
  endforeach()
endif()

# The toy model: the four files of a HF folder plus training.json (its recipe and loss curve) when present.
set(_hs_toy "${_hs_res}/models/toy-icl")
install(FILES "${_hs_toy}/config.json" "${_hs_toy}/model.safetensors" "${_hs_toy}/tokenizer.json"
              "${_hs_toy}/tokenizer_config.json"
        DESTINATION "${CMAKE_INSTALL_DATADIR}/headscope/models/toy-icl")
install(FILES "${_hs_toy}/training.json" OPTIONAL DESTINATION "${CMAKE_INSTALL_DATADIR}/headscope/models/toy-icl")
# The neutral corpus of mean ablation (an excerpt of WikiText-2, CC BY-SA 3.0) and its attribution.
install(FILES "${_hs_res}/corpora/wikitext-2-test-excerpt.txt" "${_hs_res}/corpora/README.md"
        DESTINATION "${CMAKE_INSTALL_DATADIR}/headscope/corpora")

# The dual-route study's published per-head scores as a session (MIT; File → Import published results…).
install(FILES "${_hs_res}/published/dual_route_final_models.hscope" "${_hs_res}/published/README.md"
        DESTINATION "${CMAKE_INSTALL_DATADIR}/headscope/published")

# Desktop integration.
install(FILES "${_hs_pkg}/headscope.desktop" DESTINATION "${CMAKE_INSTALL_DATADIR}/applications")
install(FILES "${_hs_pkg}/headscope-mime.xml" DESTINATION "${CMAKE_INSTALL_DATADIR}/mime/packages"
        RENAME headscope.xml)
install(FILES "${_hs_pkg}/io.github.headscope.HeadScope.metainfo.xml" DESTINATION "${CMAKE_INSTALL_DATADIR}/metainfo")
install(FILES "${_hs_res}/icons/headscope.svg" DESTINATION "${CMAKE_INSTALL_DATADIR}/icons/hicolor/scalable/apps")
foreach(size 16 22 24 32 48 64 128 256)
  install(FILES "${_hs_res}/icons/headscope-${size}.png"
          DESTINATION "${CMAKE_INSTALL_DATADIR}/icons/hicolor/${size}x${size}/apps" RENAME headscope.png)
endforeach()

# Man pages, gzipped (-n: no name or time stamp, so the package is reproducible). headscope-cli.1's method
# commands are generated from the registry by headscope-man-page (app/cli/man_page.h), so the page documents
# exactly the flags the CLI has.
set(_hs_man_dir "${CMAKE_BINARY_DIR}/packaging/man")
add_custom_command(OUTPUT "${_hs_man_dir}/headscope-cli.1"
  COMMAND "${CMAKE_COMMAND}" -E make_directory "${_hs_man_dir}"
  COMMAND headscope-man-page "${_hs_pkg}/man/headscope-cli.1.in" "${_hs_man_dir}/headscope-cli.1"
  DEPENDS headscope-man-page "${_hs_pkg}/man/headscope-cli.1.in"
  COMMENT "man page headscope-cli.1 from the method registry" VERBATIM)
set(_hs_man_src_headscope "${_hs_pkg}/man/headscope.1")
set(_hs_man_src_headscope-cli "${_hs_man_dir}/headscope-cli.1")
set(_hs_man_out)
foreach(page headscope headscope-cli)
  set(_gz "${_hs_man_dir}/${page}.1.gz")
  add_custom_command(OUTPUT "${_gz}"
    COMMAND "${CMAKE_COMMAND}" -E make_directory "${_hs_man_dir}"
    COMMAND gzip -9 -n -c "${_hs_man_src_${page}}" > "${_gz}"
    DEPENDS "${_hs_man_src_${page}}"
    COMMENT "gzip man page ${page}.1" VERBATIM)
  list(APPEND _hs_man_out "${_gz}")
endforeach()
add_custom_target(headscope_man ALL DEPENDS ${_hs_man_out})
install(FILES ${_hs_man_out} DESTINATION "${CMAKE_INSTALL_MANDIR}/man1")
