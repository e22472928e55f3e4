"""The scheduling profile: podtax.scheduler_profile (in the library, so that `podtax scores` reads the profile the
scheduler reads, PODTAX_SCHEDULER_PROFILE, and says what it does with each score)."""

from podtax.scheduler_profile import (
    BenchmarkArgs,
    InterPodAffinityArgs,
    LeastAllocatedArgs,
    PodTopologySpreadArgs,
    Profile,
    ScoreSection,
    TaintTolerationArgs,
    known_settings,
    load_profile,
)

__all__ = ["BenchmarkArgs", "InterPodAffinityArgs", "LeastAllocatedArgs", "PodTopologySpreadArgs", "Profile",
           "ScoreSection", "TaintTolerationArgs", "known_settings", "load_profile"]
