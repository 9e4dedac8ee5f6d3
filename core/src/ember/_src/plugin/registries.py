"""The registries handed to plugins' registration hooks."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ember._src import errors, rules
from ember._src.core import Primitive

# A kernel compiler per platform: ``compiler(ctx, call, *operands) -> list[str]`` emits a
# ``PallasCall`` (ember.extend) natively into the module being lowered (e.g. as Triton).
KernelCompiler = Callable[..., list[str]]
_kernel_compilers: dict[str, KernelCompiler] = {}


# Named kernels: ``kernel(ctx, outputs, *inputs, **static_params)`` per (name, platform), run
# inside compiled programs through XLA's buffer callback (``ember.extend.call_named_kernel``);
# a fallback, ``fallback(*inputs, **static_params)`` written with ember ops, per name.
NamedKernel = Callable[..., None]
_named_kernels: dict[tuple[str, str], NamedKernel] = {}
_named_kernel_fallbacks: dict[str, Callable[..., Any]] = {}


def named_kernel(name: str, platform: str) -> NamedKernel | None:
    """The kernel registered as ``name`` for ``platform``, if any."""
    return _named_kernels.get((name, platform))


def named_kernel_fallback(name: str) -> Callable[..., Any] | None:
    """The fallback implementation registered for the kernel ``name``, if any."""
    return _named_kernel_fallbacks.get(name)


def named_kernel_platforms(name: str) -> list[str]:
    """The platforms with a kernel registered as ``name``, sorted."""
    return sorted(p for n, p in _named_kernels if n == name)


def kernel_compiler(platform: str) -> KernelCompiler | None:
    """The kernel compiler a plugin registered for ``platform``, if any: ``pallas_call``
    lowers through it there unless it runs in interpret mode."""
    return _kernel_compilers.get(platform)


class LoweringRegistry:
    """Passed to ``ember_register_lowerings``: platform overrides of lowering rules."""

    def __init__(self, plugin_name: str):
        self.plugin_name = plugin_name
        self.registered: list[tuple[str, str]] = []

    def register(self, primitive: Primitive | str, rule: rules.Rule, *, platform: str) -> None:
        """Lower ``primitive`` with ``rule`` on ``platform`` (replacing the generic rule there)."""
        if not platform:
            raise ValueError(
                f"plugin {self.plugin_name!r}: a lowering override must name its platform"
            )
        prim = _lookup(primitive, self.plugin_name)
        rules.register_lowering(prim, rule, platform)
        self.registered.append((prim.name, platform))

    def register_by_name(self, name: str, rule: rules.Rule, *, platform: str) -> None:
        """``register`` for a primitive ember may define only later, when the module that
        defines it is first imported (the linear algebra primitives: ``ember.lax.linalg``): the
        override is installed now if the primitive exists, else when it is defined. A name ember
        never defines is never used."""
        if not platform:
            raise ValueError(
                f"plugin {self.plugin_name!r}: a lowering override must name its platform"
            )
        rules.register_lowering_by_name(name, rule, platform)
        self.registered.append((name, platform))

    def generic(self, name: str) -> rules.Rule:
        """The lowering of the primitive named ``name`` that every platform gets without an
        override, looked up when called (the primitive may be defined later, see
        ``register_by_name``): an override calls ``generic(name)(ctx, *operands, **params)``
        for the cases it leaves alone, e.g. dtypes its platform's library lacks."""
        plugin_name = self.plugin_name

        def generic_rule(ctx: Any, *operands: Any, **params: Any) -> Any:
            primitive = _lookup(name, plugin_name)
            return rules.generic_lowering_rule(primitive)(ctx, *operands, **params)

        generic_rule.__name__ = f"generic_{name}_lowering"
        return generic_rule

    def register_kernel_compiler(self, compiler: KernelCompiler, *, platform: str) -> None:
        """Compile Pallas kernels natively on ``platform``: ``compiler(ctx, call, *operands)``
        gets the lowering context (``RuleContext``), the ``PallasCall`` and the operands' SSA
        names, emits the kernel into the module and returns the results' SSA names. A
        ``pallas_call(..., interpret=True)`` bypasses it; a platform without one interprets."""
        if not platform:
            raise ValueError(
                f"plugin {self.plugin_name!r}: a kernel compiler must name its platform"
            )
        if not callable(compiler):
            raise TypeError(
                f"plugin {self.plugin_name!r}: a kernel compiler must be callable, got "
                f"{type(compiler).__name__}"
            )
        _kernel_compilers[platform] = compiler
        self.registered.append(("pallas_call", platform))

    def register_named_kernel(
        self,
        name: str,
        kernel: NamedKernel,
        *,
        platform: str,
        fallback: Callable[..., Any] | None = None,
    ) -> None:
        """Run ``ember.extend.call_named_kernel(name, ...)`` on ``platform`` with ``kernel``.

        ``kernel(ctx, outputs, *inputs, **static_params)`` is called while the compiled
        program runs, with the program's own buffers (no copies): ``inputs`` read-only,
        ``outputs`` (a list) to be written in place; each buffer has ``shape``, ``dtype``,
        ``__dlpack__`` and, on CPU, ``__array__`` (on CUDA ``__cuda_array_interface__``).
        ``ctx.stream`` is the execution stream on a GPU (None on CPU): launch work on it.
        The kernel returns None. ``fallback(*inputs, **static_params)``, written with ember
        ops, computes the same results on platforms without a kernel of this name."""
        if not platform:
            raise ValueError(
                f"plugin {self.plugin_name!r}: the named kernel {name!r} must name its platform"
            )
        if not isinstance(name, str) or not name:
            raise TypeError(
                f"plugin {self.plugin_name!r}: a named kernel's name must be a non-empty "
                f"string, got {name!r}"
            )
        for what, value in (("kernel", kernel), ("fallback", fallback)):
            if (value is not None or what == "kernel") and not callable(value):
                raise TypeError(
                    f"plugin {self.plugin_name!r}: the {what} of named kernel {name!r} must be "
                    f"callable, got {type(value).__name__}"
                )
        _named_kernels[(name, platform)] = kernel
        if fallback is not None:
            _named_kernel_fallbacks[name] = fallback
        self.registered.append((f"named kernel {name}", platform))


