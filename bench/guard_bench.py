#!/usr/bin/env python3
"""What one tool call pays for runaway-guard, on every host it reads: steady, cold, memory.

    python3 bench/guard_bench.py               # every host: 100 and 500 MB, flatness, pruning
    python3 bench/guard_bench.py --quick       # 10 MB sessions, 10 calls: a smoke run (~10 s)
    python3 bench/guard_bench.py --breakdown   # where a steady call's time goes, phase by phase
    python3 bench/guard_bench.py --skill DIR   # another copy of skill/ (figures before a change)
    python3 bench/guard_bench.py --instructions  # also callgrind's count of one steady call

Sessions come from bench/sessions/ (one generator per host, in the shapes each host
writes) and are made once under bench/.data/ (gitignored), then reused. The guard runs as
installed, `<python> -I -S guard.py`, with this interpreter (on a host whose plugin keeps it
running, OpenCode, `guard.py --serve`, a call a line); side by side in the same run:

- floor: `<python> -I -S -c pass`, run right before each steady call (the ratio compares
  medians of the two series, so a machine busy with other work weighs on both);
- steady: one tool call with the state warm, after the host appended one response (usage),
  the call and the previous call's result, stamped today (median of --calls calls);
- cold: the first call on the whole session, no state, the page cache warm; beside it `cat`
  of the same files, the physical floor of reading them;
- peak RSS of the guard process alone (os.wait4 of a small launcher's child), and the size of
  the session's state file after the steady calls;
- flat: the steady ratio at 10, 100 and 500 MB, and with 1, 36 and 200 subagent files;
- prune: the one call a day that deletes the state of sessions unseen for 30 days.

Every host in the skill's registry gets a row; a host without a generator is named as such.
It always exits 0 (a report); standard library only.
"""

import argparse
import http.server
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import sessions  # noqa: E402

ROOT = os.path.dirname(HERE)
GEN_VERSION = 5  # bump when a generator changes: old data is made again
MB = 1 << 20

STEADY_RATIO = 1.3  # x `python -I -S -c pass`
# What a team configured adds to a steady call, in floors: a share of the call itself would
# judge a served call (a few ms, no interpreter start) ten times as strictly as a spawned one.
TEAM_ADDED = 0.1
COLD_LIMIT = 1.0  # seconds, at 500 MB
MEMORY_LIMIT_MB = 64
STATE_LIMIT_KB = 32
SUBAGENTS = 36
# The late calls: the host writes the call LATE_S after its hook started (Claude Code flushes
# every 100 ms); the guard must answer within LATE_MARGIN_S of that write.
LATE_S, LATE_CALLS, LATE_MARGIN_S = 0.05, 10, 0.05
STATE_SUFFIXES = (".state", ".json")  # a session's state file (.json before marshal)
# Hosts whose plugin keeps one guard running (`guard.py --serve`, runaway_guard/serve.py): a
# call is its payload's line to that process and the answer's line back, timed from here; the
# cold call starts the process.
SERVED = {"opencode"}


# -- sessions on disk, made once --------------------------------------------------------------


def generation(host):
    """The data's version: the bench's, and the generator's own (`version`, when it changed)."""
    return f"{GEN_VERSION}.{getattr(sessions.GENERATORS[host], 'version', 0)}"


def session_data(data_dir, host, size_mb, subagents):
    """The generated session (info dict), made once and then reused with appends undone."""
    folder = os.path.join(data_dir, f"{host}-{size_mb}mb-{subagents}")
    meta_path = os.path.join(folder, "meta.json")
    info = None
    try:
        with open(meta_path) as handle:
            info = json.load(handle)
        if info.get("gen") != generation(host) or any(
            os.path.getsize(path) < size for path, size in info["sizes"].items()
        ):
            info = None
    except (OSError, ValueError, KeyError):
        info = None
    if info is None:
        shutil.rmtree(folder, ignore_errors=True)
        os.makedirs(folder)
        print(f"making a {host} session of {size_mb} MB + {subagents} ...", flush=True)
        started = time.monotonic()
        info = sessions.GENERATORS[host]().make(folder, size_mb, subagents)
        info["gen"] = generation(host)
        info["sizes"] = {path: os.path.getsize(path) for path in info["files"]}
        with open(meta_path, "w") as handle:
            json.dump(info, handle)
        print(f"  done in {time.monotonic() - started:.1f} s", flush=True)
    info["host"] = host
    undo_appends(info)
    sessions.date_subagents(info)
    return info


