# ruff: noqa: I001, F811, F821, F841, UP032 - the ported programs are kept as written (their imports, redefinitions and the page's sketches that name undefined u, v too)
"""Port of JAX's tutorial "Advanced automatic differentiation" (docs/advanced_autodiff.md),
which at JAX 0.10.2 gathers four pages: "Higher-order derivatives" (docs/higher-order.md),
"Forward- and reverse-mode autodiff" (docs/jacobian-vector-products.md), "Differentiating
with complex numbers" (docs/complex-differentiation.md) and the custom-derivatives tutorial
(ported in test_custom_derivative_rules_tutorial.py).

Each page's code cells, in order, with ``jax`` changed to ``ember`` in the imports and calls;
cells that end in a bare expression print it, and ``print`` records its arguments, compared
with what JAX 0.10.2 gave for the same cells. The ``%timeit`` lines are left out (their
``print`` headings stay).
"""

from tests.ports._util import Recorder, assert_same


def higher_order_program():
    recorder = Recorder()
    print, shows_error = recorder.print, recorder.shows_error

    import ember

    def hessian(f):
        return ember.jacfwd(ember.grad(f))

    import ember.numpy as jnp

    def f(x):
        return jnp.dot(x, x)

    print(hessian(f)(jnp.array([1.0, 2.0, 3.0])))  # (the cell shows its value)

    # Value function and initial parameters
    value_fn = lambda theta, state: jnp.dot(theta, state)
    theta = jnp.array([0.1, -0.1, 0.0])

    # An example transition.
    s_tm1 = jnp.array([1.0, 2.0, -1.0])
    r_t = jnp.array(1.0)
    s_t = jnp.array([2.0, 1.0, 0.0])

    def td_loss(theta, s_tm1, r_t, s_t):
        v_tm1 = value_fn(theta, s_tm1)
        target = r_t + value_fn(theta, s_t)
        return -0.5 * ((target - v_tm1) ** 2)

    td_update = ember.grad(td_loss)
    delta_theta = td_update(theta, s_tm1, r_t, s_t)

    print(delta_theta)  # (the cell shows its value)

    def td_loss(theta, s_tm1, r_t, s_t):
        v_tm1 = value_fn(theta, s_tm1)
        target = r_t + value_fn(theta, s_t)
        return -0.5 * ((ember.lax.stop_gradient(target) - v_tm1) ** 2)

    td_update = ember.grad(td_loss)
    delta_theta = td_update(theta, s_tm1, r_t, s_t)

    print(delta_theta)  # (the cell shows its value)

    s_grad = ember.grad(value_fn)(theta, s_tm1)
    delta_theta_original_calculation = (
        r_t + value_fn(theta, s_t) - value_fn(theta, s_tm1)
    ) * s_grad

    print(delta_theta_original_calculation)  # [1.2, 2.4, -1.2], same as `delta_theta`

    def f(x):
        return jnp.round(x)  # non-differentiable

    def straight_through_f(x):
        # Create an exactly-zero expression with Sterbenz lemma that has
        # an exactly-one gradient.
        zero = x - ember.lax.stop_gradient(x)
        return zero + ember.lax.stop_gradient(f(x))

    print("f(x): ", f(3.2))
    print("straight_through_f(x):", straight_through_f(3.2))

    print("grad(f)(x):", ember.grad(f)(3.2))
    print("grad(straight_through_f)(x):", ember.grad(straight_through_f)(3.2))

    perex_grads = ember.jit(ember.vmap(ember.grad(td_loss), in_axes=(None, 0, 0, 0)))

    # Test it:
    batched_s_tm1 = jnp.stack([s_tm1, s_tm1])
    batched_r_t = jnp.stack([r_t, r_t])
    batched_s_t = jnp.stack([s_t, s_t])

    print(perex_grads(theta, batched_s_tm1, batched_r_t, batched_s_t))  # (the cell shows its value)

    dtdloss_dtheta = ember.grad(td_loss)

    print(dtdloss_dtheta(theta, s_tm1, r_t, s_t))  # (the cell shows its value)

    almost_perex_grads = ember.vmap(dtdloss_dtheta)

    batched_theta = jnp.stack([theta, theta])
    print(
        almost_perex_grads(batched_theta, batched_s_tm1, batched_r_t, batched_s_t)
    )  # (the cell shows its value)

    inefficient_perex_grads = ember.vmap(dtdloss_dtheta, in_axes=(None, 0, 0, 0))

    print(
        inefficient_perex_grads(theta, batched_s_tm1, batched_r_t, batched_s_t)
    )  # (the cell shows its value)

    perex_grads = ember.jit(inefficient_perex_grads)

    print(perex_grads(theta, batched_s_tm1, batched_r_t, batched_s_t))  # (the cell shows its value)

    def hvp(f, x, v):
        return ember.grad(lambda x: jnp.vdot(ember.grad(f)(x), v))(x)

    from ember import jacfwd, jacrev

    # Define a sigmoid function.
    def sigmoid(x):
        return 0.5 * (jnp.tanh(x / 2) + 1)

    # Outputs probability of a label being true.
    def predict(W, b, inputs):
        return sigmoid(jnp.dot(inputs, W) + b)

    # Build a toy dataset.
    inputs = jnp.array(
        [[0.52, 1.12, 0.77], [0.88, -1.08, 0.15], [0.52, 0.06, -1.30], [0.74, -2.49, 1.39]]
    )

    # Initialize random model coefficients
    key = ember.random.key(0)
    key, W_key, b_key = ember.random.split(key, 3)
    W = ember.random.normal(W_key, (3,))
    b = ember.random.normal(b_key, ())

    # Isolate the function from the weight matrix to the predictions
    f = lambda W: predict(W, b, inputs)

    J = jacfwd(f)(W)
    print("jacfwd result, with shape", J.shape)
    print(J)

    J = jacrev(f)(W)
    print("jacrev result, with shape", J.shape)
    print(J)

    def predict_dict(params, inputs):
        return predict(params["W"], params["b"], inputs)

    J_dict = ember.jacrev(predict_dict)({"W": W, "b": b}, inputs)
    for k, v in J_dict.items():
        print("Jacobian from {} to logits is".format(k))
        print(v)

    def hessian(f):
        return ember.jacfwd(ember.jacrev(f))

    H = hessian(f)(W)
    print("hessian, with shape", H.shape)
    print(H)
    return recorder


