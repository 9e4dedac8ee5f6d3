# ruff: noqa: E501, I001, F811, UP034 - the ported program is kept as written (its imports and redefinitions too); pinned values are long
"""Port of JAX's tutorial "Custom derivative rules for JAX-transformable Python functions"
(docs/notebooks/Custom_derivative_rules_for_Python_code.md).

The page's code cells, in order, with ``jax`` changed to ``ember`` in the imports. Cells whose
output the page shows and that end in a bare expression print it, and ``print`` records its
arguments (the functions' own ``print('called f!')`` side effects too, so the test checks
when and how often ember runs them), compared with what JAX 0.10.2 gave for the same cells.
The two ``plt.plot`` cells record every 100th plotted value instead; the cell that shows an
error on purpose records the exception's type name, and its message is checked apart.
"""

import ember.errors
from tests.ports._util import Recorder, assert_same


def program():
    recorder = Recorder()
    print, shows_error = recorder.print, recorder.shows_error

    import ember.numpy as jnp
    from ember import custom_jvp

    @custom_jvp
    def f(x, y):
        return jnp.sin(x) * y

    @f.defjvp
    def f_jvp(primals, tangents):
        x, y = primals
        x_dot, y_dot = tangents
        primal_out = f(x, y)
        tangent_out = jnp.cos(x) * x_dot * y + jnp.sin(x) * y_dot
        return primal_out, tangent_out

    from ember import jvp, grad

    print(f(2.0, 3.0))
    y, y_dot = jvp(f, (2.0, 3.0), (1.0, 0.0))
    print(y)
    print(y_dot)
    print(grad(f)(2.0, 3.0))

    # Equivalent alternative using the defjvps convenience wrapper

    @custom_jvp
    def f(x, y):
        return jnp.sin(x) * y

    f.defjvps(
        lambda x_dot, primal_out, x, y: jnp.cos(x) * x_dot * y,
        lambda y_dot, primal_out, x, y: jnp.sin(x) * y_dot,
    )

    print(f(2.0, 3.0))
    y, y_dot = jvp(f, (2.0, 3.0), (1.0, 0.0))
    print(y)
    print(y_dot)
    print(grad(f)(2.0, 3.0))

    from ember import custom_vjp

    @custom_vjp
    def f(x, y):
        return jnp.sin(x) * y

    def f_fwd(x, y):
        # Returns primal output and residuals to be used in backward pass by f_bwd.
        return f(x, y), (jnp.cos(x), jnp.sin(x), y)

    def f_bwd(res, g):
        cos_x, sin_x, y = res  # Gets residuals computed in f_fwd
        return (cos_x * g * y, sin_x * g)

    f.defvjp(f_fwd, f_bwd)

    print(grad(f)(2.0, 3.0))

    def log1pexp(x):
        return jnp.log(1.0 + jnp.exp(x))

    print(log1pexp(3.0))  # (the cell shows its value)

    from ember import jit, grad, vmap

    print(jit(log1pexp)(3.0))
    print(jit(grad(log1pexp))(3.0))
    print(vmap(jit(grad(log1pexp)))(jnp.arange(3.0)))

    print(grad(log1pexp)(100.0))

    from ember import make_jaxpr

    print(make_jaxpr(grad(log1pexp))(100.0))  # (the cell shows its value)

    from ember import custom_jvp

    @custom_jvp
    def log1pexp(x):
        return jnp.log(1.0 + jnp.exp(x))

    @log1pexp.defjvp
    def log1pexp_jvp(primals, tangents):
        (x,) = primals
        (x_dot,) = tangents
        ans = log1pexp(x)
        ans_dot = (1 - 1 / (1 + jnp.exp(x))) * x_dot
        return ans, ans_dot

    print(grad(log1pexp)(100.0))

    print(jit(log1pexp)(3.0))
    print(jit(grad(log1pexp))(3.0))
    print(vmap(jit(grad(log1pexp)))(jnp.arange(3.0)))

    @custom_jvp
    def log1pexp(x):
        return jnp.log(1.0 + jnp.exp(x))

    log1pexp.defjvps(lambda t, ans, x: (1 - 1 / (1 + jnp.exp(x))) * t)

    print(grad(log1pexp)(100.0))
    print(jit(log1pexp)(3.0))
    print(jit(grad(log1pexp))(3.0))
    print(vmap(jit(grad(log1pexp)))(jnp.arange(3.0)))

    def f(x):
        return x / (1 + jnp.sqrt(x))

    print(grad(f)(0.0))

    @custom_jvp
    def f(x):
        return x / (1 + jnp.sqrt(x))

    @f.defjvp
    def f_jvp(primals, tangents):
        (x,) = primals
        (x_dot,) = tangents
        ans = f(x)
        ans_dot = ((jnp.sqrt(x) + 2) / (2 * (jnp.sqrt(x) + 1) ** 2)) * x_dot
        return ans, ans_dot

    print(grad(f)(0.0))

    @custom_jvp
    def f(x):
        return x / (1 + jnp.sqrt(x))

    f.defjvps(lambda t, ans, x: ((jnp.sqrt(x) + 2) / (2 * (jnp.sqrt(x) + 1) ** 2)) * t)

    print(grad(f)(0.0))

    from functools import partial
    from ember import custom_vjp

    @custom_vjp
    def clip_gradient(lo, hi, x):
        return x  # identity function

    def clip_gradient_fwd(lo, hi, x):
        return x, (lo, hi)  # save bounds as residuals

    def clip_gradient_bwd(res, g):
        lo, hi = res
        return (
            None,
            None,
            jnp.clip(g, lo, hi),
        )  # use None to indicate zero cotangents for lo and hi

    clip_gradient.defvjp(clip_gradient_fwd, clip_gradient_bwd)

    # (import matplotlib.pyplot as plt: the plots are recorded, every 100th point)
    from ember import vmap

    t = jnp.linspace(0, 10, 1000)

    print(jnp.sin(t)[::100])  # plt.plot(jnp.sin(t))
    print(vmap(grad(jnp.sin))(t)[::100])  # plt.plot(vmap(grad(jnp.sin))(t))

    def clip_sin(x):
        x = clip_gradient(-0.75, 0.75, x)
        return jnp.sin(x)

    print(clip_sin(t)[::100])  # plt.plot(clip_sin(t))
    print(vmap(grad(clip_sin))(t)[::100])  # plt.plot(vmap(grad(clip_sin))(t))

    from ember.lax import while_loop

    def fixed_point(f, a, x_guess):
        def cond_fun(carry):
            x_prev, x = carry
            return jnp.abs(x_prev - x) > 1e-6

        def body_fun(carry):
            _, x = carry
            return x, f(a, x)

        _, x_star = while_loop(cond_fun, body_fun, (x_guess, f(a, x_guess)))
        return x_star

    def newton_sqrt(a):
        update = lambda a, x: 0.5 * (x + a / x)
        return fixed_point(update, a, a)

    print(newton_sqrt(2.0))

    print(jit(vmap(newton_sqrt))(jnp.array([1.0, 2.0, 3.0, 4.0])))

    from ember import vjp

    @partial(custom_vjp, nondiff_argnums=(0,))
    def fixed_point(f, a, x_guess):
        def cond_fun(carry):
            x_prev, x = carry
            return jnp.abs(x_prev - x) > 1e-6

        def body_fun(carry):
            _, x = carry
            return x, f(a, x)

        _, x_star = while_loop(cond_fun, body_fun, (x_guess, f(a, x_guess)))
        return x_star

    def fixed_point_fwd(f, a, x_init):
        x_star = fixed_point(f, a, x_init)
        return x_star, (a, x_star)

    def fixed_point_rev(f, res, x_star_bar):
        a, x_star = res
        _, vjp_a = vjp(lambda a: f(a, x_star), a)
        (a_bar,) = vjp_a(fixed_point(partial(rev_iter, f), (a, x_star, x_star_bar), x_star_bar))
        return a_bar, jnp.zeros_like(x_star)

    def rev_iter(f, packed, u):
        a, x_star, x_star_bar = packed
        _, vjp_x = vjp(lambda x: f(a, x), x_star)
        return x_star_bar + vjp_x(u)[0]

    fixed_point.defvjp(fixed_point_fwd, fixed_point_rev)

    print(newton_sqrt(2.0))

    print(grad(newton_sqrt)(2.0))
    print(grad(grad(newton_sqrt))(2.0))

    print(grad(jnp.sqrt)(2.0))
    print(grad(grad(jnp.sqrt))(2.0))

    from ember import custom_jvp
    import ember.numpy as jnp

    # f :: a -> b
    @custom_jvp
    def f(x):
        return jnp.sin(x)

    # f_jvp :: (a, T a) -> (b, T b)
    def f_jvp(primals, tangents):
        (x,) = primals
        (t,) = tangents
        return f(x), jnp.cos(x) * t

    f.defjvp(f_jvp)

    from ember import jvp

    print(f(3.0))

    y, y_dot = jvp(f, (3.0,), (1.0,))
    print(y)
    print(y_dot)

    from ember import grad

    print(grad(f)(3.0))
    print(grad(grad(f))(3.0))

    @custom_jvp
    def f(x, y):
        return x**2 * y

    @f.defjvp
    def f_jvp(primals, tangents):
        x, y = primals
        x_dot, y_dot = tangents
        primal_out = f(x, y)
        tangent_out = 2 * x * y * x_dot + x**2 * y_dot
        return primal_out, tangent_out

    print(grad(f)(2.0, 3.0))

    @custom_jvp
    def f(x):
        return jnp.sin(x)

    f.defjvps(lambda t, ans, x: jnp.cos(x) * t)

    print(grad(f)(3.0))

    @custom_jvp
    def f(x, y):
        return x**2 * y

    f.defjvps(
        lambda x_dot, primal_out, x, y: 2 * x * y * x_dot,
        lambda y_dot, primal_out, x, y: x**2 * y_dot,
    )

    print(grad(f)(2.0, 3.0))
    print(grad(f, 0)(2.0, 3.0))  # same as above
    print(grad(f, 1)(2.0, 3.0))

    @custom_jvp
    def f(x, y):
        return x**2 * y

    f.defjvps(lambda x_dot, primal_out, x, y: 2 * x * y * x_dot, None)

    print(grad(f)(2.0, 3.0))
    print(grad(f, 0)(2.0, 3.0))  # same as above
    print(grad(f, 1)(2.0, 3.0))

    @custom_jvp
    def f(x):
        print("called f!")  # a harmless side-effect
        return jnp.sin(x)

    @f.defjvp
    def f_jvp(primals, tangents):
        print("called f_jvp!")  # a harmless side-effect
        (x,) = primals
        (t,) = tangents
        return f(x), jnp.cos(x) * t

    from ember import vmap, jit

    print(f(3.0))

    print(vmap(f)(jnp.arange(3.0)))
    print(jit(f)(3.0))

    y, y_dot = jvp(f, (3.0,), (1.0,))
    print(y_dot)

    print(grad(f)(3.0))

    print(grad(grad(f))(3.0))  # (the cell shows its value)

    @custom_jvp
    def f(x):
        if x > 0:
            return jnp.sin(x)
        else:
            return jnp.cos(x)

    @f.defjvp
    def f_jvp(primals, tangents):
        (x,) = primals
        (x_dot,) = tangents
        ans = f(x)
        if x > 0:
            return ans, 2 * x_dot
        else:
            return ans, 3 * x_dot

    print(grad(f)(1.0))
    print(grad(f)(-1.0))

    from ember import custom_vjp
    import ember.numpy as jnp

    # f :: a -> b
    @custom_vjp
    def f(x):
        return jnp.sin(x)

    # f_fwd :: a -> (b, c)
    def f_fwd(x):
        return f(x), jnp.cos(x)

    # f_bwd :: (c, CT b) -> CT a
    def f_bwd(cos_x, y_bar):
        return (cos_x * y_bar,)

    f.defvjp(f_fwd, f_bwd)

    from ember import grad

    print(f(3.0))
    print(grad(f)(3.0))

    from ember import custom_vjp

    @custom_vjp
    def f(x, y):
        return jnp.sin(x) * y

    def f_fwd(x, y):
        return f(x, y), (jnp.cos(x), jnp.sin(x), y)

    def f_bwd(res, g):
        cos_x, sin_x, y = res
        return (cos_x * g * y, sin_x * g)

    f.defvjp(f_fwd, f_bwd)

    print(grad(f)(2.0, 3.0))

    @custom_vjp
    def f(x):
        print("called f!")
        return jnp.sin(x)

    def f_fwd(x):
        print("called f_fwd!")
        return f(x), jnp.cos(x)

    def f_bwd(cos_x, y_bar):
        print("called f_bwd!")
        return (cos_x * y_bar,)

    f.defvjp(f_fwd, f_bwd)

    print(f(3.0))

    print(grad(f)(3.0))

    y, f_vjp = vjp(f, 3.0)
    print(y)

    print(f_vjp(1.0))

    from ember import jvp

    try:
        jvp(f, (3.0,), (1.0,))
    except TypeError as e:
        print("ERROR!")  # ('ERROR! {}'.format(e): the message is checked apart)
        shows_error(e)

    import pdb

    @custom_vjp
    def debug(x):
        return x  # acts like identity

    def debug_fwd(x):
        return x, x

    def debug_bwd(x, g):
        pdb.set_trace()
        return g

    debug.defvjp(debug_fwd, debug_bwd)

    def foo(x):
        y = x**2
        y = debug(y)  # insert pdb in corresponding backward pass step
        return jnp.sin(y)

    from collections import namedtuple

    Point = namedtuple("Point", ["x", "y"])

    @custom_jvp
    def f(pt):
        x, y = pt.x, pt.y
        return {"a": x**2, "b": (jnp.sin(x), jnp.cos(y))}

    @f.defjvp
    def f_jvp(primals, tangents):
        (pt,) = primals
        (pt_dot,) = tangents
        ans = f(pt)
        ans_dot = {
            "a": 2 * pt.x * pt_dot.x,
            "b": (jnp.cos(pt.x) * pt_dot.x, -jnp.sin(pt.y) * pt_dot.y),
        }
        return ans, ans_dot

    def fun(pt):
        dct = f(pt)
        return dct["a"] + dct["b"][0]

    pt = Point(1.0, 2.0)

    print(f(pt))

    print(grad(fun)(pt))

    @custom_vjp
    def f(pt):
        x, y = pt.x, pt.y
        return {"a": x**2, "b": (jnp.sin(x), jnp.cos(y))}

    def f_fwd(pt):
        return f(pt), pt

    def f_bwd(pt, g):
        a_bar, (b0_bar, b1_bar) = g["a"], g["b"]
        x_bar = 2 * pt.x * a_bar + jnp.cos(pt.x) * b0_bar
        y_bar = -jnp.sin(pt.y) * b1_bar
        return (Point(x_bar, y_bar),)

    f.defvjp(f_fwd, f_bwd)

    def fun(pt):
        dct = f(pt)
        return dct["a"] + dct["b"][0]

    pt = Point(1.0, 2.0)

    print(f(pt))

    print(grad(fun)(pt))

    from functools import partial

    @partial(custom_jvp, nondiff_argnums=(0,))
    def app(f, x):
        return f(x)

    @app.defjvp
    def app_jvp(f, primals, tangents):
        (x,) = primals
        (x_dot,) = tangents
        return f(x), 2.0 * x_dot

    print(app(lambda x: x**3, 3.0))

    print(grad(app, 1)(lambda x: x**3, 3.0))

    @partial(custom_jvp, nondiff_argnums=(0, 2))
    def app2(f, x, g):
        return f(g((x)))

    @app2.defjvp
    def app2_jvp(f, g, primals, tangents):
        (x,) = primals
        (x_dot,) = tangents
        return f(g(x)), 3.0 * x_dot

    print(app2(lambda x: x**3, 3.0, lambda y: 5 * y))

    print(grad(app2, 1)(lambda x: x**3, 3.0, lambda y: 5 * y))

    @partial(custom_vjp, nondiff_argnums=(0,))
    def app(f, x):
        return f(x)

    def app_fwd(f, x):
        return f(x), x

    def app_bwd(f, x, g):
        return (5 * g,)

    app.defvjp(app_fwd, app_bwd)

    print(app(lambda x: x**2, 4.0))

    print(grad(app, 1)(lambda x: x**2, 4.0))
    return recorder


