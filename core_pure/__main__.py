"""``python -m ember``: ember's command line (CPython only; it lives in ember.accel.cli)."""


def main():
    from ember.accel.cli import main as cli
    return cli()


if __name__ == "__main__":
    import sys
    sys.exit(main())
