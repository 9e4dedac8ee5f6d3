"""Port of JAX's ``examples/gaussian_process_regression.py`` (Gaussian process regression: fit
a GP's hyperparameters by gradient descent on the negative marginal likelihood).

JAX removed the example from its repository shortly before 0.10 (with kernel_lsq.py, in
"remove examples: GP regression and kernel least-squares"); this is its last version, and the
numbers pinned below are what JAX 0.10.2 printed for it. The imports are changed to ember,
``absl.app.run(main)`` becomes a call, and the matplotlib figure is left out: what it would
plot (the predicted mean and standard deviation at every 40th test point) is recorded instead.
``print`` records its arguments. The training loop's length is a parameter: the quick test
runs its first 101 steps (three printed lines), the slow one all 1000.
"""

import pytest

from tests.ports._util import assert_same


def program(num_steps=1000):
    record = []

    def print(*args):  # the program's prints become records
        record.append(args)

    from functools import partial

    import ember.numpy as jnp
    import ember.random as random
    import ember.scipy as scipy
    from ember import grad, jit, vmap

    def main(unused_argv):
        numpts = 7
        key = random.key(0)
        eye = jnp.eye(numpts)

        def cov_map(cov_func, xs, xs2=None):
            """Compute a covariance matrix from a covariance function and data points.

            Args:
              cov_func: callable function, maps pairs of data points to scalars.
              xs: array of data points, stacked along the leading dimension.
            Returns:
              A 2d array `a` such that `a[i, j] = cov_func(xs[i], xs[j])`.
            """
            if xs2 is None:
                return vmap(lambda x: vmap(lambda y: cov_func(x, y))(xs))(xs)
            else:
                return vmap(lambda x: vmap(lambda y: cov_func(x, y))(xs))(xs2).T

        def softplus(x):
            return jnp.logaddexp(x, 0.0)

        # Note, writing out the vectorized form of the identity
        # ||x-y||^2 = <x-y,x-y> = ||x||^2 + ||y||^2 - 2<x,y>
        # for computing squared distances would be more efficient (but less succinct).
        def exp_quadratic(x1, x2):
            return jnp.exp(-jnp.sum((x1 - x2) ** 2))

        def gp(params, x, y, xtest=None, compute_marginal_likelihood=False):
            noise = softplus(params["noise"])
            amp = softplus(params["amplitude"])
            ls = softplus(params["lengthscale"])
            ymean = jnp.mean(y)
            y = y - ymean
            x = x / ls
            train_cov = amp * cov_map(exp_quadratic, x) + eye * (noise + 1e-6)
            chol = scipy.linalg.cholesky(train_cov, lower=True)
            kinvy = scipy.linalg.solve_triangular(
                chol.T, scipy.linalg.solve_triangular(chol, y, lower=True)
            )
            if compute_marginal_likelihood:
                log2pi = jnp.log(2.0 * 3.1415)
                ml = jnp.sum(
                    -0.5 * jnp.dot(y.T, kinvy)
                    - jnp.sum(jnp.log(jnp.diag(chol)))
                    - (numpts / 2.0) * log2pi
                )
                ml -= jnp.sum(
                    -0.5 * jnp.log(2 * 3.1415) - jnp.log(amp) - 0.5 * jnp.log(amp) ** 2
                )  # lognormal prior
                return -ml

            if xtest is not None:
                xtest = xtest / ls
            cross_cov = amp * cov_map(exp_quadratic, x, xtest)
            mu = jnp.dot(cross_cov.T, kinvy) + ymean
            v = scipy.linalg.solve_triangular(chol, cross_cov, lower=True)
            var = amp * cov_map(exp_quadratic, xtest) - jnp.dot(v.T, v)
            return mu, var

        marginal_likelihood = partial(gp, compute_marginal_likelihood=True)
        predict = partial(gp, compute_marginal_likelihood=False)
        grad_fun = jit(grad(marginal_likelihood))

        # Covariance hyperparameters to be learned
        params = {
            "amplitude": jnp.zeros((1, 1)),
            "noise": jnp.zeros((1, 1)) - 5.0,
            "lengthscale": jnp.zeros((1, 1)),
        }
        momentums = {k: p * 0.0 for k, p in params.items()}
        scales = {k: p * 0.0 + 1.0 for k, p in params.items()}

        lr = 0.01  # Learning rate

        def train_step(params, momentums, scales, x, y):
            grads = grad_fun(params, x, y)
            for k in params:
                momentums[k] = 0.9 * momentums[k] + 0.1 * grads[k][0]
                scales[k] = 0.9 * scales[k] + 0.1 * grads[k][0] ** 2
                params[k] -= lr * momentums[k] / jnp.sqrt(scales[k] + 1e-5)
            return params, momentums, scales

        # Create a really simple toy 1D function
        y_fun = lambda x: jnp.sin(x) + 0.1 * random.normal(key, shape=(x.shape[0], 1))
        x = (random.uniform(key, shape=(numpts, 1)) * 4.0) + 1
        y = y_fun(x)
        xtest = jnp.linspace(0, 6.0, 200)[:, None]

        for i in range(num_steps):  # (1000 in the example)
            params, momentums, scales = train_step(params, momentums, scales, x, y)
            if i % 50 == 0:
                ml = marginal_likelihood(params, x, y)
                print("Step: %d, neg marginal likelihood: %f" % (i, ml))  # noqa: UP031 - as written

        print(params)
        mu, var = predict(params, x, y, xtest)
        std = jnp.sqrt(jnp.diag(var))
        print(mu[::40].ravel(), std[::40])  # (what the example plots)

    main(None)
    return record


