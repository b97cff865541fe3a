#!/usr/bin/env bash
# Builds the Debian package from an existing build folder and checks it without installing it:
#   1. the file list (programs, toy model, desktop entry, icons, MIME type, metainfo, man pages);
#   2. Depends (computed by dpkg-shlibdeps) names the package of every library the programs link, and the
#      runtime packages HeadScope needs by name (libtorch, Qt 6, QCustomPlot, OpenBLAS, PCRE2);
#   3. no maintainer scripts (so `apt-get remove` leaves nothing behind);
#   4. the programs hold no path of this checkout or of the build folder;
#   5. the unpacked tree works on its own: `headscope-cli info toy` finds the toy model inside the unpacked
#      tree (<exe>/../share/headscope), from another directory; --version and --help of both programs and
#      of every CLI command; `tsla toy --out x.hscope` writes a session; the GUI starts (offscreen);
#   6. desktop-file-validate and appstreamcli validate the shipped files; versions agree.
# usage: packaging/check_deb.sh [BUILD]     (BUILD: a configured build folder with the GUI, default: build)
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-$root/build}" && pwd)
failures=0
fail() {
  echo "check_deb: FAIL: $*" >&2
  failures=$((failures + 1))
}
# ok SINCE MESSAGE: prints MESSAGE when no check failed since the failure count was SINCE.
ok() {
  if [ "$failures" -eq "$1" ]; then echo "check_deb: ok: $2"; fi
}

cache="$build/CMakeCache.txt"
[ -f "$cache" ] || { echo "check_deb: $build is not a configured build folder (no CMakeCache.txt)" >&2; exit 1; }
grep -q '^HEADSCOPE_BUILD_GUI:BOOL=ON' "$cache" ||
  { echo "check_deb: $build is configured without the GUI (-DHEADSCOPE_BUILD_GUI=ON needed)" >&2; exit 1; }
version=$(sed -n 's/^CMAKE_PROJECT_VERSION:STATIC=//p' "$cache")
deb="$build/headscope_${version}_amd64.deb"

echo "check_deb: packing $deb"
rm -f "$deb"
cmake --build "$build" --target deb >"$build/check_deb.log" 2>&1 ||
  { tail -30 "$build/check_deb.log" >&2; echo "check_deb: building the package failed" >&2; exit 1; }
