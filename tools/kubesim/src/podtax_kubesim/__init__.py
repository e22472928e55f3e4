"""A local, SIMULATED Kubernetes API server for tests and demos."""
