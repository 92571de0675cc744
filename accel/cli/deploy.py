"""``ember deploy RECORD --board B --model FILE.py:Class --out DIR``: a MicroPython board bundle."""
import argparse


def _shape(text):
    try:
        return tuple(int(v) for v in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError("expected sizes separated by commas, e.g. 1,8,8; found %r" % text)


def add(sub):
    d = sub.add_parser("deploy", help="turn a model and its record into a MicroPython board bundle",
                       description="Write a bundle for a MicroPython board: the model definition and "
                                   "ember's deployment runtime as .mpy, the weights (int8 or float32), "
                                   "a static memory plan, a manifest for freezing, and a report.")
    d.add_argument("record", help="the trained float record (safetensors)")
    d.add_argument("--board", required=True, help="a profile in boards/ (rp2040, rp2350, esp32, esp32s3, "
                                                 "stm32f4, unix, wasm)")
    d.add_argument("--model", required=True, help="FILE.py:ClassName, built with no arguments")
    d.add_argument("--out", required=True, help="the bundle's folder (replaced only if it is a bundle)")
    d.add_argument("--precision", choices=("int8", "float32"), default="int8")
    d.add_argument("--calibration", help="a record of 'inputs' for int8 activations (else int8 weights only)")
    d.add_argument("--data", help="a record of 'inputs' and 'labels': accuracy in the report, the check's inputs")
    d.add_argument("--input-shape", type=_shape, help="one input's shape without the batch, when no --data")
    d.add_argument("--check", action="store_true", help="run the bundle on MicroPython's unix port with "
                                                        "the board's heap; fail unless it fits and agrees")
    d.set_defaults(run=run)
    return d


def run(args):
    from ember.accel.deploy import deploy
    deploy(args.board, args.record, args.model, args.out, precision=args.precision,
           calibration=args.calibration, data=args.data, check=args.check, input_shape=args.input_shape)
    return 0
