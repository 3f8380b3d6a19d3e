#!/usr/bin/env bash
# The browser test drives Debian's chromium; install it when it is missing.
set -euo pipefail
command -v chromium >/dev/null 2>&1 && exit 0
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  echo "installing chromium for the browser test (apt-get)"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
else
  echo "chromium is missing and cannot be installed here (needs root and apt-get)" >&2
  exit 1
fi
