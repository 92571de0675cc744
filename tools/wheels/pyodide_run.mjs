// Runs pytest in Pyodide under Node over wheels unpacked into its site-packages (test_pyodide.py
// drives it): node pyodide_run.mjs PYODIDE_DIR REPO WHEEL... -- PYTEST_ARG...
// The repository is mounted at /repo (NODEFS) so pytest finds tests/ and pyproject.toml there.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const [pyodideDir, repo, ...rest] = process.argv.slice(2);
const cut = rest.indexOf("--");
const wheels = rest.slice(0, cut);
const pytestArgs = rest.slice(cut + 1);

// an uncaught error would print a line of Pyodide's minified source; its message is what helps
process.on("uncaughtException", (error) => {
  console.error("pyodide_run: " + (error.message || error));
  process.exit(2);
});

const { loadPyodide } = await import(pathToFileURL(join(pyodideDir, "pyodide.mjs")).href);
const pyodide = await loadPyodide({ env: { ...process.env, HOME: "/home/pyodide" } });
const site = pyodide.runPython("import site; site.getsitepackages()[0]");
for (const wheel of wheels) {
  pyodide.unpackArchive(new Uint8Array(readFileSync(wheel)), "wheel", { extractDir: site });
}
pyodide.FS.mkdirTree("/repo");
pyodide.FS.mount(pyodide.FS.filesystems.NODEFS, { root: repo }, "/repo");
pyodide.globals.set("pytest_args", pyodide.toPy(pytestArgs));
const status = pyodide.runPython(`
import os, sys
sys.dont_write_bytecode = True
os.chdir("/repo")
import ember, pytest
print("ember", ember.__file__, "on", sys.platform, sys.version.split()[0], flush=True)
int(pytest.main(list(pytest_args)))
`);
process.exit(status);
