"""Hypothesis profiles for the unit tests.

`ci` is in force by default: 2,000 examples for every property that does not set its own
`max_examples`, no deadline (CI machines are slow and shared). `PAGECONTEXT_FUZZ=1`
loads `fuzz`, the same with 50,000 examples, for a long run by hand or on a schedule.
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

settings.register_profile(
    "ci",
    max_examples=2000,
    deadline=None,
    derandomize=False,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile("fuzz", settings.get_profile("ci"), max_examples=50_000)
settings.load_profile("fuzz" if os.environ.get("PAGECONTEXT_FUZZ") == "1" else "ci")
