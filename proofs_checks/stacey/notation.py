r"""The Stacey pack's claims in the paper's notation: ``{claim id: LaTeX}`` (math mode, no ``$``), written
once and registered on the pack with :meth:`proofs_checks.packs.Pack.notation`. The report shows these
instead of the plain-text statements (HTML: rendered offline by the vendored KaTeX; Markdown and
report.tex: ``$...$``). The plain-text statement of each claim stays in its record.

Notation as in the paper (stacey-icml2025.tex): :math:`g_t = \nabla f(\theta_t)`, :math:`\tilde g_t` its
stochastic estimate from a batch of :math:`n_t` samples, :math:`s(\cdot)` the l_p steepest-descent map of
Algorithm 3, :math:`p^* = p/(p-1)`, :math:`G` (Assumption 4), :math:`\sigma` (Assumption 3), :math:`L`
(Assumption 1); in the proof steps :math:`a = 1/(p-1)` and :math:`[=]` the event
:math:`\operatorname{sgn} g = \operatorname{sgn}\tilde g`.
"""

from __future__ import annotations

__all__ = ["TEX"]

_B2 = r"\frac{\eta\, G^{1/(p-1)} \|\sigma\|_1}{(p-1)\sqrt{n_t}}"

TEX = {
    # Theorem 1's per-step terms (Appendix A.1)
    "thm1.A": r"A = \eta\langle g_t, s(g_t)\rangle = \eta\|g_t\|_{p^*}^{p^*}",
    "thm1.C": r"C = \tfrac{L\eta^2}{2}\|s(\tilde g_t)\|_p^2 = \tfrac{L\eta^2}{2}\|\tilde g_t\|_{p^*}^{2/(p-1)}"
    r" \le \tfrac{L\eta^2}{2} G^{2/(p-1)}",
    "thm1.B1": r"\mathbb{E}\Big[\eta\sum_i |g_t^{(i)}|\big(|g_t^{(i)}|^{\frac{1}{p-1}} + |\tilde g_t^{(i)}|^{\frac{1}{p-1}}\big)"
    r"\mathbf{1}[\operatorname{sgn} g_t^{(i)} \ne \operatorname{sgn}\tilde g_t^{(i)}]\Big]"
    r" \le \frac{2\eta\, G^{1/(p-1)}\|\sigma\|_1}{\sqrt{n_t}}",
    "thm1.B2": r"\mathbb{E}\Big[\eta\sum_i |g_t^{(i)}|\,\big||g_t^{(i)}|^{\frac{1}{p-1}} - |\tilde g_t^{(i)}|^{\frac{1}{p-1}}\big|"
    r"\mathbf{1}[\operatorname{sgn} g_t^{(i)} = \operatorname{sgn}\tilde g_t^{(i)}]\Big] \le " + _B2,
    "thm1.B": r"\mathbb{E}[B] = \mathbb{E}\big[\eta\langle g_t, s(g_t) - s(\tilde g_t)\rangle\big]"
    r" \le \frac{(2p-1)\,\eta\, G^{1/(p-1)}\|\sigma\|_1}{(p-1)\sqrt{n_t}}",
    # Theorem 1 along runs
    "thm1.bound": r"\mathbb{E}\Big[\frac1T\sum_{t=0}^{T-1}\|g_t\|_{p^*}^{p^*}\Big] \le \frac{f_0 - f^*}{\eta T}"
    r" + \frac{L\eta G^{2/(p-1)}}{2} + \frac1T\sum_{t=0}^{T-1}\frac{2p-1}{p-1}\frac{G^{1/(p-1)}\|\sigma\|_1}{\sqrt{n_t}}",
    "thm1.step": r"\eta\,\mathbb{E}\|g_t\|_{p^*}^{p^*} \le f(\theta_t) - f(\theta_{t+1})"
    r" + \frac{(2p-1)\,\eta\, G^{1/(p-1)}\|\sigma\|_1}{(p-1)\sqrt{n_t}} + \frac{L\eta^2 G^{2/(p-1)}}{2}",
    "thm1.rate": r"n_t = T,\ N = T^2,\ \eta = \frac{1}{L^{1/2}G^{1/(p-1)}T^{1/2}}:\ \mathbb{E}\Big[\frac1T\sum_t"
    r"\|g_t\|_{p^*}^{p^*}\Big] \le N^{-1/4}\Big[L^{1/2}G^{\frac{1}{p-1}}\big(f_0 - f^* + \tfrac12\big)"
    r" + \tfrac{2p-1}{p-1}G^{\frac{1}{p-1}}\|\sigma\|_1\Big]",
    # the symbolic audit: Lemma B1
    "sym.lemma-B1.step1": r"\mathbb{E}\big[|g|(|g|^a + |\tilde g|^a)\mathbf{1}[\ne]\big] \le 2G^a\,\mathbb{E}\big[|g|\mathbf{1}[\ne]\big]",
    "sym.lemma-B1.step2": r"\mathbb{E}\big[|g|\mathbf{1}[\ne]\big] = |g|\,\mathbb{P}[\operatorname{sgn} g \ne \operatorname{sgn}\tilde g]",
    "sym.lemma-B1.step3": r"\mathbb{P}[\operatorname{sgn} g \ne \operatorname{sgn}\tilde g] \le \mathbb{P}[|\tilde g - g| \ge |g|]",
    "sym.lemma-B1.step4": r"\mathbb{P}[|\tilde g - g| \ge |g|] \le \frac{\mathbb{E}|\tilde g - g|}{|g|}",
    "sym.lemma-B1.step5": r"\mathbb{E}|\tilde g - g| \le \sqrt{\mathbb{E}|\tilde g - g|^2}",
    "sym.lemma-B1.step6": r"\sqrt{\mathbb{E}|\tilde g - g|^2} \le \sigma/\sqrt{n_t}",
    # Lemma B2
    "sym.lemma-B2.step1": r"\mathbb{E}\big[|g|\,\big||g|^a - |\tilde g|^a\big|\mathbf{1}[=]\big]"
    r" = \mathbb{E}_{|=}\big[|g|\,\big||g|^a - |\tilde g|^a\big|\big]\,\mathbb{P}[=]",
    "sym.lemma-B2.step2": r"\big||g|^a - |\tilde g|^a\big| = a|\zeta|^{a-1}|g - \tilde g|,\ \zeta \text{ between } g, \tilde g",
    "sym.lemma-B2.case1.step1": r"a\,\mathbb{E}\big[|g||\zeta|^{a-1}|g - \tilde g|\big] \le a\,\mathbb{E}\big[|\zeta||\zeta|^{a-1}|g - \tilde g|\big]",
    "sym.lemma-B2.case1.step2": r"|\zeta|\,|\zeta|^{\frac{2-p}{p-1}} = |\zeta|^{\frac{1}{p-1}}",
    "sym.lemma-B2.case1.step3": r"|\zeta|^{\frac{1}{p-1}} \le |\tilde g|^{\frac{1}{p-1}}",
    "sym.lemma-B2.case1.step4": r"|\tilde g|^{\frac{1}{p-1}} \le G^{\frac{1}{p-1}}",
    "sym.lemma-B2.case1.step5": r"\mathbb{E}_{|=}\big[|g - \tilde g|\big]\,\mathbb{P}[=]"
    r" = \frac{\mathbb{E}|g - \tilde g|}{\mathbb{P}[=]}\,\mathbb{P}[=]",
    "sym.lemma-B2.case1.step6": r"\mathbb{E}|g - \tilde g| \le \sqrt{\mathbb{E}|g - \tilde g|^2}",
    "sym.lemma-B2.case1.step7": r"\sqrt{\mathbb{E}|g - \tilde g|^2} \le \sigma/\sqrt{n_t}",
    "sym.lemma-B2.case2.step1": r"\mathbb{E}\big[|g||\zeta|^{\frac{2-p}{p-1}}|g - \tilde g|\big]"
    r" \le \mathbb{E}\big[|g||\tilde g|^{\frac{2-p}{p-1}}|g - \tilde g|\big]",
    "sym.lemma-B2.case2.step2": r"\mathbb{E}_{|=}[Y]\,\mathbb{P}[=] \le \frac{1}{\mathbb{P}[=]}\mathbb{E}[Y]\,\mathbb{P}[=]",
    "sym.lemma-B2.case2.step3": r"\mathbb{E}\big[|g||\tilde g|^{\frac{2-p}{p-1}}|g - \tilde g|\big]"
    r" \le \sqrt{\mathbb{E}\big[|g|^2|\tilde g|^{\frac{2(2-p)}{p-1}}\big]\,\mathbb{E}|g - \tilde g|^2}",
    "sym.lemma-B2.case2.step4": r"\mathbb{E}|g - \tilde g|^2 \le \sigma^2/n_t",
    "sym.lemma-B2.case2.step5": r"\mathbb{E}\big[|\tilde g|^{\frac{2(2-p)}{p-1}}\big] \le \big(\mathbb{E}|\tilde g|^2\big)^{\frac{2-p}{p-1}}",
    "sym.lemma-B2.case2.step6": r"\mathbb{E}|\tilde g|^2 = \operatorname{Var}[\tilde g] + (\mathbb{E}\tilde g)^2",
    "sym.lemma-B2.case2.step7": r"\big(\operatorname{Var}[\tilde g] + (\mathbb{E}\tilde g)^2\big)^{\frac{2-p}{p-1}}"
    r" \le \big((\mathbb{E}\tilde g)^2\big)^{\frac{2-p}{p-1}}",
    "sym.lemma-B2.case2.step8": r"\sqrt{|g|^2(\mathbb{E}\tilde g)^{\frac{2(2-p)}{p-1}}\sigma^2/n_t} = |g|^{\frac{1}{p-1}}\sigma/\sqrt{n_t}",
    "sym.lemma-B2.case2.step9": r"|g|^{\frac{1}{p-1}} \le G^{\frac{1}{p-1}}",
    "sym.lemma-B2.combine": r"\mathbb{E}[B_2] \le " + _B2 + r"\quad\text{(cases combined)}",
    # Theorem 1's proof
    "sym.thm1.step1": r"f(\theta_{t+1}) \le f(\theta_t) + \langle g_t, \theta_{t+1} - \theta_t\rangle"
    r" + \tfrac{L}{2}\|\theta_{t+1} - \theta_t\|_p^2",
    "sym.thm1.step2": r"\langle g_t, \theta_{t+1} - \theta_t\rangle + \tfrac{L}{2}\|\theta_{t+1} - \theta_t\|_p^2"
    r" = \eta\langle g_t, -s(\tilde g_t)\rangle + \tfrac{L}{2}\|s(\tilde g_t)\|_p^2",
    "sym.thm1.step3": r"\eta\langle g, -s(\tilde g)\rangle + \tfrac{L\eta^2}{2}\|s(\tilde g)\|_p^2 = -A + B + C",
    "sym.thm1.A": r"\sum_i g_i\frac{g_i}{|g_i|^{(p-2)/(p-1)}} = \sum_i |g_i|^{p/(p-1)}",
    "sym.thm1.B.step1": r"\frac{x}{|x|^{(p-2)/(p-1)}} = \operatorname{sgn}(x)|x|^{1/(p-1)}",
    "sym.thm1.B.step2": r"\eta\sum_i g_i\big(s(g)_i - s(\tilde g)_i\big) \le \eta\sum_i |g_i|\,|s(g)_i - s(\tilde g)_i|",
    "sym.thm1.B.step3": r"\sum_i |g_i|\,|s(g)_i - s(\tilde g)_i| = B_1 + B_2",
    "sym.thm1.C.step1": r"\tfrac{L\eta^2}{2}\|s(\tilde g_t)\|_p^2"
    r" = \tfrac{L\eta^2}{2}\Big(\sum_i\Big|\frac{g_t^{(i)}}{|g_t^{(i)}|^{(p-2)/(p-1)}}\Big|^p\Big)^{2/p}",
    "sym.thm1.C.step2": r"\Big(\sum_i |x_i|^{p/(p-1)}\Big)^{2/p} = \|x\|_{p^*}^{2/(p-1)}",
    "sym.thm1.C.step3": r"\|\tilde g\|_{p^*}^{2/(p-1)} \le G^{2/(p-1)}",
    "sym.thm1.therefore": r"\eta\,\mathbb{E}\|g_t\|_{p^*}^{p^*} \le f(\theta_t) - f(\theta_{t+1})"
    r" + \frac{(2p-1)\eta G^a\|\sigma\|_1}{(p-1)\sqrt{n_t}} + \frac{L\eta^2 G^{2a}}{2}",
    "sym.thm1.telescope": r"\sum_{t<T}\big(f(\theta_t) - f(\theta_{t+1})\big) = f(\theta_0) - f(\theta_T) \le f_0 - f^*",
    "sym.thm1.final": r"\eta = \tfrac{1}{L^{1/2}G^{1/(p-1)}T^{1/2}},\ n_t = T,\ N = T^2:\ \text{bound}"
    r" = N^{-1/4}\big[L^{1/2}G^{\frac{1}{p-1}}(f_0 - f^* + \tfrac12) + \tfrac{2p-1}{p-1}G^{\frac{1}{p-1}}\|\sigma\|_1\big]",
    # Appendix B
    "sym.appendix-B.equivalence": r"\ell_2\text{ majorization} \iff \|\nabla f(y) - \nabla f(x)\|_{L^{-1}} \le \|y - x\|_L",
    "sym.appendix-B.reverse-hoelder": r"\frac{\|v\|_{2\rho/(2\rho-1)}}{\|L\|_{\rho^*}^{1/2}} \le \|v\|_{L^{-1}}",
    "sym.appendix-B.reverse-hoelder-inequality": r"\sum_i |u_i v_i| \ge \|u\|_{1/q}\|v\|_{-1/(q-1)},\ q = \frac{2\rho-1}{\rho}",
    "sym.appendix-B.smoothness": r"\|\nabla f(y) - \nabla f(x)\|_{L^{-1}} \le \|y - x\|_L",
    "sym.appendix-B.hoelder": r"\|y - x\|_L \le \|L\|_{\rho^*}^{1/2}\|y - x\|_{2\rho}",
    "sym.appendix-B.rearrange": r"\|\nabla f(y) - \nabla f(x)\|_{2\rho/(2\rho-1)} \le \|L\|_{\rho^*}\|y - x\|_{2\rho}",
    "sym.appendix-B.exponents": r"p = 2\rho:\ \rho^* = \frac{p}{p-2},\ \frac{2\rho}{2\rho-1} = \frac{p}{p-1} = p^*",
    "maj.lp-smoothness": r"|f(y) - f(x) - \nabla f(x)^\top(y - x)| \le \tfrac12\sum_i L_i(y_i - x_i)^2 \implies"
    r" \|\nabla f(y) - \nabla f(x)\|_{p^*} \le \|L\|_{p/(p-2)}\|y - x\|_p",
    "maj.tight": r"\|\operatorname{diag}(L)\|_{p\to p^*} = \|L\|_{p/(p-2)}",
    "maj.chain": r"\frac{\|\delta g\|_{2\rho/(2\rho-1)}}{\|L\|_{\rho^*}^{1/2}} \le \|\delta g\|_{L^{-1}} \le \|y - x\|_L"
    r" \le \|L\|_{\rho^*}^{1/2}\|y - x\|_{2\rho}",
    # Assumption 1 and the smaller claims
    "asm1.equivalence": r"\|\nabla f(x) - \nabla f(y)\|_{p^*} \le L\|x - y\|_p \iff"
    r" |f(y) - f(x) - \langle\nabla f(x), y - x\rangle| \le \tfrac{L}{2}\|y - x\|_p^2\ \text{(same } L)",
    "steepest.closed-form": r"\operatorname*{arg\,min}_\theta\ \langle\eta g, \theta - \theta_t\rangle + \tfrac12\|\theta - \theta_t\|_p^2"
    r" = \theta_t - \eta\|g\|_{p^*}^{\frac{p-2}{p-1}}\frac{g}{|g|^{(p-2)/(p-1)}}",
    "lionk.first-step": r"\text{Stacey}(p,2):\ \theta_1 = -(1-\tau)\eta\, s^\epsilon\big((1-\beta_1)\tilde g_0\big)"
    r" - \tau\alpha(1-\beta_1)\tilde g_0 \text{ coincides with Lion-}\mathcal{K}\text{ only at } \tau = 0",
    "intro.norm-ratio": r"\|x_0 - x^*\|_p^2 \text{ can be as small as } d^{2/p-1}\|x_0 - x^*\|_2^2\quad(p \ge 2)",
    "cor.batch-variance": r"\mathbb{E}|\tilde g_i - g_i|^2 \le \sigma_i^2/n\ \text{ for an } n\text{-sample mini-batch}",
    "cor.bounded-gradient": r"\|g\|_{p^*} = \|\mathbb{E}\tilde g\|_{p^*} \le \mathbb{E}\|\tilde g\|_{p^*} \le G;\quad"
    r" |\tilde g_i| \le G,\ |g_i| \le G",
    # corrections
    "thm1.B2.corrected": r"\mathbb{E}[B_2] \le \kappa(p)\,"
    + _B2
    + r",\quad \kappa(p) = \max\big(1, \sup_q R_p(q)\big),"
    r"\ R_p(q) = \frac{(p-1)\big[q^2(1 - q^a) + (1-q)q^{1+a}\big]}{\sqrt{q(1-q)}}",
    "thm1.corrected": r"\text{Theorem 1 (coefficient } \tfrac{2p-1}{p-1}\text{) via } \mathbb{E}[B]"
    r" \le \frac{(2p-1)\eta G^{1/(p-1)}\|\sigma\|_1}{(p-1)\sqrt{n_t}}",
    "asm1.corrected": r"\sup_{u,v}\frac{u^\top H v}{\|u\|_p\|v\|_p} \le 2^{1-2/p}\sup_w\frac{|w^\top H w|}{\|w\|_p^2}",
    "lionk.corrected": r"\text{Lion-}\mathcal{K}\text{ with step } \eta\|c\|_{p^*}^{1/(p-1)},\ c = (1-\beta_1)\tilde g_0"
    r"\ \equiv\ \text{Stacey}(p,2) \text{ at } \tau = 0,\ \epsilon = 0",
    "sym.lemma-B2.case1.step5.corrected": r"\mathbb{E}_{|=}\big[|g - \tilde g|\big]\,\mathbb{P}[=] \le \mathbb{E}|g - \tilde g|",
    "sym.thm1.step2.corrected": r"\langle g_t, \theta_{t+1} - \theta_t\rangle + \tfrac{L}{2}\|\theta_{t+1} - \theta_t\|_p^2"
    r" = \eta\langle g_t, -s(\tilde g_t)\rangle + \tfrac{L\eta^2}{2}\|s(\tilde g_t)\|_p^2",
    "sym.thm1.C.step1.corrected": r"\tfrac{L\eta^2}{2}\|s(\tilde g_t)\|_p^2"
    r" = \tfrac{L\eta^2}{2}\Big(\sum_i\Big|\frac{\tilde g_t^{(i)}}{|\tilde g_t^{(i)}|^{(p-2)/(p-1)}}\Big|^p\Big)^{2/p}",
    "sym.lemma-B2.case2.step5.corrected": r"\big(\mathbb{E}|\tilde g|^2\big)^{\frac{2-p}{p-1}} \le \mathbb{E}\big[|\tilde g|^{\frac{2(2-p)}{p-1}}\big]",
    # acceleration (eq. (1))
    "acc.upper": r"f(y_T) - f^* \le \frac{2^{(3p-4)/p}L\hat R^2\,T^{(p-2)/p}}{T(T+1)}",
    "acc.exponent": r"f(x_T) - f^* = O\big(L\|x_0 - x^*\|_p^2 / T^{(p+2)/p}\big)",
    "acc.lower": r"f(x_N) - \min_{\|x\|_p \le R} f \ge \frac{L R^2}{32(p-1)(T+1)^{(p+2)/p}}",
}
