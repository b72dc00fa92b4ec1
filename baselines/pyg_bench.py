#!/usr/bin/env python3
# PyTorch Geometric baselines on the explorer's graphs: times RGCNConv, FastRGCNConv, RGATConv
# and HGTConv (inference and training) on an `explore datasets export NAME --format npz` file.
"""Times PyG's relational layers on graphs exported by the explorer and writes a CSV that
`explore import` loads into the results store (system=pyg, layer=<class name>).

  pyg_bench.py --npz aifb.npz mutag.npz [--models rgcn,rgat,hgt] [--tasks infer,train]
               [--dims 64] [--heads 1] [--warmup 3] [--repeats 10] [--mem-limit 24GB]
               [--out pyg.csv] [--append]
  pyg_bench.py --describe aifb.npz      # the graph as this script reads it (numpy only)
  pyg_bench.py --self-test              # CPU, tiny random graph; skips without torch/PyG

Every layer gets in = out = dims, the given heads, PyG's own random initialisation, random
U(-1, 1) node features and, for training, fixed random labels (NLL of log-softmax, then
backward), as in the papers. Timing: CUDA events around each run, warm-up runs first, the
median of the timed repeats. Peak memory: torch.cuda.max_memory_allocated() after a reset
(inputs and weights included). Running out of memory is caught and recorded as status oom.
Nothing is downloaded.
"""
import argparse
import csv
import gc
import os
import statistics
import sys
import tempfile
import time

try:
    import numpy as np
except ImportError:  # the C tests look for this line
    np = None

COLUMNS = [
    "system", "layer", "model", "task", "dataset", "dims", "heads", "status", "median_ms",
    "min_ms", "max_ms", "repeats", "peak_mem_bytes", "torch_version", "pyg_version",
    "cuda_version", "gpu", "sm", "nodes", "edges", "relations", "error",
]
LAYERS_OF_MODEL = {
    "rgcn": ["RGCNConv", "FastRGCNConv"],
    "rgat": ["RGATConv"],
    "hgt": ["HGTConv"],
}
ARRAYS = ["src", "dst", "etype", "ntype_ptr", "etype_ptr", "etype_src", "etype_dst"]


# --------------------------------------------------------------------------- the graph ----

class Graph:
    """A typed graph as exported: COO sorted by edge type, nodes grouped by node type."""

    def __init__(self, name, src, dst, etype, ntype_ptr, etype_ptr, etype_src, etype_dst):
        self.name = name
        self.src, self.dst, self.etype = src, dst, etype
        self.ntype_ptr, self.etype_ptr = ntype_ptr, etype_ptr
        self.etype_src, self.etype_dst = etype_src, etype_dst
        self.num_nodes = int(ntype_ptr[-1])
        self.num_edges = int(src.shape[0])
        self.num_ntypes = int(ntype_ptr.shape[0] - 1)
        self.num_etypes = int(etype_ptr.shape[0] - 1)

    def node_type(self):
        """Node type of every node (nodes are grouped by type)."""
        return np.repeat(np.arange(self.num_ntypes, dtype=np.int64), np.diff(self.ntype_ptr))

    def hetero(self):
        """Node-type sizes and, per non-empty relation, its (src type, name, dst type) key and
        type-local edge index: what HeteroData / HGTConv take. Reverse relations are relations
        of their own, as in the export."""
        sizes = {"n%d" % t: int(self.ntype_ptr[t + 1] - self.ntype_ptr[t])
                 for t in range(self.num_ntypes) if self.ntype_ptr[t + 1] > self.ntype_ptr[t]}
        edges = {}
        for r in range(self.num_etypes):
            lo, hi = int(self.etype_ptr[r]), int(self.etype_ptr[r + 1])
            if hi == lo:
                continue
            s, d = int(self.etype_src[r]), int(self.etype_dst[r])
            key = ("n%d" % s, "r%d" % r, "n%d" % d)
            edges[key] = np.stack([self.src[lo:hi] - self.ntype_ptr[s], self.dst[lo:hi] - self.ntype_ptr[d]])
        return sizes, edges


