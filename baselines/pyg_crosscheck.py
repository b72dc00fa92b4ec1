#!/usr/bin/env python3
# Checks our PyG-definition model programs (models/pyg_*.rgnn) against PyTorch Geometric's own
# classes: the same graph, inputs and weights, float64, output compared with our reference's dump.
"""Runs PyG 2.8's RGCNConv, RGATConv or HGTConv with the weights of a dump of our float64
reference (models/pyg_rgcn.rgnn, pyg_rgat.rgnn, pyg_hgt.rgnn) and compares the layer's output.

  build/explore datasets export D --format npz --out G.npz
  build/explore run --model pyg_hgt --dataset D --dims 64 --backend ref --dump DIR
  baselines/pyg_crosscheck.py --npz G.npz --dump DIR [--device cpu|cuda]

or, for every model on some datasets, baselines/pyg_crosscheck.py --all [-d "aifb mutag"]
[--dims 64] [--heads 1] [--device cuda] [--explore build/explore] [--data-dir DIR].

Prints the max abs error, the max relative error (max |pyg - ours| / max |ours|) and the relative
L2 error; exit 0 when the relative error is at most 1e-5, 1 above it (or on a failure), 2 when
PyTorch Geometric is not installed or the input is bad. `--check-io` builds the weight mapping and
checks it against the dump and graph with numpy alone (no torch, no PyG): `emulate` runs the three
classes' computations on the mapped parameters, in PyG's layout, and compares with our output.

The weight mapping (ours, as dumped: matrix [types, heads, rows, cols] applied as x @ W, vector
[types, heads, width]) to PyG's parameters, explicit in WEIGHT_MAPS below:

  pyg_rgcn -> RGCNConv(IN, OUT, R, aggr="mean", root_weight=True, bias=True)
      weight[r] = W[r, 0]   root = Wroot[0, 0]   bias = bias[0, 0]
  pyg_rgat -> RGATConv(IN, OUT/H, R, heads=H, attention_mechanism="across-relation", bias=True)
      weight[r] = W[r, 0]   q = q[0, 0] (OUT x H)   k = k[0, 0]   bias = bias[0].flatten()
  pyg_hgt  -> HGTConv(IN, OUT, metadata, heads=H), node type t named "n<t>", relation r
              ("n<src type>", "r<r>", "n<dst type>"), its index i in the metadata's order
      kqv_lin.lins["n<t>"].weight = [WK[t, 0] | WQ[t, 0] | WV[t, 0]]^T   (3*OUT x IN)
      kqv_lin.lins["n<t>"].bias   = [bK[t] | bQ[t] | bV[t]] flattened
      k_rel.weight[h * R' + i] = Wa[r, h]   v_rel.weight[h * R' + i] = Wm[r, h]   (R' relations
                                 in the metadata; PyG 2.8 orders HeteroLinear's types head-major)
      p_rel["n<s>__r<r>__n<d>"] = mu[r, :, 0]  (1 x H)   skip["n<t>"] = skip[t, 0, 0]
      out_lin.lins["n<t>"].weight = Wo[t, 0]^T   out_lin.lins["n<t>"].bias = bo[t, 0]
  HGTConv gives no output for node types that no relation points to: those rows are not compared.
"""
import argparse
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from pyg_bench import load_graph, np  # noqa: E402
from torch_equal import Dump  # noqa: E402

MODELS = ("pyg_rgcn", "pyg_rgat", "pyg_hgt")
TOL = 1e-5


# ------------------------------------------------------------------- the weight mapping ----

def rgcn_weights(d, g):
    p = d.params()
    return {"weight": p["W"][:, 0], "root": p["Wroot"][0, 0], "bias": p["bias"][0, 0]}


def rgat_weights(d, g):
    p = d.params()
    return {"weight": p["W"][:, 0], "q": p["q"][0, 0], "k": p["k"][0, 0], "bias": p["bias"][0].reshape(-1)}


