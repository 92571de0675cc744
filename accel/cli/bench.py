"""``ember bench [NAME ...] [-- ARGS]``: runs the benchmarks of a source checkout (``bench/*.py``, each
beside its reference), one after another, with their output streamed and a progress line before each."""
import os
import subprocess
import sys

from ember.errors import ArgumentError

from .progress import Progress


def add(sub):
    p = sub.add_parser("bench", help="run the benchmarks (bench/*.py of a source checkout)",
                       description="Run bench/NAME.py for each NAME (default: all), streaming their output. "
                                   "Arguments after -- go to every benchmark.")
    p.add_argument("names", nargs="*", metavar="NAME", help="e.g. train_step ops (default: all)")
    p.add_argument("--dir", help="the bench/ folder (default: ./bench, else the checkout ember runs from)")
    p.add_argument("--list", action="store_true", help="list the benchmarks and stop")
    p.set_defaults(run=run)
    return p


def bench_dir(given=None):
    import ember
    tried = [given] if given else [os.path.join(os.getcwd(), "bench"),
                                   os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(ember.__file__))),
                                                "bench")]
    for d in tried:
        if d and os.path.isfile(os.path.join(d, "README.md")) and os.path.isfile(os.path.join(d, "_models.py")):
            return d
    raise ArgumentError("bench: no ember bench/ folder found (tried %s): the benchmarks ship with the source, "
                        "not the wheel; run this inside a checkout or pass --dir" % ", ".join(tried))


def benchmarks(folder):
    return sorted(n[:-3] for n in os.listdir(folder) if n.endswith(".py") and not n.startswith("_"))


def run(args, extra=None):
    folder = bench_dir(args.dir)
    known = benchmarks(folder)
    if args.list:
        print("\n".join(known))
        return 0
    names = [n[:-3] if n.endswith(".py") else n for n in args.names] or known
    unknown = [n for n in names if n not in known]
    if unknown:
        raise ArgumentError("bench: no benchmark %s in %s; there are: %s" % (", ".join(unknown), folder,
                                                                               ", ".join(known)))
    extra = list(getattr(args, "extra", None) or [])
    progress = Progress(len(names), "benchmarks", unit="benchmarks", stream=sys.stdout, every=0, bar=False)
    failed = []
    for name in names:
        print("==> bench/%s.py %s" % (name, " ".join(extra)), flush=True)
        rc = subprocess.call([sys.executable, os.path.join(folder, name + ".py")] + extra, cwd=os.path.dirname(folder))
        if rc != 0:
            failed.append("%s (exit %d)" % (name, rc))
        progress.update(note="bench/%s.py done" % name)
    if failed:
        print("ember bench: failed: %s" % ", ".join(failed), file=sys.stderr)
        return 1
    return 0