def undo_appends(info):
    undo = getattr(sessions.GENERATORS[info["host"]], "undo", None)
    if undo is not None:
        undo(info)
        return
    for path, size in info["sizes"].items():
        if os.path.getsize(path) != size:
            os.truncate(path, size)


def warm_cache(info):
    """Read every file once, so the cold call measures the guard and not the disk."""
    for path in info["sizes"]:
        with open(path, "rb") as handle:
            while handle.read(16 * MB):
                pass


# -- one process alone -------------------------------------------------------------------------

# The child is started by a small launcher, not by this process: on Linux a child's ru_maxrss
# starts at the RSS of the process that forked it (exec keeps the high-water mark). The launcher
# (python -I -S, ~8 MB) forks, execs the command, feeds its stdin and reports the child's own wall
# time and os.wait4 usage.
LAUNCHER = r"""
import os, sys, time
data = sys.stdin.buffer.read()
out = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
err = os.open(sys.argv[2], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
argv = sys.argv[3:]
read_end, write_end = os.pipe()
started = time.perf_counter()
pid = os.fork()
if pid == 0:
    os.dup2(read_end, 0)
    os.dup2(out, 1)
    os.dup2(err, 2)
    os.close(write_end)
    os.execvp(argv[0], argv)
os.close(read_end)
try:
    os.write(write_end, data)
except BrokenPipeError:
    pass
os.close(write_end)
_, status, usage = os.wait4(pid, 0)
elapsed = time.perf_counter() - started
code = os.WEXITSTATUS(status) if os.WIFEXITED(status) else -os.WTERMSIG(status)
print(elapsed, usage.ru_maxrss, code)
"""


class Runner:
    def __init__(self, data_dir):
        self.out = os.path.join(data_dir, "child.out")
        self.err = os.path.join(data_dir, "child.err")

    def run(self, argv, data=b"", env=None, out=None):
        """(wall seconds, peak RSS in MB, exit code, stdout, stderr) of one process alone."""
        out = out or self.out
        launcher = [sys.executable, "-I", "-S", "-c", LAUNCHER, out, self.err, *argv]
        done = subprocess.run(launcher, input=data, capture_output=True, env=env, check=True)
        elapsed, maxrss, code = done.stdout.split()
        stdout = b""
        if out == self.out:
            with open(out, "rb") as handle:
                stdout = handle.read()
        with open(self.err, "rb") as handle:
            stderr = handle.read()
        rss_mb = int(maxrss) / (MB if sys.platform == "darwin" else 1024)  # bytes on macOS
        return float(elapsed), rss_mb, int(code), stdout, stderr


def check(result, what):
    _, _, code, out, err = result
    if code != 0 or err.strip():
        print(f"  ! {what}: exit {code}, stderr {err[-300:]!r}")
    if out.strip():
        json.loads(out)  # one valid answer, or nothing


def guard_env(work, info):
    home = os.path.join(work, "home")
    os.makedirs(home, exist_ok=True)
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": home,
        "XDG_CONFIG_HOME": os.path.join(home, ".config"),
        "RUNAWAY_GUARD_STATE_DIR": os.path.join(work, "state"),
        "RUNAWAY_GUARD_MAX_USD": "0",  # the common path: no cap hit, no answer
    }
    env.update(info.get("env") or {})
    return env


