"""How many of a property test's examples reached the branch that asserts the most.

A property with an early return for some examples (a rejected document has nothing to round-trip)
passes just as well when every example takes it; the test would then check nothing. `Share`
counts the examples, shows the split in hypothesis's statistics (`hypothesis.event`), and fails
the test after the run when fewer than the stated share reached the branch.
"""

from __future__ import annotations

from dataclasses import dataclass

from hypothesis import event


@dataclass
class Share:
    branch: str
    at_least: float
    examples: int = 0
    reached_count: int = 0

    def reached(self, hit: bool) -> bool:
        """Count one example; returns `hit`, so a test can branch on it."""
        self.examples += 1
        self.reached_count += hit
        event(f"{self.branch}: {'reached' if hit else 'not reached'}")
        return hit

    def check(self) -> None:
        assert self.examples, f"no example ran, so none reached {self.branch!r}"
        share = self.reached_count / self.examples
        assert share >= self.at_least, (
            f"{self.reached_count} of {self.examples} examples ({share:.0%}) reached {self.branch!r}; "
            f"the test states at least {self.at_least:.0%}")
