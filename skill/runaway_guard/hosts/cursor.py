"""Cursor: recognised so that its calls are never mistaken for Claude Code's; not guarded yet."""

NAME = "cursor"
LABEL = "Cursor"
RUNGS = frozenset()
TOOLS = {}
INSTALL = None


def call(payload):
    return None


def render(decision):
    """Cursor's CLI is reported to block when a hook prints nothing: an empty object passes."""
    return "{}"


def sync(book, call):
    return False
