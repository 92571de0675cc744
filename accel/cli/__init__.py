"""The ``ember`` command line (``ember ...`` or ``python -m ember ...``), one module per command.

Each command module has ``add(subparsers)`` (its arguments; imports nothing heavy) and
``run(args)`` (the work; returns the exit status). An ``EmberError`` or ``OSError`` a command raises
becomes one line ``ember COMMAND: message`` on stderr and exit status 1.
"""
import argparse
import sys

from ember.errors import EmberError

from . import bench, convert, deploy, import_onnx, info, inspect, train

COMMANDS = (info, train, inspect, convert, import_onnx, deploy, bench)


def parser():
    p = argparse.ArgumentParser(prog="ember", description="ember's command line: what this machine runs, "
                                "training from a config, records, conversion, board bundles, benchmarks")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for command in COMMANDS:
        command.add(sub)
    return p


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    extra = []
    if "--" in argv:  # what follows -- goes to the command untouched (ember bench NAME -- --models mlp)
        i = argv.index("--")
        argv, extra = argv[:i], argv[i + 1:]
    args = parser().parse_args(argv)
    args.extra = extra
    try:
        return args.run(args)
    except (EmberError, OSError) as e:
        text = str(e)
        prefix = args.command + ":"
        print("ember " + (text if text.startswith(prefix) else "%s %s" % (prefix, text)), file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("ember %s: interrupted" % args.command, file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
