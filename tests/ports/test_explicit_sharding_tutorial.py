# ruff: noqa: E501, I001 - the ported program is kept as written (its imports too); pinned values are long
"""Port of JAX's tutorial "Explicit sharding (a.k.a. "sharding in types")"
(docs/notebooks/explicit-sharding.md).

The page's code cells, in order, with ``jax`` changed to ``ember`` in the imports and in the
calls (``jax.typeof`` -> ``ember.typeof``, ``jax.jit`` -> ``ember.jit``, ...). One other line
differs: ``jax.config.update('jax_num_cpu_devices', 8)`` is
``ember.config.update('num_cpu_devices', 8)`` (ember's options have no ``jax_`` prefix).
Cells that end in a bare expression print it (the ``explicit_axes`` cell's last call, inside a
``with`` block, shows nothing on the page and is not printed), and ``print`` records its
arguments, compared with what JAX printed for the same cells (pinned below).

The page's stored outputs come from a JAX whose ``str`` of a type was its repr
(``ShapedArray(int32[8])``); JAX 0.10 prints ``int32[8]``, as ember does, and that is what is
pinned. The tutorial needs 8 devices from the start, so it runs in a process of its own.
"""

import json
import pathlib

import pytest

from tests.core.util import run_ok
from tests.ports._util import assert_same

ROOT = pathlib.Path(__file__).resolve().parents[2]
# The tutorial sets its device count with the CPU plugin's option (JAX's num_cpu_devices).
pytest.importorskip("ember_plugin_cpu", reason="the tutorial asks for 8 CPU devices")
RECORD_MARK = "record: "