HIGHER_ORDER = [
    ([[2.0, 0.0, 0.0], [0.0, 2.0, 0.0], [0.0, 0.0, 2.0]],),
    ([-1.2000000476837158, 1.2000000476837158, -1.2000000476837158],),
    ([1.2000000476837158, 2.4000000953674316, -1.2000000476837158],),
    ([1.2000000476837158, 2.4000000953674316, -1.2000000476837158],),
    ("f(x): ", 3.0),
    ("straight_through_f(x):", 3.0),
    ("grad(f)(x):", 0.0),
    ("grad(straight_through_f)(x):", 1.0),
    (
        [
            [1.2000000476837158, 2.4000000953674316, -1.2000000476837158],
            [1.2000000476837158, 2.4000000953674316, -1.2000000476837158],
        ],
    ),
    ([1.2000000476837158, 2.4000000953674316, -1.2000000476837158],),
    (
        [
            [1.2000000476837158, 2.4000000953674316, -1.2000000476837158],
            [1.2000000476837158, 2.4000000953674316, -1.2000000476837158],
        ],
    ),
    (
        [
            [1.2000000476837158, 2.4000000953674316, -1.2000000476837158],
            [1.2000000476837158, 2.4000000953674316, -1.2000000476837158],
        ],
    ),
    (
        [
            [1.2000000476837158, 2.4000000953674316, -1.2000000476837158],
            [1.2000000476837158, 2.4000000953674316, -1.2000000476837158],
        ],
    ),
    ("jacfwd result, with shape", (4, 3)),
    (
        [
            [0.05069414898753166, 0.10918740183115005, 0.07506632804870605],
            [0.14170025289058685, -0.17390486598014832, 0.0241534523665905],
            [0.1257919818162918, 0.014514458365738392, -0.31447991728782654],
            [0.005744094494730234, -0.019328102469444275, 0.010789583437144756],
        ],
    ),
    ("jacrev result, with shape", (4, 3)),
    (
        [
            [0.05069415271282196, 0.10918740928173065, 0.07506634294986725],
            [0.14170025289058685, -0.17390486598014832, 0.02415345422923565],
            [0.1257919818162918, 0.014514459297060966, -0.3144799470901489],
            [0.005744094494730234, -0.019328100606799126, 0.010789582505822182],
        ],
    ),
    ("Jacobian from W to logits is",),
    (
        [
            [0.05069415271282196, 0.10918740928173065, 0.07506634294986725],
            [0.14170025289058685, -0.17390486598014832, 0.02415345422923565],
            [0.1257919818162918, 0.014514459297060966, -0.3144799470901489],
            [0.005744094494730234, -0.019328100606799126, 0.010789582505822182],
        ],
    ),
    ("Jacobian from b to logits is",),
    ([0.09748876094818115, 0.16102302074432373, 0.24190765619277954, 0.007762289606034756],),
    ("hessian, with shape", (4, 3, 3)),
    (
        [
            [
                [0.020589321851730347, 0.044346243143081665, 0.030488034710288048],
                [0.04434623196721077, 0.09551499038934708, 0.06566654145717621],
                [0.030488034710288048, 0.0656665489077568, 0.04514574632048607],
            ],
            [
                [-0.07439129799604416, 0.0912984162569046, -0.012680334970355034],
                [0.0912984162569046, -0.11204805970191956, 0.015562229789793491],
                [-0.012680335901677608, 0.015562230721116066, -0.0021614208817481995],
            ],
            [
                [0.01176855992525816, 0.0013579105725511909, -0.02942139282822609],
                [0.0013579108053818345, 0.00015668198466300964, -0.0033947762567549944],
                [-0.029421398416161537, -0.003394776489585638, 0.07355348020792007],
            ],
            [
                [-0.004184120334684849, 0.014079000800848007, -0.007859361357986927],
                [0.014078999869525433, -0.0473739318549633, 0.026445690542459488],
                [-0.007859361357986927, 0.02644568867981434, -0.014762855134904385],
            ],
        ],
    ),
]


