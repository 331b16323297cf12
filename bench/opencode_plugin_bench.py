#!/usr/bin/env python3
"""What OpenCode pays for runaway-guard's plugin, per tool call and per model request.

    python3 bench/opencode_plugin_bench.py [--steps 300,3000] [--calls 30]

Builds an OpenCode 1.18.33 database (its own schema, tests/fixtures/opencode/schema.sql) with a root
session and two subagent sessions holding --steps model steps in all (each an assistant message
with cost and tokens, a tool part, step-start and step-finish parts), then loads the plugin
(skill/runaway_guard/hosts/opencode_plugin.js, filled in as the installer does: it keeps this
interpreter running `-I -S guard.py --serve`) in OpenCode's own runtime: the Bun inside the
pinned `opencode` binary (`BUN_BE_BUN=1`, from tests/e2e/hosts_install.sh), else Node. There it
times:

- bare: spawning `python -I -S -c pass` from the same runtime and waiting for it (the floor);
- tool: one `tool.execute.before` of the plugin, after one step was appended (a new assistant
  message and the previous call's finished tool part), the guard's state warm;
- model: one `chat.params`, after one step was appended;
- cold: the plugin's first call on the whole database, with no guard state: it starts the
  guard.

Medians of --calls calls. It prints a table and always exits 0: it is a report.
"""

import argparse
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
GUARD = os.path.join(ROOT, "skill", "guard.py")
PLUGIN = os.path.join(ROOT, "skill", "runaway_guard", "hosts", "opencode_plugin.js")
SCHEMA = os.path.join(ROOT, "tests", "fixtures", "opencode", "schema.sql")
OPENCODE = os.path.join(ROOT, "tests", "e2e", ".hosts", "node_modules", "opencode-ai", "bin")

HARNESS = r"""
const [plugin, dbPath, callsText] = process.argv.slice(2);
const calls = Number(callsText);
const { spawn } = await import("node:child_process");
let db;
if (typeof Bun !== "undefined") {
  db = new (await import("bun:sqlite")).Database(dbPath);
} else {
  db = new (await import("node:sqlite")).DatabaseSync(dbPath);
}
const insert = (sql, ...args) => db.prepare(sql).run(...args);
const parents = { ses_child1: "ses_root", ses_child2: "ses_root" };
const get = async ({ path }) => ({ data: { id: path.id, parentID: parents[path.id] } });
const plugin_ = await import(plugin);
const hooks = await plugin_.RunawayGuard({ client: { session: { get } }, directory: "/proj" });
const python = process.env.BENCH_PYTHON;
const ms = () => Number(process.hrtime.bigint()) / 1e6;
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
let clock = 4102444800000;
let n = 0;
const MESSAGE = "INSERT INTO message (id, session_id, time_created, time_updated, data)"
  + " VALUES (?, 'ses_root', ?, ?, ?)";
const PART = "INSERT INTO part (id, message_id, session_id, time_created, time_updated, data)"
  + " VALUES (?, ?, 'ses_root', ?, ?, ?)";
const TOKENS = { input: 800, output: 40, reasoning: 10, cache: { read: 200, write: 0 } };
function appendStep() {
  // one step: its assistant message, and the previous call's finished tool part
  n += 1;
  clock += 1000;
  const message = { role: "assistant", cost: 0.00321, modelID: "m", providerID: "p",
    tokens: TOKENS, time: { created: clock } };
  insert(MESSAGE, `msg_bench${n}`, clock, clock, JSON.stringify(message));
  const state = { status: "completed", input: { command: `echo ${n - 1}` },
    output: `${n - 1}\n`, metadata: { exit: 0 } };
  const part = { type: "tool", tool: "bash", callID: `call_bench${n - 1}`, state };
  insert(PART, `prt_bench${n}`, `msg_bench${n}`, clock, clock, JSON.stringify(part));
}
const tool = () => hooks["tool.execute.before"](
  { tool: "bash", sessionID: "ses_root", callID: `call_bench${n}` },
  { args: { command: `echo ${n}` } });
const model = { providerID: "p", id: "m" };
const params = () => hooks["chat.params"](
  { sessionID: "ses_root", agent: "build", model, message: { id: "msg_user" } }, {});
const bare = () => new Promise(
  (resolve) => spawn(python, ["-I", "-S", "-c", "pass"]).on("close", resolve));
const timed = async (fn, append) => {
  const xs = [];
  for (let i = 0; i < calls; i++) {
    if (append) appendStep();
    const t0 = ms();
    await fn();
    xs.push(ms() - t0);
  }
  return median(xs);
};
const out = {};
const t = ms();
await params();
out.cold = ms() - t;
out.bare = await timed(bare, false);
out.tool = await timed(tool, true);
out.model = await timed(params, true);
out.bare_again = await timed(bare, false);
out.runtime = typeof Bun !== "undefined" ? `Bun ${Bun.version}` : `Node ${process.version}`;
console.log(JSON.stringify(out));
"""


def runtime():
    """OpenCode's Bun (its binary run as bun), else node; (argv prefix, env additions)."""
    binary = os.path.join(OPENCODE, "opencode.exe")
    if os.path.exists(binary):
        return [binary], {"BUN_BE_BUN": "1"}
    node = shutil.which("node")
    if node:
        return [node], {}
    raise SystemExit("neither the pinned opencode (tests/e2e/hosts_install.sh) nor node found")


