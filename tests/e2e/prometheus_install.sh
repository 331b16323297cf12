#!/usr/bin/env bash
# Install the real servers tests/e2e/test_team_prometheus.py and test_team_alerts.py start on
# 127.0.0.1: Debian's `prometheus`, `prometheus-pushgateway` and `prometheus-alertmanager`
# (bookworm: 2.42.0, 1.5.1 and 0.25.0). Idempotent: does nothing when all are installed; runs `apt-get update` only when apt does not know them yet
# (a fresh image has no package lists). Prints the binaries' paths.
set -euo pipefail

need=()
command -v prometheus >/dev/null 2>&1 || need+=(prometheus)
command -v prometheus-pushgateway >/dev/null 2>&1 || need+=(prometheus-pushgateway)
command -v prometheus-alertmanager >/dev/null 2>&1 || need+=(prometheus-alertmanager)

if [ "${#need[@]}" -gt 0 ]; then
  sudo=""
  if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
  export DEBIAN_FRONTEND=noninteractive
  if ! apt-cache show "${need[@]}" >/dev/null 2>&1; then
    $sudo apt-get update -qq >&2
  fi
  $sudo apt-get install -y -qq --no-install-recommends "${need[@]}" >&2
fi

command -v prometheus
command -v prometheus-pushgateway
command -v prometheus-alertmanager
