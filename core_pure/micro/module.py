"""``Module`` and ``Sequential`` as a deployed model sees them: ``__call__`` runs ``forward``,
``load`` fills the layers from a record; nothing trains here."""
from .tensor import DeployError, arena

_DEPTH = [0]


class Module:
    """Base of every layer and model: ``__call__`` runs ``forward``; the outermost call starts a
    new pass through the arena's plan."""

    def __init__(self, *args, **kwargs):
        pass

    def __call__(self, *args, **kwargs):
        depth = _DEPTH[0]
        if depth == 0:
            arena().step = 0
        _DEPTH[0] = depth + 1
        try:
            return self.forward(*args, **kwargs)
        finally:
            _DEPTH[0] = depth

    def forward(self, *args):
        raise DeployError("%s has no forward" % type(self).__name__)

    def eval(self):
        return self

    def train(self, mode=True):
        if mode:
            raise DeployError("a deployed model only infers: train() is not in the deployment path")
        return self

    def named_children(self):
        return [(k, v) for k, v in self.__dict__.items() if isinstance(v, Module)]

    def child(self, name):
        v = self.__dict__.get(name)
        return v if isinstance(v, Module) else None

    def load(self, path):
        """Fill the layers from a record written by ``ember deploy`` (int8 or float32); strict."""
        from .record import load
        load(self, path)
        return self


class Sequential(Module):
    def __init__(self, *layers):
        if len(layers) == 1 and type(layers[0]) in (list, tuple):
            layers = layers[0]
        self.layers = list(layers)

    def __getitem__(self, i):
        return self.layers[i]

    def __len__(self):
        return len(self.layers)

    def named_children(self):
        return [(str(i), m) for i, m in enumerate(self.layers)]

    def child(self, name):
        # only the index as str() writes it: '\u00b2'.isdigit() holds but int() refuses it, and
        # '00' or '+0' would name layer 0 a second way
        for i in range(len(self.layers)):
            if name == str(i):
                return self.layers[i]
        return None

    def forward(self, x):
        for m in self.layers:
            x = m(x)
        return x
