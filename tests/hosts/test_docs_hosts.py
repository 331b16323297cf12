"""The docs' per-host lists follow the host registry (skill/runaway_guard/hosts): every host has
its row in README's host table and in installer/README.md's table of files, its page under
references/hosts/, and the one list of hosts that can ask the person names exactly those whose
answers can ask. Every relative link in the docs leads to a file (and a heading) that exists."""

import re

import pytest
from guard_env import ROOT
from runaway_guard import hosts
from runaway_guard.decisions import ASK

MODULES = {name: hosts.load(name) for name in hosts.NAMES}
DOCS = [
    ROOT / "README.md",
    ROOT / "SKILL.md",
    ROOT / "CONTRIBUTING.md",
    ROOT / "installer" / "README.md",
    ROOT / "bench" / "README.md",
    *sorted((ROOT / "references").rglob("*.md")),
]
LINK = re.compile(r"\]\(([^)\s]+)\)")
# "references/how-it-decides.md", `references/threat-model.md` in running text, not only links
MENTION = re.compile(r"(?<![\w/.])references/[\w./-]*\w")
ASK_LIST = re.compile(
    r"asked where the host can ask \(([^)]*)\) and\s+refused elsewhere \(([^)]*)\)"
)


def text(path):
    return path.read_text(encoding="utf-8")


def table(markdown, header_start):
    """The rows (lists of cells) of the table whose header row starts with header_start."""
    lines = markdown.split("\n")
    start = next(i for i, line in enumerate(lines) if line.startswith(header_start))
    rows = []
    for line in lines[start:]:
        if not line.startswith("|"):
            break
        rows.append([cell.strip() for cell in line.strip().strip("|").split("|")])
    return rows[0], rows[2:]  # the header; the rows after the |---| line


def labels(listed):
    return {label.strip() for label in re.split(r",|\band\b", listed) if label.strip()}


def slug(heading):
    """A heading's anchor as GitHub makes it."""
    kept = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return kept.replace(" ", "-")


def anchors(path):
    """The anchors of a file's headings (lines in a fenced block are no headings)."""
    found, fenced = set(), False
    for line in text(path).split("\n"):
        fenced ^= line.startswith("```")
        if line.startswith("#") and not fenced:
            found.add(slug(line.lstrip("#")))
    return found


def test_every_host_has_one_row_in_the_readme_table_linking_its_page():
    header, rows = table(text(ROOT / "README.md"), "| host (pinned) |")
    assert "where the stop lands" in header
    linked = {}
    for row in rows:
        assert len(row) == len(header), row[0]
        (name,) = re.findall(r"\(references/hosts/(\w+)\.md\)", row[0])
        assert MODULES[name].LABEL in row[0]
        linked[name] = row
    assert sorted(linked) == sorted(hosts.NAMES)
    assert len(rows) == len(hosts.NAMES)


@pytest.mark.parametrize("name", hosts.NAMES)
def test_every_host_has_its_page(name):
    page = ROOT / "references" / "hosts" / f"{name}.md"
    assert page.is_file(), f"{page} is missing: every host has a page (CONTRIBUTING.md)"
    assert text(page).startswith(f"# {MODULES[name].LABEL}\n")


def test_no_page_for_a_host_the_registry_lacks():
    pages = {page.stem for page in (ROOT / "references" / "hosts").glob("*.md")}
    assert pages == set(hosts.NAMES)


def test_the_installers_table_gives_each_hosts_files():
    _, rows = table(text(ROOT / "installer" / "README.md"), "| host | the host's folder |")
    by_label = {row[0]: row for row in rows}
    assert sorted(by_label) == sorted(module.LABEL for module in MODULES.values())
    for module in MODULES.values():
        install, row = module.INSTALL, by_label[module.LABEL]
        variable = install["home"]["variable"]
        assert not variable or f"${variable}" in row[1], module.NAME
        assert row[2] == f"``{install['user']['settings']}``", module.NAME
        assert row[3] == f"``{install['project']['settings']}``", module.NAME
        assert row[4] == f"``{install['project']['skills']}/runaway-guard``", module.NAME


def test_the_hosts_that_can_ask_are_listed_once_and_match_their_rungs():
    found = [(path, match) for path in DOCS for match in ASK_LIST.finditer(text(path))]
    assert len(found) == 1, "the hosts that can ask are listed in one place; the others link it"
    (path, match) = found[0]
    assert path == ROOT / "references" / "how-it-decides.md"
    can_ask = {module.LABEL for module in MODULES.values() if ASK in module.RUNGS}
    others = {module.LABEL for module in MODULES.values()} - can_ask
    assert labels(match.group(1)) == can_ask
    assert labels(match.group(2)) == others
    for path in DOCS:
        # a list of those hosts anywhere else would drift from this one
        assert ", ".join(sorted(can_ask)) not in text(path) or path == found[0][0]


@pytest.mark.parametrize("doc", DOCS, ids=lambda path: str(path.relative_to(ROOT)))
def test_every_relative_link_leads_to_a_file_and_heading(doc):
    for target in LINK.findall(text(doc)):
        if re.match(r"[a-z+]+:", target):
            continue  # a URL
        path, _, anchor = target.partition("#")
        resolved = (doc.parent / path).resolve() if path else doc
        assert resolved.exists(), f"{doc.name}: {target} leads nowhere"
        if anchor:
            assert anchor in anchors(resolved), f"{doc.name}: no heading for {target}"


@pytest.mark.parametrize("doc", ["README.md", "SKILL.md", "CONTRIBUTING.md"])
def test_every_references_path_named_exists(doc):
    for mentioned in MENTION.findall(text(ROOT / doc)):
        assert (ROOT / mentioned).exists(), f"{doc} names {mentioned}, which is not there"


def test_skill_md_names_every_host_and_its_host_argument():
    skill = text(ROOT / "SKILL.md")
    description = re.search(r"^description: (.*)$", skill, re.M).group(1)
    assert all(module.LABEL in description for module in MODULES.values())
    (listed,) = re.findall(r"`--host` naming the agent you run in \(([^;)]*)", skill)
    assert labels(listed) == set(hosts.NAMES)
