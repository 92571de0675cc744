"""``python -m ember``: ember's command line (CPython only; it lives in ember.accel.cli)."""
if __name__ == "__main__":
    import sys

    from ember.accel.cli import main
    sys.exit(main())
