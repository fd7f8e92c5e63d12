#!/usr/bin/env bash
# Refreshes the embedded Font Awesome Free (custom fields name icon-font classes such as
# `fa fa-check`) from the npm registry. The extracted files are committed, so building Slipway
# never needs npm: run this only to change the pinned version.
#
# Kept: css/all.min.css, css/v4-shims.min.css (Zealot-era names such as `fa fa-thumbs-o-up`), the
# woff2 webfonts (every browser that renders the pages reads woff2; the .ttf fallbacks are
# dropped from the CSS) and LICENSE.txt (icons CC BY 4.0, fonts SIL OFL 1.1, code MIT).
#
# Usage: pkg/web/assets/update-fontawesome.sh [version]
set -euo pipefail

VERSION=${1:-6.7.2}
DEST=$(cd "$(dirname "$0")/.." && pwd)/static/fontawesome
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

(cd "$TMP" && npm pack --silent "@fortawesome/fontawesome-free@$VERSION" >/dev/null)
tar -xzf "$TMP"/fortawesome-fontawesome-free-"$VERSION".tgz -C "$TMP"
PKG=$TMP/package

rm -rf "$DEST"
mkdir -p "$DEST/css" "$DEST/webfonts"
for f in all.min.css v4-shims.min.css; do
  # Keep only the woff2 source of each @font-face.
  sed -E 's/,url\(\.\.\/webfonts\/[^)]*\.ttf\) format\("truetype"\)//g' "$PKG/css/$f" >"$DEST/css/$f"
done
cp "$PKG"/webfonts/*.woff2 "$DEST/webfonts/"
cp "$PKG/LICENSE.txt" "$DEST/LICENSE.txt"
echo "$VERSION" >"$DEST/VERSION"
if grep -q '\.ttf' "$DEST"/css/*.css; then
  echo "update-fontawesome: the CSS still names .ttf files; check the sed above" >&2
  exit 1
fi
echo "Font Awesome Free $VERSION in $DEST" >&2
