"""podtax: what a workload pays for running in a Kubernetes pod instead of on the host."""

__version__ = "0.1.0"

from podtax import quietstart  # noqa: E402 - first: Ctrl-C while a console script imports the rest

quietstart.install()