def state_bytes(paths):
    """What the calls read and write of the state files: each state itself (a file in slots
    holds two, runaway_guard/state_file.py), and the files' own size."""
    import marshal

    try:  # the measured skill's (registered_hosts)
        from runaway_guard.state_file import read_state
    except ImportError:  # a tree from before ledger.py was split
        from runaway_guard.ledger import read_state

    paths = [path for path in paths if path.endswith(STATE_SUFFIXES)]
    states = [read_state(path) for path in paths]
    own = sum(len(marshal.dumps(state, 4)) for state in states if state is not None)
    return own, sum(os.path.getsize(path) for path in paths)


def state_files(work):
    found = []
    for folder, _, names in os.walk(os.path.join(work, "state", "sessions")):
        found.extend(os.path.join(folder, name) for name in names)
    return found


# -- measuring one session ---------------------------------------------------------------------


class Served:
    """One `guard.py --serve` process, as a host's plugin keeps it; calls as Runner.run's."""

    def __init__(self, guard, env, prefix=()):
        self.started = time.perf_counter()
        self.process = subprocess.Popen(
            [*prefix, sys.executable, "-I", "-S", guard, "--serve"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
        )

    def call(self, data):
        """(wall seconds, peak RSS in MB, 0 or -1 if it ended, answer, b""): the first call
        counts from the process's start."""
        started, self.started = self.started or time.perf_counter(), None
        self.process.stdin.write(data + b"\n")
        self.process.stdin.flush()
        line = self.process.stdout.readline()
        elapsed = time.perf_counter() - started
        return elapsed, self.peak_rss(), 0 if line else -1, line.strip(), b""

    def peak_rss(self):
        """VmHWM, in MB (Linux's /proc; 0 elsewhere)."""
        try:
            with open(f"/proc/{self.process.pid}/status") as handle:
                for line in handle:
                    if line.startswith("VmHWM:"):
                        return int(line.split()[1]) / 1024
        except OSError:
            pass
        return 0.0

    def close(self):
        """Its stderr, once it ended (the end of its input ends it)."""
        _, err = self.process.communicate(timeout=600)
        if self.process.returncode:
            print(f"  ! served guard: exit {self.process.returncode}, stderr {err[-300:]!r}")
        return err


class Series:
    """One series of calls on a session: each step's lines appended, then the guard run (a new
    process a call, or a line to the process a served host keeps)."""

    def __init__(self, ctx, host, info, env):
        self.ctx, self.info, self.env = ctx, info, env
        self.generator = sessions.GENERATORS[host]()
        self.guard = [sys.executable, "-I", "-S", ctx.guard]
        self.step = 0
        self.servers = {} if host in SERVED else None

    def next_step(self):
        """The next call: (what writes the host's lines before it, its payload as bytes)."""
        write, payload = self.generator.step(self.info, self.step)
        self.step += 1
        return write, json.dumps(payload).encode()

    def written(self):
        """The next call's payload, its lines written."""
        write, data = self.next_step()
        write()
        return data

    def call(self, env=None, late=None):
        """Run the guard on the next call; late: write its lines that many seconds after the
        hook started instead of before."""
        write, data = self.next_step()
        writer = None
        if late is None:
            write()
        else:
            writer = threading.Timer(late, write)
            writer.start()
        env = env or self.env
        if self.servers is None:
            result = self.ctx.runner.run(self.guard, data, env)
        else:
            key = tuple(sorted(env.items()))
            if key not in self.servers:
                self.servers[key] = Served(self.ctx.guard, env)
            result = self.servers[key].call(data)
        if writer:
            writer.join()
        check(result, f"{os.path.basename(self.env['RUNAWAY_GUARD_STATE_DIR'])} call")
        return result

    def close(self):
        for server in (self.servers or {}).values():
            err = server.close()
            if err.strip():
                print(f"  ! served guard: stderr {err[-300:]!r}")


CALLGRIND = ("valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null")


def instructions(argv, data=b"", env=None):
    """The instructions one run executes (callgrind): a figure the machine's load does not move,
    to read beside the times."""
    done = subprocess.run([*CALLGRIND, *argv], input=data, env=env, capture_output=True)
    return collected(done.stderr)


def served_instructions(series, env, calls=10):
    """One served call's instructions: callgrind over a guard serving 1 call and over one
    serving 1 + calls, the difference a call."""
    counts = []
    for count in (1, 1 + calls):
        server = Served(series.ctx.guard, env, CALLGRIND)
        for _ in range(count):
            server.call(series.written())
        counts.append(collected(server.close()))
    return None if None in counts else (counts[1] - counts[0]) // calls


def collected(stderr):
    found = [line for line in stderr.decode().splitlines() if "Collected :" in line]
    return int(found[-1].split(":")[-1]) if found else None


def measure(ctx, host, size_mb, subagents, full=True):
    """One session: cold (twice, the best) and cat; then the steady calls, each right after the
    floor; with full, also the calls with a team configured and the late ones."""
    info = session_data(ctx.data, host, size_mb, subagents)
    warm_cache(info)
    work = os.path.join(ctx.data, "run", f"{host}-{size_mb}-{subagents}")
    row = {"host": host, "size": size_mb, "subagents": subagents, "files": len(info["files"])}
    row["bytes"] = sum(info["sizes"].values())
    if full:
        colds, rss = [], []
        for _ in range(2):
            shutil.rmtree(work, ignore_errors=True)
            cold = Series(ctx, host, info, guard_env(work, info))
            result = cold.call()
            cold.close()
            colds.append(result[0])
            rss.append(result[1])
            undo_appends(info)
        row["cold"], row["cold_rss"] = min(colds), max(rss)
        cats = [ctx.runner.run(["cat", *info["files"]], out=os.devnull)[0] for _ in range(3)]
        row["cat"] = min(cats)
    shutil.rmtree(work, ignore_errors=True)
    env = guard_env(work, info)
    series = Series(ctx, host, info, env)
    series.call()  # the first call: the cold read
    with_team = None
    if full:
        with_team = team_env(env, ctx.team_url)
        series.call(with_team)  # starts the refresh that fills the team's cache
        cache = os.path.join(work, "state", "team", "cache.json")
        deadline = time.monotonic() + 10
        while not os.path.exists(cache) and time.monotonic() < deadline:
            time.sleep(0.05)
    floors, steadies, rss, teams = [], [], [], []
    for _ in range(ctx.calls):
        floors.append(ctx.runner.run([sys.executable, "-I", "-S", "-c", "pass"])[0])
        result = series.call()
        steadies.append(result[0])
        rss.append(result[1])
        if with_team:
            teams.append(series.call(with_team)[0])
    row["floor"] = statistics.median(floors)
    row["steady"] = statistics.median(steadies)
    # each call against the floor just before it: the machine's load drifts less between two
    # neighbouring runs than across the whole series
    row["ratio"] = statistics.median(s / f for s, f in zip(steadies, floors))
    row["steady_rss"] = max(rss)
    if with_team:
        row["team_added"] = statistics.median(
            (t - s) / f for t, s, f in zip(teams, steadies, floors)
        )
    if full and ctx.instructions:
        # one more steady call, counted before the late ones: the call after a late one also
        # reads what the host wrote once the guard had answered (Gemini CLI's whole step: its
        # hooks carry no call id to wait for; the rest of Claude Code's write after the call's
        # line), which no steady call reads
        floor = instructions([sys.executable, "-I", "-S", "-c", "pass"])
        if host in SERVED:
            steady = served_instructions(series, env)
        else:
            steady = instructions(series.guard, series.written(), env)
        row["instructions"] = (steady, floor)
    if with_team:
        late = [series.call(late=LATE_S)[0] for _ in range(min(LATE_CALLS, ctx.calls))]
        row["late"] = statistics.median(late)
    series.close()
    files = state_files(work)
    row["state"], row["state file"] = state_bytes(files)
    row["ledger"] = sum(os.path.getsize(p) for p in files if p.endswith(".ledger"))
    undo_appends(info)
    return row


def measure_prune(ctx, host, sessions=1000):
    """The call that prunes (once a day) against the calls around it, with `sessions` old
    sessions' files in the state dir."""
    info = session_data(ctx.data, host, 10, 1)
    work = os.path.join(ctx.data, "run", "prune")
    shutil.rmtree(work, ignore_errors=True)
    series = Series(ctx, host, info, guard_env(work, info))
    series.call()
    folder = os.path.join(work, "state", "sessions", host)
    old = time.time() - 40 * 86400
    for number in range(sessions):
        for suffix in (".state", ".ledger", ".lock"):
            path = os.path.join(folder, f"old-{number:05d}{suffix}")
            with open(path, "w") as handle:
                handle.write("")
            os.utime(path, (old, old))
    marker = os.path.join(work, "state", ".pruned")
    plain, pruning = [], None
    for step in range(7):
        if step == 3 and os.path.exists(marker):
            os.utime(marker, (old, old))
            pruning = series.call()[0]
        else:
            plain.append(series.call()[0])
    left = len([n for n in os.listdir(folder) if n.startswith("old-")])
    undo_appends(info)
    return statistics.median(plain), pruning or float("nan"), sessions, left


# -- a team configured: a stand-in for the Pushgateway and Prometheus ----------------------------


class _TeamServers(http.server.BaseHTTPRequestHandler):
    """Accepts every push; every query answers "no spend on the other machines"."""

    def log_message(self, *args):
        pass

    def _answer(self):
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        body = b""
        if self.command == "GET":
            body = b'{"status":"success","data":{"resultType":"vector","result":[]}}'
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_PUT = do_DELETE = _answer


def team_servers():
    """The stand-in's URL (one port answers for both servers)."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _TeamServers)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return f"http://127.0.0.1:{server.server_address[1]}"


def team_env(env, url):
    return {
        **env,
        "RUNAWAY_GUARD_TEAM": "bench",
        "RUNAWAY_GUARD_USER": "bench",
        "RUNAWAY_GUARD_PUSHGATEWAY_URL": url,
        "RUNAWAY_GUARD_PROMETHEUS_URL": url,
        "RUNAWAY_GUARD_TEAM_MONTHLY_USD": "1000000",
        "RUNAWAY_GUARD_PERSON_DAILY_USD": "1000000",
    }


# -- the report ----------------------------------------------------------------------------------


def machine():
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as handle:
            for line in handle:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    return (
        f"{platform.system()} {platform.release()}, {os.cpu_count()} cores ({cpu}), "
        f"load {load:.1f}; {platform.python_implementation()} {platform.python_version()} "
        f"({sys.executable})"
    )


def fmt_time(seconds):
    return f"{seconds * 1000:.1f} ms" if seconds < 1 else f"{seconds:.2f} s"


def verdict(ok):
    return "PASS" if ok else "FAIL"


def report(ctx, rows, flats, prune, missing):
    print()
    print(f"machine: {machine()}")
    print(f"guard: {ctx.guard}")
    print(
        f"steady: median of {ctx.calls} calls, each right after `python -I -S -c pass` (the "
        "floor; ratio: the median of each call's ratio to its floor); cold: the first call, no "
        "state, best of 2; cat: the same files; team: the time a team configured adds to the "
        "steady call before it, in floors; late: the host writes the call "
        f"{LATE_S * 1000:.0f} ms after the hook started"
    )
    served = sorted({row["host"] for row in rows} & SERVED)
    if served:
        print(
            f"served ({', '.join(served)}): the host's plugin keeps one `guard.py --serve` "
            "running; steady: a payload's line to it and the answer back; cold: its start and "
            "first answer; peak RSS: the process's over all its calls"
        )
    print()
    header = (
        "| host     | session     |  steady |   floor | ratio |    cold |     cat | peak RSS "
        "|   state |  team |    late | result |"
    )
    print(header)
    print("|" + "|".join("-" * len(part) for part in header.split("|")[1:-1]) + "|")
    failures = 0
    for row in rows:
        rss = max(row["steady_rss"], row.get("cold_rss", 0))
        checks = [
            row["ratio"] <= STEADY_RATIO,
            row["state"] <= STATE_LIMIT_KB * 1024,
            rss <= MEMORY_LIMIT_MB,
            row["team_added"] <= TEAM_ADDED,
            row["late"] <= LATE_S + LATE_MARGIN_S,
        ]
        if row["size"] >= 500:
            checks.append(row["cold"] <= COLD_LIMIT)
        failures += not all(checks)
        session = f"{row['size']} MB + {row['subagents']}"
        print(
            f"| {row['host']:<8} | {session:<11} | {fmt_time(row['steady']):>7} "
            f"| {fmt_time(row['floor']):>7} | {row['ratio']:>5.2f} "
            f"| {fmt_time(row['cold']):>7} | {fmt_time(row['cat']):>7} | {rss:>5.1f} MB "
            f"| {row['state'] / 1024:>4.1f} KB | {row['team_added']:>+5.2f} "
            f"| {fmt_time(row['late']):>7} | {verdict(all(checks)):<6} |"
        )
    print()
    print(
        f"targets: steady <= {STEADY_RATIO}x the floor; cold <= {COLD_LIMIT:g} s at 500 MB; "
        f"peak RSS <= {MEMORY_LIMIT_MB} MB; state <= {STATE_LIMIT_KB} KB; a team adds <= "
        f"{TEAM_ADDED:g}x the floor; late <= the write + {LATE_MARGIN_S * 1000:.0f} ms"
    )
    for row in rows:
        print(
            f"  {row['host']} {row['size']} MB: {row['bytes'] / MB:.0f} MB in {row['files']} "
            f"files; ledger {row['ledger'] / 1024:.0f} KB"
        )
    counted = [row for row in rows if all(row.get("instructions") or [None])]
    if counted:
        print()
        print(
            "instructions (callgrind): one steady call against `python -I -S -c pass` (served:"
            " a guard serving 11 calls less one serving 1, over 10)"
        )
        for row in counted:
            steady, floor = row["instructions"]
            print(
                f"  {row['host']:<8} {row['size']} MB: {steady / 1e6:.1f}M against "
                f"{floor / 1e6:.1f}M, {steady / floor:.2f}x"
            )
    if flats:
        print()
        print("flat: the steady ratio as the session grows (36 subagents) and as its files do")
        for host, by_size, by_files, state in flats:
            sizes = ", ".join(f"{size} MB {ratio:.2f}" for size, ratio in by_size)
            files = ", ".join(f"{count} files {ratio:.2f}" for count, ratio in by_files)
            if state:
                files += f" (state {state[0] / 1024:.0f} KB, file {state[1] / 1024:.0f} KB)"
            spread = [ratio for _, ratio in by_size + by_files]
            ok = max(spread) <= STEADY_RATIO
            failures += not ok
            print(f"  {host:<8} {sizes}; {files or 'one file: n/a'}  {verdict(ok)}")
    if prune:
        plain, pruning, sessions, left = prune
        print()
        print(
            f"prune: the day's first call deleted {sessions - left} of {sessions} sessions unseen "
            f"for 40 days in {fmt_time(pruning)} (calls around it: {fmt_time(plain)})"
        )
    for name, why in missing:
        print(f"  {name}: not measured ({why})")
    print()
    print("all targets met" if not failures else f"FAIL: {failures} row(s) missed a target")


# -- where the time goes ---------------------------------------------------------------------------

PHASES = r"""
import sys, time
sys.path.insert(0, SKILL)
T1 = time.perf_counter()
try:  # as guard.py loads it, from its bundle (a tree before bundles: imported)
    from runaway_guard import load
    load("runaway_guard.hook")
except ImportError:
    pass
from runaway_guard import config, fs, hook, hosts, ledger
T2 = time.perf_counter()
STATS = [0]
_stat = fs.stat
def counted_stat(*args, **kwargs):
    STATS[0] += 1
    return _stat(*args, **kwargs)
fs.stat = counted_stat
PH = {}
def timed(owner, name, label):
    original = getattr(owner, name, None)
    if original is None:
        return
    def wrapper(*args, **kwargs):
        started = time.perf_counter()
        try:
            return original(*args, **kwargs)
        finally:
            PH[label] = PH.get(label, 0.0) + time.perf_counter() - started
    setattr(owner, name, wrapper)
timed(config, "load", "config")
timed(ledger.Ledger, "__enter__", "lock, read state")
timed(ledger.Ledger, "save", "write state")
timed(sys.modules.get("runaway_guard.day_totals", ledger), "daily_spend", "daily file")
timed(ledger, "prune_if_due", "prune check")
load = hosts.load
def load_host(name):
    started = time.perf_counter()
    module = load(name)
    PH["import host module"] = time.perf_counter() - started
    timed(module, "sync", "read session files")
    return module
hosts.load = load_host
data = sys.stdin.buffer.read()
T3 = time.perf_counter()
hook.run(data, ENV)
T4 = time.perf_counter()
PH["import the guard"] = T2 - T1
PH["run"] = T4 - T3
PH["stat calls"] = STATS[0]
import json
print(json.dumps(PH))
"""

PHASE_ORDER = (
    "import the guard",
    "import host module",
    "config",
    "lock, read state",
    "read session files",
    "daily file",
    "write state",
    "prune check",
    "run",
)


def breakdown(ctx, hosts_to_run):
    size = ctx.sizes[0]
    print()
    print(f"machine: {machine()}")
    print(f"where a steady call's time goes: medians of {ctx.calls} calls, {size} MB + 36")
    for host in hosts_to_run:
        info = session_data(ctx.data, host, size, SUBAGENTS)
        work = os.path.join(ctx.data, "run", f"breakdown-{host}")
        shutil.rmtree(work, ignore_errors=True)
        env = guard_env(work, info)
        series = Series(ctx, host, info, env)
        series.call()
        child = PHASES.replace("SKILL", repr(ctx.skill)).replace("ENV", repr(env))
        rows, floors, imports = [], [], {}
        for _ in range(ctx.calls):
            floors.append(ctx.runner.run([sys.executable, "-I", "-S", "-c", "pass"])[0])
            out = subprocess.run(
                [sys.executable, "-I", "-S", "-c", child],
                input=series.written(),
                capture_output=True,
            )
            rows.append(json.loads(out.stdout or b"{}"))
        traced = subprocess.run(
            [sys.executable, "-I", "-S", "-X", "importtime", ctx.guard],
            input=series.written(),
            capture_output=True,
            env=env,
        )
        for line in traced.stderr.decode().splitlines():
            parts = [part.strip() for part in line[12:].split("|")]
            if line.startswith("import time:") and len(parts) == 3 and parts[0].isdigit():
                imports[parts[2]] = int(parts[0])
        undo_appends(info)
        files = state_files(work)
        state, state_file = state_bytes(files)
        print()
        print(f"{host}: floor `python -I -S -c pass` {fmt_time(statistics.median(floors))}")
        for phase in PHASE_ORDER:
            values = [row.get(phase, 0.0) for row in rows]
            print(f"  {phase:<22} {statistics.median(values) * 1000:6.2f} ms")
        stats = statistics.median(row.get("stat calls", 0) for row in rows)
        print(f"  stat calls: {stats:.0f} for {len(info['files'])} session files")
        print(f"  state: {state / 1024:.1f} KB, in a file of {state_file / 1024:.1f} KB")
        own = sorted(imports.items(), key=lambda item: -item[1])
        total = sum(imports.values())
        print(
            f"  imports (-X importtime, self): {len(imports)} modules, {total / 1000:.2f} ms; "
            + ", ".join(f"{name} {us / 1000:.2f}" for name, us in own[:6])
        )


# -- main --------------------------------------------------------------------------------------


class Context:
    pass


def registered_hosts(skill):
    """The skill's registry of hosts, read from its source (no import of another tree)."""
    sys.path.insert(0, skill)
    try:
        from runaway_guard import hosts

        return list(hosts.NAMES)
    finally:
        sys.path.remove(skill)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="100,500", help="session sizes in MB")
    parser.add_argument("--calls", type=int, default=30, help="steady calls per session")
    parser.add_argument("--hosts", default="", help="comma-separated (default: every host)")
    parser.add_argument("--quick", action="store_true", help="10 MB only, 10 calls")
    parser.add_argument("--no-flat", action="store_true", help="skip the flatness runs")
    parser.add_argument("--breakdown", action="store_true", help="where the time goes")
    parser.add_argument(
        "--instructions", action="store_true", help="also count one steady call's instructions"
    )
    parser.add_argument("--skill", default=os.path.join(ROOT, "skill"), help="skill folder")
    parser.add_argument("--guard", help="guard.py of the skill to measure (sets --skill)")
    parser.add_argument("--data", default=os.path.join(HERE, ".data"), help="sessions folder")
    args = parser.parse_args()
    ctx = Context()
    ctx.skill = os.path.abspath(os.path.dirname(args.guard) if args.guard else args.skill)
    ctx.guard = os.path.join(ctx.skill, "guard.py")
    ctx.data = os.path.abspath(args.data)
    ctx.calls = max(5, args.calls)
    ctx.instructions = args.instructions and shutil.which("valgrind") is not None
    ctx.sizes = [int(size) for size in args.sizes.split(",") if size]
    flat = not args.no_flat
    if args.quick:
        ctx.sizes, ctx.calls, flat = [10], min(ctx.calls, 10), False
    os.makedirs(ctx.data, exist_ok=True)
    ctx.runner = Runner(ctx.data)
    names = registered_hosts(ctx.skill)
    wanted = [name for name in args.hosts.split(",") if name] or names
    missing = [
        (name, "no generator in bench/sessions/")
        for name in wanted
        if name not in sessions.GENERATORS
    ]
    hosts_to_run = [name for name in wanted if name in sessions.GENERATORS]
    if args.breakdown:
        breakdown(ctx, hosts_to_run)
        return 0
    for size in ctx.sizes:  # make the sessions first, so the timings below run back to back
        for host in hosts_to_run:
            session_data(ctx.data, host, size, SUBAGENTS)
    ctx.team_url = team_servers()
    rows = [measure(ctx, host, size, SUBAGENTS) for size in ctx.sizes for host in hosts_to_run]
    flats = []
    if flat:
        for host in hosts_to_run:
            by_size = [(row["size"], row["ratio"]) for row in rows if row["host"] == host]
            for size in (10, 100, 500):
                if size not in ctx.sizes:
                    row = measure(ctx, host, size, SUBAGENTS, full=False)
                    by_size.append((size, row["ratio"]))
            by_files, state = [], None
            if sessions.GENERATORS[host].subagent_files:
                for count in (1, SUBAGENTS, 200):
                    ratio = dict(by_size).get(100) if count == SUBAGENTS else None
                    if ratio is None:
                        row = measure(ctx, host, 100, count, full=False)
                        ratio, state = row["ratio"], (row["state"], row["state file"])
                    by_files.append((count, ratio))
            flats.append((host, sorted(by_size), by_files, state))
    prune = measure_prune(ctx, hosts_to_run[0]) if hosts_to_run and not args.quick else None
    report(ctx, rows, flats, prune, missing)
    return 0


if __name__ == "__main__":
    sys.exit(main())
