"""What both halves of the controls read: controls.py's cheap test on every call and
guarded_places.py's full reading of a call that names the guard (apart, so neither imports the
other)."""

STATUS_SCRIPT = "status.py"
LOOSENING_FLAGS = ("--raise-cap", "--clear", "--off")

STATUS, LOOSEN = "status", "loosen"


def patched_files(patch):
    """The files a patch writes: apply_patch's `*** Update File: x` lines, a diff's `+++ b/x`."""
    found = []
    for line in patch.split("\n"):
        for mark in ("*** Add File: ", "*** Update File: ", "*** Delete File: ", "*** Move to: "):
            if line.startswith(mark):
                found.append(line[len(mark) :].strip())
        if line.startswith(("+++ ", "--- ")):
            name = line[4:].split("\t")[0].strip()
            if name != "/dev/null":
                found.append(name[2:] if name.startswith(("a/", "b/")) else name)
    return [name for name in found if name]