[ -f "$deb" ] || { echo "check_deb: CPack did not write $deb" >&2; exit 1; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# --- 1. file list -----------------------------------------------------------------------------------
since=$failures
dpkg-deb -c "$deb" | awk '{print $6}' | sed 's|^\./|/|' >"$tmp/files"
for f in /usr/bin/headscope /usr/bin/headscope-cli \
  /usr/share/headscope/models/toy-icl/config.json /usr/share/headscope/models/toy-icl/model.safetensors \
  /usr/share/headscope/models/toy-icl/tokenizer.json /usr/share/headscope/models/toy-icl/tokenizer_config.json \
  /usr/share/applications/headscope.desktop /usr/share/mime/packages/headscope.xml \
  /usr/share/metainfo/io.github.headscope.HeadScope.metainfo.xml \
  /usr/share/icons/hicolor/scalable/apps/headscope.svg \
  /usr/share/man/man1/headscope.1.gz /usr/share/man/man1/headscope-cli.1.gz; do
  grep -qxF "$f" "$tmp/files" || fail "the package lacks $f"
done
for s in 16 22 24 32 48 64 128 256; do
  grep -qxF "/usr/share/icons/hicolor/${s}x${s}/apps/headscope.png" "$tmp/files" || fail "no ${s}x${s} icon"
done
outside=$(grep -v -e '^/usr/' -e '^/$' "$tmp/files" || true)
[ -z "$outside" ] || fail "files outside /usr: $(echo $outside)"
ok "$since" "file list ($(grep -vc '/$' "$tmp/files") files)"

# --- 2. Depends -------------------------------------------------------------------------------------
since=$failures
depends=$(dpkg-deb -f "$deb" Depends)
echo "check_deb: Depends: $depends"
dep_names=$(echo "$depends" | tr ',|' '\n\n' | sed 's/(.*)//; s/^ *//; s/ *$//' | sort -u)
has_dep() { grep -qxE "$1" <<<"$dep_names"; }
for want in 'libtorch[0-9.]+' libqt6core6 libqt6gui6 libqt6widgets6 'libqcustomplot2\.1-qt6' \
  libopenblas0-pthread libopenblas0-openmp 'libpcre2-8-0' libc6 'libstdc\+\+6'; do
  has_dep "$want" || fail "Depends lacks $want"
done
# The package owning a library file: dpkg knows it by one of its names (merged /usr: /lib or /usr/lib).
owner() {
  local real c found
  real=$(readlink -f "$1")
  for c in "$1" "$real" "${real#/usr}" "/usr$1"; do
    found=$(dpkg -S "$c" 2>/dev/null | grep -v '^diversion' | sed -n '1s/:.*//p') || true
    if [ -n "$found" ]; then
      echo "$found"
      return 0
    fi
  done
}
# Every library the programs link directly must come from a package in Depends (dpkg-shlibdeps' job).
ldconfig -p >"$tmp/ldconfig"
needed=$(for exe in "$build/bin/headscope" "$build/bin/headscope-cli"; do
  readelf -d "$exe" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'
done | sort -u)
for lib in $needed; do
  path=$(awk -v l="$lib" '$1 == l && /x86-64/ {print $NF; exit}' "$tmp/ldconfig")
  [ -n "$path" ] || { fail "$lib (needed by the programs) not found by ldconfig"; continue; }
  pkg=$(owner "$path")
  [ -n "$pkg" ] || { fail "no package owns $path"; continue; }
  grep -qxF "$pkg" <<<"$dep_names" || fail "the programs link $lib from $pkg, which Depends does not name"
done
ok "$since" "Depends names the package of each of the $(echo $needed | wc -w) linked libraries"

# --- 3. no maintainer scripts -------------------------------------------------------------------------
since=$failures
dpkg-deb --ctrl-tarfile "$deb" | tar -t >"$tmp/control"
if grep -qE 'preinst|postinst|prerm|postrm' "$tmp/control"; then
  fail "maintainer scripts in the package: $(tr '\n' ' ' <"$tmp/control")"
fi
ok "$since" "no maintainer scripts: removal deletes exactly the listed files"

# --- 4. no checkout or build-folder path in the programs ----------------------------------------------
since=$failures
dpkg-deb -x "$deb" "$tmp/root"
for exe in "$tmp/root/usr/bin/headscope" "$tmp/root/usr/bin/headscope-cli"; do
  for p in "$root" "$build"; do
    if grep -qaF "$p" "$exe"; then
      fail "$(basename "$exe") holds the path $p: $(strings -a "$exe" | grep -F "$p" | head -3 | tr '\n' ' ')"
    fi
  done
done
ok "$since" "no path of $root or $build in the programs"

# --- 5. the unpacked tree runs on its own ---------------------------------------------------------------
since=$failures
cli="$tmp/root/usr/bin/headscope-cli"
gui="$tmp/root/usr/bin/headscope"
mkdir "$tmp/elsewhere"
if info=$(cd "$tmp/elsewhere" && "$cli" info toy 2>"$tmp/info.err"); then
  toy_path=$(echo "$info" | python3 -c 'import json,sys; print(json.load(sys.stdin)["path"])')
  case "$toy_path" in
    "$tmp/root/usr/share/headscope/models/toy-icl") ;;
    *) fail "headscope-cli info toy loaded $toy_path, not the unpacked tree's toy model" ;;
  esac
else
  fail "headscope-cli info toy failed: $(cat "$tmp/info.err")"
fi