def load_graph(path, name=None):
    """Reads an exported .npz; raises ValueError naming the file for anything inconsistent."""
    with np.load(path, allow_pickle=False) as z:
        missing = [a for a in ARRAYS if a not in z.files]
        if missing:
            raise ValueError("%s: not a graph export (missing %s)" % (path, ", ".join(missing)))
        arr = {a: z[a].astype(np.int64) for a in ARRAYS}
        if name is None:
            name = str(z["name"]) if "name" in z.files else os.path.splitext(os.path.basename(path))[0]
    g = Graph(name, **arr)
    e, n = g.num_edges, g.num_nodes
    if arr["dst"].shape[0] != e or arr["etype"].shape[0] != e:
        raise ValueError("%s: src, dst and etype differ in length" % path)
    if g.etype_ptr[0] != 0 or g.etype_ptr[-1] != e or np.any(np.diff(g.etype_ptr) < 0):
        raise ValueError("%s: etype_ptr does not cover the %d edges" % (path, e))
    if e and (g.src.min() < 0 or g.dst.min() < 0 or max(g.src.max(), g.dst.max()) >= n):
        raise ValueError("%s: a node id is outside [0, %d)" % (path, n))
    if np.any(g.etype != np.repeat(np.arange(g.num_etypes), np.diff(g.etype_ptr))):
        raise ValueError("%s: edges are not sorted by etype as etype_ptr says" % path)
    nt = g.node_type()
    if e and (np.any(nt[g.src] != g.etype_src[g.etype]) or np.any(nt[g.dst] != g.etype_dst[g.etype])):
        raise ValueError("%s: an edge's endpoints do not have its relation's node types" % path)
    return g


def describe(g):
    sizes, edges = g.hetero()
    return ("name=%s nodes=%d edges=%d node_types=%d relations=%d hetero_node_types=%d "
            "hetero_edge_types=%d hetero_edges=%d" %
            (g.name, g.num_nodes, g.num_edges, g.num_ntypes, g.num_etypes, len(sizes), len(edges),
             sum(int(v.shape[1]) for v in edges.values())))


# ------------------------------------------------------------------------- the layers ----

class Bench:
    """One layer on one graph: its module, inputs and a forward that returns one tensor."""

    def __init__(self, layer, g, dims, heads, device, seed):
        import torch
        import torch_geometric.nn as pygnn
        torch.manual_seed(seed)
        self.torch = torch
        gen = torch.Generator().manual_seed(seed)
        x = (torch.rand(g.num_nodes, dims, generator=gen) * 2 - 1).to(device)
        R = g.num_etypes
        if layer == "HGTConv":
            sizes, edges = g.hetero()
            order = list(sizes)
            self.x_dict = {t: x[int(g.ntype_ptr[int(t[1:])]):int(g.ntype_ptr[int(t[1:]) + 1])] for t in order}
            self.ei_dict = {k: torch.from_numpy(v).to(device) for k, v in edges.items()}
            self.module = pygnn.HGTConv(dims, dims, (order, list(edges)), heads=heads).to(device)
            dst_types = [t for t in order if any(k[2] == t for k in edges)]
            self.out_types = dst_types
            rows = [np.arange(g.ntype_ptr[int(t[1:])], g.ntype_ptr[int(t[1:]) + 1]) for t in dst_types]
            out_nodes = np.concatenate(rows) if rows else np.zeros(0, dtype=np.int64)
        else:
            self.x = x
            self.edge_index = torch.from_numpy(np.stack([g.src, g.dst])).to(device)
            self.edge_type = torch.from_numpy(g.etype).to(device)
            if layer == "RGCNConv":
                self.module = pygnn.RGCNConv(dims, dims, R, aggr="mean", root_weight=True, is_sorted=True, bias=False)
            elif layer == "FastRGCNConv":
                self.module = pygnn.FastRGCNConv(dims, dims, R, aggr="mean", root_weight=True, bias=False)
            elif layer == "RGATConv":
                self.module = pygnn.RGATConv(dims, dims // heads, R, heads=heads, concat=True,
                                             attention_mechanism="across-relation",
                                             attention_mode="additive-self-attention", bias=False)
            else:
                raise ValueError("unknown layer %s" % layer)
            self.module = self.module.to(device)
            out_nodes = np.arange(g.num_nodes)
        self.layer = layer
        labels = torch.randint(0, dims, (g.num_nodes,), generator=gen)
        self.labels = labels[torch.from_numpy(out_nodes)].to(device)

    def forward(self):
        if self.layer == "HGTConv":
            out = self.module(self.x_dict, self.ei_dict)
            return self.torch.cat([out[t] for t in self.out_types if out.get(t) is not None])
        return self.module(self.x, self.edge_index, self.edge_type)

    def train_step(self):
        F = self.torch.nn.functional
        self.module.zero_grad(set_to_none=True)
        loss = F.nll_loss(F.log_softmax(self.forward(), dim=-1), self.labels)
        loss.backward()
        return loss


