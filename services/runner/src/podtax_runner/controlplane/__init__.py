"""Control-plane runs (volume-churn, pod-startup): the runner as an API client of Kubernetes or Nomad.

timeline.py  the raw log (JSON lines, docs/control-plane.md)   execute.py   one run, per backend
kvolumes.py  volume-churn on Kubernetes                          nomad.py     volume-churn on Nomad
podstartup.py pod-startup                                        cleanup.py   nothing left behind
kubeapi.py   counted raw-JSON calls, /metrics                    dispatch.py  the runner's hook
kwatch.py    list+watch of a kind in a thread
kconsumers.py volume-churn's consumer pods (deleted before the claims)
kclasses.py  volume-churn's storage class check (before anything is made)
common.py    the run's context, names and labels, worker pool, patience
apierrors.py a failed API call read: timed out, unreachable, refused; too many failed
churn.py     ObjectChurn: an object's API error recorded and counted, its delete (Kubernetes)
"""
