"""Autodiff as a backend decorator: ``Autodiff(ember.Cpu())`` records, ``loss.backward()`` differentiates."""
from . import composites as _composites
from .device import Autodiff, AdArray
from .gradients import Gradients
from .graph import no_grad

_composites.register()

__all__ = ["Autodiff", "AdArray", "Gradients", "no_grad"]
