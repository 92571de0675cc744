"""ember.accel: the optional layers above the core (CPython only).

Autodiff and Fusion (backend decorators), the NumPy and Wgpu backends, optimizers, training and
model import land here, each behind its own extra (``pip install ember[gpu]``, ...). Importing
``ember`` never imports this package.
"""
