#!/bin/sh
# Regenerates the committed reference images for the raw-pixel transformations.
# Needs Debian's real tools: `apt-get install -y python3-opencv imagemagick`
# (ImageMagick 6.9.11-60 Q16 and OpenCV 4.6.0 made the committed files).
set -eu
HERE=$(cd "$(dirname "$0")" && pwd)
FIXTURES="$HERE/../../../../fixtures/images"
CONVERT=/usr/bin/convert   # not the stand-in in /usr/local/bin
# Output PNGs without timestamps, so regenerating leaves unchanged files byte-identical. Keep
# embedded ICC profiles (rocket.jpg has one): the test decodes the reference the way it decodes the fixture.
PNG_OPTS="-define png:exclude-chunks=date,time +set date:create +set date:modify"

# clahe: OpenCV's createCLAHE (see clahe.py for the tileSize -> grid mapping).
/usr/bin/python3 "$HERE/clahe.py"

# wave: ImageMagick -wave <amplitude>x<wavelength>; a whole and a fractional amplitude,
# PNG (exact input) with and without alpha, and the JPEG fixture.
for spec in 10x60 4.5x33; do
  "$CONVERT" "$FIXTURES/coffee.png" -wave "$spec" $PNG_OPTS "$HERE/wave-coffee-$spec.png"
  "$CONVERT" "$FIXTURES/logo.png" -wave "$spec" $PNG_OPTS "$HERE/wave-logo-$spec.png"
done
"$CONVERT" "$FIXTURES/rocket.jpg" -wave 10x60 $PNG_OPTS "$HERE/wave-rocket-10x60.png"

# solarize: ImageMagick takes a percentage of QuantumRange + 1 (65536 at Q16). Our 8-bit
# threshold T inverts v > T, i.e. v*257 > T*257; half a quantum above T*257 keeps it exact.
for t in 128 64; do
  pct=$(awk -v t="$t" 'BEGIN { printf "%.10f", (t * 257 + 0.5) / 65536 * 100 }')
  "$CONVERT" "$FIXTURES/coffee.png" -solarize "$pct%" $PNG_OPTS "$HERE/solarize-coffee-$t.png"
  "$CONVERT" "$FIXTURES/logo.png" -solarize "$pct%" $PNG_OPTS "$HERE/solarize-logo-$t.png"
done
