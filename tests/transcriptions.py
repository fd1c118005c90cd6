"""Independent, plain transcriptions of the pseudo-code, for testing. No lptheory import here.

Each function does one step exactly as the paper (or the original baseline paper) writes it, with
fresh arrays and literal formulas, e.g. ``x / |x|^{(p-2)/(p-1)}`` rather than the sign form.
"""

import numpy as np


def s_alg3(x, p):
    """Alg. 3 line 2: s_i(x) = x_i / |x_i|^{(p-2)/(p-1)} (x nonzero), or sign for p = inf."""
    if np.isinf(p):
        return np.sign(x)
    return x / np.abs(x) ** ((p - 2) / (p - 1))


def s_eps_paper(x, p, eps):
    """Alg. 1/2 line 4."""
    a = 1.0 if np.isinf(p) else (p - 2) / (p - 1)
    return x / (np.abs(x) ** a + eps)


def s_eps_official(x, p, eps):
    """Authors' code: c * (|c| + eps) ** ((2 - p) / (p - 1))."""
    b = -1.0 if np.isinf(p) else (2 - p) / (p - 1)
    return x * (np.abs(x) + eps) ** b


def lp_descent(theta, g, p, eta):
    """Alg. 3 line 3."""
    return theta - eta * s_alg3(g, p)


def stacey(theta, g, z, m, *, p, eta, alpha, tau, beta1, beta2, eps, lam, variant, mode):
    """Alg. 1 (variant "p2") or Alg. 2 (variant "pp"), lines 3-8, or the authors' code (mode "official")."""
    s_eps = s_eps_paper if mode == "paper" else s_eps_official
    c = beta1 * m + (1 - beta1) * g  # line 3
    y = theta - eta * s_eps(c, p, eps)  # lines 4-5
    if variant == "p2":
        z_new = z - alpha * c  # Alg. 1 line 6
    else:
        w = np.abs(z) ** (p - 2) * z - alpha * c  # Alg. 2 line 6
        if mode == "paper":
            z_new = w / (np.abs(w) ** ((p - 2) / (p - 1)) + eps)
        else:
            z_new = np.sign(w) * np.abs(w) ** (1 / (p - 1))
    if mode == "paper":
        theta_new = tau * z_new + (1 - tau) * y - eta * lam * theta  # line 7
    else:  # official-code.md item 4
        theta_new = (1 - tau - eta * lam) * theta + tau * z_new - eta * (1 - tau) * s_eps(c, p, eps)
    m_new = beta2 * m + (1 - beta2) * g  # line 8
    return theta_new, z_new, m_new


def adam(theta, g, m, v, t, *, lr, beta1, beta2, eps, wd, decoupled):
    """Kingma & Ba (2015) Algorithm 1 (t is 1-based), with L2 (Adam) or decoupled (AdamW) decay."""
    if not decoupled:
        g = g + wd * theta
    m = beta1 * m + (1 - beta1) * g
    v = beta2 * v + (1 - beta2) * g * g
    mhat = m / (1 - beta1**t)
    vhat = v / (1 - beta2**t)
    if decoupled:
        theta = theta - lr * wd * theta
    theta = theta - lr * mhat / (np.sqrt(vhat) + eps)
    return theta, m, v


def lion(theta, g, m, *, lr, beta1, beta2, wd):
    """Chen et al. (2023), Algorithm 2."""
    c = beta1 * m + (1 - beta1) * g
    theta = theta - lr * (np.sign(c) + wd * theta)
    m = beta2 * m + (1 - beta2) * g
    return theta, m


def sgd(theta, g, buf, *, lr, mu, wd, nesterov):
    g = g + wd * theta
    buf = mu * buf + g
    d = g + mu * buf if nesterov else buf
    return theta - lr * d, buf


def signum(theta, g, m, *, lr, beta):
    m = beta * m + (1 - beta) * g
    return theta - lr * np.sign(m if beta > 0 else g), m