def hgt_weights(d, g):
    """Parameter paths of HGTConv (dots into its modules, brackets into its dicts) -> arrays."""
    p, H = d.params(), d.heads
    sizes, edges = g.hetero()
    out = {}
    for name in sizes:
        t = int(name[1:])
        out["kqv_lin.lins[%s].weight" % name] = np.concatenate([p["WK"][t, 0], p["WQ"][t, 0], p["WV"][t, 0]], 1).T
        out["kqv_lin.lins[%s].bias" % name] = np.concatenate([p["bK"][t].reshape(-1), p["bQ"][t].reshape(-1),
                                                               p["bV"][t].reshape(-1)])
        out["out_lin.lins[%s].weight" % name] = p["Wo"][t, 0].T
        out["out_lin.lins[%s].bias" % name] = p["bo"][t, 0]
        out["skip[%s]" % name] = p["skip"][t, 0].reshape(1)
    keys = list(edges)
    D = p["Wa"].shape[-1]
    k_rel = np.zeros((H * len(keys), D, D))
    v_rel = np.zeros_like(k_rel)
    for i, key in enumerate(keys):
        r = int(key[1][1:])
        for h in range(H):
            k_rel[h * len(keys) + i] = p["Wa"][r, h]
            v_rel[h * len(keys) + i] = p["Wm"][r, h]
        out["p_rel[%s]" % "__".join(key)] = p["mu"][r, :, 0].reshape(1, H)
    out["k_rel.weight"], out["v_rel.weight"] = k_rel, v_rel
    return out


WEIGHT_MAPS = {"pyg_rgcn": rgcn_weights, "pyg_rgat": rgat_weights, "pyg_hgt": hgt_weights}


def our_output(d):
    """The dump's layer output as [nodes, OUT]."""
    outs = [v for (role, v) in d.arrays if role == "output"]
    if len(outs) != 1:
        raise ValueError("the dump has %d outputs, expected one" % len(outs))
    a = d.get("output", outs[0])
    return a.reshape(a.shape[0], -1)


def check_io(d, g):
    """Numpy only: the dump fits the graph and the mapping covers the model's weights."""
    d.check_graph(g)
    mapped = WEIGHT_MAPS[d.model](d, g)
    if d.model == "pyg_hgt" and d.dim_in != d.dim_out:
        raise ValueError("pyg_hgt needs OUT = IN (HGTConv's skip)")
    return mapped


# ------------------------------------------------------ numpy, in PyG's parameter layout ----
# What the three classes compute, written from the mapped parameters the way PyG's code uses
# them (RGCNConv's per-relation mean then product, RGATConv's per-edge weights, HGTConv's
# head-major HeteroLinear types, its per-type output linear and skip). `--check-io` compares it
# with our dump, so the mapping and the model programs are checked on machines without PyG.

def _segment_softmax(a, dst, n):
    """Softmax of a [E, H] over the edges of each dst, maximum subtracted first (as PyG does)."""
    m = np.full((n,) + a.shape[1:], -np.inf)
    np.maximum.at(m, dst, a)
    e = np.exp(a - m[dst])
    s = np.zeros((n,) + a.shape[1:])
    np.add.at(s, dst, e)
    return e / s[dst]


def emulate(d, g, P):
    x = d.get("input", "feature").reshape(g.num_nodes, -1)
    n, H = g.num_nodes, d.heads
    if d.model == "pyg_rgcn":
        out = x @ P["root"] + P["bias"]
        for r in range(g.num_etypes):
            lo, hi = int(g.etype_ptr[r]), int(g.etype_ptr[r + 1])
            agg, cnt = np.zeros_like(x), np.zeros(n)
            np.add.at(agg, g.dst[lo:hi], x[g.src[lo:hi]])
            np.add.at(cnt, g.dst[lo:hi], 1.0)
            out += (agg / np.maximum(cnt, 1.0)[:, None]) @ P["weight"][r]
        return out, np.ones(n, dtype=bool)
    if d.model == "pyg_rgat":
        w = P["weight"][g.etype]
        outi, outj = np.einsum("ei,eio->eo", x[g.dst], w), np.einsum("ei,eio->eo", x[g.src], w)
        a = outi @ P["q"] + outj @ P["k"]
        a = _segment_softmax(np.where(a > 0, a, 0.2 * a), g.dst, n)
        msg = a[:, :, None] * outj.reshape(len(a), H, -1)
        out = np.zeros((n,) + msg.shape[1:])
        np.add.at(out, g.dst, msg)
        return out.reshape(n, -1) + P["bias"], np.ones(n, dtype=bool)
    sizes, edges = g.hetero()
    F = d.dim_out
    D = F // H
    k, q, v = (np.zeros((n, H, D)) for _ in range(3))
    for name in sizes:
        lo, hi = int(g.ntype_ptr[int(name[1:])]), int(g.ntype_ptr[int(name[1:]) + 1])
        kqv = x[lo:hi] @ P["kqv_lin.lins[%s].weight" % name].T + P["kqv_lin.lins[%s].bias" % name]
        k[lo:hi], q[lo:hi], v[lo:hi] = (kqv[:, i * F:(i + 1) * F].reshape(-1, H, D) for i in range(3))
    keys = list(edges)
    src, dst, kj, vj, prel = [], [], [], [], []
    for i, key in enumerate(keys):
        r = int(key[1][1:])
        lo, hi = int(g.etype_ptr[r]), int(g.etype_ptr[r + 1])
        s_, d_ = g.src[lo:hi], g.dst[lo:hi]
        idx = [h * len(keys) + i for h in range(H)]
        kj.append(np.einsum("ehd,hdf->ehf", k[s_], P["k_rel.weight"][idx]))
        vj.append(np.einsum("ehd,hdf->ehf", v[s_], P["v_rel.weight"][idx]))
        prel.append(np.repeat(P["p_rel[%s]" % "__".join(key)], hi - lo, 0))
        src.append(s_), dst.append(d_)
    dst, kj, vj, prel = np.concatenate(dst), np.concatenate(kj), np.concatenate(vj), np.concatenate(prel)
    a = _segment_softmax((q[dst] * kj).sum(-1) * prel / np.sqrt(D), dst, n)
    agg = np.zeros((n, H, D))
    np.add.at(agg, dst, a[:, :, None] * vj)
    agg = agg.reshape(n, F)
    erf = np.vectorize(__import__("math").erf)
    out, rows = np.zeros((n, F)), np.zeros(n, dtype=bool)
    for name in sizes:
        if not any(key[2] == name for key in keys):
            continue   # HGTConv gives no output for a type no relation points to
        lo, hi = int(g.ntype_ptr[int(name[1:])]), int(g.ntype_ptr[int(name[1:]) + 1])
        y = agg[lo:hi] * 0.5 * (1.0 + erf(agg[lo:hi] / np.sqrt(2.0)))
        y = y @ P["out_lin.lins[%s].weight" % name].T + P["out_lin.lins[%s].bias" % name]
        alpha = 1.0 / (1.0 + np.exp(-P["skip[%s]" % name][0]))
        out[lo:hi], rows[lo:hi] = alpha * y + (1 - alpha) * x[lo:hi], True
    return out, rows


