# ember.micro's digits CNN, old (emold.micro: an older commit's, staged by bench/micro_speed.py) vs new
# (ember.micro: this tree's), interleaved in one process. Arguments: reps images [lists]; with
# "lists" the new float32 runs with affine.LISTS = True (the web page's setting), int8 never (boards').
import sys
import time


def now():
    return time.ticks_us() if hasattr(time, "ticks_us") else int(time.perf_counter() * 1e6)


def since(t0):
    return time.ticks_diff(time.ticks_us(), t0) if hasattr(time, "ticks_diff") else now() - t0


def build(pkg):
    if pkg == "old":
        from emold.micro import affine as A, functional as F, module as M, tensor as T, run as R
    else:
        from ember.micro import affine as A, functional as F, module as M, tensor as T, run as R

    class DigitsCNN(M.Module):  # examples/digits/digits_cnn.py over ember.micro
        def __init__(self):
            self.conv1 = A.Conv2d(1, 16, 3, padding=1)
            self.conv2 = A.Conv2d(16, 32, 3, padding=1)
            self.fc = A.Linear(128, 10)

        def forward(self, x):
            x = F.max_pool2d(F.relu(self.conv1(x)), 2)
            x = F.max_pool2d(F.relu(self.conv2(x)), 2)
            return self.fc(x.flatten(1))
    return DigitsCNN, A, T, R


def median(v):
    v = sorted(v)
    return v[len(v) // 2]


def main(args):
    reps = int(args[0]) if args else 5
    nimg = int(args[1]) if len(args) > 1 else 20
    lists = len(args) > 2 and args[2] == "lists"
    runs, times = {}, {}
    for prec in ("f32", "i8"):
        for pkg in ("old", "new"):
            cls, A, T, R = build(pkg)
            m = R.load(cls(), prec + ".safetensors", prec + "_plan.json")
            inp = R.Inputs("data.safetensors")
            xs = [T.tensor(T.array("f", inp.read(i).data), inp.x.shape) for i in range(nimg)]
            inp.close()
            runs[(prec, pkg)] = (m, T._ARENA[0], A, T, xs, lists and pkg == "new" and prec == "f32")
            times[(prec, pkg)] = []

    def forward(key):
        m, arena, A, T, xs, fast = runs[key]
        A.LISTS = fast
        T.use(arena)
        return [m(x).tolist() for x in xs]
    for prec in ("f32", "i8"):
        if forward((prec, "old")) != forward((prec, "new")):
            raise SystemExit("%s: old and new give different outputs" % prec)
    for r in range(reps):
        for prec in ("f32", "i8"):
            for pkg in ("old", "new"):
                t0 = now()
                forward((prec, pkg))
                times[(prec, pkg)].append(since(t0) / 1000 / nimg)
    print("impl", sys.implementation.name, "reps", reps, "images", nimg, "lists", lists, "(outputs identical)")
    for prec in ("f32", "i8"):
        o, n = median(times[(prec, "old")]), median(times[(prec, "new")])
        print("%s ms/image median: old %.2f new %.2f (x%.2f)" % (prec, o, n, o / n))


main(sys.argv[1:])
