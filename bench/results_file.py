"""Where each benchmark writes its results: JSON in one file, its folder made."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def write_results(path: Path, results: Any, indent: int = 1) -> None:
    """Write `results` as JSON to `path` and say where."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(results, indent=indent) + "\n", encoding="utf-8")
    print(f"wrote {path}")