def program():
    record = []

    def print(*args, end="\n"):  # the page's prints become records (an error with its type)
        record.append(
            tuple(f"{type(a).__name__}: {a}" if isinstance(a, Exception) else a for a in args)
        )

    import ember
    import numpy as np
    import ember.numpy as jnp
    from ember.sharding import PartitionSpec as P, AxisType, set_mesh, get_abstract_mesh
    from ember.experimental.shard import reshard, auto_axes, explicit_axes

    ember.config.update("num_cpu_devices", 8)

    # Setting up an explicit mesh

    some_array = np.arange(8)
    print(f"JAX-level type of some_array: {ember.typeof(some_array)}")

    @ember.jit
    def foo(x):
        print(f"JAX-level type of x during tracing: {ember.typeof(x)}")
        return x + x

    print(foo(some_array))

    mesh = ember.make_mesh((2, 4), ("X", "Y"), axis_types=(AxisType.Explicit, AxisType.Explicit))
    set_mesh(mesh)

    print(f"Current mesh is: {get_abstract_mesh()}")

    replicated_array = np.arange(8).reshape(4, 2)
    sharded_array = reshard(replicated_array, P("X", None))

    print(f"replicated_array type: {ember.typeof(replicated_array)}")
    print(f"sharded_array type: {ember.typeof(sharded_array)}")

    arg0 = reshard(np.arange(4).reshape(4, 1), P("X", None))
    arg1 = reshard(np.arange(8).reshape(1, 8), P(None, "Y"))

    result = arg0 + arg1

    print(f"arg0 sharding: {ember.typeof(arg0)}")
    print(f"arg1 sharding: {ember.typeof(arg1)}")
    print(f"result sharding: {ember.typeof(result)}")

    @ember.jit
    def add_arrays(x, y):
        ans = x + y
        print(f"x sharding: {ember.typeof(x)}")
        print(f"y sharding: {ember.typeof(y)}")
        print(f"ans sharding: {ember.typeof(ans)}")
        return ans

    print(add_arrays(arg0, arg1))

    # Working around unimplemented sharding rules using `auto_sharding`

    some_x = reshard(np.arange(16).reshape(4, 4), P("X", None))
    some_y = reshard(np.arange(16).reshape(4, 4), P(None, "X"))

    try:
        some_x + some_y
    except Exception as e:
        print("ERROR!")
        print(e)

    print("=== try again with auto_axes ===")

    @auto_axes
    def add_with_out_sharding_kwarg(x, y):
        print(f"We're in auto-sharding mode here. This is the current mesh: {get_abstract_mesh()}")
        return x + y

    result = add_with_out_sharding_kwarg(some_x, some_y, out_shardings=P("X", None))
    print(f"Result type: {ember.typeof(result)}")

    # Using a mixture of sharding modes

    print(f"Current mesh is: {get_abstract_mesh()}")

    import functools

    @functools.partial(auto_axes, axes="X")
    def g(y):
        print(f"mesh inside g: {get_abstract_mesh()}")
        print(f"y.sharding inside g: {ember.typeof(y) = }", end="\n\n")
        return y * 2

    @ember.jit
    def f(arr1):
        print(f"mesh inside f: {get_abstract_mesh()}")
        x = jnp.sin(arr1)
        print(f"x.sharding: {ember.typeof(x)}", end="\n\n")

        z = g(x, out_shardings=P("X", "Y"))

        print(f"z.sharding: {ember.typeof(z)}", end="\n\n")
        return z + 1

    some_x = reshard(np.arange(16).reshape(4, 4), P("X", "Y"))
    print(f(some_x))

    auto_mesh = ember.make_mesh((2, 4), ("X", "Y"), axis_types=(AxisType.Auto, AxisType.Auto))

    @functools.partial(explicit_axes, axes=("X", "Y"))
    def explicit_g(y):
        print(f"mesh inside g: {get_abstract_mesh()}")
        print(f"y.sharding inside g: {ember.typeof(y) = }")
        z = y * 2
        print(f"z.sharding inside g: {ember.typeof(z) = }", end="\n\n")
        return z

    @ember.jit
    def f(arr1):
        print(f"mesh inside f: {get_abstract_mesh()}", end="\n\n")
        x = jnp.sin(arr1)

        z = explicit_g(x, in_shardings=P("X", "Y"))

        return z + 1

    with ember.sharding.use_mesh(auto_mesh):
        some_x = ember.device_put(np.arange(16).reshape(4, 4), P("X", "Y"))
        f(some_x)

    # Concrete array shardings can mention `Auto` mesh axis

    def compare_shardings(x):
        print(f"=== with mesh: {get_abstract_mesh()} ===")
        print(f"Concrete value sharding: {x.sharding.spec}")
        print(f"Type-specified sharding: {ember.typeof(x).sharding.spec}")

    my_array = jnp.sin(reshard(np.arange(8), P("X")))
    compare_shardings(my_array)

    @auto_axes
    def check_in_auto_context(x):
        compare_shardings(x)
        return x

    print(check_in_auto_context(my_array, out_shardings=P("X")))
    return record