EXPECTED = [
    (2.7278921604156494,),
    (2.7278921604156494,),
    (-1.2484405040740967,),
    (-1.2484405040740967,),
    (2.7278921604156494,),
    (2.7278921604156494,),
    (-1.2484405040740967,),
    (-1.2484405040740967,),
    (-1.2484405040740967,),
    (3.0485873222351074,),
    (3.0485873222351074,),
    (0.9525741338729858,),
    ([0.5, 0.7310585975646973, 0.8807970881462097],),
    (float("nan"),),
    (
        "{ lambda ; a:f32[]. let\n"
        "    b:f32[] = exp a\n"
        "    c:f32[] = add 1.0:f32[] b\n"
        "    _:f32[] = log c\n"
        "    d:f32[] = div 1.0:f32[] c\n"
        "    e:f32[] = mul d b\n"
        "  in (e,) }",
    ),
    (1.0,),
    (3.0485873222351074,),
    (0.9525741338729858,),
    ([0.5, 0.7310585975646973, 0.8807970881462097],),
    (1.0,),
    (3.0485873222351074,),
    (0.9525741338729858,),
    ([0.5, 0.7310585975646973, 0.8807970881462097],),
    (float("nan"),),
    (1.0,),
    (1.0,),
    (
        [
            0.0,
            0.8420113921165466,
            0.9084624648094177,
            0.1381465494632721,
            -0.7594135999679565,
            -0.9574925899505615,
            -0.27364394068717957,
            0.6622527837753296,
            0.9881613850593567,
            0.4038940370082855,
        ],
    ),
    (
        [
            1.0,
            0.5394597053527832,
            -0.41796642541885376,
            -0.9904118180274963,
            -0.6506081819534302,
            0.2884579300880432,
            0.9618310928344727,
            0.7492805123329163,
            -0.15341806411743164,
            -0.9148057699203491,
        ],
    ),
    (
        [
            0.0,
            0.8420113921165466,
            0.9084624648094177,
            0.1381465494632721,
            -0.7594135999679565,
            -0.9574925899505615,
            -0.27364394068717957,
            0.6622527837753296,
            0.9881613850593567,
            0.4038940370082855,
        ],
    ),
    (
        [
            0.75,
            0.5394597053527832,
            -0.41796642541885376,
            -0.75,
            -0.6506081819534302,
            0.2884579300880432,
            0.75,
            0.7492805123329163,
            -0.15341806411743164,
            -0.75,
        ],
    ),
    (1.4142135381698608,),
    ([1.0, 1.4142135381698608, 1.732050895690918, 2.0],),
    (1.4142135381698608,),
    (0.3535533845424652,),
    (-0.0883883461356163,),
    (0.3535533845424652,),
    (-0.0883883535861969,),
    (0.14112000167369843,),
    (0.14112000167369843,),
    (-0.9899924993515015,),
    (-0.9899924993515015,),
    (-0.14112000167369843,),
    (12.0,),
    (-0.9899924993515015,),
    (12.0,),
    (12.0,),
    (4.0,),
    (12.0,),
    (12.0,),
    (0.0,),
    ("called f!",),
    (0.14112000167369843,),
    ("called f!",),
    ([0.0, 0.8414709568023682, 0.9092974066734314],),
    ("called f!",),
    (0.14112000167369843,),
    ("called f_jvp!",),
    ("called f!",),
    (-0.9899924993515015,),
    ("called f_jvp!",),
    ("called f!",),
    (-0.9899924993515015,),
    ("called f_jvp!",),
    ("called f_jvp!",),
    ("called f!",),
    (-0.14112000167369843,),
    (2.0,),
    (3.0,),
    (0.14112000167369843,),
    (-0.9899924993515015,),
    (-1.2484405040740967,),
    ("called f!",),
    (0.14112000167369843,),
    ("called f_fwd!",),
    ("called f!",),
    ("called f_bwd!",),
    (-0.9899924993515015,),
    ("called f_fwd!",),
    ("called f!",),
    (0.14112000167369843,),
    ("called f_bwd!",),
    ((-0.9899924993515015,),),
    ("called f_fwd!",),
    ("called f!",),
    ("ERROR!",),
    ("TypeError",),
    ({"a": 1.0, "b": (0.8414709568023682, -0.416146844625473)},),
    ((2.540302276611328, 0.0),),
    ({"a": 1.0, "b": (0.8414709568023682, -0.416146844625473)},),
    ((2.540302276611328, -0.0),),
    (27.0,),
    (2.0,),
    (3375.0,),
    (3.0,),
    (16.0,),
    (5.0,),
]