def jacobian_vector_products_program():
    recorder = Recorder()
    print, shows_error = recorder.print, recorder.shows_error

    import ember
    import ember.numpy as jnp

    key = ember.random.key(0)

    # Initialize random model coefficients
    key, W_key, b_key = ember.random.split(key, 3)
    W = ember.random.normal(W_key, (3,))
    b = ember.random.normal(b_key, ())

    # Define a sigmoid function.
    def sigmoid(x):
        return 0.5 * (jnp.tanh(x / 2) + 1)

    # Outputs probability of a label being true.
    def predict(W, b, inputs):
        return sigmoid(jnp.dot(inputs, W) + b)

    # Build a toy dataset.
    inputs = jnp.array(
        [[0.52, 1.12, 0.77], [0.88, -1.08, 0.15], [0.52, 0.06, -1.30], [0.74, -2.49, 1.39]]
    )

    # Isolate the function from the weight matrix to the predictions
    f = lambda W: predict(W, b, inputs)

    key, subkey = ember.random.split(key)
    v = ember.random.normal(subkey, W.shape)

    # Push forward the vector `v` along `f` evaluated at `W`
    y, u = ember.jvp(f, (W,), (v,))

    from ember import vjp

    # Isolate the function from the weight matrix to the predictions
    f = lambda W: predict(W, b, inputs)

    y, vjp_fun = vjp(f, W)

    key, subkey = ember.random.split(key)
    u = ember.random.normal(subkey, y.shape)

    # Pull back the covector `u` along `f` evaluated at `W`
    v = vjp_fun(u)

    def vgrad(f, x):
        y, vjp_fn = ember.vjp(f, x)
        return vjp_fn(jnp.ones(y.shape))[0]

    print(vgrad(lambda x: 3 * x**2, jnp.ones((2, 2))))

    def hvp(f, x, v):
        return ember.grad(lambda x: jnp.vdot(ember.grad(f)(x), v))(x)

    # forward-over-reverse
    def hvp(f, primals, tangents):
        return ember.jvp(ember.grad(f), primals, tangents)[1]

    def f(X):
        return jnp.sum(jnp.tanh(X) ** 2)

    key, subkey1, subkey2 = ember.random.split(key, 3)
    X = ember.random.normal(subkey1, (30, 40))
    V = ember.random.normal(subkey2, (30, 40))

    def hessian(f):
        return ember.jacfwd(ember.jacrev(f))

    ans1 = hvp(f, (X,), (V,))
    ans2 = jnp.tensordot(hessian(f)(X), V, 2)

    print(jnp.allclose(ans1, ans2, 1e-4, 1e-4))

    # Reverse-over-forward
    def hvp_revfwd(f, primals, tangents):
        g = lambda primals: ember.jvp(f, primals, tangents)[1]
        return ember.grad(g)(primals)

    # Reverse-over-reverse, only works for single arguments
    def hvp_revrev(f, primals, tangents):
        (x,) = primals
        (v,) = tangents
        return ember.grad(lambda x: jnp.vdot(ember.grad(f)(x), v))(x)

    print("Forward over reverse")
    print("Reverse over forward")
    print("Reverse over reverse")

    print("Naive full Hessian materialization")

    # Isolate the function from the weight matrix to the predictions
    f = lambda W: predict(W, b, inputs)

    # Pull back the covectors `m_i` along `f`, evaluated at `W`, for all `i`.
    # First, use a list comprehension to loop over rows in the matrix M.
    def loop_mjp(f, x, M):
        y, vjp_fun = ember.vjp(f, x)
        return jnp.vstack([jnp.asarray(vjp_fun(mi)) for mi in M])

    # Now, use vmap to build a computation that does a single fast matrix-matrix
    # multiply, rather than an outer loop over vector-matrix multiplies.
    def vmap_mjp(f, x, M):
        y, vjp_fun = ember.vjp(f, x)
        (outs,) = ember.vmap(vjp_fun)(M)
        return outs

    key = ember.random.key(0)
    num_covecs = 128
    U = ember.random.normal(key, (num_covecs,) + y.shape)

    loop_vs = loop_mjp(f, W, M=U)
    print("Non-vmapped Matrix-Jacobian product")

    print("\nVmapped Matrix-Jacobian product")
    vmap_vs = vmap_mjp(f, W, M=U)

    assert jnp.allclose(loop_vs, vmap_vs), (
        "Vmap and non-vmapped Matrix-Jacobian Products should be identical"
    )

    def loop_jmp(f, W, M):
        # jvp immediately returns the primal and tangent values as a tuple,
        # so we'll compute and select the tangents in a list comprehension
        return jnp.vstack([ember.jvp(f, (W,), (mi,))[1] for mi in M])

    def vmap_jmp(f, W, M):
        _jvp = lambda s: ember.jvp(f, (W,), (s,))[1]
        return ember.vmap(_jvp)(M)

    num_vecs = 128
    S = ember.random.normal(key, (num_vecs,) + W.shape)

    loop_vs = loop_jmp(f, W, M=S)
    print("Non-vmapped Jacobian-Matrix product")
    vmap_vs = vmap_jmp(f, W, M=S)
    print("\nVmapped Jacobian-Matrix product")

    assert jnp.allclose(loop_vs, vmap_vs), (
        "Vmap and non-vmapped Jacobian-Matrix products should be identical"
    )

    from ember import jacrev as builtin_jacrev

    def our_jacrev(f):
        def jacfun(x):
            y, vjp_fun = ember.vjp(f, x)
            # Use vmap to do a matrix-Jacobian product.
            # Here, the matrix is the Euclidean basis, so we get all
            # entries in the Jacobian at once.
            (J,) = ember.vmap(vjp_fun, in_axes=0)(jnp.eye(len(y)))
            return J

        return jacfun

    assert jnp.allclose(builtin_jacrev(f)(W), our_jacrev(f)(W)), (
        "Incorrect reverse-mode Jacobian results!"
    )

    from ember import jacfwd as builtin_jacfwd

    def our_jacfwd(f):
        def jacfun(x):
            _jvp = lambda s: ember.jvp(f, (x,), (s,))[1]
            Jt = ember.vmap(_jvp, in_axes=1)(jnp.eye(len(x)))
            return jnp.transpose(Jt)

        return jacfun

    assert jnp.allclose(builtin_jacfwd(f)(W), our_jacfwd(f)(W)), (
        "Incorrect forward-mode Jacobian results!"
    )

    def f(x):
        try:
            if x < 3:
                return 2 * x**3
            else:
                raise ValueError
        except ValueError:
            return jnp.pi * x

    y, f_vjp = ember.vjp(f, 4.0)
    print(ember.jit(f_vjp)(1.0))
    return recorder


