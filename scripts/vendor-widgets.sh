#!/usr/bin/env bash
# Copies require.js and the ipywidgets HTML renderer from npm into build/vendor/ (or $1), and
# anywidget's front end (AMD build) from the installed Python package ($PYTHON, default python3),
# so the tour's HTML renders its widgets with no CDN at viewing time. Runs npm only when the
# files of these versions are not there yet. Exit code 3: the npm registry cannot be reached.
set -euo pipefail

# html-manager 1.0.x renders widget state 2.0 (ipywidgets 8.1); the release that ships with
# ipywidgets 8.1.9 (controls ^5.0.13, as in jupyterlab_widgets 3.0.17).
HTML_MANAGER=1.0.15
REQUIREJS=2.3.8

dest=${1:-build/vendor}
# The recipe view is an anywidget: its renderer ships in the Python wheel as an AMD module.
anywidget=$("${PYTHON:-python3}" -c 'import anywidget, os; print(anywidget.__version__, os.path.dirname(anywidget.__file__))')
ANYWIDGET=${anywidget%% *}
anywidget_dir=${anywidget#* }
want="@jupyter-widgets/html-manager@$HTML_MANAGER requirejs@$REQUIREJS anywidget@$ANYWIDGET"
if [ "$(cat "$dest/VERSIONS" 2>/dev/null)" = "$want" ] && [ -s "$dest/anywidget.js" ] \
   && [ -s "$dest/embed-amd.js" ] && [ -s "$dest/require.js" ] && [ -s "$dest/LICENSES.txt" ]; then
  exit 0
fi

if ! command -v npm >/dev/null 2>&1; then
  echo "vendor-widgets: npm is not installed; it fetches the widget renderer for the offline tour" >&2
  exit 3
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# Few, short retries: an unreachable registry should fail in seconds, not minutes.
if ! (cd "$tmp" && npm pack --loglevel=error --fetch-timeout=30000 \
        --fetch-retries=1 --fetch-retry-mintimeout=2000 --fetch-retry-maxtimeout=5000 \
        "@jupyter-widgets/html-manager@$HTML_MANAGER" "requirejs@$REQUIREJS" >npm.out 2>npm.err); then
  grep -E '^npm error [^ ]' "$tmp/npm.err" | head -n 4 >&2
  if grep -qE '^npm error code (E404|ETARGET)' "$tmp/npm.err"; then
    echo "vendor-widgets: the registry has no $want; fix the versions in $0" >&2
    exit 1
  fi
  echo "vendor-widgets: cannot download $want from the npm registry ($(npm config get registry))." >&2
  echo "The tour's widgets need these files: check the network or npm's registry setting." >&2
  exit 3
fi

# embed-amd.js bundles the renderer with @jupyter-widgets/base and controls; the woff2 files
# are Font Awesome's, for button icons.
tar -xzf "$tmp"/jupyter-widgets-html-manager-*.tgz -C "$tmp" --wildcards \
  package/dist/embed-amd.js 'package/dist/*.woff2' package/dist/embed.js.LICENSE.txt package/package.json
license() { node -p "require('$1').license" 2>/dev/null || echo "see its package.json"; }
manager_license=$(license "$tmp/package/package.json")
tar -xzf "$tmp"/requirejs-*.tgz -C "$tmp" package/require.js package/package.json
requirejs_license=$(license "$tmp/package/package.json")
# The notices travel with the files (the bundle's own list covers the libraries inside it).
{
  echo "Files in this folder come unchanged from npm packages, except where noted."
  echo "- embed-amd.js: @jupyter-widgets/html-manager $HTML_MANAGER ($manager_license, Project Jupyter);"
  echo "  the notices of the libraries bundled in it follow at the end of this file."
  echo "- *.woff2: Font Awesome's fonts as shipped in that package (SIL OFL 1.1)."
  echo "- require.js: requirejs $REQUIREJS ($requirejs_license; its header carries the notice), with a"
  echo "  requirejs.config() call appended that maps the renderer's module names to this folder."
  echo "- anywidget.js: anywidget $ANYWIDGET's nbextension/index.js from its Python wheel (MIT):"
  sed 's/^/    /' "$anywidget_dir"/../anywidget-"$ANYWIDGET".dist-info/licenses/LICENSE 2>/dev/null || echo "    MIT License, Copyright (c) Trevor Manz"
  echo
  cat "$tmp/package/dist/embed.js.LICENSE.txt"
} >"$tmp/LICENSES.txt"
# The renderer finds its fonts beside the AMD modules' URLs, which require.js derives from the
# module names: map those names to this directory.
cat >>"$tmp/package/require.js" <<'JS'

(function () {
  var here = document.currentScript.src.replace(/\/[^/]*$/, "");
  requirejs.config({paths: {"@jupyter-widgets": here, "@jupyter-widgets/html-manager/dist": here,
                            "anywidget": here + "/anywidget"}});
})();
JS
mkdir -p "$dest"
cp "$anywidget_dir/nbextension/index.js" "$tmp/anywidget.js"
# Copy then rename, so a concurrent build never reads a half-written file.
for f in "$tmp"/package/dist/embed-amd.js "$tmp"/package/dist/*.woff2 "$tmp"/package/require.js "$tmp/LICENSES.txt" \
         "$tmp/anywidget.js"; do
  cp "$f" "$dest/.$(basename "$f").$$" && mv -f "$dest/.$(basename "$f").$$" "$dest/$(basename "$f")"
done
echo "$want" >"$dest/VERSIONS"
echo "vendor-widgets: $want -> $dest"
