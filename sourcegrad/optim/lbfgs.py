"""`LBFGS`: limited-memory BFGS, torch's port of minFunc, with optional strong-Wolfe line search.

`step(closure)` runs up to max_iter iterations, re-evaluating `closure()` (which must
zero the gradients, compute the loss, call backward and return the loss). All
parameters are handled as one flat vector (a numpy array in their common dtype); the
iteration, stopping tests and line search follow torch/optim/lbfgs.py step by step, so
the iterates agree with torch's. The state (`d`, `t`, `old_dirs`, `old_stps`, `ro`,
`H_diag`, `prev_flat_grad`, `prev_loss`, `n_iter`, `func_evals`) lives in
state[first parameter], as in torch; flat vectors are kept there as Tensors.
"""

import numpy as np

from ..eager.grad_mode import enable_grad, no_grad
from ..eager.tensor import Tensor
from ._functional import check_lr, real_view, to_scalar
from .optimizer import Optimizer

__all__ = ["LBFGS"]


def _cubic_interpolate(x1, f1, g1, x2, f2, g2, bounds=None):
    """Minimiser of the cubic through two points with their slopes, clipped to bounds."""
    if bounds is not None:
        xmin_bound, xmax_bound = bounds
    else:
        xmin_bound, xmax_bound = (x1, x2) if x1 <= x2 else (x2, x1)
    d1 = g1 + g2 - 3 * (f1 - f2) / (x1 - x2)
    d2_square = d1**2 - g1 * g2
    if d2_square >= 0:
        d2 = np.sqrt(d2_square)
        if x1 <= x2:
            min_pos = x2 - (x2 - x1) * ((g2 + d2 - d1) / (g2 - g1 + 2 * d2))
        else:
            min_pos = x1 - (x1 - x2) * ((g1 + d2 - d1) / (g1 - g2 + 2 * d2))
        return min(max(min_pos, xmin_bound), xmax_bound)
    return (xmin_bound + xmax_bound) / 2.0


def _strong_wolfe(obj_func, x, t, d, f, g, gtd, c1=1e-4, c2=0.9, tolerance_change=1e-9, max_ls=25):
    """torch's strong-Wolfe line search (from minFunc's lswolfe): (f, g, t, evaluations)."""
    # (long: torch's strong-Wolfe line search in torch's order (bracketing, then zoom), read
    # side by side with it)
    d_norm = np.abs(d).max()
    g = g.copy()
    f_new, g_new = obj_func(x, t, d)
    ls_func_evals = 1
    gtd_new = g_new.dot(d)

    # bracket an interval containing a point satisfying the Wolfe criteria
    t_prev, f_prev, g_prev, gtd_prev = 0, f, g, gtd
    done = False
    ls_iter = 0
    while ls_iter < max_ls:
        if f_new > (f + c1 * t * gtd) or (ls_iter > 1 and f_new >= f_prev):
            bracket, bracket_f = [t_prev, t], [f_prev, f_new]
            bracket_g, bracket_gtd = [g_prev, g_new.copy()], [gtd_prev, gtd_new]
            break
        if abs(gtd_new) <= -c2 * gtd:
            bracket, bracket_f, bracket_g = [t], [f_new], [g_new]
            done = True
            break
        if gtd_new >= 0:
            bracket, bracket_f = [t_prev, t], [f_prev, f_new]
            bracket_g, bracket_gtd = [g_prev, g_new.copy()], [gtd_prev, gtd_new]
            break
        # interpolate
        min_step = t + 0.01 * (t - t_prev)
        max_step = t * 10
        tmp = t
        t = _cubic_interpolate(
            t_prev, f_prev, gtd_prev, t, f_new, gtd_new, bounds=(min_step, max_step)
        )
        t_prev, f_prev, g_prev, gtd_prev = tmp, f_new, g_new.copy(), gtd_new
        f_new, g_new = obj_func(x, t, d)
        ls_func_evals += 1
        gtd_new = g_new.dot(d)
        ls_iter += 1
    if ls_iter == max_ls:  # reached max number of iterations
        bracket, bracket_f, bracket_g = [0, t], [f, f_new], [g, g_new]

    # zoom: refine the bracket until a point satisfies the criteria
    insuf_progress = False
    low_pos, high_pos = (0, 1) if bracket_f[0] <= bracket_f[-1] else (1, 0)
    while not done and ls_iter < max_ls:
        if abs(bracket[1] - bracket[0]) * d_norm < tolerance_change:
            break
        t = _cubic_interpolate(
            bracket[0], bracket_f[0], bracket_gtd[0], bracket[1], bracket_f[1], bracket_gtd[1]
        )
        # near a boundary with too little progress: move away from it
        eps = 0.1 * (max(bracket) - min(bracket))
        if min(max(bracket) - t, t - min(bracket)) < eps:
            if insuf_progress or t >= max(bracket) or t <= min(bracket):
                if abs(t - max(bracket)) < abs(t - min(bracket)):
                    t = max(bracket) - eps
                else:
                    t = min(bracket) + eps
                insuf_progress = False
            else:
                insuf_progress = True
        else:
            insuf_progress = False
        f_new, g_new = obj_func(x, t, d)
        ls_func_evals += 1
        gtd_new = g_new.dot(d)
        ls_iter += 1
        if f_new > (f + c1 * t * gtd) or f_new >= bracket_f[low_pos]:
            bracket[high_pos] = t
            bracket_f[high_pos] = f_new
            bracket_g[high_pos] = g_new.copy()
            bracket_gtd[high_pos] = gtd_new
            low_pos, high_pos = (0, 1) if bracket_f[0] <= bracket_f[1] else (1, 0)
        else:
            if abs(gtd_new) <= -c2 * gtd:
                done = True
            elif gtd_new * (bracket[high_pos] - bracket[low_pos]) >= 0:
                bracket[high_pos] = bracket[low_pos]
                bracket_f[high_pos] = bracket_f[low_pos]
                bracket_g[high_pos] = bracket_g[low_pos]
                bracket_gtd[high_pos] = bracket_gtd[low_pos]
            bracket[low_pos] = t
            bracket_f[low_pos] = f_new
            bracket_g[low_pos] = g_new.copy()
            bracket_gtd[low_pos] = gtd_new
    return bracket_f[low_pos], bracket_g[low_pos], bracket[low_pos], ls_func_evals


