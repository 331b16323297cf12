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
# Trying another release is one command: RUNAWAY_GUARD_CLAUDE_VERSION and
# RUNAWAY_GUARD_CODEX_VERSION replace the pins (a version, or an npm tag such as "latest"):
#   RUNAWAY_GUARD_CODEX_VERSION=latest bash tests/run tests/e2e/test_codex.py
# The next run without them puts the pins back. The e2e tests read the same variables and fail
# when the installed CLI is not the version asked for (tests/e2e/harness.py, require_cli).
set -euo pipefail

CLAUDE_VERSION="${RUNAWAY_GUARD_CLAUDE_VERSION:-2.1.332}"
CODEX_VERSION="${RUNAWAY_GUARD_CODEX_VERSION:-0.171.0}"
# ccusage: the independent Codex cost figure test_codex.py compares with (runs with --offline).
CCUSAGE_VERSION="20.0.24"
# GitHub Copilot CLI: a small loader plus the native binary of this platform (an optional
# dependency, @github/copilot-<os>-<arch>); it declares no Node engine and runs on Node 20.
COPILOT_VERSION="1.0.102"

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
prefix="$here/.hosts"
claude_bin="$prefix/node_modules/.bin/claude"
codex_bin="$prefix/node_modules/.bin/codex"
ccusage_bin="$prefix/node_modules/.bin/ccusage"
copilot_bin="$prefix/node_modules/.bin/copilot"

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

if [ "$(installed_version @anthropic-ai/claude-code)" != \
     "$(wanted_version @anthropic-ai/claude-code "$CLAUDE_VERSION")" ] ||
   [ "$(installed_version @openai/codex)" != "$(wanted_version @openai/codex "$CODEX_VERSION")" ] ||
   [ "$(installed_version ccusage)" != "$CCUSAGE_VERSION" ] ||
   [ "$(installed_version @github/copilot)" != "$COPILOT_VERSION" ] ||
   [ ! -x "$claude_bin" ] || [ ! -x "$codex_bin" ] || [ ! -x "$ccusage_bin" ] ||
   [ ! -x "$copilot_bin" ]; then
  mkdir -p "$prefix"
  npm install --prefix "$prefix" --no-audit --no-fund --save-exact --loglevel=error \
    "@anthropic-ai/claude-code@$CLAUDE_VERSION" "@openai/codex@$CODEX_VERSION" \
    "ccusage@$CCUSAGE_VERSION" "@github/copilot@$COPILOT_VERSION" >&2
fi

# Copilot unpacks its package (~235 MB) into COPILOT_CACHE_HOME on first start: once, here, in
# the cache every e2e run shares (tests/e2e/copilot_host.py), so no test pays for it.
if [ ! -e "$prefix/copilot-cache/pkg/linux-x64/$COPILOT_VERSION/.extraction-complete" ] &&
   [ ! -e "$prefix/copilot-cache/pkg/darwin-arm64/$COPILOT_VERSION/.extraction-complete" ]; then
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

echo "$claude_bin"
echo "$codex_bin"
echo "$ccusage_bin"
echo "$copilot_bin"

# Qwen Code (declares Node 22 or newer; runs on Node 20). Its own block so that each host's pin
# moves alone.
QWEN_VERSION="0.24.4"
qwen_bin="$prefix/node_modules/.bin/qwen"
if [ "$(installed_version @qwen-code/qwen-code)" != "$QWEN_VERSION" ] || [ ! -x "$qwen_bin" ]; then
  npm install --prefix "$prefix" --no-audit --no-fund --save-exact --loglevel=error \
    "@qwen-code/qwen-code@$QWEN_VERSION" >&2
fi
echo "$qwen_bin"

# OpenCode: npm opencode-ai pulls its Bun-compiled binary in as an optional dependency
# (opencode-linux-x64 & co.); node_modules/.bin/opencode is a small launcher that finds it.
OPENCODE_VERSION="1.18.33"
opencode_bin="$prefix/node_modules/.bin/opencode"
if [ "$(installed_version opencode-ai)" != "$OPENCODE_VERSION" ] || [ ! -x "$opencode_bin" ]; then
  npm install --prefix "$prefix" --no-audit --no-fund --save-exact --loglevel=error \
    "opencode-ai@$OPENCODE_VERSION" >&2
fi
echo "$opencode_bin"

# Gemini CLI (engines: node >= 20). Its install scripts (node-pty, keytar) are not needed headless.
GEMINI_VERSION="0.61.0"
gemini_bin="$prefix/node_modules/.bin/gemini"
if [ "$(installed_version @google/gemini-cli)" != "$GEMINI_VERSION" ] || [ ! -x "$gemini_bin" ]; then
  npm install --prefix "$prefix" --no-audit --no-fund --save-exact --loglevel=error \
    "@google/gemini-cli@$GEMINI_VERSION" >&2
fi
echo "$gemini_bin"
