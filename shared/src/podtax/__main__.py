"""`python -m podtax`: the `podtax` command, for a Python whose scripts folder is not on PATH."""

from podtax.cli.main import run

run()