JACOBIAN_VECTOR_PRODUCTS = [
    ([[6.0, 6.0], [6.0, 6.0]],),
    (True,),
    ("Forward over reverse",),
    ("Reverse over forward",),
    ("Reverse over reverse",),
    ("Naive full Hessian materialization",),
    ("Non-vmapped Matrix-Jacobian product",),
    ("\nVmapped Matrix-Jacobian product",),
    ("Non-vmapped Jacobian-Matrix product",),
    ("\nVmapped Jacobian-Matrix product",),
    ((3.1415927410125732,),),
]


def complex_differentiation_program():
    recorder = Recorder()
    print, shows_error = recorder.print, recorder.shows_error

    import ember.numpy as jnp

    def f(z):
        x, y = jnp.real(z), jnp.imag(z)
        return u(x, y) + v(x, y) * 1j

    def g(x, y):
        return (u(x, y), v(x, y))

    from ember import random, grad, jvp

    def check(seed):
        key = random.key(seed)

        # random coeffs for u and v
        key, subkey = random.split(key)
        a, b, c, d = random.uniform(subkey, (4,))

        def fun(z):
            x, y = jnp.real(z), jnp.imag(z)
            return u(x, y) + v(x, y) * 1j

        def u(x, y):
            return a * x + b * y

        def v(x, y):
            return c * x + d * y

        # primal point
        key, subkey = random.split(key)
        x, y = random.uniform(subkey, (2,))
        z = x + y * 1j

        # tangent vector
        key, subkey = random.split(key)
        c, d = random.uniform(subkey, (2,))
        z_dot = c + d * 1j

        # check jvp
        _, ans = jvp(fun, (z,), (z_dot,))
        expected = (
            grad(u, 0)(x, y) * c
            + grad(u, 1)(x, y) * d
            + grad(v, 0)(x, y) * c * 1j
            + grad(v, 1)(x, y) * d * 1j
        )
        print(jnp.allclose(ans, expected))

    check(0)
    check(1)
    check(2)

    from ember import vjp

    def check(seed):
        key = random.key(seed)

        # random coeffs for u and v
        key, subkey = random.split(key)
        a, b, c, d = random.uniform(subkey, (4,))

        def fun(z):
            x, y = jnp.real(z), jnp.imag(z)
            return u(x, y) + v(x, y) * 1j

        def u(x, y):
            return a * x + b * y

        def v(x, y):
            return c * x + d * y

        # primal point
        key, subkey = random.split(key)
        x, y = random.uniform(subkey, (2,))
        z = x + y * 1j

        # cotangent vector
        key, subkey = random.split(key)
        c, d = random.uniform(subkey, (2,))
        z_bar = jnp.array(c + d * 1j)  # for dtype control

        # check vjp
        _, fun_vjp = vjp(fun, z)
        (ans,) = fun_vjp(z_bar)
        expected = (
            grad(u, 0)(x, y) * c
            + grad(v, 0)(x, y) * (-d)
            + grad(u, 1)(x, y) * c * (-1j)
            + grad(v, 1)(x, y) * (-d) * (-1j)
        )
        assert jnp.allclose(ans, expected, atol=1e-5, rtol=1e-5)

    check(0)
    check(1)
    check(2)

    def f(z):
        x, y = jnp.real(z), jnp.imag(z)
        return x**2 + y**2

    z = 3.0 + 4j
    print(grad(f)(z))  # (the cell shows its value)

    def f(z):
        return jnp.sin(z)

    z = 3.0 + 4j
    print(grad(f, holomorphic=True)(z))  # (the cell shows its value)

    def f(z):
        return jnp.conjugate(z)

    z = 3.0 + 4j
    print(grad(f, holomorphic=True)(z))  # f is not actually holomorphic!

    A = jnp.array([[5.0, 2.0 + 3j, 5j], [2.0 - 3j, 7.0, 1.0 + 7j], [-5j, 1.0 - 7j, 12.0]])

    def f(X):
        L = jnp.linalg.cholesky(X)
        return jnp.sum((L - jnp.sin(L)) ** 2)

    print(grad(f, holomorphic=True)(A))  # (the cell shows its value)
    return recorder


COMPLEX_DIFFERENTIATION = [
    (True,),
    (True,),
    (True,),
    ((6 - 8j),),
    ((-27.03494644165039 - 3.8511533737182617j),),
    ((1 - 0j),),
    (
        [
            [
                (-0.7534186244010925 + 0j),
                (-3.050902843475342 - 10.940544128417969j),
                (5.989684581756592 + 3.5423026084899902j),
            ],
            [
                (-3.050902843475342 + 10.940544128417969j),
                (-8.904491424560547 + 0j),
                (-5.135152339935303 - 6.559372901916504j),
            ],
            [
                (5.989684581756592 - 3.5423026084899902j),
                (-5.135152339935303 + 6.559372901916504j),
                (0.013204272836446762 + 0j),
            ],
        ],
    ),
]


def test_higher_order_derivatives_give_jax_answers():
    assert_same(higher_order_program().record, HIGHER_ORDER)


def test_forward_and_reverse_mode_give_jax_answers():
    assert_same(jacobian_vector_products_program().record, JACOBIAN_VECTOR_PRODUCTS)


def test_complex_differentiation_gives_jax_answers():
    assert_same(complex_differentiation_program().record, COMPLEX_DIFFERENTIATION)
