#!/usr/bin/env bash
# Install the real desktop notification daemon tests/e2e/test_desktop_notify.py starts: Debian's
# `dunst` on an `Xvfb` display, in a session bus of `dbus-run-session`, and `notify-send`
# (libnotify-bin), which the guard's sender uses where it is present. Idempotent: does nothing
# when all are installed; `apt-get update` first otherwise.
set -euo pipefail

need=()
command -v dunst >/dev/null 2>&1 || need+=(dunst)
command -v Xvfb >/dev/null 2>&1 || need+=(xvfb)
command -v dbus-run-session >/dev/null 2>&1 || need+=(dbus-daemon)
command -v notify-send >/dev/null 2>&1 || need+=(libnotify-bin)

if [ "${#need[@]}" -gt 0 ]; then
  sudo=""
  if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -qq >&2
  $sudo apt-get install -y -qq --no-install-recommends "${need[@]}" >&2
fi

command -v dunst dunstctl Xvfb dbus-run-session notify-send
