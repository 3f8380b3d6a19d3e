# nbconvert settings for `make tour`: the HTML loads require.js and the widget renderer from
# vendor/ beside it (scripts/vendor-widgets.sh) instead of CDNs, so its widgets render offline.
# Relative URLs: tour.html and vendor/ can be opened from disk or moved together.
c = get_config()  # noqa: F821
c.HTMLExporter.require_js_url = "vendor/require.js"
c.HTMLExporter.widget_renderer_url = "vendor/embed-amd.js"
# The tour has no math: an empty URL keeps the page from fetching MathJax from a CDN.
c.HTMLExporter.mathjax_url = ""