def time_runs(torch, fn, warmup, repeats, cuda):
    """Milliseconds of each timed run: CUDA events on a GPU, perf_counter on the CPU."""
    for _ in range(warmup):
        fn()
    if cuda:
        torch.cuda.synchronize()
    times = []
    for _ in range(repeats):
        if cuda:
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            fn()
            end.record()
            torch.cuda.synchronize()
            times.append(start.elapsed_time(end))
        else:
            t0 = time.perf_counter()
            fn()
            times.append((time.perf_counter() - t0) * 1e3)
    return times


def is_oom(torch, exc):
    oom_types = tuple(t for t in (getattr(torch, "OutOfMemoryError", None),
                                  getattr(torch.cuda, "OutOfMemoryError", None)) if t is not None)
    if oom_types and isinstance(exc, oom_types):
        return True
    text = str(exc)
    return isinstance(exc, RuntimeError) and ("out of memory" in text or "CUBLAS_STATUS_ALLOC_FAILED" in text)


def measure(layer, model, task, g, args, env):
    """One CSV row: times of `layer` for `task` on g, or its failure."""
    torch = env["torch"]
    cuda = env["device"] != "cpu"
    row = dict(env["row"], layer=layer, model=model, task=task, dataset=g.name, dims=args.dims,
               heads=args.heads, nodes=g.num_nodes, edges=g.num_edges, relations=g.num_etypes,
               status="ok", median_ms="", min_ms="", max_ms="", repeats=0, peak_mem_bytes="", error="")
    bench = None
    try:
        if cuda:
            torch.cuda.empty_cache()
            torch.cuda.reset_peak_memory_stats()
        bench = Bench(layer, g, args.dims, args.heads, env["device"], args.seed)
        if task == "infer":
            bench.module.eval()

            def run():
                with torch.no_grad():
                    bench.forward()
        else:
            bench.module.train()
            run = bench.train_step
        times = time_runs(torch, run, args.warmup, args.repeats, cuda)
        row.update(median_ms="%.6f" % statistics.median(times), min_ms="%.6f" % min(times),
                   max_ms="%.6f" % max(times), repeats=len(times))
        if cuda:
            row["peak_mem_bytes"] = torch.cuda.max_memory_allocated()
    except Exception as exc:  # a layer's failure is a result, not the end of the sweep
        oom = is_oom(torch, exc)
        row["status"] = "oom" if oom else "launch_error"
        row["error"] = ("%s: %s" % (type(exc).__name__, exc)).splitlines()[0][:300]
        if cuda and oom:
            row["peak_mem_bytes"] = torch.cuda.max_memory_allocated()
    finally:
        bench = None
        gc.collect()
        if cuda:
            torch.cuda.empty_cache()
    return row


def parse_bytes(text):
    units = {"": 1, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "KB": 1e3, "MB": 1e6, "GB": 1e9, "TB": 1e12,
             "KIB": 1024, "MIB": 1024 ** 2, "GIB": 1024 ** 3, "TIB": 1024 ** 4}
    t = text.strip().upper().replace(" ", "")
    i = len(t)
    while i and not (t[i - 1].isdigit() or t[i - 1] == "."):
        i -= 1
    if t[i:] not in units:
        raise argparse.ArgumentTypeError("not a byte count: %r" % text)
    return int(float(t[:i]) * units[t[i:]])


