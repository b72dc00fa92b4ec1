#!/usr/bin/env python3
# An equal-work PyTorch baseline: our exact RGCN, RGAT and HGT layers (models/*.rgnn) in plain
# torch ops, checked against `explore run --dump` tensors, then timed eager and torch.compile'd.
"""Runs the explorer's own layers (models/rgcn.rgnn, rgat.rgnn, hgt.rgnn, lib.rgnn) in plain
PyTorch: index_select / gathers, per-relation and per-node-type matrix products (one batched
matmul over equal-size chunks of each relation's distinct rows: no Python loop over relations, so
torch.compile traces one graph whatever the relation count), index_add segment sums, edge_softmax WITHOUT max-subtraction, the mean NLL loss of log-softmax over all
nodes, the input and weight gradients and the SGD step (lr from the dump's manifest). Inputs,
weights and labels come from a directory written by

  explore run --model M --dataset D --task T --dims IN,OUT --heads H --backend ref --dump DIR

and the graph from `explore datasets export D --format npz`. The results are checked against the
dump (relative L2: output and loss <= 1e-5, gradients and updated weights <= 1e-4, all printed),
then timed (CUDA events, warm-up, median of repeats) and written as CSV rows in pyg_bench.py's
format, system torch-eager / torch-compile, layer "equal", which `explore import` loads.

  torch_equal.py --npz G.npz --dump DIR [--modes eager,compile] [--warmup 3] [--repeats 10]
                 [--device cuda] [--out equal.csv] [--append]
  torch_equal.py --check-io --npz G.npz --dump DIR   # numpy only: read both, check that they
                                                     # agree and the float64 forward matches
  torch_equal.py --self-test [--explore PATH]        # CPU, tiny random graph; skips without torch
"""
import argparse
import csv
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from pyg_bench import COLUMNS, is_oom, load_graph, np, time_runs, write_csv  # noqa: E402

CSV_COLUMNS = COLUMNS + ["dim_in", "dim_out", "check64_error", "check32_error", "check_note"]
TOL_OUT, TOL_GRAD = 1e-5, 1e-4
TOL_EXACT = 1e-9      # the float64 run against the float64 reference: the same math, rounding apart
MODELS = ("rgcn", "rgat", "hgt")


# ---------------------------------------------------------------------------- the dump ----

class Dump:
    """A --dump directory: the manifest and its arrays (numpy), by file role."""

    def __init__(self, path, models=MODELS):
        mpath = os.path.join(path, "manifest.json")
        try:
            with open(mpath) as f:
                self.meta = json.load(f)
        except (OSError, ValueError) as e:
            raise ValueError("%s: not a tensor dump (%s)" % (path, e))
        if self.meta.get("format") != "rgnn-tensors 1":
            raise ValueError("%s: unknown format %r" % (mpath, self.meta.get("format")))
        if self.meta["model"] not in models:
            raise ValueError("%s: model %r is not one of %s" % (mpath, self.meta["model"], ", ".join(models)))
        self.arrays = {}      # (role, variable) -> array
        for t in self.meta["tensors"]:
            a = np.load(os.path.join(path, t["file"]), allow_pickle=False)
            if list(a.shape) != t["shape"] or str(a.dtype) != t["dtype"]:
                raise ValueError("%s: shape %s %s, the manifest says %s %s" %
                                 (t["file"], a.shape, a.dtype, t["shape"], t["dtype"]))
            key = t["role"], t.get("of", t["variable"]) if t["role"] in ("grad", "updated") else t["variable"]
            self.arrays[key] = a
        self.model, self.task = self.meta["model"], self.meta["task"]
        self.heads, self.dim_in, self.dim_out = self.meta["heads"], self.meta["dim_in"], self.meta["dim_out"]

    def params(self):
        return {v: a for (r, v), a in self.arrays.items() if r == "param"}

    def get(self, role, var):
        return self.arrays[(role, var)]

    def check_graph(self, g):
        """The dump and the export must describe the same graph, edges in the same order."""
        m = self.meta
        if (m["nodes"], m["edges"], m["node_types"], m["edge_types"]) != \
                (g.num_nodes, g.num_edges, g.num_ntypes, g.num_etypes):
            raise ValueError("the dump is of a graph of %d nodes, %d edges, %d/%d types; the export has %d, %d, %d/%d"
                             % (m["nodes"], m["edges"], m["node_types"], m["edge_types"], g.num_nodes,
                                g.num_edges, g.num_ntypes, g.num_etypes))
        if ("graph", "norm") in self.arrays:
            want = 1.0 / in_counts(g)
            err = rel_l2(self.get("graph", "norm").reshape(-1), want)
            if err > 1e-12:
                raise ValueError("the dump's e.norm differs from the export's graph (rel L2 %.3g)" % err)


