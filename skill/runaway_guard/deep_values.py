"""calls.canonical's text of a value nested too deep for jsonio.dumps, written without
recursion. Apart from calls.py: a call meets one only in hostile input, and the class it needs
costs every call that loads it about 67k instructions to create."""

from . import jsonio


class _Mark:
    """Text flat writes as it is (a bracket, a key), told apart from a string value."""

    __slots__ = ("text",)

    def __init__(self, text):
        self.text = text


def flat(value):
    """calls.canonical's text of a value too deep for jsonio.dumps."""
    out, todo = [], [value]
    while todo:
        item = todo.pop()
        if isinstance(item, dict):
            out.append("{")
            todo.append(_Mark("}"))
            for key in sorted(item, key=str, reverse=True):
                todo.extend((item[key], _Mark(jsonio.dumps(str(key)) + ":")))
        elif isinstance(item, list):
            out.append("[")
            todo.append(_Mark("]"))
            todo.extend(reversed(item))
        elif isinstance(item, _Mark):
            out.append(item.text)
        else:
            out.append(jsonio.dumps(item, sort_keys=True) + ",")
    return "".join(out)
