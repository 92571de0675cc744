"""Autodiff as a backend decorator: ``Autodiff(ember.Cpu())`` records, ``loss.backward()`` differentiates."""
from ember import composite as _composite

from . import composites as _composites
from .device import Autodiff, AdArray
from .gradients import Gradients
from .graph import no_grad

_composites.register()
_composite.RECORDERS[Autodiff] = Autodiff.run_composite

__all__ = ["Autodiff", "AdArray", "Gradients", "no_grad"]
