"""Port of JAX's tutorial "Pseudorandom numbers" (docs/random-numbers.md).

The page's code cells, in order, with the imports changed to ember; ``print`` records its
arguments, compared with what JAX 0.10.2 gave for the same cells: ember's threefry keys give
JAX's random numbers bit for bit. (The cells about NumPy's global state are NumPy only and are
kept, since the page compares them with ember's keys.)
"""

import numpy as np

import ember
from tests.ports._util import assert_same


def program():
    record = []

    def print(*args):  # the page's prints become records
        record.append(args)

    import numpy as np

    np.random.seed(0)

    print(np.random.random())
    print(np.random.random())
    print(np.random.random())

    np.random.seed(0)
    print(np.random.uniform(size=3))

    np.random.seed(0)
    print("individually:", np.stack([np.random.uniform() for _ in range(3)]))

    np.random.seed(0)
    print("all at once: ", np.random.uniform(size=3))

    from ember import random

    key = random.key(42)
    print(random.key_data(key))  # (the page prints the key itself)

    print(random.normal(key))
    print(random.normal(key))

    for i in range(3):
        new_key, subkey = random.split(key)
        del key  # The old key is consumed by split() -- we must never use it again.

        val = random.normal(subkey)
        del subkey  # The subkey is consumed by normal().

        print(f"draw {i}: {val}")
        key = new_key  # new_key is safe to use in the next iteration.

    key, subkey = random.split(key)

    key, *forty_two_subkeys = random.split(key, num=43)
    print(random.key_data(key), random.key_data(forty_two_subkeys[-1]))

    key = random.key(42)
    subkeys = random.split(key, 3)
    sequence = np.stack([random.normal(subkey) for subkey in subkeys])
    print("individually:", sequence)

    key = random.key(42)
    print("all at once: ", random.normal(key, shape=(3,)))

    import ember

    print("vectorized:", ember.vmap(random.normal)(subkeys))
    return record


EXPECTED = [
    (0.5488135039273248,),
    (0.7151893663724195,),
    (0.6027633760716439,),
    ([0.5488135039273248, 0.7151893663724195, 0.6027633760716439],),
    ("individually:", [0.5488135039273248, 0.7151893663724195, 0.6027633760716439]),
    ("all at once: ", [0.5488135039273248, 0.7151893663724195, 0.6027633760716439]),
    ([0, 42],),
    (-0.02830461598932743,),
    (-0.02830461598932743,),
    ("draw 0: 0.6057640314102173",),
    ("draw 1: -0.21089035272598267",),
    ("draw 2: -0.3948981463909149",),
    ([827075891, 2691092366], [4148119864, 401989646]),
    ("individually:", [0.07592553645372391, 0.6057640314102173, 0.4323064982891083]),
    ("all at once: ", [-0.02830461598932743, 0.4671318531036377, 0.2957029640674591]),
    ("vectorized:", [0.07592553645372391, 0.6057640314102173, 0.4323064982891083]),
]


def test_random_numbers_tutorial_gives_jax_numbers_bit_for_bit():
    got = program()
    # The keys and random bits are JAX's exactly on every backend. The normals are too on XLA;
    # the NumPy reference backend's erf_inv is correctly rounded where XLA's float32 polynomial
    # may be an ulp off, so there they agree to an ulp.
    rtol = 0 if ember.default_backend() == "cpu" else 2.5e-7
    assert_same(got[6], EXPECTED[6], rtol=0, atol=0)
    assert_same(got[12], EXPECTED[12], rtol=0, atol=0)
    assert_same(got, EXPECTED, rtol=rtol, atol=0)
    assert np.asarray(got[-1][1]).dtype == np.float32
