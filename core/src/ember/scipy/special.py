"""Special functions (``ember.scipy.special``), as ``jax.scipy.special``."""

from ember._src.nn.functions import logsumexp as logsumexp  # one function, as in JAX
from ember._src.scipy.dawsn import dawsn as dawsn
from ember._src.scipy.expint import (
    bessel_jn as bessel_jn,
    exp1 as exp1,
    expi as expi,
    expn as expn,
)
from ember._src.scipy.hyp1f1 import hyp1f1 as hyp1f1
from ember._src.scipy.hyp2f1 import hyp2f1 as hyp2f1
from ember._src.scipy.ndtr import (
    erfcx as erfcx,
    log_ndtr as log_ndtr,
    ndtr as ndtr,
    ndtri as ndtri,
)
from ember._src.scipy.owens_t import owens_t as owens_t
from ember._src.scipy.sici import fresnel as fresnel, sici as sici
from ember._src.scipy.special import (
    bernoulli as bernoulli,
    beta as beta,
    betainc as betainc,
    betaln as betaln,
    boxcox as boxcox,
    boxcox1p as boxcox1p,
    comb as comb,
    digamma as digamma,
    entr as entr,
    erf as erf,
    erfc as erfc,
    erfinv as erfinv,
    expit as expit,
    factorial as factorial,
    gamma as gamma,
    gammainc as gammainc,
    gammaincc as gammaincc,
    gammaln as gammaln,
    gammasgn as gammasgn,
    i0 as i0,
    i0e as i0e,
    i1 as i1,
    i1e as i1e,
    kl_div as kl_div,
    log_softmax as log_softmax,
    loggamma as loggamma,
    logit as logit,
    multigammaln as multigammaln,
    poch as poch,
    polygamma as polygamma,
    rel_entr as rel_entr,
    softmax as softmax,
    xlog1py as xlog1py,
    xlogy as xlogy,
    zeta as zeta,
)
from ember._src.scipy.spence import spence as spence
from ember._src.scipy.sph_harm import sph_harm_y as sph_harm_y
from ember._src.scipy.wofz import wofz as wofz
