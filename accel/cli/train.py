"""``ember train CONFIG``: a Learner run described by a JSON or TOML file.

    seed = 0
    [model]                       # a class in a file (relative to the config) or a module
    spec = "digits_cnn.py:DigitsCNN"
    args = {}                     # its keyword arguments
    [data]                        # "digits" (shipped), "mnist" (with root = the IDX folder),
    name = "digits"               # or "FILE.py:function" returning a Dataset or (train, valid)
    valid_fraction = 0.1
    batch_size = 32
    [optimizer]                   # a class of ember.accel.optim and its arguments
    name = "AdamW"
    lr = 0.005
    [scheduler]                   # optional: a class of ember.accel.optim.lr; its lr is the optimizer's
    name = "CosineAnnealingLR"
    T_max = 300
    [train]
    epochs = 10
    loss = "cross_entropy"        # a function of ember.nn.functional
    device = "auto"               # auto (C kernels, else NumPy), cpu, cpu-c, numpy or wgpu
    metrics = ["accuracy"]
    run_dir = "runs/digits"       # checkpoints, metrics.csv, curves.png (relative to the config)
    early_stopping = ["valid_loss", "min", 5]
    out = "model.safetensors"     # the trained record (default: RUN_DIR/model.safetensors)

The Learner shows its dashboard on a terminal and progress lines in a pipe.
"""
import importlib
import importlib.util
import json
import os

from ember.errors import ArgumentError, EmberError

SECTIONS = {
    "seed": None,
    "model": {"spec": True, "args": False},
    "data": {"name": True, "valid_fraction": False, "batch_size": False, "root": False, "seed": False},
    "optimizer": None,  # name + the optimizer's own arguments
    "scheduler": None,  # name + the scheduler's own arguments
    "train": {"epochs": False, "loss": False, "device": False, "metrics": False, "run_dir": False,
              "early_stopping": False, "out": False, "keep_last": False, "compile": False,
              "clip_grad_norm": False, "grad_accumulation": False},
}


def add(sub):
    p = sub.add_parser("train", help="train a model with the Learner from a JSON or TOML config",
                       description="Train the model a config names on the data it names (see "
                                   "`python -c 'import ember.accel.cli.train as t; print(t.__doc__)'`).")
    p.add_argument("config", help="a .json or .toml file")
    p.add_argument("--epochs", type=int, help="override [train] epochs")
    p.add_argument("--progress", choices=("auto", "lines", "none"), default="auto",
                   help="the dashboard on a terminal (auto), plain lines, or nothing")
    p.set_defaults(run=run)
    return p


def load_config(path):
    with open(path, "rb") as f:
        raw = f.read()
    if path.endswith(".toml"):
        try:
            import tomllib
        except ImportError:
            raise ArgumentError("train: TOML configs need Python 3.11+ (tomllib); write %s as JSON" % path)
        try:
            config = tomllib.loads(raw.decode("utf-8"))
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
            raise ArgumentError("train: %s is not valid TOML: %s" % (path, e))
    else:
        try:
            config = json.loads(raw.decode("utf-8"))
        except (ValueError, RecursionError) as e:
            raise ArgumentError("train: %s is not valid JSON: %s" % (path, e))
    check(config, path)
    return config


def check(config, path):
    if type(config) is not dict:
        raise ArgumentError("train: %s must hold a table/object at the top, found %s" % (path, type(config).__name__))
    unknown = sorted(set(config) - set(SECTIONS))
    if unknown:
        raise ArgumentError("train: %s: unknown key(s) %s; known: %s" % (path, ", ".join(unknown),
                                                                         ", ".join(sorted(SECTIONS))))
    for section in ("model", "data", "optimizer"):
        if section not in config:
            raise ArgumentError("train: %s has no [%s] section" % (path, section))
    for section, keys in SECTIONS.items():
        if section not in config or section == "seed":
            continue
        value = config[section]
        if type(value) is not dict:
            raise ArgumentError("train: %s: [%s] must be a table, found %r" % (path, section, value))
        if section in ("optimizer", "scheduler"):
            if type(value.get("name")) is not str:
                raise ArgumentError("train: %s: [%s] needs name = \"...\"" % (path, section))
            continue
        bad = sorted(set(value) - set(keys))
        if bad:
            raise ArgumentError("train: %s: [%s] has unknown key(s) %s; known: %s"
                                % (path, section, ", ".join(bad), ", ".join(sorted(keys))))
        missing = [k for k, required in keys.items() if required and k not in value]
        if missing:
            raise ArgumentError("train: %s: [%s] needs %s" % (path, section, ", ".join(missing)))
    if "seed" in config and type(config["seed"]) is not int:
        raise ArgumentError("train: %s: seed must be an int, found %r" % (path, config["seed"]))


