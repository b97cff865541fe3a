#!/usr/bin/env bash
# Renders the PNG sizes of the application icon from resources/icons/headscope.svg (the source; the PNGs
# are committed). Needs rsvg-convert (Debian: librsvg2-bin).
set -euo pipefail
cd "$(dirname "$0")/../resources/icons"
for s in 16 22 24 32 48 64 128 256; do
  rsvg-convert -w "$s" -h "$s" headscope.svg -o "headscope-$s.png"
done
echo "rendered $(ls headscope-*.png | wc -l) PNGs in $(pwd)"