def environment(args):
    """Imports torch and PyG and describes the device; the fixed columns of every row."""
    import torch
    import torch_geometric
    device = args.device or ("cuda" if torch.cuda.is_available() else "cpu")
    row = {"system": "pyg", "torch_version": torch.__version__, "pyg_version": torch_geometric.__version__,
           "cuda_version": torch.version.cuda or "", "gpu": "cpu", "sm": 0}
    if device != "cpu":
        props = torch.cuda.get_device_properties(device)
        row.update(gpu=props.name, sm=props.major * 10 + props.minor)
        # Full-precision FP32 GEMMs, as the explorer's own kernels and cuBLAS baselines use.
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
        if args.mem_limit:
            torch.cuda.set_per_process_memory_fraction(min(1.0, args.mem_limit / props.total_memory), device)
    return {"torch": torch, "device": device, "row": row}


def run_bench(args, graphs, out_path):
    env = environment(args)
    rows = []
    for g in graphs:
        for model in args.models:
            for layer in LAYERS_OF_MODEL[model]:
                for task in args.tasks:
                    row = measure(layer, model, task, g, args, env)
                    rows.append(row)
                    print("%-8s %-12s %-5s %-5s %-12s %10s ms  peak %s %s" %
                          (g.name, layer, model, task, row["status"], row["median_ms"] or "-",
                           row["peak_mem_bytes"] or "-", row["error"]), file=sys.stderr, flush=True)
    write_csv(out_path, rows, args.append)
    return rows


def write_csv(path, rows, append=False, columns=COLUMNS):
    """Rows as CSV with these columns (a header unless appending to a non-empty file)."""
    exists = append and os.path.exists(path) and os.path.getsize(path) > 0
    with open(path, "a" if append else "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=columns)
        if not exists:
            w.writeheader()
        for r in rows:
            w.writerow({c: r.get(c, "") for c in columns})


# -------------------------------------------------------------------------- self-test ----

def tiny_export(path, seed=7):
    """A random two-type graph with reverse relations, saved with the export's array names."""
    rng = np.random.default_rng(seed)
    ntype_ptr = np.array([0, 12, 20], dtype=np.int32)
    rels = [(0, 0), (0, 1), (1, 0)]
    rels += [(d, s) for s, d in rels]          # reverse types r + R, as the loaders add them
    src, dst, et, ptr = [], [], [], [0]
    for r, (s, d) in enumerate(rels):
        n = int(rng.integers(5, 15))
        u = rng.integers(ntype_ptr[s], ntype_ptr[s + 1], n)
        v = rng.integers(ntype_ptr[d], ntype_ptr[d + 1], n)
        o = np.argsort(u, kind="stable")
        src.append(u[o])
        dst.append(v[o])
        et += [r] * n
        ptr.append(ptr[-1] + n)
    src = np.concatenate(src)
    dst = np.concatenate(dst)
    np.savez(path, src=src.astype(np.int32), dst=dst.astype(np.int32), etype=np.array(et, dtype=np.int32),
             ntype_ptr=ntype_ptr, etype_ptr=np.array(ptr, dtype=np.int32),
             etype_src=np.array([s for s, _ in rels], dtype=np.int32),
             etype_dst=np.array([d for _, d in rels], dtype=np.int32),
             ntype_names=np.array(["paper", "author"]), etype_names=np.array(["r%d" % i for i in range(6)]),
             name=np.array("tiny"))
    return len(src)


def self_test():
    if np is None:
        print("skip: numpy not importable")
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "tiny.npz")
        edges = tiny_export(path)
        g = load_graph(path)
        assert (g.name, g.num_nodes, g.num_edges, g.num_etypes) == ("tiny", 20, edges, 6), describe(g)
        sizes, hetero = g.hetero()
        assert sizes == {"n0": 12, "n1": 8} and sum(v.shape[1] for v in hetero.values()) == edges
        for (s, _, d), ei in hetero.items():
            assert ei.min() >= 0 and ei[0].max() < sizes[s] and ei[1].max() < sizes[d]
        bad = os.path.join(tmp, "bad.npz")
        np.savez(bad, src=np.zeros(1, dtype=np.int32))
        try:
            load_graph(bad)
            raise AssertionError("a file without the graph arrays was accepted")
        except ValueError as e:
            assert "missing" in str(e)
        print("npz reading: ok (%s)" % describe(g))
        try:
            import torch  # noqa: F401
        except ImportError:
            print("skip: torch not importable")
            return 0
        try:
            import torch_geometric  # noqa: F401
        except ImportError:
            print("skip: torch_geometric not importable")
            return 0
        args = argparse.Namespace(dims=8, heads=2, warmup=1, repeats=2, seed=0, device="cpu", mem_limit=None,
                                  models=["rgcn", "rgat", "hgt"], tasks=["infer", "train"], append=False)
        out = os.path.join(tmp, "pyg.csv")
        run_bench(args, [g], out)
        with open(out, newline="") as f:
            rows = list(csv.DictReader(f))
        assert len(rows) == 8, rows
        for r in rows:
            assert r["status"] == "ok", r
            assert float(r["median_ms"]) > 0 and int(r["repeats"]) == 2 and r["system"] == "pyg", r
        assert {r["layer"] for r in rows} == {"RGCNConv", "FastRGCNConv", "RGATConv", "HGTConv"}
    print("self-test passed")
    return 0