def _float(loss):
    """The loss as a Python float (detached first: no warning about requires_grad)."""
    return float(loss.detach()) if isinstance(loss, Tensor) else float(loss)


def _unwrap(value):
    if isinstance(value, Tensor):
        return value._data
    if isinstance(value, list):
        return [_unwrap(v) for v in value]
    return value


def _wrap(value):
    if isinstance(value, np.ndarray) and value.ndim:
        return Tensor._make(value)
    if isinstance(value, list):
        return [_wrap(v) for v in value]
    return value


def _remember(memory, y, s, H_diag, history_size):
    """Add the curvature pair (y, s) to the memory (old_dirs, old_stps, ro) when it is
    positive enough (the oldest pair dropped at `history_size`); returns the new H_diag."""
    old_dirs, old_stps, ro = memory
    ys = y.dot(s)
    if ys > 1e-10:
        if len(old_dirs) == history_size:  # shift history by one (FIFO)
            old_dirs.pop(0)
            old_stps.pop(0)
            ro.pop(0)
        old_dirs.append(y)
        old_stps.append(s)
        ro.append(1.0 / ys)
        H_diag = ys / y.dot(y)
    return H_diag


def _two_loop(memory, flat_grad, H_diag, history_size):
    """The two-loop recursion: the descent direction -H @ grad from the memory."""
    old_dirs, old_stps, ro = memory
    num_old = len(old_dirs)
    al = [None] * history_size
    q = -flat_grad
    for i in range(num_old - 1, -1, -1):
        al[i] = old_stps[i].dot(q) * ro[i]
        q += -al[i] * old_dirs[i]
    d = r = q * H_diag
    for i in range(num_old):
        be_i = old_dirs[i].dot(r) * ro[i]
        r += (al[i] - be_i) * old_stps[i]
    return d