JAXPR = 14  # the record of make_jaxpr(grad(log1pexp))(100.)
ERROR = 85  # the record of the error that jvp of a custom_vjp function shows
# ember's jaxpr for grad(log1pexp): the same computation as JAX's, in ember's words (JAX drops
# the unused log's name to `_` and folds the cotangent's multiplication by 1).
LOG1PEXP_GRAD_JAXPR = "{ lambda ; a:f32[]. let\n    b:f32[] = exp a\n    c:f32[] = add 1.0:f32[] b\n    d:f32[] = log c\n    e:f32[] = div 1.0:f32[] c\n    f:f32[] = mul 1.0:f32[] e\n    g:f32[] = mul f b\n  in (g,) }"


def test_custom_derivative_rules_tutorial_gives_jax_answers():
    recorder = program()
    expected = list(EXPECTED)
    assert expected[JAXPR][0].startswith("{ lambda ; a:f32[]. let\n    b:f32[] = exp a")
    expected[JAXPR] = (LOG1PEXP_GRAD_JAXPR,)
    # jvp of a custom_vjp function: JAX's TypeError; ember's is a LoweringError, a TypeError
    # (raised where the forward computation would run), which the cell's `except TypeError`
    # catches as it catches JAX's.
    assert expected[ERROR] == ("TypeError",)
    assert issubclass(ember.errors.LoweringError, TypeError)
    expected[ERROR] = ("LoweringError",)
    assert_same(recorder.record, expected)
    (message,) = recorder.messages
    assert "forward-mode" in message and "custom_vjp function f" in message
