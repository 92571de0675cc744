#!/usr/bin/env node
// The live heap a board needs for the embedded LeNet (tests/core/test_embedded_lenet.py), measured
// under MicroPython 1.27 (WebAssembly) with gc.mem_alloc().
//
//   node tests/golden/lenet_heap.mjs
//
// The WebAssembly port collects garbage only when a call into the interpreter returns, so every
// step below is its own call, and the heap is read after a collection, in a further call:
//   live     the heap after the step, garbage collected
//   reached  the heap at the end of the step, before any collection: what the step's allocations
//            reached from the previous live heap (an upper bound on its peak, since a board's
//            collector would free garbage along the way)
// Inference runs one layer per call, so its peak lies between the largest "live" and the largest
// "reached" of its layers. Prints one line per step, then one line of JSON; exits 1 if the
// predicted classes differ from tests/golden/lenet.json.

import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { loadMicroPython } from "@micropython/micropython-webassembly-pyscript";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..", "..");
const SKIP = new Set(["__pycache__", "node_modules", ".venv", ".git"]);

let out = "";
const mp = await loadMicroPython({ heapsize: 1 << 20, linebuffer: true, stdout: (line) => { out += line + "\n"; } });

function copyTree(src, dst) {
  mp.FS.mkdirTree(dst);
  for (const name of fs.readdirSync(src).sort()) {
    if (SKIP.has(name)) continue;
    const from = path.join(src, name);
    const st = fs.statSync(from);
    if (st.isDirectory()) copyTree(from, `${dst}/${name}`);
    else if (st.isFile()) mp.FS.writeFile(`${dst}/${name}`, fs.readFileSync(from));
  }
}
copyTree(path.join(ROOT, "core_pure"), "/lib/ember");
copyTree(path.join(ROOT, "tests"), "/tests");

function run(code) {
  out = "";
  mp.runPython(code);
  return out.trim();
}

function heap() {
  run("import gc\ngc.collect()");
  return Number(run("import gc\nprint(gc.mem_alloc())"));
}

// a step: its code runs, its end-of-call heap is recorded, then the live heap after collection
function step(code) {
  run(code + "\nimport gc\n_reached = gc.mem_alloc()");
  const reached = Number(run("print(_reached)"));
  run("del _reached");
  return { reached, live: heap() };
}

run("import sys\nsys.path[:0] = ['/tests/core', '/tests', '/lib']");
const base = heap();
const core = step("import ember");
// the test module and the harness it imports are not part of a board's program: measured apart
const test = step("import test_embedded_lenet as T");
const mods = step("for _m in T.LENET_MODULES:\n    __import__(_m)");
const helpers = mods.live;
const model = step("_model, _report = T.load_lenet(ember)\nassert _report.ok");
const input = step("_x = T.images(ember)");
const layers = [];
const count = Number(run("print(len(_model))"));
run("_h = _x");
for (let i = 0; i < count; i++) {
  const s = step(`_h = _model[${i}](_h)`);
  s.name = run(`print(type(_model[${i}]).__name__)`);
  layers.push(s);
}
const classes = JSON.parse(run("print(_h.argmax(1).tolist())"));
const want = JSON.parse(fs.readFileSync(path.join(ROOT, "tests", "golden", "lenet.json"), "utf8")).classes;

const lenetModules = run("print(','.join(T.LENET_MODULES))");

const inferenceLive = Math.max(...layers.map((l) => l.live));
const inferenceReached = Math.max(...layers.map((l) => l.reached));
const kb = (n) => `${(n / 1024).toFixed(1)} KiB`;
console.log(`import ember:                     ${kb(core.live - base)} live (reached ${kb(core.reached - base)})`);
console.log(`(the test module and harness:      ${kb(test.live - core.live)}, not counted)`);
console.log(`+ ${lenetModules}: ${kb(mods.live - test.live)} live (reached ${kb(mods.reached - test.live)})`);
console.log(`+ LeNet-5 loaded (61,706 params):  ${kb(model.live - helpers)} live, ${((model.live - helpers) / 61706).toFixed(1)} bytes per parameter (reached ${kb(model.reached - helpers)} while loading)`);
console.log(`+ input batch (4x1x28x28):         ${kb(input.live - model.live)} live`);
for (const l of layers) {
  console.log(`  after ${l.name.padEnd(10)} live ${kb(l.live - input.live).padStart(10)} above model+input, reached ${kb(l.reached - input.live)}`);
}
console.log(`inference peak above model+input: between ${kb(inferenceLive - input.live)} and ${kb(inferenceReached - input.live)}`);
console.log(`total heap at the inference peak: between ${kb(inferenceLive - base)} and ${kb(inferenceReached - base)}`);
console.log(`classes ${JSON.stringify(classes)} (golden ${JSON.stringify(want)})`);
console.log(JSON.stringify({
  import_ember_bytes: core.live - base,
  import_lenet_modules_bytes: mods.live - test.live,
  model_bytes: model.live - helpers,
  model_load_reached_bytes: model.reached - helpers,
  input_bytes: input.live - model.live,
  inference_peak_live_bytes: inferenceLive - input.live,
  inference_peak_reached_bytes: inferenceReached - input.live,
  modules: lenetModules.split(","),
  classes,
}));
process.exit(JSON.stringify(classes) === JSON.stringify(want) ? 0 : 1);
