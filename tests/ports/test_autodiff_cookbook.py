# ruff: noqa: F811, UP032 - the ported program is kept as written; pinned values are long
"""Port of JAX's tutorial "The Autodiff Cookbook" (docs/notebooks/autodiff_cookbook.md).

The notebook's code cells, in order, with the imports changed to ember; ``%timeit`` lines are
dropped and cells that end in a bare expression print it. ``print`` records its arguments, which
are compared with what JAX 0.10.2 printed for the same cells.
"""

import pytest

from tests.ports._util import assert_same


def program():
    record = []

    def print(*args):
        record.append(args)

    import ember.numpy as jnp
    from ember import grad, jit, random, vmap

    key = random.key(0)

    grad_tanh = grad(jnp.tanh)
    print(grad_tanh(2.0))

    print(grad(grad(jnp.tanh))(2.0))
    print(grad(grad(grad(jnp.tanh)))(2.0))

    def sigmoid(x):
        return 0.5 * (jnp.tanh(x / 2) + 1)

    # Outputs probability of a label being true.
    def predict(W, b, inputs):
        return sigmoid(jnp.dot(inputs, W) + b)

    # Build a toy dataset.
    inputs = jnp.array(
        [[0.52, 1.12, 0.77], [0.88, -1.08, 0.15], [0.52, 0.06, -1.30], [0.74, -2.49, 1.39]]
    )
    targets = jnp.array([True, True, False, True])

    # Training loss is the negative log-likelihood of the training examples.
    def loss(W, b):
        preds = predict(W, b, inputs)
        label_probs = preds * targets + (1 - preds) * (1 - targets)
        return -jnp.sum(jnp.log(label_probs))

    # Initialize random model coefficients
    key, W_key, b_key = random.split(key, 3)
    W = random.normal(W_key, (3,))
    b = random.normal(b_key, ())

    # Differentiate `loss` with respect to the first positional argument:
    W_grad = grad(loss, argnums=0)(W, b)
    print("W_grad", W_grad)

    # Since argnums=0 is the default, this does the same thing:
    W_grad = grad(loss)(W, b)
    print("W_grad", W_grad)

    # But we can choose different values too, and drop the keyword:
    b_grad = grad(loss, 1)(W, b)
    print("b_grad", b_grad)

    # Including tuple values
    W_grad, b_grad = grad(loss, (0, 1))(W, b)
    print("W_grad", W_grad)
    print("b_grad", b_grad)

    def loss2(params_dict):
        preds = predict(params_dict["W"], params_dict["b"], inputs)
        label_probs = preds * targets + (1 - preds) * (1 - targets)
        return -jnp.sum(jnp.log(label_probs))

    print(grad(loss2)({"W": W, "b": b}))

    from ember import value_and_grad

    loss_value, Wb_grad = value_and_grad(loss, (0, 1))(W, b)
    print("loss value", loss_value)
    print("loss value", loss(W, b))

    # Set a step size for finite differences calculations
    eps = 1e-4

    # Check b_grad with scalar finite differences
    b_grad_numerical = (loss(W, b + eps / 2.0) - loss(W, b - eps / 2.0)) / eps
    print("b_grad_numerical", b_grad_numerical)
    print("b_grad_autodiff", grad(loss, 1)(W, b))

    # Check W_grad with finite differences in a random direction
    key, subkey = random.split(key)
    vec = random.normal(subkey, W.shape)
    unitvec = vec / jnp.sqrt(jnp.vdot(vec, vec))
    W_grad_numerical = (loss(W + eps / 2.0 * unitvec, b) - loss(W - eps / 2.0 * unitvec, b)) / eps
    print("W_dirderiv_numerical", W_grad_numerical)
    print("W_dirderiv_autodiff", jnp.vdot(grad(loss)(W, b), unitvec))

    from ember.test_util import check_grads

    check_grads(loss, (W, b), order=2)  # check up to 2nd order derivatives

    def hvp(f, x, v):
        return grad(lambda x: jnp.vdot(grad(f)(x), v))(x)

    from ember import jacfwd, jacrev

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

    J_dict = jacrev(predict_dict)({"W": W, "b": b}, inputs)
    for k, v in J_dict.items():
        print("Jacobian from {} to logits is".format(k))
        print(v)

    def hessian(f):
        return jacfwd(jacrev(f))

    H = hessian(f)(W)
    print("hessian, with shape", H.shape)
    print(H)

    from ember import jvp

    # Isolate the function from the weight matrix to the predictions
    f = lambda W: predict(W, b, inputs)

    key, subkey = random.split(key)
    v = random.normal(subkey, W.shape)

    # Push forward the vector `v` along `f` evaluated at `W`
    y, u = jvp(f, (W,), (v,))
    print(y, u)  # (not in the notebook: records the cell's result)

    from ember import vjp

    # Isolate the function from the weight matrix to the predictions
    f = lambda W: predict(W, b, inputs)

    y, vjp_fun = vjp(f, W)

    key, subkey = random.split(key)
    u = random.normal(subkey, y.shape)

    # Pull back the covector `u` along `f` evaluated at `W`
    v = vjp_fun(u)
    print(v)  # (not in the notebook: records the cell's result)

    from ember import vjp

    def vgrad(f, x):
        y, vjp_fn = vjp(f, x)
        return vjp_fn(jnp.ones(y.shape))[0]

    print(vgrad(lambda x: 3 * x**2, jnp.ones((2, 2))))

    from ember import grad, jvp

    # forward-over-reverse
    def hvp(f, primals, tangents):
        return jvp(grad(f), primals, tangents)[1]

    def f(X):
        return jnp.sum(jnp.tanh(X) ** 2)

    key, subkey1, subkey2 = random.split(key, 3)
    X = random.normal(subkey1, (30, 40))
    V = random.normal(subkey2, (30, 40))

    ans1 = hvp(f, (X,), (V,))
    ans2 = jnp.tensordot(hessian(f)(X), V, 2)

    print(jnp.allclose(ans1, ans2, 1e-4, 1e-4))

    # reverse-over-forward
    def hvp_revfwd(f, primals, tangents):
        g = lambda primals: jvp(f, primals, tangents)[1]
        return grad(g)(primals)

    # reverse-over-reverse, only works for single arguments
    def hvp_revrev(f, primals, tangents):
        (x,) = primals
        (v,) = tangents
        return grad(lambda x: jnp.vdot(grad(f)(x), v))(x)

    # (the notebook times these; here their results are recorded)
    print(hvp(f, (X,), (V,))[:2, :3], hvp_revfwd(f, (X,), (V,))[0][:2, :3])
    print(hvp_revrev(f, (X,), (V,))[:2, :3])

    # Isolate the function from the weight matrix to the predictions
    f = lambda W: predict(W, b, inputs)

    # Pull back the covectors `m_i` along `f`, evaluated at `W`, for all `i`.
    # First, use a list comprehension to loop over rows in the matrix M.
    def loop_mjp(f, x, M):
        y, vjp_fun = vjp(f, x)
        return jnp.vstack([jnp.asarray(vjp_fun(mi)) for mi in M])

    # Now, use vmap to build a computation that does a single fast matrix-matrix
    # multiply, rather than an outer loop over vector-matrix multiplies.
    def vmap_mjp(f, x, M):
        y, vjp_fun = vjp(f, x)
        (outs,) = vmap(vjp_fun)(M)
        return outs

    key = random.key(0)
    num_covecs = 128
    U = random.normal(key, (num_covecs,) + y.shape)

    loop_vs = loop_mjp(f, W, M=U)
    vmap_vs = vmap_mjp(f, W, M=U)
    assert jnp.allclose(loop_vs, vmap_vs), (
        "Vmap and non-vmapped Matrix-Jacobian Products should be identical"
    )
    print(vmap_vs[:4])

    def loop_jmp(f, W, M):
        # jvp immediately returns the primal and tangent values as a tuple,
        # so we'll compute and select the tangents in a list comprehension
        return jnp.vstack([jvp(f, (W,), (mi,))[1] for mi in M])

    def vmap_jmp(f, W, M):
        _jvp = lambda s: jvp(f, (W,), (s,))[1]
        return vmap(_jvp)(M)

    num_vecs = 128
    S = random.normal(key, (num_vecs,) + W.shape)

    loop_vs = loop_jmp(f, W, M=S)
    vmap_vs = vmap_jmp(f, W, M=S)
    assert jnp.allclose(loop_vs, vmap_vs), (
        "Vmap and non-vmapped Jacobian-Matrix products should be identical"
    )
    print(vmap_vs[:4])

    from ember import jacrev as builtin_jacrev

    def our_jacrev(f):
        def jacfun(x):
            y, vjp_fun = vjp(f, x)
            # Use vmap to do a matrix-Jacobian product.
            # Here, the matrix is the Euclidean basis, so we get all
            # entries in the Jacobian at once.
            (J,) = vmap(vjp_fun, in_axes=0)(jnp.eye(len(y)))
            return J

        return jacfun

    assert jnp.allclose(builtin_jacrev(f)(W), our_jacrev(f)(W)), (
        "Incorrect reverse-mode Jacobian results!"
    )

    from ember import jacfwd as builtin_jacfwd

    def our_jacfwd(f):
        def jacfun(x):
            _jvp = lambda s: jvp(f, (x,), (s,))[1]
            Jt = vmap(_jvp, in_axes=1)(jnp.eye(len(x)))
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

    y, f_vjp = vjp(f, 4.0)
    print(jit(f_vjp)(1.0))

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
    print(grad(f)(z))

    def f(z):
        return jnp.sin(z)

    z = 3.0 + 4j
    print(grad(f, holomorphic=True)(z))

    def f(z):
        return jnp.conjugate(z)

    z = 3.0 + 4j
    print(grad(f, holomorphic=True)(z))  # f is not actually holomorphic!

    A = jnp.array([[5.0, 2.0 + 3j, 5j], [2.0 - 3j, 7.0, 1.0 + 7j], [-5j, 1.0 - 7j, 12.0]])

    def f(X):
        L = jnp.linalg.cholesky(X)
        return jnp.sum((L - jnp.sin(L)) ** 2)

    print(grad(f, holomorphic=True)(A))
    return record