def make_database(path, steps):
    """OpenCode's schema with a root and two child sessions holding `steps` steps in all."""
    db = sqlite3.connect(path)
    with open(SCHEMA, encoding="utf-8") as handle:
        db.executescript(handle.read())
    db.execute("PRAGMA journal_mode = WAL")
    sessions = [("ses_root", None), ("ses_child1", "ses_root"), ("ses_child2", "ses_root")]
    for session, parent in sessions:
        db.execute(
            "INSERT INTO session (id, project_id, parent_id, slug, directory, title, version,"
            " time_created, time_updated) VALUES (?, 'global', ?, 's', '/proj', 't', '1.18.33',"
            " 1, 1)",
            (session, parent),
        )
    clock = 1796153274877
    for index in range(steps):
        session = sessions[0 if index % 4 else 1 + index % 2][0]
        clock += 700
        message = f"msg_{index:06d}"
        tokens = {"input": 800, "output": 40, "reasoning": 10, "cache": {"read": 200, "write": 0}}
        data = {
            "role": "assistant",
            "cost": 0.00321,
            "tokens": tokens,
            "modelID": "m",
            "providerID": "p",
            "time": {"created": clock, "completed": clock + 500},
        }
        db.execute(
            "INSERT INTO message (id, session_id, time_created, time_updated, data) VALUES"
            " (?, ?, ?, ?, ?)",
            (message, session, clock, clock + 500, json.dumps(data)),
        )
        output = "line of output\n" * (index % 40)
        tool = {
            "type": "tool",
            "tool": "bash",
            "callID": f"call_{index}",
            "state": {
                "status": "completed",
                "input": {"command": f"run {index}"},
                "output": output,
                "metadata": {"exit": index % 3, "output": output},
            },
        }
        parts = [{"type": "step-start"}, tool, {"type": "step-finish", "tokens": tokens}]
        for number, part in enumerate(parts):
            db.execute(
                "INSERT INTO part (id, message_id, session_id, time_created, time_updated, data)"
                " VALUES (?, ?, ?, ?, ?, ?)",
                (
                    f"prt_{index:06d}_{number}",
                    message,
                    session,
                    clock,
                    clock + 500,
                    json.dumps(part),
                ),
            )
    db.commit()
    db.close()


def bench(steps, calls):
    folder = tempfile.mkdtemp(prefix="rg-opencode-bench-")
    try:
        db = os.path.join(folder, "opencode.db")
        make_database(db, steps)
        with open(PLUGIN, encoding="utf-8") as handle:
            text = handle.read()
        text = text.replace('"@PYTHON@"', json.dumps(sys.executable))
        text = text.replace('"@GUARD@"', json.dumps(GUARD))
        plugin = os.path.join(folder, "runaway-guard.mjs")
        harness = os.path.join(folder, "harness.mjs")
        with open(plugin, "w", encoding="utf-8") as handle:
            handle.write(text)
        with open(harness, "w", encoding="utf-8") as handle:
            handle.write(HARNESS)
        prefix, extra = runtime()
        env = {
            "PATH": os.environ.get("PATH", ""),
            "HOME": folder,
            "OPENCODE_DB": db,
            "RUNAWAY_GUARD_STATE_DIR": os.path.join(folder, "state"),
            "RUNAWAY_GUARD_MAX_USD": "0",
            "RUNAWAY_GUARD_MAX_FAILURES": "100000",
            "RUNAWAY_GUARD_MAX_REPEATS": "100000",
            "BENCH_PYTHON": sys.executable,
            **extra,
        }
        proc = subprocess.run(
            [*prefix, harness, plugin, db, str(calls)],
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
        )
        if proc.returncode != 0:
            raise SystemExit(f"harness failed:\n{proc.stdout}\n{proc.stderr}")
        result = json.loads(proc.stdout.strip().splitlines()[-1])
        log = os.path.join(folder, "state", "hook.log")
        if os.path.exists(log):
            with open(log, encoding="utf-8") as handle:
                result["fail_open"] = "fail-open" in handle.read()
        return result
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", default="300,3000")
    parser.add_argument("--calls", type=int, default=30)
    args = parser.parse_args()
    rows = []
    for steps in [int(s) for s in args.steps.split(",")]:
        rows.append((steps, bench(steps, args.calls)))
    print(f"{rows[0][1]['runtime']}, {sys.executable} -I -S; medians of {args.calls} calls")
    print()
    header = ["database", "bare python -I -S", "tool.execute.before", "chat.params", "cold"]
    table = []
    for steps, r in rows:
        bare = min(r["bare"], r["bare_again"])
        table.append(
            [
                f"{steps} steps, 3 sessions",
                f"{bare:.1f} ms",
                f"{r['tool']:.1f} ms ({r['tool'] / bare:.2f}x)",
                f"{r['model']:.1f} ms ({r['model'] / bare:.2f}x)",
                f"{r['cold']:.0f} ms",
            ]
        )
    widths = [max(len(cell) for cell in column) for column in zip(header, *table)]
    print("| " + " | ".join(name.ljust(w) for name, w in zip(header, widths)) + " |")
    print("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    for (_, r), cells in zip(rows, table):
        print("| " + " | ".join(cell.rjust(w) for cell, w in zip(cells, widths)) + " |")
        if r.get("fail_open"):
            print("  (the guard failed open during this run: see its hook.log)")


if __name__ == "__main__":
    main()
