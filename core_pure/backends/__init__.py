"""Backends that ship with the core. Only ``cpu`` (pure Python) lives here; the others are in ``ember.accel``."""
