"""What refusing each hostile document costs (hostile_documents.py); prints one JSON object.

Per document, as `flotillactl apply -f` reads it and admission checks what it read:
- seconds:   CPU time, the best of `--runs` (three) runs without tracing
- peak_mib:  the peak of memory allocated while doing it once more under tracemalloc
- line:      the one line the user gets
"""

from __future__ import annotations

import json
import tempfile
import time
import tracemalloc
from pathlib import Path

from flotilla.api.errors import UserError
from flotilla.cli.documents import read_sources
from flotilla.plane.benchmarks import arguments
from flotilla.plane.benchmarks.hostile_documents import HOSTILE, pure_admission, request_for

SMOKE = {"runs": 1}


def refuse(path: Path) -> str:
    try:
        sources = read_sources([str(path)])
    except UserError as e:
        return str(e)
    return "; ".join(str(e) for _, doc in sources for e in pure_admission(request_for(doc)).errors)


def main() -> None:
    parser = arguments.parser(__doc__)
    parser.add_argument("--runs", type=int, default=3, help="timed runs per document, the best kept")
    args = arguments.parse(parser, SMOKE)
    results: dict[str, object] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for case in HOSTILE:
            path = Path(tmp) / f"{case.name}.yaml"
            path.write_bytes(case.text())
            runs = []
            for _ in range(args.runs):
                started = time.process_time()
                line = refuse(path)
                runs.append(time.process_time() - started)
            tracemalloc.start()
            refuse(path)
            peak = tracemalloc.get_traced_memory()[1]
            tracemalloc.stop()
            results[case.name] = {
                "bytes": path.stat().st_size,
                "seconds": round(min(runs), 3),
                "peak_mib": round(peak / 2**20, 1),
                "line": line.replace(str(path), "FILE")[:160],
            }
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
