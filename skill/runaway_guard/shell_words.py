"""A POSIX shell's words as the shell would pass them, for guarded_places: the simple commands
of a command line with their words expanded (quotes, `~`, variables, `cd`, redirections, here
documents), and the texts of its command substitutions. A word it cannot follow is marked
opaque, for guarded_places to count against the call."""

_NAME_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_")
_OPERATORS = ";&|()\n"


class Command:
    """One simple command: its words (expanded), what it writes by redirection, its here
    documents, and which words hold something this reader could not follow."""

    __slots__ = ("here", "op", "opaque", "words", "writes")

    def __init__(self):
        self.words, self.opaque, self.writes, self.here, self.op = [], [], [], [], None


def parse(text, places, cwd):
    """(simple commands with their expanded words, the texts of command substitutions)."""
    reader = _Reader(text, places, cwd)
    reader.run()
    return reader.commands, reader.nested


class _Reader:
    """A POSIX shell's word reading, enough to see paths as the shell would pass them."""

    def __init__(self, text, places, cwd):
        self.text, self.places, self.cwd = text, places, cwd
        self.at = 0
        self.commands, self.nested = [], []
        self.command = Command()
        self.word, self.started, self.opaque = [], False, False
        self.next_is = None  # "write", "read", "here" or "herestring": what the next word is
        self.pending_here = []  # (delimiter, strip tabs, command) read after the next newline

    def run(self):
        text = self.text
        while self.at < len(text):
            char = text[self.at]
            if char in " \t":
                self.end_word()
                self.at += 1
            elif char == "\\":
                if text[self.at + 1 : self.at + 2] == "\n":
                    self.at += 2
                else:
                    self.add(text[self.at + 1 : self.at + 2])
                    self.at += 2
            elif char == "'":
                end = text.find("'", self.at + 1)
                end = len(text) if end < 0 else end
                self.add(text[self.at + 1 : end])
                self.at = end + 1
            elif char == '"':
                self.double_quoted()
            elif char == "$":
                self.dollar(quoted=False)
            elif char == "`":
                self.backtick()
            elif char == "~" and not self.word:
                self.tilde()
            elif char == "#" and not self.started:
                end = text.find("\n", self.at)
                self.at = len(text) if end < 0 else end
            elif char in "<>" and text[self.at + 1 : self.at + 2] == "(":
                self.substitution(self.at + 2)  # <(…) >(…)
            elif char in "<>":
                self.redirection()
            elif char in _OPERATORS:
                self.operator()
            else:
                if char in "=:" and text[self.at + 1 : self.at + 2] == "~":
                    self.add(char)
                    self.at += 1
                    self.tilde()
                    continue
                self.add(char)
                self.at += 1
        self.end_command(None)

    def add(self, chars):
        self.word.append(chars)
        self.started = True

    def end_word(self):
        if not self.started:
            return
        word = "".join(self.word)
        role, self.next_is = self.next_is, None
        if role == "write":
            self.command.writes.append(word)
        elif role == "here":
            strip = word.startswith("-")
            self.pending_here.append((word.lstrip("-") if strip else word, strip, self.command))
        elif role == "herestring":
            self.command.here.append(word)
        elif role is None:
            self.command.words.append(word)
        if self.opaque:
            self.command.opaque.append(word)
        self.word, self.started, self.opaque = [], False, False

    def end_command(self, op):
        self.end_word()
        command = self.command
        command.op = op
        if command.words or command.writes or command.here:
            self.commands.append(command)
        self.command = Command()

    def operator(self):
        text = self.text
        char = text[self.at]
        double = text[self.at : self.at + 2]
        if double in ("&&", "||", ";;"):
            op, self.at = double, self.at + 2
        elif double == "&>":
            self.at += 2
            if text[self.at : self.at + 1] == ">":
                self.at += 1
            self.end_word()
            self.next_is = "write"
            return
        else:
            op, self.at = char, self.at + 1
        self.end_command(op)
        if op == "\n":
            self.here_documents()

    def redirection(self):
        text = self.text
        if self.word and all(part.isdigit() for part in self.word):
            self.word, self.started = [], False  # 2>…: the descriptor is no word
        self.end_word()
        if text.startswith("<<<", self.at):
            self.at += 3
            self.next_is = "herestring"
        elif text.startswith("<<", self.at):
            self.at += 2
            self.next_is = "here"
        elif text.startswith("<>", self.at):
            self.at += 2
            self.next_is = "write"
        elif text[self.at] == "<":
            self.at += 1
            self.next_is = "read"
        else:
            self.at += 1
            if text[self.at : self.at + 1] in (">", "|"):
                self.at += 1
            if text[self.at : self.at + 1] == "&":  # >&2, >&-: a descriptor, no file
                end = self.at + 1
                while end < len(text) and (text[end].isdigit() or text[end] == "-"):
                    end += 1
                if end > self.at + 1:
                    self.at = end
                    return
                self.at += 1
            self.next_is = "write"
        while self.at < len(text) and text[self.at] in " \t":
            self.at += 1

    def here_documents(self):
        """The lines after a newline that here documents (`<<EOF`) read: text, not commands."""
        text = self.text
        while self.pending_here:
            delimiter, strip, command = self.pending_here.pop(0)
            lines = []
            while self.at < len(text):
                end = text.find("\n", self.at)
                end = len(text) if end < 0 else end
                line = text[self.at : end]
                self.at = end + 1
                if (line.lstrip("\t") if strip else line) == delimiter:
                    break
                lines.append(line)
            command.here.append("\n".join(lines))

    def double_quoted(self):
        text = self.text
        self.at += 1
        self.started = True
        while self.at < len(text) and text[self.at] != '"':
            char = text[self.at]
            if char == "\\" and text[self.at + 1 : self.at + 2] in ('"', "\\", "$", "`"):
                self.add(text[self.at + 1])
                self.at += 2
            elif char == "$":
                self.dollar(quoted=True)
            elif char == "`":
                self.backtick()
            else:
                self.add(char)
                self.at += 1
        self.at += 1

    def dollar(self, quoted):
        text = self.text
        after = text[self.at + 1 : self.at + 2]
        if after == "(":
            self.substitution(self.at + 2)
        elif after == "{":
            end = text.find("}", self.at)
            end = len(text) if end < 0 else end
            inner = text[self.at + 2 : end]
            name_end = next((i for i, c in enumerate(inner) if c not in _NAME_CHARS), len(inner))
            self.variable(inner[:name_end], inner[name_end:])
            self.at = end + 1
        elif after and (after in _NAME_CHARS):
            end = self.at + 1
            while end < len(text) and text[end] in _NAME_CHARS:
                end += 1
            self.variable(text[self.at + 1 : end], "")
            self.at = end
        elif after and after in "@*#?$!-":
            self.opaque = self.started = True
            self.at += 2
        elif after == "'" and not quoted:  # $'…': C escapes, taken as written
            self.at += 1
        else:
            self.add("$")
            self.at += 1

    def variable(self, name, modifier):
        value = self.places.variable(name, self.cwd) if name else None
        if value is None:
            self.opaque = True
            self.add(modifier.lstrip(":-=+?"))  # ${X:-~/.config/…}: the default may be used
        else:
            self.add(value)

    def substitution(self, start):
        """$(…), <(…), >(…): judged as a command of its own; this word is then unknown."""
        text, depth, end = self.text, 1, start
        while end < len(text) and depth:
            depth += {"(": 1, ")": -1}.get(text[end], 0)
            end += 1
        inner = text[start : end - 1 if not depth else end]
        self.nested.append(inner)
        self.add(inner)
        self.opaque = True
        self.at = end

    def backtick(self):
        end = self.text.find("`", self.at + 1)
        end = len(self.text) if end < 0 else end
        inner = self.text[self.at + 1 : end]
        self.nested.append(inner)
        self.add(inner)
        self.opaque = True
        self.at = end + 1

    def tilde(self):
        """`~` or `~/…` at a word's start (or after `=`/`:`) is the home folder."""
        following = self.text[self.at + 1 : self.at + 2]
        if following in ("", "/", " ", "\t", "\n", ";", "&", "|", ")", ":"):
            self.add(self.places.home)
        else:
            self.add("~")
        self.at += 1
