"""What a user meets: the CLI, the magics, the widgets, the views over a Vault, the notebooks and the
browser test (Debian's chromium, `support.browser`)."""