STEPS = [
    ("Step: 0, neg marginal likelihood: 2.024946",),
    ("Step: 50, neg marginal likelihood: 0.299006",),
    ("Step: 100, neg marginal likelihood: -1.757773",),
    ("Step: 150, neg marginal likelihood: -3.343836",),
    ("Step: 200, neg marginal likelihood: -4.508139",),
    ("Step: 250, neg marginal likelihood: -5.205562",),
    ("Step: 300, neg marginal likelihood: -5.799737",),
    ("Step: 350, neg marginal likelihood: -6.351314",),
    ("Step: 400, neg marginal likelihood: -6.859680",),
    ("Step: 450, neg marginal likelihood: -7.306329",),
    ("Step: 500, neg marginal likelihood: -7.678101",),
    ("Step: 550, neg marginal likelihood: -7.950058",),
    ("Step: 600, neg marginal likelihood: -8.192944",),
    ("Step: 650, neg marginal likelihood: -8.426688",),
    ("Step: 700, neg marginal likelihood: -8.667203",),
    ("Step: 750, neg marginal likelihood: -8.884114",),
    ("Step: 800, neg marginal likelihood: -9.071156",),
    ("Step: 850, neg marginal likelihood: -9.277147",),
    ("Step: 900, neg marginal likelihood: -9.460103",),
    ("Step: 950, neg marginal likelihood: -9.656059",),
]
EXPECTED = [
    *STEPS,
    ({"amplitude": [[7.5279956]], "noise": [[-10.7384405]], "lengthscale": [[3.4527962]]},),
    (
        [
            -0.003307543694972992,
            0.8222827315330505,
            0.6298966407775879,
            -0.4320790767669678,
            -0.8197574615478516,
        ],
        [
            0.36072254180908203,
            0.029789159074425697,
            0.003088161814957857,
            0.007842957973480225,
            0.0037186392582952976,
        ],
    ),
]


def test_gaussian_process_regression_first_steps_give_jax_numbers():
    assert_same(program(num_steps=101)[:3], STEPS[:3], rtol=1e-4)


@pytest.mark.slow
def test_gaussian_process_regression_gives_jax_numbers():
    # The fit drives the noise to exp(-10.7): it factors a nearly singular float32 matrix, and a
    # normalised-gradient optimizer grows last-bit differences over 1000 steps. JAX's own run
    # moves as much: with JAX_DISABLE_JIT=1 its last likelihood is -9.618579, not -9.656059
    # (4e-3), and starting the noise at -5.000001 gives -9.643373. ember's (-9.650 on the
    # reference backend, -9.642 on XLA's CPU) lie within that spread; the mean predicted at
    # x = 0, far from the data, is near 0 (-0.0033 in JAX, -0.0017 without jit, 0.0040 here).
    assert_same(program(), EXPECTED, rtol=5e-3, atol=1e-2)