def in_counts(g):
    """c_{dst, etype} of every edge: incoming edges of its dst with its type."""
    key = g.etype.astype(np.int64) * g.num_nodes + g.dst
    _, inv, counts = np.unique(key, return_inverse=True, return_counts=True)
    return counts[inv].astype(np.float64)


def rel_l2(a, b):
    a = np.asarray(a, dtype=np.float64).reshape(-1)
    b = np.asarray(b, dtype=np.float64).reshape(-1)
    nb = np.linalg.norm(b)
    return float(np.linalg.norm(a - b) / (nb if nb > 0 else 1.0))


# -------------------------------------------------------------------------- the layers ----
# Written once against a tiny array interface (`ops`) so that numpy (float64, the --check-io
# path that runs without torch) and torch (float32, eager or compiled) run the same code.

class NumpyOps:
    exp = staticmethod(np.exp)
    bmm = staticmethod(np.matmul)

    @staticmethod
    def take(x, idx):
        return x[idx]

    @staticmethod
    def f64(x):
        return x

    f32 = f64

    @staticmethod
    def index_add(n, idx, src):
        out = np.zeros((n,) + src.shape[1:], dtype=src.dtype)
        np.add.at(out, idx, src)
        return out

    @staticmethod
    def leaky_relu(x, slope):
        return np.where(x > 0, x, slope * x)

    @staticmethod
    def permute(x, dims):
        return np.transpose(x, dims)


class TorchOps:
    def __init__(self, torch, low):
        self.torch, self.low = torch, low      # low: the storage type (float32; float64 for --check64)
        self.flip, self.record = None, None
        self.exp, self.bmm = torch.exp, torch.bmm

    def take(self, x, idx):
        """Rows idx of x. index_select, not x[idx]: the latter's backward is a sorting
        index_put, many times slower than index_select's index_add on our edge counts."""
        return self.torch.index_select(x, 0, idx)

    @staticmethod
    def f64(x):
        return x.double()

    def f32(self, x):
        return x.to(self.low)

    def index_add(self, n, idx, src):
        return src.new_zeros((n,) + tuple(src.shape[1:])).index_add(0, idx, src)

    def leaky_relu(self, x, slope):
        """flip (a boolean mask like x, or None): take the other branch there. A float32 run can land
        on the other side of 0 than the reference for an input within rounding of the kink; both
        are correct derivatives, so the check compares with the reference taking its branches.
        record: keep the inputs (eager float64 runs only), to find those near-kink elements."""
        if self.record is not None:
            self.record.append(x.detach())
        if self.flip is None:
            return self.torch.nn.functional.leaky_relu(x, slope)
        return self.torch.where((x > 0) != self.flip, x, slope * x)

    @staticmethod
    def permute(x, dims):
        return x.permute(*dims)