def report(d, g, theirs, rows, what):
    """Prints the comparison of THEIRS (rows where defined) with our dump; True when within TOL."""
    ours = our_output(d)
    diff = np.abs(theirs[rows] - ours[rows])
    scale = np.abs(ours[rows]).max() if rows.any() else 0.0
    max_abs = float(diff.max()) if diff.size else 0.0
    rel = max_abs / scale if scale > 0 else max_abs
    l2 = float(np.linalg.norm(diff) / max(np.linalg.norm(ours[rows]), 1e-300))
    print("%s %s %s dims %d,%d heads %d: rows compared %d of %d, max abs %.3g, max rel %.3g, rel L2 %.3g: %s"
          % (what, d.model, d.meta.get("dataset", "?"), d.dim_in, d.dim_out, d.heads, int(rows.sum()), g.num_nodes,
             max_abs, rel, l2, "ok" if rel <= TOL else "MISMATCH (> %g)" % TOL))
    return rel <= TOL


# ------------------------------------------------------------------------------ PyG side ----

def resolve(module, path):
    """module.a.b[key].c -> the parameter object."""
    obj = module
    for part in path.replace("]", "").split("."):
        name, _, key = part.partition("[")
        obj = getattr(obj, name)
        if key:
            obj = obj[key]
    return obj


def load_weights(torch, module, mapped):
    for path, arr in mapped.items():
        par = resolve(module, path)
        if tuple(par.shape) != arr.shape:
            raise ValueError("PyG's %s is %s, the mapping gives %s" % (path, tuple(par.shape), arr.shape))
        with torch.no_grad():
            par.copy_(torch.from_numpy(np.ascontiguousarray(arr)))


def run_pyg(d, g, device):
    """PyG's output in float64 as [nodes, OUT] and a mask of the rows it defines."""
    import torch
    import torch_geometric.nn as pygnn
    torch.set_default_dtype(torch.float64)
    x = torch.from_numpy(d.get("input", "feature").reshape(g.num_nodes, -1)).to(device)
    H, R, IN, OUT = d.heads, g.num_etypes, d.dim_in, d.dim_out
    rows = np.ones(g.num_nodes, dtype=bool)
    if d.model == "pyg_hgt":
        sizes, edges = g.hetero()
        module = pygnn.HGTConv(IN, OUT, (list(sizes), list(edges)), heads=H)
        load_weights(torch, module, WEIGHT_MAPS[d.model](d, g))
        module = module.double().to(device).eval()
        x_dict = {t: x[int(g.ntype_ptr[int(t[1:])]):int(g.ntype_ptr[int(t[1:]) + 1])] for t in sizes}
        ei = {k: torch.from_numpy(v).to(device) for k, v in edges.items()}
        with torch.no_grad():
            res = module(x_dict, ei)
        out = np.zeros((g.num_nodes, OUT))
        for t in sizes:
            lo, hi = int(g.ntype_ptr[int(t[1:])]), int(g.ntype_ptr[int(t[1:]) + 1])
            if res.get(t) is None:
                rows[lo:hi] = False
            else:
                out[lo:hi] = res[t].cpu().numpy()
        return out, rows
    ei = torch.from_numpy(np.stack([g.src, g.dst])).to(device)
    et = torch.from_numpy(g.etype).to(device)
    if d.model == "pyg_rgcn":
        module = pygnn.RGCNConv(IN, OUT, R, aggr="mean", root_weight=True, bias=True)
    else:
        module = pygnn.RGATConv(IN, OUT // H, R, heads=H, attention_mechanism="across-relation",
                                attention_mode="additive-self-attention", concat=True, bias=True)
    load_weights(torch, module, WEIGHT_MAPS[d.model](d, g))
    module = module.double().to(device).eval()
    with torch.no_grad():
        out = module(x, ei, et)
    return out.cpu().numpy(), rows


