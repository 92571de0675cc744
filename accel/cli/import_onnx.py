"""``ember import-onnx MODEL.onnx OUTDIR``: an ONNX model as readable ember code plus its record.

Writes ``OUTDIR/NAME.py`` (a ``Module`` subclass: named layers, one line of plain ember calls per
node, constants folded; it imports only the ember core, so it runs on MicroPython) and
``OUTDIR/NAME.safetensors`` (its weights), NAME from the model's file name unless ``--name``.
Needs ``pip install ember[onnx]``.
"""


def add(sub):
    p = sub.add_parser("import-onnx", help="turn an ONNX model into a readable ember Module and its record",
                       description="Write OUTDIR/NAME.py (an ember Module) and OUTDIR/NAME.safetensors from MODEL.")
    p.add_argument("src", metavar="MODEL.onnx")
    p.add_argument("outdir", metavar="OUTDIR")
    p.add_argument("--name", default=None, help="file name (without extension) of the outputs")
    p.add_argument("--class-name", default="Model", help="the generated Module subclass's name (default Model)")
    p.set_defaults(run=run)
    return p


def run(args):
    from ember.errors import ArgumentError
    try:
        import onnx  # noqa: F401  (read only while importing)
        from ember.accel.onnx.codegen import import_onnx
    except ImportError as e:
        raise ArgumentError("needs the onnx package (pip install ember[onnx]): %s" % e)
    py, rec = import_onnx(args.src, args.outdir, class_name=args.class_name, module_name=args.name)
    print("wrote %s" % py)
    print("wrote %s" % rec)
    return 0