class CollectiveRegistry:
    """Passed to ``ember_register_collectives``: who implements which collective where."""

    def __init__(self) -> None:
        self._impls: dict[tuple[str, str], Any] = {}
        self._transports: dict[str, dict[str, Any]] = {}

    def register(self, platform: str, collective: str, implementation: Any = "xla") -> None:
        self._impls[(platform, collective)] = implementation

    def register_transport(self, platform: str, name: str, make: Any) -> None:
        """Declare a way for ``platform``'s collectives to travel between the processes of a
        multi-process job: ``make(job)`` (``job``: ``ember.extend.current_job()``) returns
        what the platform's runtime takes (for XLA's CPU client, jaxlib's collectives object,
        e.g. gloo over TCP). The platform's backend picks one by name when it starts."""
        self._transports.setdefault(platform, {})[name] = make

    def transport(self, platform: str, name: str) -> Any:
        """The ``make`` registered as ``name`` for ``platform`` (BackendError naming the
        registered ones when there is none)."""
        found = self._transports.get(platform, {})
        if name not in found:
            known = ", ".join(sorted(found)) or "none"
            raise errors.BackendError(
                f"platform {platform!r} has no cross-process collectives transport {name!r} "
                f"(registered: {known})"
            )
        return found[name]

    def implementation(self, platform: str, collective: str) -> Any:
        """How ``platform`` runs ``collective``: ``"xla"`` or a plugin's implementation (an
        object whose ``lower(ctx, *operands, collective=, device_groups=, **params)`` emits
        it). A platform that declares nothing gets XLA's; one that declares some collectives
        but not this one cannot run it."""
        found = self._impls.get((platform, collective))
        if found is not None:
            return found
        declared = sorted(c for p, c in self._impls if p == platform)
        if declared:
            raise errors.BackendError(
                f"platform {platform!r} does not implement the collective {collective!r} "
                f"(its plugin declares {', '.join(declared)})"
            )
        return "xla"

    def declared(self) -> dict[tuple[str, str], Any]:
        return dict(self._impls)


def _lookup(primitive: Primitive | str, plugin_name: str) -> Primitive:
    if isinstance(primitive, Primitive):
        return primitive
    known = rules.all_primitives()
    try:
        return known[primitive]
    except KeyError:
        raise ValueError(
            f"plugin {plugin_name!r} registered a lowering for unknown primitive {primitive!r}"
        ) from None