def compare(d, g, device):
    theirs, rows = run_pyg(d, g, device)
    return report(d, g, theirs, rows, "PyG")


# --------------------------------------------------------------------------- commands ----

def have_pyg():
    try:
        import torch  # noqa: F401
        import torch_geometric  # noqa: F401
        return None
    except ImportError as e:
        return str(e)


def run_all(args):
    """Export, dump and check every model on each dataset; returns how many failed."""
    failed = 0
    with tempfile.TemporaryDirectory() as work:
        for ds in args.datasets.split():
            npz = os.path.join(work, ds.replace(":", "_") + ".npz")
            base = [args.explore]
            subprocess.run(base + ["datasets", "export", ds, "--format", "npz", "--out", npz] +
                           (["--data-dir", args.data_dir] if args.data_dir else []), check=True)
            g = load_graph(npz)
            for model in MODELS:
                dump = os.path.join(work, "%s-%s" % (ds.replace(":", "_"), model))
                subprocess.run(base + ["run", "--model", model, "--dataset", ds, "--dims", str(args.dims),
                                       "--heads", str(1 if model == "pyg_rgcn" else args.heads), "--backend", "ref",
                                       "--dump", dump] + (["--data-dir", args.data_dir] if args.data_dir else []),
                               check=True, stdout=subprocess.DEVNULL)
                d = Dump(dump, MODELS)
                d.check_graph(g)
                try:
                    failed += not compare(d, g, args.device)
                except Exception as e:  # one model's failure must not hide the others' results
                    print("%s %s: failed: %s" % (model, ds, e))
                    failed += 1
    return failed


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--npz", help="the graph: explore datasets export D --format npz")
    ap.add_argument("--dump", help="our reference's tensors: explore run --model pyg_* --backend ref --dump DIR")
    ap.add_argument("--device", default="cpu", help="cpu or cuda (default cpu)")
    ap.add_argument("--check-io", action="store_true", help="numpy only: check the dump, graph and mapping")
    ap.add_argument("--all", action="store_true", help="export, dump and check every model on -d's datasets")
    ap.add_argument("-d", "--datasets", default="aifb mutag", help="datasets of --all")
    ap.add_argument("--dims", type=int, default=64, help="IN = OUT of --all (default 64)")
    ap.add_argument("--heads", type=int, default=1, help="heads of pyg_rgat and pyg_hgt in --all")
    ap.add_argument("--explore", default="build/explore", help="the explore binary of --all")
    ap.add_argument("--data-dir", help="datasets folder for --all (explore's default otherwise)")
    args = ap.parse_args()
    try:
        if args.check_io:
            if not (args.npz and args.dump):
                ap.error("--check-io needs --npz and --dump")
            d = Dump(args.dump, MODELS)
            g = load_graph(args.npz)
            mapped = check_io(d, g)
            print("%s: the dump fits the graph; %d PyG parameters mapped" % (d.model, len(mapped)))
            return 0 if report(d, g, *emulate(d, g, mapped), "numpy emulation of PyG:") else 1
        missing = have_pyg()
        if missing:
            print("pyg_crosscheck.py: PyTorch Geometric is not installed here (%s)" % missing)
            return 2
        if args.all:
            failed = run_all(args)
            return 1 if failed else 0
        if not (args.npz and args.dump):
            ap.error("give --npz and --dump (or --all)")
        d = Dump(args.dump, MODELS)
        g = load_graph(args.npz)
        check_io(d, g)
        return 0 if compare(d, g, args.device) else 1
    except (ValueError, OSError, KeyError) as e:
        print("pyg_crosscheck.py: %s" % e, file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