EXPECTED = [
    (0.07065081596374512,),
    (-0.13621868193149567,),
    (0.2526540458202362,),
    ("W_grad", [-0.43314599990844727, -0.7354605197906494, -1.259892225265503]),
    ("W_grad", [-0.43314599990844727, -0.7354605197906494, -1.259892225265503]),
    ("b_grad", -0.6900177597999573),
    ("W_grad", [-0.43314599990844727, -0.7354605197906494, -1.259892225265503]),
    ("b_grad", -0.6900177597999573),
    (
        {
            "W": [-0.43314599990844727, -0.7354605197906494, -1.259892225265503],
            "b": -0.6900177597999573,
        },
    ),
    ("loss value", 2.972918748855591),
    ("loss value", 2.972918748855591),
    ("b_grad_numerical", -0.6890296936035156),
    ("b_grad_autodiff", -0.6900177597999573),
    ("W_dirderiv_numerical", 1.3041496276855469),
    ("W_dirderiv_autodiff", 1.3006744384765625),
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
    (
        [0.10947310924530029, 0.7982901334762573, 0.41004258394241333, 0.9921765327453613],
        [0.1298917829990387, -0.29418981075286865, -0.6477776765823364, -0.006326655857264996],
    ),
    (([0.10026415437459946, -0.2280014157295227, -0.7058361768722534],),),
    ([[6.0, 6.0], [6.0, 6.0]],),
    (True,),
    (
        [
            [-1.195816993713379, 0.5615549683570862, 1.6569565534591675],
            [0.7088370323181152, 1.4011880159378052, 0.0024047493934631348],
        ],
        [
            [-1.195817232131958, 0.561555027961731, 1.656956672668457],
            [0.7088369131088257, 1.4011880159378052, 0.0024047577753663063],
        ],
    ),
    (
        [
            [-1.195817232131958, 0.561555027961731, 1.656956672668457],
            [0.7088367938995361, 1.4011880159378052, 0.0024047577753663063],
        ],
    ),
    (
        [
            [0.31424471735954285, -0.179805189371109, 0.30623143911361694],
            [-0.18828335404396057, 0.17153356969356537, 0.150834858417511],
            [0.16197709739208221, 0.30720070004463196, -0.6795933246612549],
            [0.20986029505729675, 0.0010518375784158707, -0.35459235310554504],
        ],
    ),
    (
        [
            [0.270843505859375, -0.13274738192558289, 0.369867742061615, -0.034502219408750534],
            [-0.05772970989346504, -0.0652424693107605, 0.29836899042129517, -0.01434352621436119],
            [0.07874143123626709, -0.1401124745607376, -0.26405349373817444, -0.005232390947639942],
            [0.04304353892803192, -0.5608929991722107, 0.5269674062728882, -0.06867927312850952],
        ],
    ),
    ((3.1415927410125732,),),
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


# The notebook's finite differences: float32 rounding of the loss, divided by eps = 1e-4, makes
# them agree with JAX's only to a few digits (they differ between XLA and NumPy too).
FINITE_DIFFERENCES = (11, 13)


@pytest.mark.slow
def test_autodiff_cookbook_gives_jax_numbers():
    got = program()
    assert len(got) == len(EXPECTED)
    for i, (g, e) in enumerate(zip(got, EXPECTED)):
        if i in FINITE_DIFFERENCES:
            assert_same(g, e, rtol=1e-2, path=f"out[{i}]")
        else:
            assert_same(g, e, path=f"out[{i}]")
