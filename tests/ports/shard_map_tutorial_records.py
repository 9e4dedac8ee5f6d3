# ruff: noqa: E501 - pinned values are long
"""What JAX 0.10.2 recorded for the cells of the tutorial "Manual parallelism with shard_map"
(ported in test_shard_map_tutorial.py, which says how the records are made), and what ember's
``print`` shows instead of the blocks JAX prints device by device."""

EXPECTED = [
    (True,),
    ("stdout: ┌──────────┐",),
    ("stdout: │ CPU 0,1  │",),
    ("stdout: ├──────────┤",),
    ("stdout: │ CPU 2,3  │",),
    ("stdout: ├──────────┤",),
    ("stdout: │ CPU 4,5  │",),
    ("stdout: ├──────────┤",),
    ("stdout: │ CPU 6,7  │",),
    ("stdout: └──────────┘",),
    (True,),
    ("a blocks:",),
    ("stdout: ┌───────────────────────┬───────────────────────┐",),
    ("stdout: │         CPU 0         │         CPU 1         │",),
    ("stdout: ├───────────────────────┼───────────────────────┤",),
    ("stdout: │         CPU 2         │         CPU 3         │",),
    ("stdout: ├───────────────────────┼───────────────────────┤",),
    ("stdout: │         CPU 4         │         CPU 5         │",),
    ("stdout: ├───────────────────────┼───────────────────────┤",),
    ("stdout: │         CPU 6         │         CPU 7         │",),
    ("stdout: └───────────────────────┴───────────────────────┘",),
    ("b blocks:",),
    ("stdout: ┌───────────┐",),
    ("stdout: │           │",),
    ("stdout: │CPU 0,2,4,6│",),
    ("stdout: │           │",),
    ("stdout: │           │",),
    ("stdout: ├───────────┤",),
    ("stdout: │           │",),
    ("stdout: │CPU 1,3,5,7│",),
    ("stdout: │           │",),
    ("stdout: │           │",),
    ("stdout: └───────────┘",),
    ("c blocks:",),
    ("stdout: ┌──────────┐",),
    ("stdout: │ CPU 0,1  │",),
    ("stdout: ├──────────┤",),
    ("stdout: │ CPU 2,3  │",),
    ("stdout: ├──────────┤",),
    ("stdout: │ CPU 4,5  │",),
    ("stdout: ├──────────┤",),
    ("stdout: │ CPU 6,7  │",),
    ("stdout: └──────────┘",),
    (True,),
    (True,),
    ((3, 12),),
    ((3, 6),),
    ([[3.0, 3.0], [3.0, 3.0], [3.0, 3.0], [3.0, 3.0]],),
    ([[3.0], [3.0], [3.0], [3.0]],),
    ([[3.0]],),
    ((12, 6),),
    ((3, 12),),
    ((3, 6),),
    (
        "On cpu:0 at mesh coordinates (i,) = (0,):\n"
        "[0. 1. 2.]\n"
        "\n"
        "On cpu:1 at mesh coordinates (i,) = (1,):\n"
        "[3. 4. 5.]\n",
    ),
    ([0.0, 2.0, 4.0, 6.0, 8.0, 10.0],),
    (
        "On cpu:0 at mesh coordinates (i,) = (0,):\n"
        "[0. 1. 2. 3. 4. 5.]\n"
        "\n"
        "On cpu:1 at mesh coordinates (i,) = (1,):\n"
        "[0. 1. 2. 3. 4. 5.]\n",
    ),
    ([0.0, 2.0, 4.0, 6.0, 8.0, 10.0],),
    (
        "On cpu:0 at mesh coordinates (i,) = (0,):\n"
        "[3. 5. 7.]\n"
        "\n"
        "On cpu:1 at mesh coordinates (i,) = (1,):\n"
        "[3. 5. 7.]\n",
    ),
    ([3.0, 5.0, 7.0],),
    ("float32[3]{V:i}",),
    ("float32[3]",),
    ([3.0, 5.0, 7.0],),
    ("float32[2,2]{V:(i,j)}",),
    ("float32[2,2]{V:i}",),
    (
        [
            [2.0, 4.0],
            [10.0, 12.0],
            [18.0, 20.0],
            [26.0, 28.0],
            [34.0, 36.0],
            [42.0, 44.0],
            [50.0, 52.0],
            [58.0, 60.0],
        ],
    ),
    (
        "shard_map applied to the function '_rem_singleton' was given out_specs which require "
        "replication which can't be statically inferred given the mesh:\n"
        "\n"
        "The mesh given has shape (2,) with corresponding axis names ('i',).\n"
        "\n"
        "out_specs is P() which implies that the corresponding output value is replicated across mesh "
        "axis 'i', but could not infer replication over any axes\n"
        "\n"
        "Check if these output values are meant to be replicated over those mesh axes. If not, consider "
        "revising the corresponding out_specs entries. If so, consider disabling the check by passing "
        "the check_vma=False argument to `jax.shard_map`.",
    ),
    ("float32[6]",),
    ("float32[6]{V:i}",),
    (None,),
    (
        "{ lambda ; a:f32[6@i] b:f32[3]. let\n"
        "    c:f32[6@i] = shard_map[\n"
        "      check_vma=True\n"
        "      in_specs=(P('i',), P())\n"
        "      jaxpr={ lambda ; d:f32[3]{V:i} e:f32[3]. let\n"
        "          f:f32[3]{V:i} = pvary[axes=('i',)] e\n"
        "          g:f32[3]{V:i} = mul d f\n"
        "        in (g,) }\n"
        "      mesh=AbstractMesh('i': 2, axis_types=(Explicit,), device_kind=cpu, num_cores=None, platform=cpu)\n"
        "      newly_manual_axes=frozenset({'i'})\n"
        "      out_specs=(P('i',),)\n"
        "    ] a b\n"
        "  in (c,) }",
    ),
    (
        "in_specs passed to shard_map: P('i',) does not match the specs of the input: P(None,) for arg: float32[6]. `in_specs` is an optional argument so you can omit specifying it and shard_map will infer the in_specs from the arguments. If you want to reshard your inputs, you can use `jax.reshard` on the arguments and then pass those args to shard_map.",
    ),
    (([0.0, 1.0, 2.0, 3.0, 4.0, 5.0], [0.0, 1.0, 2.0, 0.0, 1.0, 2.0]),),
    (
        "BEFORE:\n",
        "On cpu:0 at mesh coordinates (i,) = (0,):\n"
        "[3 1 4 1]\n"
        "\n"
        "On cpu:1 at mesh coordinates (i,) = (1,):\n"
        "[5 9 2 6]\n"
        "\n"
        "On cpu:2 at mesh coordinates (i,) = (2,):\n"
        "[5 3 5 8]\n"
        "\n"
        "On cpu:3 at mesh coordinates (i,) = (3,):\n"
        "[9 7 1 2]\n",
    ),
    (
        "AFTER:\n",
        "On cpu:0 at mesh coordinates (i,) = (0,):\n"
        "[22 20 12 17]\n"
        "\n"
        "On cpu:1 at mesh coordinates (i,) = (1,):\n"
        "[22 20 12 17]\n"
        "\n"
        "On cpu:2 at mesh coordinates (i,) = (2,):\n"
        "[22 20 12 17]\n"
        "\n"
        "On cpu:3 at mesh coordinates (i,) = (3,):\n"
        "[22 20 12 17]\n",
    ),
    ("FINAL RESULT:\n", [22, 20, 12, 17]),
    (
        "BEFORE:\n",
        "On cpu:0 at mesh coordinates (i, j,) = (0, 0):\n"
        "[[0 1]\n"
        " [4 5]]\n"
        "\n"
        "On cpu:1 at mesh coordinates (i, j,) = (0, 1):\n"
        "[[2 3]\n"
        " [6 7]]\n"
        "\n"
        "On cpu:2 at mesh coordinates (i, j,) = (1, 0):\n"
        "[[ 8  9]\n"
        " [12 13]]\n"
        "\n"
        "On cpu:3 at mesh coordinates (i, j,) = (1, 1):\n"
        "[[10 11]\n"
        " [14 15]]\n",
    ),
    (
        "AFTER:\n",
        "On cpu:0 at mesh coordinates (i, j,) = (0, 0):\n"
        "[[ 8 10]\n"
        " [16 18]]\n"
        "\n"
        "On cpu:1 at mesh coordinates (i, j,) = (0, 1):\n"
        "[[12 14]\n"
        " [20 22]]\n"
        "\n"
        "On cpu:2 at mesh coordinates (i, j,) = (1, 0):\n"
        "[[ 8 10]\n"
        " [16 18]]\n"
        "\n"
        "On cpu:3 at mesh coordinates (i, j,) = (1, 1):\n"
        "[[12 14]\n"
        " [20 22]]\n",
    ),
    ("FINAL RESULT:\n", [[8, 10, 12, 14], [16, 18, 20, 22]]),
    (
        "BEFORE:\n",
        "On cpu:0 at mesh coordinates (i, j,) = (0, 0):\n"
        "[[0 1]\n"
        " [4 5]]\n"
        "\n"
        "On cpu:1 at mesh coordinates (i, j,) = (0, 1):\n"
        "[[2 3]\n"
        " [6 7]]\n"
        "\n"
        "On cpu:2 at mesh coordinates (i, j,) = (1, 0):\n"
        "[[ 8  9]\n"
        " [12 13]]\n"
        "\n"
        "On cpu:3 at mesh coordinates (i, j,) = (1, 1):\n"
        "[[10 11]\n"
        " [14 15]]\n",
    ),
    (
        "AFTER:\n",
        "On cpu:0 at mesh coordinates (i, j,) = (0, 0):\n"
        "[[20 24]\n"
        " [36 40]]\n"
        "\n"
        "On cpu:1 at mesh coordinates (i, j,) = (0, 1):\n"
        "[[20 24]\n"
        " [36 40]]\n"
        "\n"
        "On cpu:2 at mesh coordinates (i, j,) = (1, 0):\n"
        "[[20 24]\n"
        " [36 40]]\n"
        "\n"
        "On cpu:3 at mesh coordinates (i, j,) = (1, 1):\n"
        "[[20 24]\n"
        " [36 40]]\n",
    ),
    ("FINAL RESULT:\n", [[20, 24], [36, 40]]),
    (
        "BEFORE:\n",
        "On cpu:0 at mesh coordinates (i,) = (0,):\n"
        "[3]\n"
        "\n"
        "On cpu:1 at mesh coordinates (i,) = (1,):\n"
        "[9]\n"
        "\n"
        "On cpu:2 at mesh coordinates (i,) = (2,):\n"
        "[5]\n"
        "\n"
        "On cpu:3 at mesh coordinates (i,) = (3,):\n"
        "[2]\n",
    ),
    (
        "AFTER:\n",
        "On cpu:0 at mesh coordinates (i,) = (0,):\n"
        "[3 9 5 2]\n"
        "\n"
        "On cpu:1 at mesh coordinates (i,) = (1,):\n"
        "[3 9 5 2]\n"
        "\n"
        "On cpu:2 at mesh coordinates (i,) = (2,):\n"
        "[3 9 5 2]\n"
        "\n"
        "On cpu:3 at mesh coordinates (i,) = (3,):\n"
        "[3 9 5 2]\n",
    ),
    ("FINAL RESULT:\n", [3, 9, 5, 2, 3, 9, 5, 2, 3, 9, 5, 2, 3, 9, 5, 2]),
    (
        "BEFORE:\n",
        "On cpu:0 at mesh coordinates (i,) = (0,):\n"
        "[3]\n"
        "\n"
        "On cpu:1 at mesh coordinates (i,) = (1,):\n"
        "[9]\n"
        "\n"
        "On cpu:2 at mesh coordinates (i,) = (2,):\n"
        "[5]\n"
        "\n"
        "On cpu:3 at mesh coordinates (i,) = (3,):\n"
        "[2]\n",
    ),
    (
        "AFTER:\n",
        "On cpu:0 at mesh coordinates (i,) = (0,):\n"
        "[[3]\n"
        " [9]\n"
        " [5]\n"
        " [2]]\n"
        "\n"
        "On cpu:1 at mesh coordinates (i,) = (1,):\n"
        "[[3]\n"
        " [9]\n"
        " [5]\n"
        " [2]]\n"
        "\n"
        "On cpu:2 at mesh coordinates (i,) = (2,):\n"
        "[[3]\n"
        " [9]\n"
        " [5]\n"
        " [2]]\n"
        "\n"
        "On cpu:3 at mesh coordinates (i,) = (3,):\n"
        "[[3]\n"
        " [9]\n"
        " [5]\n"
        " [2]]\n",
    ),
    (
        "FINAL RESULT:\n",
        [[3], [9], [5], [2], [3], [9], [5], [2], [3], [9], [5], [2], [3], [9], [5], [2]],
    ),
    (
        "BEFORE:\n",
        "On cpu:0 at mesh coordinates (i,) = (0,):\n"
        "[3 1 4 1]\n"
        "\n"
        "On cpu:1 at mesh coordinates (i,) = (1,):\n"
        "[5 9 2 6]\n"
        "\n"
        "On cpu:2 at mesh coordinates (i,) = (2,):\n"
        "[5 3 5 8]\n"
        "\n"
        "On cpu:3 at mesh coordinates (i,) = (3,):\n"
        "[9 7 1 2]\n",
    ),
    (
        "AFTER:\n",
        "On cpu:0 at mesh coordinates (i,) = (0,):\n"
        "[22]\n"
        "\n"
        "On cpu:1 at mesh coordinates (i,) = (1,):\n"
        "[20]\n"
        "\n"
        "On cpu:2 at mesh coordinates (i,) = (2,):\n"
        "[12]\n"
        "\n"
        "On cpu:3 at mesh coordinates (i,) = (3,):\n"
        "[17]\n",
    ),
    ("FINAL RESULT:\n", [22, 20, 12, 17]),
    (
        "BEFORE:\n",
        "On cpu:0 at mesh coordinates (i,) = (0,):\n"
        "[0 1]\n"
        "\n"
        "On cpu:1 at mesh coordinates (i,) = (1,):\n"
        "[2 3]\n"
        "\n"
        "On cpu:2 at mesh coordinates (i,) = (2,):\n"
        "[4 5]\n"
        "\n"
        "On cpu:3 at mesh coordinates (i,) = (3,):\n"
        "[6 7]\n",
    ),
    (
        "AFTER:\n",
        "On cpu:0 at mesh coordinates (i,) = (0,):\n"
        "[6 7]\n"
        "\n"
        "On cpu:1 at mesh coordinates (i,) = (1,):\n"
        "[0 1]\n"
        "\n"
        "On cpu:2 at mesh coordinates (i,) = (2,):\n"
        "[2 3]\n"
        "\n"
        "On cpu:3 at mesh coordinates (i,) = (3,):\n"
        "[4 5]\n",
    ),
    ("FINAL RESULT:\n", [6, 7, 0, 1, 2, 3, 4, 5]),
    (
        "BEFORE:\n",
        "On cpu:0 at mesh coordinates (i,) = (0,):\n"
        "[3 1 4 1]\n"
        "\n"
        "On cpu:1 at mesh coordinates (i,) = (1,):\n"
        "[5 9 2 6]\n"
        "\n"
        "On cpu:2 at mesh coordinates (i,) = (2,):\n"
        "[5 3 5 8]\n"
        "\n"
        "On cpu:3 at mesh coordinates (i,) = (3,):\n"
        "[9 7 1 2]\n",
    ),
    (
        "AFTER:\n",
        "On cpu:0 at mesh coordinates (i,) = (0,):\n"
        "[22]\n"
        "\n"
        "On cpu:1 at mesh coordinates (i,) = (1,):\n"
        "[20]\n"
        "\n"
        "On cpu:2 at mesh coordinates (i,) = (2,):\n"
        "[12]\n"
        "\n"
        "On cpu:3 at mesh coordinates (i,) = (3,):\n"
        "[17]\n",
    ),
    ("FINAL RESULT:\n", [22, 20, 12, 17]),
    (
        "BEFORE:\n",
        "On cpu:0 at mesh coordinates (i,) = (0,):\n"
        "[3 1 4 1]\n"
        "\n"
        "On cpu:1 at mesh coordinates (i,) = (1,):\n"
        "[5 9 2 6]\n"
        "\n"
        "On cpu:2 at mesh coordinates (i,) = (2,):\n"
        "[5 3 5 8]\n"
        "\n"
        "On cpu:3 at mesh coordinates (i,) = (3,):\n"
        "[9 7 1 2]\n",
    ),
    (
        "AFTER:\n",
        "On cpu:0 at mesh coordinates (i,) = (0,):\n"
        "[3 5 5 9]\n"
        "\n"
        "On cpu:1 at mesh coordinates (i,) = (1,):\n"
        "[1 9 3 7]\n"
        "\n"
        "On cpu:2 at mesh coordinates (i,) = (2,):\n"
        "[4 2 5 1]\n"
        "\n"
        "On cpu:3 at mesh coordinates (i,) = (3,):\n"
        "[1 6 8 2]\n",
    ),
    ("FINAL RESULT:\n", [3, 5, 5, 9, 1, 9, 3, 7, 4, 2, 5, 1, 1, 6, 8, 2]),
    (True,),
    (True,),
    (True,),
    (True,),
    (True,),
    (True,),
    (11.920299530029297,),
    (11.920299530029297,),
    (True,),
    (11.920297622680664,),
    (11.920297622680664,),
    (True,),
    (11.920297622680664,),
    (11.920297622680664,),
    (True,),
    ("2 stages, 2 layer(s) per stage, 4 pipelined layers total",),
    ("8 examples per microbatch, 4 microbatches total",),
    (11.92029857635498,),
]


# What ember's print shows for each block JAX prints device by device, in order.
EMBER_BLOCK_PRINTS = [
    "JitTracer(float32[3]{V:i})",
    "JitTracer(float32[6])",
    "JitTracer(float32[3])",
    "JitTracer(int32[4]{V:i})",
    "JitTracer(int32[4])",
    "JitTracer(int32[2,2]{V:(i,j)})",
    "JitTracer(int32[2,2]{V:j})",
    "JitTracer(int32[2,2]{V:(i,j)})",
    "JitTracer(int32[2,2])",
    "JitTracer(int32[1]{V:i})",
    "JitTracer(int32[4]{V:i})",
    "JitTracer(int32[1]{V:i})",
    "JitTracer(int32[4,1]{V:i})",
    "JitTracer(int32[4]{V:i})",
    "JitTracer(int32[1]{V:i})",
    "JitTracer(int32[2]{V:i})",
    "JitTracer(int32[2]{V:i})",
    "JitTracer(int32[4]{V:i})",
    "JitTracer(int32[1]{V:i})",
    "JitTracer(int32[4]{V:i})",
    "JitTracer(int32[4]{V:i})",
]
CHECK_REP_ERROR = 65  # JAX's record of the replication error the page shows on purpose
