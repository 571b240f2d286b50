"""Human-readable sizes for budgets on the command line and in configs ("4GiB", "512M")."""

from __future__ import annotations

import re

from seraph.errors import ConfigError

_UNITS = {"": 1, "k": 10**3, "m": 10**6, "g": 10**9, "t": 10**12,
          "ki": 1 << 10, "mi": 1 << 20, "gi": 1 << 30, "ti": 1 << 40}


def parse_size(text: str | int, name: str | None = None) -> int:
    """Parses ``4GiB``, ``512MB``, ``1.5G`` or a plain byte count into bytes; ``name`` (the
    flag or key the size came from) leads the error message."""
    if isinstance(text, int):
        return text
    match = re.fullmatch(r"\s*([0-9]*\.?[0-9]+)\s*([kmgt]i?)?b?\s*", str(text), re.IGNORECASE)
    if not match:
        what = f"{name}: cannot read {text!r}" if name else f"cannot read size {text!r}"
        raise ConfigError(f"{what}: use e.g. 4GiB, 512MB or 1000000")
    return int(float(match.group(1)) * _UNITS[(match.group(2) or "").lower()])


def format_size(num: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(num) < 1024 or unit == "TiB":
            return f"{num:.0f} {unit}" if unit == "B" else f"{num:.1f} {unit}"
        num /= 1024
    return f"{num} B"
