"""StableHLO module text surgery for export: a module's functions, renamed and combined.

Two jobs need it. Exporting for several platforms lowers once per platform and puts the
lowerings side by side in one module, under a ``main`` that picks one by a platform index (a
``stablehlo.case``). Calling an exported program inside ``jit`` copies its functions into the
caller's module as private functions. Both rename every function with a prefix, since each
lowering has its own ``main`` and helper functions whose names would clash.

The texts handled here are modules as ember's lowering writes them or as MLIR prints them
(without locations): one ``module ... {`` line, the functions, and a closing ``}``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

# A function definition, in either syntax MLIR prints or parses for ``func.func``.
_FUNCTION = re.compile(r"func\.func\s+(?:(?:public|private|nested)\s+)?@([A-Za-z_][\w$.]*)")
_PUBLIC = re.compile(r"func\.func\s+public\s+@")
# A Shardy mesh declaration, on a line of its own: ``sdy.mesh @mesh = <["x"=4, "y"=2]>``.
_MESH = re.compile(r"^[ \t]*sdy\.mesh\s+@[A-Za-z_][\w$.]*\s*=.*$\n?", re.M)

PLATFORM_INDEX_TYPE = "tensor<i32>"


def module_body(text: str) -> str:
    """The lines between a module's opening ``module ... {`` line and its closing brace."""
    lines = text.strip().splitlines()
    start = next((i for i, line in enumerate(lines) if line.lstrip().startswith("module")), None)
    if start is None or not lines[start].rstrip().endswith("{") or lines[-1].strip() != "}":
        raise ValueError("not a StableHLO module: expected 'module ... {' lines '}'")
    return "\n".join(lines[start + 1 : -1])


def function_names(body: str) -> list[str]:
    """The names of the functions defined in ``body``, in order."""
    return _FUNCTION.findall(body)


def private_functions(text: str, prefix: str) -> tuple[str, str]:
    """(the functions of module ``text``, each renamed ``prefix + name`` and made private; the
    new name of its ``main``)."""
    body = module_body(text)
    names = function_names(body)
    if "main" not in names:
        raise ValueError("the module has no main function")
    renamed = rename_symbols(body, {name: prefix + name for name in names})
    return _PUBLIC.sub("func.func private @", renamed), prefix + "main"


def without_meshes(body: str) -> str:
    """``body`` without its Shardy mesh declarations (a caller declares its own)."""
    return _MESH.sub("", body)


def rename_symbols(body: str, mapping: dict[str, str]) -> str:
    """``body`` with every reference ``@old`` (a whole symbol name) replaced by ``@new``."""
    if not mapping:
        return body
    names = "|".join(re.escape(n) for n in sorted(mapping, key=len, reverse=True))
    pattern = re.compile(r"@(" + names + r")(?![\w$.])")
    return pattern.sub(lambda m: "@" + mapping[m.group(1)], body)


def platform_prefix(platform: str) -> str:
    return f"_ember_{re.sub(r'[^A-Za-z0-9_]', '_', platform)}_"


def combine_platforms(
    name: str,
    lowerings: Sequence[tuple[str, str]],
    arg_types: Sequence[str],
    out_types: Sequence[str],
) -> str:
    """One module whose ``main(platform_index, *args)`` runs the lowering of
    ``lowerings[platform_index]`` (pairs of platform and module text), through a
    ``stablehlo.case``; ``arg_types``/``out_types`` are the tensor types of the lowerings'
    mains. The index argument is marked as JAX marks it (``jax.global_constant``)."""
    functions = []
    mains = []
    for platform, text in lowerings:
        body, main = private_functions(text, platform_prefix(platform))
        functions.append(body)
        mains.append(main)
    args = [f"%arg{i + 1}" for i in range(len(arg_types))]
    params = [f'%arg0: {PLATFORM_INDEX_TYPE} {{jax.global_constant = "_platform_index"}}']
    params += [f"{a}: {t}" for a, t in zip(args, arg_types)]
    call_types = f"({', '.join(arg_types)}) -> ({', '.join(out_types)})"
    n_out = len(out_types)
    branches = []
    for main in mains:
        results = [f"%r#{i}" for i in range(n_out)]
        lhs = f"%r:{n_out} = " if n_out else ""
        branches.append(
            "{\n"
            f'      {lhs}"func.call"({", ".join(args)}) <{{callee = @{main}}}> : {call_types}\n'
            f'      "stablehlo.return"({", ".join(results)}) : ({", ".join(out_types)}) -> ()\n'
            "    }"
        )
    case_lhs = f"%0:{n_out} = " if n_out else ""
    outs = [f"%0#{i}" for i in range(n_out)]
    ret = f"    return {', '.join(outs)} : {', '.join(out_types)}" if n_out else "    return"
    main_text = (
        f"  func.func public @main({', '.join(params)}) -> ({', '.join(out_types)}) {{\n"
        f'    {case_lhs}"stablehlo.case"(%arg0) ({", ".join(branches)}) : '
        f"({PLATFORM_INDEX_TYPE}) -> ({', '.join(out_types)})\n"
        f"{ret}\n  }}\n"
    )
    return (
        f"module @{name} attributes {{mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32}}"
        f" {{\n{main_text}" + "\n".join(functions) + "\n}\n"
    )