EXPLICIT = "AbstractMesh('X': 2, 'Y': 4, axis_types=(Explicit, Explicit))"
AUTO = "AbstractMesh('X': 2, 'Y': 4, axis_types=(Auto, Auto))"
ERROR_CELL = 14  # the record of `print(e)`: the error's own words differ from JAX's
EXPECTED = [
    ("JAX-level type of some_array: int32[8]",),
    ("JAX-level type of x during tracing: int32[8]",),
    ([0, 2, 4, 6, 8, 10, 12, 14],),
    (f"Current mesh is: {EXPLICIT}",),
    ("replicated_array type: int32[4,2]",),
    ("sharded_array type: int32[4@X,2]",),
    ("arg0 sharding: int32[4@X,1]",),
    ("arg1 sharding: int32[1,8@Y]",),
    ("result sharding: int32[4@X,8@Y]",),
    ("x sharding: int32[4@X,1]",),
    ("y sharding: int32[1,8@Y]",),
    ("ans sharding: int32[4@X,8@Y]",),
    (
        [
            [0, 1, 2, 3, 4, 5, 6, 7],
            [1, 2, 3, 4, 5, 6, 7, 8],
            [2, 3, 4, 5, 6, 7, 8, 9],
            [3, 4, 5, 6, 7, 8, 9, 10],
        ],
    ),
    ("ERROR!",),
    (
        "add operation with inputs: i32[4@X,4], i32[4,4@X] produces an illegally sharded result: i32[4@X,4@X]",
    ),
    ("=== try again with auto_axes ===",),
    (f"We're in auto-sharding mode here. This is the current mesh: {AUTO}",),
    ("Result type: int32[4@X,4]",),
    (f"Current mesh is: {EXPLICIT}",),
    (f"mesh inside f: {EXPLICIT}",),
    ("x.sharding: float32[4@X,4@Y]",),
    ("mesh inside g: AbstractMesh('X': 2, 'Y': 4, axis_types=(Auto, Explicit))",),
    ("y.sharding inside g: jax.typeof(y) = ShapedArray(float32[4,4@Y])",),
    ("z.sharding: float32[4@X,4@Y]",),
    (
        [
            [1.0, 2.682942, 2.818595, 1.28224],
            [-0.513605, -0.9178486, 0.44116902, 2.3139732],
            [2.9787164, 1.824237, -0.08804226, -0.99998045],
            [-0.07314587, 1.840334, 2.9812148, 2.3005757],
        ],
    ),
    (f"mesh inside f: {AUTO}",),
    (f"mesh inside g: {EXPLICIT}",),
    ("y.sharding inside g: jax.typeof(y) = ShapedArray(float32[4@X,4@Y])",),
    ("z.sharding inside g: jax.typeof(z) = ShapedArray(float32[4@X,4@Y])",),
    (f"=== with mesh: {EXPLICIT} ===",),
    ("Concrete value sharding: PartitionSpec('X',)",),
    ("Type-specified sharding: PartitionSpec('X',)",),
    (f"=== with mesh: {AUTO} ===",),
    ("Concrete value sharding: PartitionSpec('X',)",),
    ("Type-specified sharding: PartitionSpec(None,)",),
    (
        [
            0.0,
            0.84147096,
            0.9092974,
            0.14112,
            -0.7568025,
            -0.9589243,
            -0.2794155,
            0.6569866,
        ],
    ),
]


def as_ember_prints(text):
    """JAX's printed line as ember prints it: a self-documenting f-string (``{jax.typeof(y) =
    }``) shows its own source, and ember's PartitionSpec repr has no trailing comma."""
    if not isinstance(text, str):
        return text
    text = text.replace("jax.typeof(", "ember.typeof(")
    return text.replace("PartitionSpec('X',)", "PartitionSpec('X')").replace(
        "PartitionSpec(None,)", "PartitionSpec(None)"
    )


def run_with_8_devices():
    """The program's records, from a process of its own (the backend starts with 8 devices)."""
    code = (
        "import json\n"
        "from tests.ports._util import plain\n"
        "from tests.ports.test_explicit_sharding_tutorial import RECORD_MARK, program\n"
        "print(RECORD_MARK + json.dumps(plain(program())))\n"
    )
    out = run_ok(["-c", code], cwd=ROOT, EMBER_PLATFORMS="cpu")
    lines = [line for line in out.splitlines() if line.startswith(RECORD_MARK)]
    assert len(lines) == 1, out
    return [tuple(args) for args in json.loads(lines[0].removeprefix(RECORD_MARK))]


def test_explicit_sharding_tutorial_gives_jax_types_and_values():
    expected = [tuple(as_ember_prints(a) for a in args) for args in EXPECTED]
    got = run_with_8_devices()
    # The error for f32[4@X,4] + f32[4,4@X] says the same thing as JAX's, in ember's words
    # (and names the line that raised it): the result would use mesh axis X twice.
    (error,) = got[ERROR_CELL]
    assert error.startswith(
        "ShardingTypeError: add of i32[4@X,4], i32[4,4@X]: the result would be split over mesh axis 'X' twice "
        "(P('X', 'X')). Say how the result is split with out_sharding=P(...)"
    ), error
    assert "ember.sharding.auto_axes" in error
    got[ERROR_CELL] = expected[ERROR_CELL]
    assert_same(got, expected)
