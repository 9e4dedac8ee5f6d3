"""docs/sharding.md, "Sharding in types": the section's code blocks run as one script on 8 CPU
devices and print what the page says they print.

The page shows outputs as comments (``print(x)  # float32[8@data,4]``, or a comment line of
its own) and as plain blocks (the errors, the jaxpr, the lowered module); every one of them
must be a line the script printed. The errors name the script's lines as ``sharding.py``.
"""

from __future__ import annotations

import pathlib
import re

import pytest

from tests.core.util import run_ok

pytest.importorskip("ember_plugin_cpu", reason="the page's code asks for 8 CPU devices")

PAGE = pathlib.Path(__file__).resolve().parents[2] / "docs" / "sharding.md"
SECTION = "## Sharding in types: explicit mode"
# A few seconds on an idle machine; the bound only stops a stuck run.


def section_blocks() -> tuple[list[str], list[str]]:
    """The section's Python blocks and its plain (output) blocks, in order."""
    text = PAGE.read_text()
    start = text.index(SECTION)
    end = text.index("\n## ", start + len(SECTION))
    blocks = re.findall(r"```(\w*)\n(.*?)```", text[start:end], re.S)
    return [b for lang, b in blocks if lang == "python"], [b for lang, b in blocks if not lang]


def shown_outputs(code: str) -> list[str]:
    """What the code's comments say it prints: a trailing comment on a ``print`` line, or a
    comment line of its own."""
    shown = []
    for line in code.splitlines():
        stripped = line.strip()
        if stripped.startswith("# "):
            shown.append(stripped.removeprefix("# "))
        elif stripped.startswith("print(") and "  # " in stripped:
            shown.append(stripped.split("  # ", 1)[1])
    return shown


def test_the_sharding_in_types_section_prints_what_it_shows(tmp_path):
    code_blocks, output_blocks = section_blocks()
    script = tmp_path / "sharding.py"
    script.write_text("\n".join(code_blocks))
    out = run_ok([script.name], cwd=tmp_path, EMBER_PLATFORMS="cpu")
    # Errors name the script by the path it ran from; the page by its name.
    printed = re.sub(r"\(at \S*sharding\.py:", "(at sharding.py:", out).splitlines()
    shown = [s for code in code_blocks for s in shown_outputs(code)]
    shown += [line for block in output_blocks for line in block.splitlines() if line.strip()]
    assert len(shown) > 40  # the section shows its outputs; this reads them
    missing = [s for s in shown if not any(line.endswith(s) for line in printed)]
    assert not missing, "shown on the page but not printed:\n" + "\n".join(missing)