v=$("$cli" --version 2>&1) || fail "headscope-cli --version exited non-zero"
[ "$v" = "headscope-cli $version" ] || fail "headscope-cli --version printed '$v', expected 'headscope-cli $version'"
v=$(env -u DISPLAY -u WAYLAND_DISPLAY "$gui" --version 2>&1) || fail "headscope --version (no display) failed: $v"
grep -qx "HeadScope $version" <<<"$v" || fail "headscope --version printed '$v', expected 'HeadScope $version'"
env -u DISPLAY -u WAYLAND_DISPLAY "$gui" --help >"$tmp/gui_help" 2>&1 || fail "headscope --help (no display) failed"
grep -q -- '--tokenizer' "$tmp/gui_help" || fail "headscope --help does not list --tokenizer"
"$cli" --help >"$tmp/cli_help" 2>&1 || fail "headscope-cli --help failed"
commands=$(awk '/^Subcommands:/ {f = 1; next} f && /^  [a-z]/ {print $1} f && /^$/ {f = 0}' "$tmp/cli_help")
[ -n "$commands" ] || fail "headscope-cli --help lists no commands"
man_cli="$tmp/headscope-cli.1"
gzip -dc "$tmp/root/usr/share/man/man1/headscope-cli.1.gz" >"$man_cli" || fail "the packaged headscope-cli.1.gz does not unpack"
for c in $commands; do
  "$cli" "$c" --help >"$tmp/help_$c" 2>&1 || fail "headscope-cli $c --help exited non-zero"
  grep -q "Usage:" "$tmp/help_$c" || fail "headscope-cli $c --help printed no usage"
  grep -qE "^\.SS \"?$c( |\")" "$man_cli" || fail "the man page headscope-cli.1 does not describe '$c' (add a .SS entry)"
done
ok "$since" "headscope-cli info toy (from another directory) loads the unpacked toy model; --version and --help of both programs and of: $(echo $commands)"

# An analysis run from the unpacked tree writes a session in the current directory (issue #7's example).
if grep -qx tsla <<<"$commands"; then
  since=$failures
  if (cd "$tmp/elsewhere" && timeout 300 "$cli" tsla toy --task toy:category_label --n 8 --out x.hscope \
    >"$tmp/tsla.json" 2>"$tmp/tsla.err"); then
    [ -s "$tmp/elsewhere/x.hscope" ] || fail "headscope-cli tsla toy --out x.hscope wrote no session"
  else
    fail "headscope-cli tsla toy --out x.hscope failed: $(tail -3 "$tmp/tsla.err")"
  fi
  ok "$since" "headscope-cli tsla toy --out x.hscope (from another directory) writes the session"
fi

# The GUI starts from the menu entry's command (offscreen) and is still running after a few seconds.
set +e
(cd "$tmp/elsewhere" && HOME="$tmp/elsewhere" QT_QPA_PLATFORM=offscreen timeout 8 "$gui" >"$tmp/gui.log" 2>&1)
rc=$?
set -e
since=$failures
if [ "$rc" -eq 124 ]; then ok "$since" "headscope starts (offscreen)"; else fail "headscope exited with $rc: $(tail -5 "$tmp/gui.log")"; fi

# --- 6. desktop files validate; versions agree ------------------------------------------------------------
since=$failures
share="$tmp/root/usr/share"
desktop-file-validate "$share/applications/headscope.desktop" || fail "desktop-file-validate"
appstreamcli validate --no-net "$share/metainfo/io.github.headscope.HeadScope.metainfo.xml" >"$tmp/as" 2>&1 ||
  fail "appstreamcli validate: $(cat "$tmp/as")"
python3 - "$share/mime/packages/headscope.xml" <<'EOF' || fail "MIME XML"
import sys, xml.etree.ElementTree as ET
ns = {"m": "http://www.freedesktop.org/standards/shared-mime-info"}
t = ET.parse(sys.argv[1]).getroot().find("m:mime-type", ns)
assert t.get("type") == "application/x-headscope-session", t.get("type")
assert t.find("m:glob", ns).get("pattern") == "*.hscope"
EOF
grep -qx 'MimeType=application/x-headscope-session;' "$share/applications/headscope.desktop" ||
  fail "the desktop entry does not open application/x-headscope-session"
grep -q "<release version=\"$version\"" "$share/metainfo/io.github.headscope.HeadScope.metainfo.xml" ||
  fail "the metainfo has no <release version=\"$version\">"
for m in headscope headscope-cli; do
  grep -q "^\.TH .*\"HeadScope $version\"" <<<"$(zcat "$share/man/man1/$m.1.gz")" || fail "$m.1 is not for version $version"
done
ok "$since" "desktop-file-validate, appstreamcli validate, MIME type, versions"

dpkg-deb -f "$deb" Package Version Architecture Depends
if [ "$failures" -gt 0 ]; then
  echo "check_deb: $failures check(s) failed" >&2
  exit 1
fi
echo "check_deb: all checks passed for $(basename "$deb") ($(du -h "$deb" | cut -f1))"