def chunk_rows(counts, max_waste=0.25):
    """Rows per chunk for a grouped product over groups of these sizes: the largest power of two
    from 32 to 1024 whose padding (each group rounded up to whole chunks) adds at most max_waste
    of the rows. Larger chunks gather fewer weight copies (one per chunk)."""
    total = max(int(counts.sum()), 1)
    best = 32
    for c in (64, 128, 256, 512, 1024):
        if int((-(-counts // c) * c).sum()) <= (1 + max_waste) * total:
            best = c
    return best


class Grouped:
    """Products of rows by a per-row group's weight, with no loop over groups (torch.compile traces
    a Python loop once per relation: 474 on fb15k237). Rows are first made unique per (group, row)
    pair, as the explorer's compaction does (so a relation's product runs once per distinct source
    node, not once per edge); the unique rows of each group are cut into chunks of equal size,
    padded, and one batched matmul multiplies every chunk by its group's weight. All index arrays
    are built here once, in numpy, outside the timed step."""

    def __init__(self, group, row, to_index):
        group, row = np.asarray(group, np.int64), np.asarray(row, np.int64)
        width = int(row.max(initial=0)) + 1
        ukey, inv = np.unique(group * width + row, return_inverse=True)   # sorted: by group, then row
        ugroup, urow = ukey // width, ukey % width
        counts = np.bincount(ugroup, minlength=int(group.max(initial=0)) + 1)
        self.chunk = c = chunk_rows(counts[counts > 0])
        nchunks = -(-counts // c)
        first_chunk = np.concatenate([[0], np.cumsum(nchunks)])[:-1]
        first_row = np.concatenate([[0], np.cumsum(counts)])[:-1]
        rank = np.arange(len(ukey)) - first_row[ugroup]           # position within its group
        pos = (first_chunk[ugroup] + rank // c) * c + rank % c    # padded slot of each unique row
        self.nchunks = nc = int(nchunks.sum())
        gidx = np.full(nc * c, -1, np.int64)
        gidx[pos] = urow
        chunk_group = np.repeat(np.arange(len(counts)), nchunks)
        pad = gidx < 0                                            # padding reads row 0; dropped by pos
        gidx[pad] = 0
        self.gather, self.out = to_index(gidx), to_index(pos[inv.reshape(-1)])
        self.chunk_group = to_index(chunk_group)

    def matmul(self, ops, x, W):
        """y[i] = x[row[i]] @ W[group[i]] for x [N, k] and W [G, k, n]."""
        c, nc = self.chunk, self.nchunks
        xp = ops.take(x, self.gather).reshape(nc, c, x.shape[-1])
        y = ops.bmm(xp, ops.take(W, self.chunk_group)).reshape(nc * c, W.shape[-1])
        return ops.take(y, self.out)

    def matmul_heads(self, ops, x, W):
        """y[i, h] = x[row[i], h] @ W[group[i], h] for x [N, H, d] and W [G, H, d, f]."""
        c, nc = self.chunk, self.nchunks
        H, d, f = W.shape[1], W.shape[2], W.shape[3]
        xp = ops.permute(ops.take(x, self.gather).reshape(nc, c, H, d), (0, 2, 1, 3)).reshape(nc * H, c, d)
        y = ops.bmm(xp, ops.take(W, self.chunk_group).reshape(nc * H, d, f)).reshape(nc, H, c, f)
        y = ops.permute(y, (0, 2, 1, 3)).reshape(nc * c, H, f)
        return ops.take(y, self.out)


class Layout:
    """The graph's index arrays on the array library's side, and the grouped products' indices."""

    def __init__(self, g, to_index):
        self.n, self.e = g.num_nodes, g.num_edges
        self.src, self.dst, self.etype = to_index(g.src), to_index(g.dst), to_index(g.etype)
        self.by_src = Grouped(g.etype, g.src, to_index)       # (relation, source node) rows
        self.by_dst = Grouped(g.etype, g.dst, to_index)       # (relation, destination node) rows
        ntype = np.repeat(np.arange(g.num_ntypes), np.diff(np.asarray(g.ntype_ptr, np.int64)))
        self.by_ntype = Grouped(ntype, np.arange(g.num_nodes), to_index)


def edge_softmax(L, att):
    """lib.rgnn: exp, sum over the incoming edges of each dst, divide (no max-subtraction)."""
    a = L.ops.exp(att)
    return a / L.ops.take(L.ops.index_add(L.n, L.dst, a), L.dst)


def rgcn(L, x, P, heads):
    """h = x W0 + sum_r sum_{u in N_v^r} norm * x_u W_r; norm = 1 / c_{v,r}."""
    W0, W = P["W0"], P["W"]
    msg = L.by_src.matmul(L.ops, x, W[:, 0])
    return x @ W0[0, 0] + L.ops.index_add(L.n, L.dst, L.norm * msg)


def rgat(L, x, P, heads):
    """hs = x_s W_r, ht = x_t W_r (heads x d), att = leakyrelu(hs.w_s[r] + ht.w_t[r], 0.2),
    edge_softmax, h_t = sum att * hs."""
    W = P["W"]
    d = W.shape[-1] // heads
    hs = L.by_src.matmul(L.ops, x, W[:, 0]).reshape(L.e, heads, d)
    ht = L.by_dst.matmul(L.ops, x, W[:, 0]).reshape(L.e, heads, d)
    o = L.ops
    ws, wt = o.take(P["w_s"], L.etype), o.take(P["w_t"], L.etype)
    att = o.leaky_relu((o.f64(hs) * ws).sum(-1) + (o.f64(ht) * wt).sum(-1), 0.2)
    att = edge_softmax(L, att)
    return o.index_add(L.n, L.dst, o.f32(att[:, :, None] * o.f64(hs))).reshape(L.n, heads * d)


def hgt(L, x, P, heads):
    """k, q, v = node-typed linears (heads x d); att = (k_s Wa_r) . q_t * mu_r / sqrt(d);
    msg = v_s Wm_r per head; edge_softmax; h_t = sum att * msg."""
    Wa, Wm, mu = P["Wa"], P["Wm"], P["mu"]
    d = P["WK"].shape[-1] // heads

    def typed(Wn):
        return L.by_ntype.matmul(L.ops, x, Wn[:, 0]).reshape(L.n, heads, d)

    k, q, v = typed(P["WK"]), typed(P["WQ"]), typed(P["WV"])
    o = L.ops
    katt = L.by_src.matmul_heads(o, k, Wa)
    att = o.f64((katt * o.take(q, L.dst)).sum(-1)) * o.take(mu, L.etype)[:, :, 0] / math.sqrt(d)
    msg = L.by_src.matmul_heads(o, v, Wm)
    att = edge_softmax(L, att)
    return o.index_add(L.n, L.dst, o.f32(att[:, :, None] * o.f64(msg))).reshape(L.n, heads * d)


LAYERS = {"rgcn": rgcn, "rgat": rgat, "hgt": hgt}


def numpy_forward(g, dump):
    """The float64 forward and loss in numpy: checks the formulas wherever numpy is."""
    L = Layout(g, lambda a: a.astype(np.int64))
    L.ops = NumpyOps
    L.norm = 1.0 / in_counts(g)[:, None]
    x = dump.get("input", "feature").reshape(g.num_nodes, -1)
    h = LAYERS[dump.model](L, x, dump.params(), dump.heads)
    loss = None
    if dump.task == "train":
        lab = dump.get("label", "label").reshape(-1)
        m = h.max(-1, keepdims=True)
        lse = (m + np.log(np.exp(h - m).sum(-1, keepdims=True)))[:, 0]
        loss = float(np.mean(lse - h[np.arange(g.num_nodes), lab]))
    return h, loss


def check_io(g, dump):
    """Numpy only: graph and dump agree; the float64 forward (and loss) match the dump's."""
    dump.check_graph(g)
    h, loss = numpy_forward(g, dump)
    errs = {"h": rel_l2(h, dump.get("output", "h"))}
    if loss is not None:
        errs["loss"] = rel_l2(loss, dump.meta["loss"])
    for k, e in errs.items():
        print("check-io %s %s %s: rel L2 %.3e" % (dump.model, dump.task, k, e))
    bad = [k for k, e in errs.items() if not e <= 1e-10]
    if bad:
        raise ValueError("the numpy float64 forward differs from the dump in %s" % ", ".join(bad))


# -------------------------------------------------------------------- torch: run, check ----

def param_dtype(torch, value, low):
    """Matrices (types x heads x in x out) are float32; attention vectors and HGT's mu (types x
    heads x width) are float64, as our kernels keep their gradients (codegen/vartype.h: each sums
    one term per edge of its type, terms that largely cancel). Per-edge attention logits, the
    softmax and the products that make or take a per-edge scalar (the logits' dot products, the
    weighting of each message, so that the softmax backward's input is a float64 sum) run in
    float64 for the same reason, as ours do; messages and the aggregation are float32."""
    return torch.float64 if value.ndim == 3 else low


class TorchRun:
    """One model on one device: float32 tensors from the dump (float64 with exact=True, to check
    that the code is our math: its error is then rounding alone), eager or compiled steps."""

    def __init__(self, torch, g, dump, device, compiled, exact=False, flip=None):
        self.torch, self.dump, self.device = torch, dump, device
        self.low = torch.float64 if exact else torch.float32
        self.tol_out, self.tol_grad = (TOL_EXACT, TOL_EXACT) if exact else (TOL_OUT, TOL_GRAD)
        L = Layout(g, lambda a: torch.as_tensor(a.astype(np.int64), device=device))
        L.ops = TorchOps(torch, self.low)
        L.ops.flip = flip
        if exact and not compiled:
            L.ops.record = []
        L.norm = torch.as_tensor(1.0 / in_counts(g)[:, None], dtype=self.low, device=device)
        self.L = L
        self.lr = float(dump.meta["sgd_lr"])
        self.x0 = dump.get("input", "feature").reshape(g.num_nodes, -1)
        self.P0 = dump.params()
        self.reset()
        if dump.task == "train":
            self.labels = torch.as_tensor(dump.get("label", "label").reshape(-1), device=device)
        layer, heads = LAYERS[dump.model], dump.heads

        def forward(x, P):
            return layer(L, x, P, heads)

        self.forward = torch.compile(forward) if compiled else forward

    def reset(self):
        t = self.torch
        train = self.dump.task == "train"
        self.x = t.tensor(self.x0, dtype=self.low, device=self.device, requires_grad=train)
        self.P = {k: t.tensor(v, dtype=param_dtype(t, v, self.low), device=self.device, requires_grad=train)
                  for k, v in self.P0.items()}

    def infer(self):
        with self.torch.no_grad():
            return self.forward(self.x, self.P)

    def train_step(self):
        """Forward, mean NLL of log-softmax over all nodes, backward (input and weight
        gradients), then the SGD step w -= lr * dw."""
        t = self.torch
        self.x.grad = None
        for p in self.P.values():
            p.grad = None
        h = self.forward(self.x, self.P)
        loss = t.nn.functional.cross_entropy(h, self.labels)
        loss.backward()
        with t.no_grad():
            for p in self.P.values():
                p.sub_(self.lr * p.grad)
        return h, loss

    def results(self):
        """What one step produces, by name: the output (inference), or the output, loss, input and
        weight gradients and updated weights (training). The weights are reset after it."""
        if self.dump.task == "infer":
            return {"h": self.infer().cpu().numpy()}
        h, loss = self.train_step()
        r = {"h": h.detach().cpu().numpy(), "loss": loss.item(), "d_feature": self.x.grad.cpu().numpy()}
        for k, p in self.P.items():
            r["d_" + k] = p.grad.cpu().numpy()
            r[k + " after SGD"] = p.detach().cpu().numpy()
        self.reset()
        return r

    def kink_candidates(self, most=3):
        """Indices (into the LeakyReLU input, flattened) within 1e-6 RMS of the kink, nearest
        first: where a float32 run may take the other branch (measure/validate.c's rule)."""
        rec = self.L.ops.record
        if not rec:
            return []
        z = rec[0].reshape(-1).abs()
        near = (z < 1e-6 * z.pow(2).mean().sqrt()).nonzero().reshape(-1)
        return near[z[near].argsort()][:most].tolist()

    def check(self, want=None, got=None):
        """Rel L2 of everything against the dump (or want, a results() dict); raises naming what is
        over its tolerance."""
        d, to, tg = self.dump, self.tol_out, self.tol_grad
        got = got if got is not None else self.results()
        want = want if want is not None else dump_results(d, got)
        errs = [(k, rel_l2(v, want[k]), to if k in ("h", "loss") else tg) for k, v in got.items()]
        prec = "float64" if self.low == self.torch.float64 else "float32"
        for what, e, tol in errs:
            print("check %s %s %s %-16s rel L2 %.3e (tolerance %g)" % (prec, d.model, d.task, what, e, tol),
                  file=sys.stderr)
        self.max_error = max(e for _, e, _ in errs)
        bad = ["%s (%.3e > %g)" % (w, e, tol) for w, e, tol in errs if not e <= tol]
        if bad:
            raise ValueError("differs from the reference: " + ", ".join(bad))


def dump_results(d, like):
    """The reference's values under results()'s names."""
    want = {}
    for k in like:
        if k == "h":
            want[k] = d.get("output", "h")
        elif k == "loss":
            want[k] = d.meta["loss"]
        elif k.endswith(" after SGD"):
            want[k] = d.get("updated", k[:-len(" after SGD")])
        else:
            want[k] = d.get("grad", k[2:])
    return want


def check_near_kinks(torch, device, g, dump, run, got, kinks, first_error):
    """After a float32 check failed: the reference with some near-kink LeakyReLU branches taken the
    other way (every non-empty subset of the candidates), as measure/validate.c does for our
    kernels. got: the float32 run's results(). Returns a note when one alternative matches; raises
    first_error otherwise."""
    if not kinks:
        raise first_error
    for mask in range(1, 1 << len(kinks)):
        flipped = [kinks[i] for i in range(len(kinks)) if mask >> i & 1]
        flip = torch.zeros(g.num_edges * dump.heads, dtype=torch.bool, device=device)
        flip[flipped] = True
        alt = TorchRun(torch, g, dump, device, False, exact=True, flip=flip.reshape(g.num_edges, dump.heads))
        want = alt.results()
        alt = None
        try:
            run.check(want=want, got=got)
            return "near-kink LeakyReLU branch taken the other way at %s" % ",".join(map(str, flipped))
        except ValueError:
            continue
    raise first_error


def environment(device):
    import torch
    device = device or ("cuda" if torch.cuda.is_available() else "cpu")
    row = {"torch_version": torch.__version__, "cuda_version": torch.version.cuda or "", "gpu": "cpu", "sm": 0}
    if device != "cpu":
        props = torch.cuda.get_device_properties(device)
        row.update(gpu=props.name, sm=props.major * 10 + props.minor)
    # Full FP32 products, as the explorer's kernels and the reference comparison assume.
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.set_float32_matmul_precision("highest")
    return torch, device, row


def check_exact(torch, device, g, dump, args):
    """The float64 eager run against the reference, once per problem (the first mode's row runs it,
    the others reuse its verdict): raises ValueError when the code is not our math."""
    if getattr(args, "exact_result", None) is None:
        try:
            exact = TorchRun(torch, g, dump, device, False, exact=True)
            exact.check()
            args.exact_result = "%.3e" % exact.max_error
            args.kinks = exact.kink_candidates()
        except ValueError as exc:
            args.exact_result = exc
        except Exception as exc:  # noqa: BLE001 - float64 needs twice the memory: say so, time float32
            if not is_oom(torch, exc):
                raise
            args.exact_result = "oom"
        finally:
            exact = None
            if device != "cpu":
                torch.cuda.empty_cache()
                torch.cuda.reset_peak_memory_stats()
    if isinstance(args.exact_result, ValueError):
        raise ValueError("float64 run: %s" % args.exact_result)
    return args.exact_result


def measure(torch, device, env_row, g, dump, mode, args):
    """One CSV row: check, then time one mode; failures are results."""
    cuda = device != "cpu"
    row = dict(env_row, system="torch-" + mode, layer="equal", model=dump.model, task=dump.task,
               dataset=args.dataset or dump.meta["dataset"], dims=dump.dim_out, dim_in=dump.dim_in,
               dim_out=dump.dim_out, heads=dump.heads, nodes=g.num_nodes, edges=g.num_edges,
               relations=g.num_etypes, status="ok", repeats=0, error="")
    try:
        if cuda:
            torch.cuda.empty_cache()
            torch.cuda.reset_peak_memory_stats()
        if args.check64:
            row["check64_error"] = check_exact(torch, device, g, dump, args)
        run = TorchRun(torch, g, dump, device, mode == "compile")
        got = run.results()
        try:
            run.check(got=got)
        except ValueError as exc:
            row["check_note"] = check_near_kinks(torch, device, g, dump, run, got, getattr(args, "kinks", []), exc)
        row["check32_error"] = "%.3e" % run.max_error
        step = run.infer if dump.task == "infer" else run.train_step
        times = time_runs(torch, step, args.warmup, args.repeats, cuda)
        row.update(median_ms="%.6f" % statistics.median(times), min_ms="%.6f" % min(times),
                   max_ms="%.6f" % max(times), repeats=len(times))
        if cuda:
            row["peak_mem_bytes"] = torch.cuda.max_memory_allocated()
    except ValueError as exc:    # a failed check: no time is recorded for a wrong result
        row.update(status="wrong_answer", error=str(exc)[:300])
    except Exception as exc:     # noqa: BLE001 - out of memory or a compile failure is a result
        oom = is_oom(torch, exc)
        row.update(status="oom" if oom else "launch_error",
                   error=("%s: %s" % (type(exc).__name__, exc)).splitlines()[0][:300])
    return row


# ----------------------------------------------------------------------------- self-test ----

SELF_TEST_GRAPH = "synth:nodes=40,edges=160,ntypes=3,etypes=4,ratio=0.6,seed=5"


def self_test(explore):
    if np is None:
        print("skip: numpy not importable")
        return 0
    if not os.path.exists(explore):
        print("torch_equal.py: %s not found (build it, or pass --explore PATH)" % explore, file=sys.stderr)
        return 1
    try:
        import torch
    except ImportError:
        torch = None
    with tempfile.TemporaryDirectory() as tmp:
        npz = os.path.join(tmp, "g.npz")
        subprocess.run([explore, "datasets", "export", SELF_TEST_GRAPH, "--out", npz], check=True,
                       stdout=subprocess.DEVNULL)
        g = load_graph(npz)
        rows = []
        for model in MODELS:
            heads = 1 if model == "rgcn" else 2
            for task in ("infer", "train"):
                ddir = os.path.join(tmp, "%s-%s" % (model, task))
                subprocess.run([explore, "run", "--model", model, "--dataset", SELF_TEST_GRAPH, "--task", task,
                                "--dims", "6,4", "--heads", str(heads), "--backend", "ref", "--dump", ddir],
                               check=True, stdout=subprocess.DEVNULL)
                dump = Dump(ddir)
                check_io(g, dump)
                if torch is not None:
                    torch_mod, device, env_row = environment("cpu")
                    args = argparse.Namespace(warmup=1, repeats=2, dataset="selftest", check64=True)
                    rows.append(measure(torch_mod, device, env_row, g, dump, "eager", args))
        print("numpy checks: ok")
        if torch is None:
            print("skip: torch not importable")
            return 0
        for r in rows:
            assert r["status"] == "ok" and r["system"] == "torch-eager" and float(r["median_ms"]) >= 0, r
        out = os.path.join(tmp, "equal.csv")
        write_csv(out, rows, False, CSV_COLUMNS)
        with open(out, newline="") as f:
            assert len(list(csv.DictReader(f))) == len(rows)
    print("self-test passed")
    return 0


# ---------------------------------------------------------------------------------- main ----

def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--npz", help="the graph, from `explore datasets export NAME --format npz`")
    ap.add_argument("--dump", help="tensors from `explore run ... --dump DIR`")
    ap.add_argument("--dataset", help="the name to record (default: the dump's dataset)")
    ap.add_argument("--modes", default="eager,compile")
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--repeats", type=int, default=10)
    ap.add_argument("--device", help="cuda, cuda:1 or cpu (default: cuda when available)")
    ap.add_argument("--out", default="equal.csv")
    ap.add_argument("--append", action="store_true", help="add rows to an existing CSV")
    ap.add_argument("--check-io", action="store_true", help="numpy only: read and check the graph and dump")
    ap.add_argument("--no-check64", dest="check64", action="store_false",
                    help="skip the float64 eager run checked at %g before each mode (it needs twice the memory)"
                    % TOL_EXACT)
    ap.add_argument("--self-test", action="store_true")
    here = os.path.dirname(os.path.abspath(__file__))
    ap.add_argument("--explore", default=os.path.join(here, "..", "build", "explore"), help="for --self-test")
    args = ap.parse_args(argv)
    if args.self_test:
        return self_test(args.explore)
    if np is None:
        print("torch_equal.py: numpy is not importable", file=sys.stderr)
        return 1
    if not args.npz or not args.dump:
        ap.error("give --npz FILE and --dump DIR (or --self-test)")
    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    if not modes or any(m not in ("eager", "compile") for m in modes):
        ap.error("--modes takes eager and/or compile")
    if args.repeats < 1 or args.warmup < 0:
        ap.error("--repeats must be at least 1 and --warmup at least 0")
    try:
        g, dump = load_graph(args.npz), Dump(args.dump)
        if args.check_io:
            check_io(g, dump)
            print("check-io: ok")
            return 0
        dump.check_graph(g)
    except (OSError, ValueError, KeyError) as e:
        print("torch_equal.py: %s" % e, file=sys.stderr)
        return 1
    try:
        torch, device, env_row = environment(args.device)
    except ImportError as e:
        print("torch_equal.py: PyTorch is needed to run and time the layers (%s)" % e, file=sys.stderr)
        return 1
    rows = []
    for mode in modes:
        row = measure(torch, device, env_row, g, dump, mode, args)
        rows.append(row)
        print("%-10s %-13s %-5s %-5s %-12s %10s ms  peak %s %s" %
              (row["dataset"], row["system"], row["model"], row["task"], row["status"], row.get("median_ms", "-"),
               row.get("peak_mem_bytes", "-"), row["error"]), file=sys.stderr, flush=True)
    write_csv(args.out, rows, args.append, CSV_COLUMNS)
    print("wrote %s: %d rows, %d ok" % (args.out, len(rows), sum(r["status"] == "ok" for r in rows)))
    return 0 if all(r["status"] in ("ok", "oom") for r in rows) else 3


if __name__ == "__main__":
    sys.exit(main())