# ------------------------------------------------------------------------------- main ----

def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--npz", nargs="+", metavar="FILE", help="graphs exported by `explore datasets export`")
    ap.add_argument("--dataset", nargs="+", metavar="NAME", help="names to record (default: the export's name)")
    ap.add_argument("--models", default="rgcn,rgat,hgt")
    ap.add_argument("--tasks", default="infer,train")
    ap.add_argument("--dims", type=int, default=64)
    ap.add_argument("--heads", type=int, default=1)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--repeats", type=int, default=10)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--mem-limit", type=parse_bytes, help="cap PyTorch's allocator, e.g. 24GB (an RTX 3090)")
    ap.add_argument("--device", help="cuda, cuda:1 or cpu (default: cuda when available)")
    ap.add_argument("--out", default="pyg.csv")
    ap.add_argument("--append", action="store_true", help="add rows to an existing CSV")
    ap.add_argument("--describe", metavar="FILE", help="print the graph as read and exit (numpy only)")
    ap.add_argument("--self-test", action="store_true")
    args = ap.parse_args(argv)
    if args.self_test:
        return self_test()
    if np is None:
        print("pyg_bench.py: numpy is not importable", file=sys.stderr)
        return 1
    try:
        if args.describe:
            print(describe(load_graph(args.describe)))
            return 0
        if not args.npz:
            ap.error("give --npz FILE... (or --describe FILE, --self-test)")
        args.models = [m.strip() for m in args.models.split(",") if m.strip()]
        args.tasks = [{"inference": "infer", "training": "train"}.get(t.strip(), t.strip())
                      for t in args.tasks.split(",") if t.strip()]
        for m in args.models:
            if m not in LAYERS_OF_MODEL:
                ap.error("unknown model %r (rgcn, rgat, hgt)" % m)
        for t in args.tasks:
            if t not in ("infer", "train"):
                ap.error("unknown task %r (infer, train)" % t)
        if args.dims < 1 or args.heads < 1 or args.dims % args.heads:
            ap.error("--heads must divide --dims")
        if args.repeats < 1 or args.warmup < 0:
            ap.error("--repeats must be at least 1 and --warmup at least 0")
        if args.dataset and len(args.dataset) != len(args.npz):
            ap.error("--dataset needs one name per --npz file")
        names = args.dataset or [None] * len(args.npz)
        graphs = [load_graph(p, n) for p, n in zip(args.npz, names)]
    except (OSError, ValueError) as e:
        print("pyg_bench.py: %s" % e, file=sys.stderr)
        return 1
    try:
        rows = run_bench(args, graphs, args.out)
    except ImportError as e:
        print("pyg_bench.py: PyTorch and PyTorch Geometric are needed to time the layers (%s)" % e,
              file=sys.stderr)
        return 1
    ok = sum(r["status"] == "ok" for r in rows)
    print("wrote %s: %d rows, %d ok, %d out of memory, %d failed" %
          (args.out, len(rows), ok, sum(r["status"] == "oom" for r in rows),
           sum(r["status"] not in ("ok", "oom") for r in rows)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
