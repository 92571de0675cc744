"""``ember deploy``: a model and its trained record become a bundle for a MicroPython board.

>>> from ember.accel.deploy import deploy
>>> report = deploy("rp2040", "digits_cnn.safetensors", "digits_cnn.py:DigitsCNN", "bundle",
...                 calibration="calibration.safetensors", data="heldout.safetensors", check=True)

See ``bundle.py`` for what a bundle holds and ``boards/`` for the profiles.
"""
from .boards import load as board, names as board_names
from .bundle import deploy, describe

__all__ = ["deploy", "describe", "board", "board_names"]
