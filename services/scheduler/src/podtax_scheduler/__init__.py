"""podtax scheduler: a secondary Kubernetes scheduler that places opted-in pods by benchmark score."""

__version__ = "0.1.0"