class LBFGS(Optimizer):
    """L-BFGS; one parameter group only; `step` needs a closure."""

    def __init__(
        self,
        params,
        lr=1,
        max_iter=20,
        max_eval=None,
        tolerance_grad=1e-7,
        tolerance_change=1e-9,
        history_size=100,
        line_search_fn=None,
    ):
        check_lr(lr)
        if max_eval is None:
            max_eval = max_iter * 5 // 4
        defaults = {
            "lr": lr,
            "max_iter": max_iter,
            "max_eval": max_eval,
            "tolerance_grad": tolerance_grad,
            "tolerance_change": tolerance_change,
            "history_size": history_size,
            "line_search_fn": line_search_fn,
        }
        super().__init__(params, defaults)
        if len(self.param_groups) != 1:
            raise ValueError("LBFGS doesn't support per-parameter options (parameter groups)")
        self._params = self.param_groups[0]["params"]

    def _gather_flat_grad(self):
        views = [
            real_view(
                np.zeros(p._data.size, p._data.dtype)
                if p._grad is None
                else p._grad._data.reshape(-1)
            ).reshape(-1)
            for p in self._params
        ]
        return np.concatenate(views)

    def _add_grad(self, step_size, update):
        offset = 0
        for p in self._params:
            param = real_view(p._data)
            numel = param.size
            param += step_size * update[offset : offset + numel].reshape(param.shape)
            p._get_vc().value += 1
            offset += numel

    def _directional_evaluate(self, closure, x, t, d):
        self._add_grad(t, d)
        with enable_grad():
            loss = _float(closure())
        flat_grad = self._gather_flat_grad()
        for p, data in zip(self._params, x):
            p._data[...] = data
            p._get_vc().value += 1
        return loss, flat_grad

    def step(self, closure):
        """Up to max_iter L-BFGS iterations; returns the loss closure() gave first."""
        if closure is None:
            raise RuntimeError("LBFGS.step needs a closure that re-evaluates the loss")
        with no_grad():
            return self._step(closure)

    def _line_search(self, closure, t, d, loss, flat_grad, gtd, max_ls):
        """The strong-Wolfe line search along d from t, then the step it found taken:
        (loss, flat gradient, step length, evaluations)."""
        x_init = [p._data.copy() for p in self._params]

        def obj_func(x, t, d):
            return self._directional_evaluate(closure, x, t, d)

        loss, flat_grad, t, ls_func_evals = _strong_wolfe(
            obj_func, x_init, t, d, loss, flat_grad, gtd, max_ls=max_ls
        )
        self._add_grad(t, d)
        return loss, flat_grad, t, ls_func_evals

    def _step(self, closure):
        # (long: torch's LBFGS.step loop in torch's order, read side by side with it; the
        # memory update, the two-loop recursion and the line search are helpers)
        group = self.param_groups[0]
        lr = to_scalar(group["lr"])
        max_iter, max_eval = group["max_iter"], group["max_eval"]
        tolerance_grad, tolerance_change = group["tolerance_grad"], group["tolerance_change"]
        line_search_fn, history_size = group["line_search_fn"], group["history_size"]

        state = self.state[self._params[0]]
        state.setdefault("func_evals", 0)
        state.setdefault("n_iter", 0)

        with enable_grad():
            orig_loss = closure()
        loss = _float(orig_loss)
        current_evals = 1
        state["func_evals"] += 1
        flat_grad = self._gather_flat_grad()
        opt_cond = np.abs(flat_grad).max() <= tolerance_grad
        if opt_cond:  # optimal condition
            return orig_loss

        d, t = _unwrap(state.get("d")), state.get("t")
        old_dirs, old_stps = _unwrap(state.get("old_dirs")), _unwrap(state.get("old_stps"))
        ro, H_diag = state.get("ro"), state.get("H_diag")
        prev_flat_grad, prev_loss = _unwrap(state.get("prev_flat_grad")), state.get("prev_loss")

        n_iter = 0
        while n_iter < max_iter:
            n_iter += 1
            state["n_iter"] += 1
            # the descent direction
            if state["n_iter"] == 1:
                d = -flat_grad
                old_dirs, old_stps, ro = [], [], []
                H_diag = 1
            else:
                memory = (old_dirs, old_stps, ro)
                H_diag = _remember(memory, flat_grad - prev_flat_grad, d * t, H_diag, history_size)
                d = _two_loop(memory, flat_grad, H_diag, history_size)
            prev_flat_grad = flat_grad.copy()
            prev_loss = loss

            # the step length
            t = min(1.0, 1.0 / np.abs(flat_grad).sum()) * lr if state["n_iter"] == 1 else lr
            gtd = flat_grad.dot(d)
            if gtd > -tolerance_change:  # directional derivative below tolerance
                break

            ls_func_evals = 0
            if line_search_fn is not None:
                if line_search_fn != "strong_wolfe":
                    raise RuntimeError("only 'strong_wolfe' is supported")
                loss, flat_grad, t, ls_func_evals = self._line_search(
                    closure, t, d, loss, flat_grad, gtd, max_eval - current_evals
                )
                opt_cond = np.abs(flat_grad).max() <= tolerance_grad
            else:
                self._add_grad(t, d)
                if n_iter != max_iter:
                    # re-evaluate unless this is the last iteration (no use then)
                    with enable_grad():
                        loss = _float(closure())
                    flat_grad = self._gather_flat_grad()
                    opt_cond = np.abs(flat_grad).max() <= tolerance_grad
                    ls_func_evals = 1
            current_evals += ls_func_evals
            state["func_evals"] += ls_func_evals

            # the stopping conditions, in torch's order
            if (
                n_iter == max_iter
                or current_evals >= max_eval
                or opt_cond
                or np.abs(d * t).max() <= tolerance_change
                or abs(loss - prev_loss) < tolerance_change
            ):
                break

        state.update(
            d=_wrap(d),
            t=t,
            old_dirs=_wrap(old_dirs),
            old_stps=_wrap(old_stps),
            ro=ro,
            H_diag=H_diag,
            prev_flat_grad=_wrap(prev_flat_grad),
            prev_loss=prev_loss,
        )
        return orig_loss
