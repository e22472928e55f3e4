"""podtax: what a workload pays for running in a Kubernetes pod instead of on the host."""

__version__ = "0.1.0"
