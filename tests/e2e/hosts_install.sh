#!/usr/bin/env bash
# Install the pinned host CLIs (Claude Code, Codex, Copilot CLI, Qwen Code, OpenCode, Gemini CLI)
# for the end-to-end tests into tests/e2e/.hosts/ (gitignored). Idempotent: does nothing when the
# pinned versions are already installed. Prints the binary paths (claude, codex, ccusage, copilot,
# qwen, opencode, then gemini).
#
# The versions are pinned here rather than in a package.json so that the install prefix stays
# a throwaway folder: `npm install --prefix tests/e2e/.hosts <pkg>@<version>` writes its own
# package.json/package-lock.json inside .hosts/. The fixtures under tests/fixtures/ name the
# version they were recorded with; those of older versions stay as parsing tests.
#
# Trying another release is one command: RUNAWAY_GUARD_<HOST>_VERSION (CLAUDE, CODEX, GEMINI,
# OPENCODE, COPILOT, QWEN) replaces a pin (a version, or an npm tag such as "latest"):
#   RUNAWAY_GUARD_CODEX_VERSION=latest bash tests/run tests/e2e/test_codex.py
# The next run without them puts the pins back. The e2e tests read the same variables and fail
# when the installed CLI is not the version asked for (tests/e2e/harness.py, require_cli).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
prefix="$here/.hosts"

installed_version() {
  # $1: package name; prints the installed version or nothing
  local pj="$prefix/node_modules/$1/package.json"
  [ -f "$pj" ] && node -e 'process.stdout.write(require(process.argv[1]).version)' "$pj" || true
}

wanted_version() {
  # $1: package name, $2: a version or a tag; prints the version (a tag asks the registry)
  case "$2" in
    [0-9]*) echo "$2" ;;
    *) npm view "$1@$2" version 2>/dev/null | tail -n 1 ;;
  esac
}

pin() {
  # $1: version (or tag), $2: npm package, $3: its binary. Installs it unless that version is
  # there; prints the binary's path.
  local bin="$prefix/node_modules/.bin/$3"
  if [ "$(installed_version "$2")" != "$(wanted_version "$2" "$1")" ] || [ ! -x "$bin" ]; then
    mkdir -p "$prefix"
    npm install --prefix "$prefix" --no-audit --no-fund --save-exact --loglevel=error \
      "$2@$1" >&2
  fi
  echo "$bin"
}

pin "${RUNAWAY_GUARD_CLAUDE_VERSION:-2.1.332}" @anthropic-ai/claude-code claude
pin "${RUNAWAY_GUARD_CODEX_VERSION:-0.171.0}" @openai/codex codex
# ccusage: the independent Codex cost figure test_codex.py compares with (runs with --offline).
pin "${RUNAWAY_GUARD_CCUSAGE_VERSION:-20.0.24}" ccusage ccusage
# GitHub Copilot CLI: a small loader plus the native binary of this platform (an optional
# dependency, @github/copilot-<os>-<arch>); it declares no Node engine and runs on Node 20.
copilot_bin="$(pin "${RUNAWAY_GUARD_COPILOT_VERSION:-1.0.102}" @github/copilot copilot)"
echo "$copilot_bin"
# Qwen Code declares Node 22 or newer; it runs on Node 20.
pin "${RUNAWAY_GUARD_QWEN_VERSION:-0.24.4}" @qwen-code/qwen-code qwen
# OpenCode: npm opencode-ai pulls its Bun-compiled binary in as an optional dependency
# (opencode-linux-x64 & co.); node_modules/.bin/opencode is a small launcher that finds it.
pin "${RUNAWAY_GUARD_OPENCODE_VERSION:-1.18.33}" opencode-ai opencode
# Gemini CLI (engines: node >= 20). Its install scripts (node-pty, keytar) are not needed headless.
pin "${RUNAWAY_GUARD_GEMINI_VERSION:-0.61.0}" @google/gemini-cli gemini

# Copilot unpacks its package (~235 MB) into COPILOT_CACHE_HOME on first start: once, here, in
# the cache every e2e run shares (tests/e2e/copilot_host.py), so no test pays for it.
copilot_version="$(installed_version @github/copilot)"
if [ ! -e "$prefix/copilot-cache/pkg/linux-x64/$copilot_version/.extraction-complete" ] &&
   [ ! -e "$prefix/copilot-cache/pkg/darwin-arm64/$copilot_version/.extraction-complete" ]; then
  COPILOT_CACHE_HOME="$prefix/copilot-cache" COPILOT_OFFLINE=true COPILOT_AUTO_UPDATE=false \
    "$copilot_bin" --version >/dev/null
fi

# tmux: test_codex.py drives the Codex TUI in a tmux pane (a Debian package, not npm).
if ! command -v tmux >/dev/null 2>&1; then
  if command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq tmux; } >&2
  else
    echo "hosts_install.sh: install tmux for the Codex TUI tests" >&2
  fi
fi
