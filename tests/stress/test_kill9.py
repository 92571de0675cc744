"""The kill -9 campaign: a Learner that checkpoints after every step (one batch per epoch) is killed
with SIGKILL at random moments while it trains and writes, then resumed with ``resume="latest"``;
after the last kill it runs to the end. Its final weights must equal an unkilled run's, bit for bit,
and every checkpoint the killed runs left must be complete."""
import os
import random
import signal
import subprocess
import sys
import textwrap
import time

from ember import record
from ember.accel.train import Checkpoints, read_state

from probes import scale, tally

KILLS = scale(5, 50)
# enough that the last kill lands before the end: a kill comes after 1-3 epochs and at most 20 ms
# more, which a captured step (a few ms per epoch here) can fill with a few epochs
EPOCHS = scale(40, 300)
SEED = 1409

CHILD = textwrap.dedent('''
    import sys
    import numpy as np
    import ember, ember.nn.functional as F
    import ember.nn.layers as nn
    from ember.accel.data import DataLoader, InMemoryDataset
    from ember.accel.optim import Adam
    from ember.accel.train import Learner

    ck, out, epochs = sys.argv[1], sys.argv[2], int(sys.argv[3])
    ember.seed(3)
    rs = np.random.RandomState(0)
    data = InMemoryDataset(rs.randn(48, 6).astype(np.float32), np.arange(48) % 3)
    loud = data.map(lambda batch: (print("batch", flush=True), batch)[1], batched=True)
    g = ember.Generator(0)
    model = nn.Sequential(nn.Linear(6, 16, generator=g), nn.ReLU(), nn.Dropout(0.3), nn.Linear(16, 3, generator=g))
    learner = Learner(model, Adam(model, lr=1e-2), F.cross_entropy, epochs=epochs, checkpoint_dir=ck, keep_last=2,
                      progress=None, plot=False, device=ember.Cpu())
    learner.fit(DataLoader(loud, 48, shuffle=True, seed=1), resume="latest")
    model.save(out)
    print("done", flush=True)
''')


def _start(script, ck, out):
    return subprocess.Popen([sys.executable, script, ck, out, str(EPOCHS)], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)


def _finish(proc):
    text, _ = proc.communicate(timeout=300)
    assert proc.returncode == 0 and "done" in text, text[-2000:]


def _weights(path):
    with record.open(path) as r:
        return {n: r.read(n).to_bytes() for n in r.names()}


def test_kill9_campaign(tmp_path):
    script = str(tmp_path / "child.py")
    with open(script, "w") as f:
        f.write(CHILD)
    reference = str(tmp_path / "reference.safetensors")
    _finish(_start(script, str(tmp_path / "ref-ck"), reference))
    ck, final = str(tmp_path / "ck"), str(tmp_path / "final.safetensors")
    rng = random.Random(SEED)
    kills = 0
    while kills < KILLS:
        proc = _start(script, ck, final)
        batches = rng.randint(1, 3)  # let it train a little, then kill it at a random moment
        seen = 0
        while seen < batches:
            line = proc.stdout.readline()
            if not line:
                break
            seen += line.startswith("batch")
        if proc.poll() is not None:  # it finished before the kill: start over is not a kill
            break
        time.sleep(rng.uniform(0.0, 0.02))
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        proc.stdout.close()
        kills += 1
        for c in Checkpoints(ck).list():  # whatever the kill interrupted, what has a name is complete
            read_state(c.path)
            assert sorted(os.listdir(c.path)) == ["model.safetensors", "optimizer.safetensors", "state.json"]
    _finish(_start(script, ck, final))
    same = _weights(final) == _weights(reference)
    tally("kill9", kills=kills, kills_survived=kills if same else 0, silent_wrong=0 if same else 1)
    assert kills == KILLS, "the run finished after %d kills; raise EPOCHS" % kills
    assert same, "final weights differ from the unkilled run after %d kills" % kills
