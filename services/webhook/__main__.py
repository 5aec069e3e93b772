"""`python -m services.webhook`: the admission service.

Every replica serves requests; there is no leader-only work.
"""

from __future__ import annotations

import sys

from flotilla.runtime.service import ServiceSpec, main

SPEC = ServiceSpec(
    name="webhook",
    description="Flotilla admission: defaulting and validation of Karmada objects",
    leader_elect=False,
)

if __name__ == "__main__":
    sys.exit(main(SPEC))
