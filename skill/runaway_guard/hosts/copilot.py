"""GitHub Copilot CLI: recognised so that its calls are never mistaken for Claude Code's (it
runs the hooks in a project's Claude settings with its own payloads); not guarded yet."""

NAME = "copilot"
LABEL = "Copilot CLI"
RUNGS = frozenset()
TOOLS = {}
INSTALL = None


def call(payload):
    return None


def render(decision):
    return ""


def sync(book, call):
    return False
