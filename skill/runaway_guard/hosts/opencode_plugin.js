// runaway-guard for OpenCode: hands every tool call and every model request to guard.py and
// obeys its answer. Node built-ins only (no npm install). Installed by installer/install.py
// --host opencode into $XDG_CONFIG_HOME/opencode/plugin/ (or <project>/.opencode/plugin/);
// deleting this file uninstalls it. `opencode --pure` (OPENCODE_PURE=1) runs without plugins,
// and so without the guard.
//
// tool.execute.before: a refusal is thrown (OpenCode does not run the tool and hands the reason
// to the model as the tool's result); a note for the model is appended to the tool's output.
// chat.params: a stop is thrown, so the request is never sent and the run ends with the reason.
// Fail open: a missing interpreter, a crash or a timeout lets the call through and leaves a
// `fail-open` line in the guard's hook.log.
import { spawn } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { fileURLToPath } from "node:url";

// The installer writes the interpreter and the path of guard.py here (JSON strings). Left as
// they are, python3 on PATH runs <this folder>/../skills/runaway-guard/skill/guard.py.
const PYTHON = "@PYTHON@";
const GUARD = "@GUARD@";
const TIMEOUT_MS = 30000;
const PLUGIN = "opencode";

function command() {
  const placeholder = (value) => value.startsWith("@") && value.endsWith("@");
  const python = placeholder(PYTHON) ? "python3" : PYTHON;
  const relative = new URL("../skills/runaway-guard/skill/guard.py", import.meta.url);
  const guard = placeholder(GUARD) ? fileURLToPath(relative) : GUARD;
  return [python, "-I", "-S", guard];
}

// OpenCode's session database (its own rule in 1.18.33: OPENCODE_DB, else opencode.db in its
// data folder); the guard reads it read-only.
function database() {
  const env = process.env;
  const share = env.XDG_DATA_HOME || path.join(env.HOME || os.homedir(), ".local", "share");
  const data = path.join(share, "opencode");
  if (!env.OPENCODE_DB) return path.join(data, "opencode.db");
  if (env.OPENCODE_DB === ":memory:") return null;
  return path.isAbsolute(env.OPENCODE_DB) ? env.OPENCODE_DB : path.join(data, env.OPENCODE_DB);
}

function stateDir() {
  const env = process.env;
  if (env.RUNAWAY_GUARD_STATE_DIR) return env.RUNAWAY_GUARD_STATE_DIR;
  const home = env.HOME || os.homedir();
  try {
    const config = path.join(env.XDG_CONFIG_HOME || path.join(home, ".config"), "runaway-guard", "config.json");
    const dir = JSON.parse(fs.readFileSync(config, "utf8")).state_dir;
    if (typeof dir === "string" && dir) return dir.replace(/^~(?=$|\/)/, home);
  } catch {}
  return path.join(env.XDG_STATE_HOME || path.join(home, ".local", "state"), "runaway-guard");
}

function failOpen(reason) {
  try {
    const dir = stateDir();
    fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
    const t = new Date(Date.now() - new Date().getTimezoneOffset() * 60000);
    const line = `${t.toISOString().slice(0, 19)} fail-open opencode plugin: ${reason}`;
    fs.appendFileSync(path.join(dir, "hook.log"), line.replace(/\s+/g, " ").slice(0, 2000) + "\n", { mode: 0o600 });
  } catch {}
}

// The running guard (guard.py --serve), started by the first call: one interpreter answers
// every call of this OpenCode process, a payload a line in and its answer a line out (empty for
// none), in order. It ends when OpenCode does (its input closes), and by itself when the skill
// was upgraded: the calls it leaves unanswered go once to a new one.
let guard = null;

function startGuard() {
  const [file, ...args] = command();
  const child = spawn(file, [...args, "--serve"], { stdio: ["pipe", "pipe", "ignore"], windowsHide: true });
  const running = { child, waiting: [], out: "", dead: false };
  child.on("error", (error) => ended(running, `cannot run ${file}: ${error.message}`));
  child.on("close", (code, signal) => ended(running, `guard exited with ${code === null ? signal : code}`));
  child.stdin.on("error", () => {});
  child.stdout.setEncoding("utf8");
  child.stdout.on("data", (chunk) => {
    if (running.dead) return;
    running.out += chunk;
    for (let end = running.out.indexOf("\n"); end >= 0; end = running.out.indexOf("\n")) {
      const line = running.out.slice(0, end).trim();
      running.out = running.out.slice(end + 1);
      const request = running.waiting.shift();
      if (request) answered(request, line);
    }
  });
  // A call waiting keeps OpenCode alive with its timer; an idle guard does not.
  for (const handle of [child, child.stdin, child.stdout]) {
    try { handle.unref(); } catch {}
  }
  return running;
}

