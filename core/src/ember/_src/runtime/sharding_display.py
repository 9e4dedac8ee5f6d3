"""Drawing an array's layout over devices in the terminal (``ember.debug``)."""

from __future__ import annotations

from typing import Any

from ember._src.runtime.array import Array


def _blocks(bounds: list[tuple[int, int]]) -> list[tuple[int, int]]:
    return sorted(set(bounds))


def _label(devices: list[Any]) -> str:
    platform = devices[0].platform.upper()
    return f"{platform} " + ",".join(str(d.id) for d in sorted(devices, key=lambda d: d.id))


def sharding_layout_text(array: Array, *, min_width: int = 9, max_width: int = 80) -> str:
    """The layout of a 1-D or 2-D ``array`` as a grid of boxes, one per block, each naming
    the devices that hold it."""
    shape = array.shape
    if len(shape) not in (1, 2):
        raise ValueError(
            f"visualize_array_sharding draws 1-D and 2-D arrays, not {array.aval.str_short()}"
        )
    rows_cols = shape if len(shape) == 2 else (1, shape[0])
    owners: dict[tuple, list[Any]] = {}
    for device, index in array.sharding.devices_indices_map(shape).items():
        spans = [s.indices(n)[:2] for s, n in zip(index, shape)]
        if len(shape) == 1:
            spans = [(0, 1), spans[0]]
        owners.setdefault(tuple(spans), []).append(device)
    row_blocks = _blocks([k[0] for k in owners])
    col_blocks = _blocks([k[1] for k in owners])
    labels = {k: _label(v) for k, v in owners.items()}
    widest = max(len(t) for t in labels.values()) + 2
    total = max(min_width * len(col_blocks), min(max_width, widest * len(col_blocks)))
    widths = []
    for start, stop in col_blocks:  # columns as wide as their share of the array
        share = (stop - start) / rows_cols[1]
        widths.append(max(widest, min_width, round(share * total)))
    lines = []

    def rule(left: str, middle: str, right: str) -> str:
        return left + middle.join("─" * w for w in widths) + right

    lines.append(rule("┌", "┬", "┐"))
    for r, row in enumerate(row_blocks):
        cells = [labels.get((row, col), "") for col in col_blocks]
        lines.append("│" + "│".join(c.center(w) for c, w in zip(cells, widths)) + "│")
        lines.append(rule("└", "┴", "┘") if r == len(row_blocks) - 1 else rule("├", "┼", "┤"))
    return "\n".join(lines)


def visualize_array_sharding(
    array: Array,
    *,
    use_color: bool = False,
    scale: float = 1.0,
    min_width: int = 9,
    max_width: int = 80,
    color_map: Any = None,
) -> None:
    """Print which devices hold which block of a 1-D or 2-D array (plain text: ``use_color``,
    ``scale`` and ``color_map`` are accepted for JAX compatibility and ignored)."""
    print(sharding_layout_text(array, min_width=min_width, max_width=max_width))