def load_object(spec, base, what):
    """``FILE.py:Name`` (relative to ``base``) or ``package.module:Name``."""
    if type(spec) is not str or spec.count(":") != 1:
        raise ArgumentError("train: %s must be FILE.py:Name or module:Name, found %r" % (what, spec))
    where, name = spec.split(":")
    try:
        if where.endswith(".py"):
            path = where if os.path.isabs(where) else os.path.join(base, where)
            if not os.path.isfile(path):
                raise ArgumentError("train: %s: no file %s" % (what, path))
            module_spec = importlib.util.spec_from_file_location("_ember_train_" + name, path)
            module = importlib.util.module_from_spec(module_spec)
            module_spec.loader.exec_module(module)
        else:
            module = importlib.import_module(where)
    except EmberError:
        raise
    except Exception as e:  # the user's own code: say where it failed
        raise ArgumentError("train: importing %s for %s failed: %s: %s" % (where, what, type(e).__name__, e))
    obj = getattr(module, name, None)
    if obj is None:
        raise ArgumentError("train: %s: %s has no %s" % (what, where, name))
    return obj


def device_named(name):
    import ember
    if name == "auto":
        try:
            return ember.Cpu(kernels="c")
        except ImportError:
            pass
        try:
            from ember.accel import NumPy
            return NumPy()
        except ImportError:
            return ember.Cpu(kernels="python")
    if name == "cpu":
        return ember.Cpu(kernels="python")
    if name == "cpu-c":
        return ember.Cpu(kernels="c")
    if name == "numpy":
        from ember.accel import NumPy
        return NumPy()
    if name == "wgpu":
        from ember.accel.wgpu import Wgpu
        return Wgpu()
    raise ArgumentError("train: device must be auto, cpu, cpu-c, numpy or wgpu, found %r" % (name,))


def datasets(data, base, seed):
    from ember.accel.data import load_digits, load_mnist
    name = data["name"]
    if name == "digits":
        full = load_digits()
    elif name == "mnist":
        if "root" not in data:
            raise ArgumentError("train: [data] name = \"mnist\" needs root = the folder of its IDX files")
        full = load_mnist(os.path.join(base, data["root"]), split="train")
    else:
        full = load_object(name, base, "[data] name")()
    if type(full) is tuple:
        if len(full) != 2:
            raise ArgumentError("train: %s must return a Dataset or (train, valid), found %d items" % (name, len(full)))
        return full
    fraction = data.get("valid_fraction", 0.1)
    return full.split(fraction, seed=data.get("seed", seed), stratify=name in ("digits", "mnist"))


def _named(module, name, what):
    cls = getattr(module, name, None)
    if cls is None or name.startswith("_"):
        raise ArgumentError("train: %s %r is not in %s" % (what, name, module.__name__))
    return cls


def build(config, base, epochs=None, progress="auto"):
    """The Learner, its loaders and the record path a config describes."""
    import ember
    import ember.nn.functional as F
    from ember.accel import optim
    from ember.accel.data import DataLoader
    from ember.accel.optim import lr as schedulers
    from ember.accel.train import Learner
    seed = config.get("seed", 0)
    ember.seed(seed)
    data, train = config["data"], config.get("train", {})
    model = load_object(config["model"]["spec"], base, "[model] spec")(**config["model"].get("args", {}))
    opt_args = dict(config["optimizer"])
    optimizer = _named(optim, opt_args.pop("name"), "optimizer")(model, **opt_args)
    train_ds, valid_ds = datasets(data, base, seed)
    batch = data.get("batch_size", 32)
    train_loader = DataLoader(train_ds, batch, shuffle=True, seed=seed)
    valid_loader = DataLoader(valid_ds, max(batch, 256))
    n_epochs = epochs if epochs is not None else train.get("epochs", 10)
    scheduler = None
    if "scheduler" in config:
        s_args = dict(config["scheduler"])
        scheduler = _named(schedulers, s_args.pop("name"), "scheduler")(opt_args.get("lr", optimizer.lr), **s_args)
    loss = _named(F, train.get("loss", "cross_entropy"), "loss")
    run_dir = os.path.join(base, train.get("run_dir", "runs/ember-train"))
    stopping = train.get("early_stopping")
    learner = Learner(model, optimizer, loss, epochs=n_epochs, scheduler=scheduler,
                      metrics=train.get("metrics", ["accuracy"]), early_stopping=tuple(stopping) if stopping else None,
                      run_dir=run_dir, keep_last=train.get("keep_last", 2), device=device_named(train.get("device", "auto")),
                      progress=progress, compile=train.get("compile", "auto"),
                      clip_grad_norm=train.get("clip_grad_norm"), grad_accumulation=train.get("grad_accumulation", 1))
    out = os.path.join(base, train["out"]) if "out" in train else os.path.join(run_dir, "model.safetensors")
    return learner, model, train_loader, valid_loader, out


def run(args):
    config = load_config(args.config)
    base = os.path.dirname(os.path.abspath(args.config))
    progress = {"auto": "auto", "lines": "lines", "none": None}[args.progress]
    learner, model, train_loader, valid_loader, out = build(config, base, args.epochs, progress)
    result = learner.fit(train_loader, valid_loader)
    model.save(out)
    if progress is None:  # the Learner's views print the summary themselves
        print(result.summary())
    print("wrote %s (%s parameters)" % (out, format(model.num_params(), ",")))
    return 0
