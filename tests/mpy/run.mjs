#!/usr/bin/env node
// Runs ember under MicroPython 1.27 (WebAssembly build, from node_modules).
//
//   node tests/mpy/run.mjs [runner options] [main.py args]
//       copies core_pure/ -> /lib/ember and tests/ -> /tests, then runs
//       /tests/mpy/main.py (the MicroPython test driver) with the given args,
//       e.g. `-k conv -v`. sys.path starts with /tests, /lib; cwd is /.
//   node tests/mpy/run.mjs [runner options] --script FILE.py [args]
//       copies core_pure/ -> /lib/ember and FILE's folder -> /app, then runs
//       /app/FILE.py with args. sys.path starts with /app, /lib; cwd is /app.
//
// Runner options (before --script, or anywhere in the first form):
//   --heapsize SIZE   initial MicroPython heap, e.g. 64m (default), 512k. The
//                     heap grows by itself past this, up to wasm's 2 GiB.
//   --pystack WORDS   Python stack size in 4-byte words (default 65536).
//   --                everything after it goes to main.py untouched.
//
// Exit status: the script's sys.exit() value; 1 for an uncaught Python
// exception; 2 when MicroPython cannot be loaded or the arguments are wrong.
// (The CLI bundled with the npm package exits 0 on exceptions, hence this file.)

import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const HERE = path.dirname(fileURLToPath(import.meta.url));
const ROOT = path.resolve(HERE, "..", "..");
const PACKAGE = "@micropython/micropython-webassembly-pyscript";
const SKIP = new Set(["__pycache__", "node_modules", ".venv", ".git", ".pytest_cache"]);

function die(message) {
  process.stderr.write(`run.mjs: ${message}\n`);
  process.exit(2);
}

function parseSize(text) {
  const m = /^(\d+)([kmg]?)b?$/i.exec(String(text).trim());
  if (!m) die(`bad size ${JSON.stringify(text)} (use e.g. 64m, 512k)`);
  const scale = { "": 1, k: 1 << 10, m: 1 << 20, g: 1 << 30 }[m[2].toLowerCase()];
  return Number(m[1]) * scale;
}

function parseArgs(argv) {
  const opts = { heapsize: 64 << 20, pystack: 65536, script: null, args: [] };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    const value = () => {
      if (i + 1 >= argv.length) die(`${arg} needs a value`);
      return argv[++i];
    };
    if (arg === "--heapsize") opts.heapsize = parseSize(value());
    else if (arg === "--pystack") {
      opts.pystack = Number.parseInt(value(), 10);
      if (!(opts.pystack > 0)) die("--pystack needs a positive number of words");
    } else if (arg === "--script") {
      opts.script = value();
      opts.args.push(...argv.slice(i + 1));
      break;
    } else if (arg === "--") {
      opts.args.push(...argv.slice(i + 1));
      break;
    } else opts.args.push(arg);
  }
  return opts;
}

const opts = parseArgs(process.argv.slice(2));

let loadMicroPython;
try {
  ({ loadMicroPython } = await import(PACKAGE));
} catch (err) {
  die(`cannot load ${PACKAGE} (run \`make node_modules\` first): ${err.message}`);
}

// stdout: pass through line by line, as soon as a line is complete.
let pending = [];
function flushStdout() {
  if (pending.length) {
    process.stdout.write(Buffer.from(pending));
    pending = [];
  }
}
const mp = await loadMicroPython({
  heapsize: opts.heapsize,
  pystack: opts.pystack,
  linebuffer: false,
  stdout: (bytes) => {
    for (const b of bytes) {
      pending.push(b);
      if (b === 10) flushStdout();
    }
  },
  stderr: (bytes) => {
    flushStdout();
    process.stderr.write(Buffer.from(bytes));
  },
});

// MEMFS only: copy host folders in.
function copyTree(src, dst) {
  mp.FS.mkdirTree(dst);
  for (const name of fs.readdirSync(src).sort()) {
    if (SKIP.has(name)) continue;
    const from = path.join(src, name);
    const to = `${dst}/${name}`;
    const st = fs.statSync(from, { throwIfNoEntry: false });
    if (!st) continue; // dangling link
    if (st.isDirectory()) copyTree(from, to);
    else if (st.isFile()) mp.FS.writeFile(to, fs.readFileSync(from));
  }
}

const corePure = path.join(ROOT, "core_pure");
if (!fs.existsSync(corePure)) die(`${corePure} not found`);
copyTree(corePure, "/lib/ember");

let config;
if (opts.script === null) {
  copyTree(path.join(ROOT, "tests"), "/tests");
  const main = "/tests/mpy/main.py";
  config = { path: ["/tests", "/lib"], argv: [main, ...opts.args], main, cwd: "/" };
} else {
  const script = path.resolve(opts.script);
  if (!fs.statSync(script, { throwIfNoEntry: false })?.isFile()) die(`no such script: ${opts.script}`);
  copyTree(path.dirname(script), "/app");
  const main = `/app/${path.basename(script)}`;
  config = { path: ["/app", "/lib"], argv: [main, ...opts.args], main, cwd: "/app" };
}

// Runs config.main as __main__ and turns its outcome into an exit status.
const BOOTSTRAP = `
import sys, os, json

async def _ember_run(cfg):
    for entry in reversed(cfg["path"]):
        sys.path.insert(0, entry)
    del sys.argv[:]
    sys.argv.extend(cfg["argv"])
    os.chdir(cfg["cwd"])
    filename = cfg["main"]
    with open(filename) as f:
        source = f.read()
    scope = {"__name__": "__main__", "__file__": filename}
    try:
        exec(compile(source, filename, "exec"), scope)
        if "amain" in scope:  # a script may define an async entry point; awaiting lets the GC run
            await scope["amain"]()
    except SystemExit as exc:
        code = exc.args[0] if exc.args else None
        if code is None:
            return 0
        if isinstance(code, int):
            return code
        print(code, file=sys.stderr)
        return 1
    except BaseException as exc:
        sys.print_exception(exc, sys.stderr)
        return 1
    return 0

_ember_rc = await _ember_run(json.loads(_ember_cfg))
`;

let status;
try {
  mp.globals.set("_ember_cfg", JSON.stringify(config));
  await mp.runPythonAsync(BOOTSTRAP);  // top-level await: it cannot go through exec(compile(...))
  status = Number(mp.globals.get("_ember_rc"));
} catch (err) {
  flushStdout();
  if (err && err.name === "PythonError") {
    process.stderr.write(`${err.message}\n`);
    status = 1;
  } else {
    process.stderr.write(`run.mjs: MicroPython failed: ${err && err.stack ? err.stack : err}\n`);
    status = 70;
  }
}
flushStdout();
process.exitCode = Number.isInteger(status) ? status & 0xff : 1;