function ended(running, problem) {
  running.dead = true;
  if (guard === running) guard = null;
  for (const request of running.waiting.splice(0)) {
    clearTimeout(request.timer);
    if (request.retried) finish(request, null, problem);
    else send({ ...request, retried: true });
  }
}

function send(request) {
  try {
    guard ??= startGuard();
  } catch (error) {
    return finish(request, null, `cannot start the guard: ${error.message}`);
  }
  const running = guard;
  running.waiting.push(request);
  request.timer = setTimeout(() => {
    running.dead = true; // its later answers could no longer be matched to their calls
    if (guard === running) guard = null;
    const at = running.waiting.indexOf(request);
    if (at >= 0) running.waiting.splice(at, 1);
    finish(request, null, `guard timed out after ${TIMEOUT_MS} ms`);
    try { running.child.kill("SIGKILL"); } catch {}
  }, Math.max(0, request.deadline - Date.now()));
  running.child.stdin.write(request.line);
}

function answered(request, line) {
  if (!line) return finish(request, null);
  try {
    const answer = JSON.parse(line);
    finish(request, answer && typeof answer === "object" ? answer : null);
  } catch {
    finish(request, null, `unreadable answer: ${line.slice(0, 200)}`);
  }
}

function finish(request, answer, problem) {
  clearTimeout(request.timer);
  if (problem) failOpen(problem);
  request.resolve(answer);
}

// The guard's answer (an object) or null; never throws, never waits longer than TIMEOUT_MS.
function ask(payload) {
  return new Promise((resolve) => {
    const deadline = Date.now() + TIMEOUT_MS;
    send({ line: JSON.stringify(payload) + "\n", resolve, deadline, retried: false, timer: null });
  });
}

export const RunawayGuard = async (ctx) => {
  // Installed twice (user and project folder): OpenCode hands every plugin of one instance the
  // same context, so the second copy stands down; another instance (or a reload) gets a new one.
  const loaded = (globalThis.__runawayGuardOpencode ??= new WeakSet());
  if (loaded.has(ctx)) return {};
  loaded.add(ctx);
  const { client, directory } = ctx;
  const parents = new Map(); // session id -> parent session id ("" for a root)
  const prompts = new Map(); // session id -> the user message its current step answers
  const notes = new Map(); // call id -> a note for the model, appended to the tool's output
  const db = database();

  async function root(id) {
    const seen = new Set();
    while (id && !seen.has(id)) {
      seen.add(id);
      if (!parents.has(id)) {
        try {
          const found = await client.session.get({ path: { id } });
          parents.set(id, (found && found.data && found.data.parentID) || "");
        } catch {
          return id;
        }
      }
      const parent = parents.get(id);
      if (!parent) return id;
      id = parent;
    }
    return id;
  }

  async function payload(event, sessionID, extra) {
    return {
      runaway_guard_plugin: PLUGIN,
      hook_event_name: event,
      session_id: await root(sessionID),
      agent_session_id: sessionID,
      prompt_id: prompts.get(sessionID) || null,
      cwd: directory,
      database: db,
      ...extra,
    };
  }

  return {
    event: async ({ event }) => {
      const info = event && event.type === "session.created" && event.properties && event.properties.info;
      if (info && info.id) parents.set(info.id, info.parentID || "");
    },
    "chat.params": async (input) => {
      if (input.message && input.message.id) prompts.set(input.sessionID, input.message.id);
      const model = input.model || {};
      const answer = await ask(await payload("chat.params", input.sessionID, {
        agent: input.agent && typeof input.agent === "object" ? input.agent.name : input.agent,
        provider_id: model.providerID,
        model_id: model.id,
      }));
      if (answer && answer.decision === "stop") {
        throw new Error(answer.message || answer.reason || "runaway-guard: stopped");
      }
    },
    "tool.execute.before": async (input, output) => {
      const answer = await ask(await payload("tool.execute.before", input.sessionID, {
        call_id: input.callID,
        tool_name: input.tool,
        tool_input: output.args,
      }));
      if (!answer) return;
      if (answer.decision === "deny" || answer.decision === "stop") {
        throw new Error(answer.reason || "runaway-guard: refused");
      }
      if (answer.decision === "tell" && answer.reason) notes.set(input.callID, answer.reason);
    },
    "tool.execute.after": async (input, output) => {
      const note = notes.get(input.callID);
      if (!note) return;
      notes.delete(input.callID);
      if (output && typeof output.output === "string") output.output = `${output.output}\n\n${note}`;
    },
  };
};
