"""``python -m ember export inspect FILE [--mlir]``: what an exported program contains.

For a program exported over several devices it prints the mesh and each argument's and
result's layout over it (PartitionSpec and HLO sharding). Everything but ``--mlir`` is read
from the file's metadata alone, so it works without any backend; ``--mlir`` converts the
artifact back to StableHLO text, which needs a PJRT backend.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from ember._src import errors
from ember._src.export import serialization
from ember._src.export.exported import Exported, deserialize
from ember._src.tree.keys import keystr
from ember._src.tree.util import tree_flatten_with_path, tree_unflatten


def parser() -> argparse.ArgumentParser:
    cli = argparse.ArgumentParser(
        prog="python -m ember export",
        description="Work with programs exported by ember.export.",
    )
    commands = cli.add_subparsers(dest="command", metavar="COMMAND", required=True)
    inspect = commands.add_parser(
        "inspect",
        help="describe an exported program: function, platforms, arguments, results, versions",
        description="Print what a file written by Exported.serialize() contains.",
    )
    inspect.add_argument("file", help="a file written by Exported.serialize()")
    inspect.add_argument(
        "--mlir", action="store_true", help="also print the StableHLO module (needs a backend)"
    )
    return cli


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        with open(args.file, "rb") as f:
            blob = f.read()
    except OSError as exc:
        print(f"error: cannot read {args.file}: {exc.strerror}", file=sys.stderr)
        return 1
    try:
        exported = deserialize(blob)
        print(describe(exported, blob, args.file))
        if args.mlir:
            print(exported.mlir_module())
    except errors.EmberError as exc:
        print(f"error: {args.file}: {exc}", file=sys.stderr)
        return 1
    return 0


def describe(exported: Exported, blob: bytes, name: str) -> str:
    """A readable summary of ``exported``, read from ``blob`` (the file named ``name``)."""
    metadata, module, vjp = serialization.read(blob)
    vjp_size = len(vjp) if vjp is not None else 0
    metadata_size = len(blob) - len(module) - vjp_size - serialization.HEADER_SIZE
    lines = [
        f"{name}: ember export, format version {serialization.FORMAT_VERSION}, {len(blob)} bytes",
        f"  function            {exported.fun_name}",
        f"  platforms           {', '.join(exported.platforms)}",
        f"  devices             {_devices(exported)}",
        f"  calling convention  {exported.calling_convention_version}",
        f"  StableHLO           artifact for StableHLO >= {exported.stablehlo_version} "
        f"(written by {exported.stablehlo_producer_version})",
        f"  inputs              {exported.in_tree}",
        *_leaves(
            exported.in_tree,
            exported.in_avals,
            "args",
            exported.in_specs,
            exported.in_shardings_hlo,
        ),
        f"  outputs             {exported.out_tree}",
        *_leaves(
            exported.out_tree,
            exported.out_avals,
            "out",
            exported.out_specs,
            exported.out_shardings_hlo,
        ),
        f"  ordered effects     {', '.join(exported.ordered_effects) or 'none'}",
        f"  unordered effects   {', '.join(exported.unordered_effects) or 'none'}",
        f"  disabled checks     {', '.join(exported.disabled_safety_checks) or 'none'}",
        f"  VJP                 {_vjp_order(exported)}",
        f"  sizes               header {serialization.HEADER_SIZE} B, metadata "
        f"{metadata_size} B, module {len(module)} B, VJP {vjp_size} B",
    ]
    return "\n".join(lines)


def _devices(exported: Exported) -> str:
    mesh = exported.mesh
    if mesh is None:
        return str(exported.nr_devices)
    axes = ", ".join(f"{name}={size}" for name, size in mesh.shape_tuple)
    types = ", ".join(t.name for t in mesh.axis_types)
    return f"{exported.nr_devices}, over the mesh {axes} (axis types {types})"


def _leaves(tree, avals, root: str, specs, hlo) -> list[str]:
    keyed, _ = tree_flatten_with_path(tree_unflatten(tree, range(tree.num_leaves)))
    if root == "args":  # the input structure is (positional args, kwargs)
        names = [("args" if path[0].idx == 0 else "kwargs") + keystr(path[1:]) for path, _ in keyed]
    else:
        names = [root + keystr(path) for path, _ in keyed]
    lines = []
    for n, a, spec, text in zip(names, avals, specs, hlo):
        line = f"    {n:<18}{a.str_short()}"
        if text is not None:  # laid out over the mesh (None: one device, or unspecified)
            line = f"{line:<40}{spec}  {text}"
        lines.append(line)
    return lines


def _vjp_order(exported: Exported) -> str:
    order = 0
    while exported.has_vjp():
        exported = exported.vjp()
        order += 1
    return f"order {order}" if order else "none (not differentiable after deserializing)"
