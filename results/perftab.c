/* `explore perf-tables`: runs fixed SQL queries on results stores and prints their rows as
 * markdown, each table with its store, query and commits, so the docs' numbers cannot drift. */
#include "results/perftab.h"
#include "results/store.h"
#include "codegen/config.h"

#include <limits.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>

/* Result columns whose name starts with '_' are not printed: `_commits` (comma-separated commits of
 * the row) feeds the commit line, `_device` the device line (it becomes a column when a table spans
 * several devices), `_k` orders compound queries. Every real value is formatted by the query
 * itself (SQLite's printf), so the cells do not depend on this machine's C library or locale. */

#define MS(col, alias) "iif(" col " is null, '-', printf('%.4f', " col ")) as \"" alias "\""

/* One measurement-level metric of measurement ID (older stores have NULL kernels). */
#define METRIC(id, name) \
    "(select value from metrics x where x.measurement_id = " id " and coalesce(x.kernel, '') = '' and x.name = '" name "')"

/* A variant's precision as cfg_precision names it, from its stored config (GEMM operands by mma,
 * "+bf16-store" under store=bf16): the best table keeps one row per precision, never mixing them. */
#define PRECISION(cfg) \
    "(iif(coalesce(json_extract(" cfg ", '$.mma'), 'off') = 'off', 'fp32', json_extract(" cfg ", '$.mma'))" \
    " || iif(json_extract(" cfg ", '$.store') = 'bf16', '+bf16-store', ''))"

/* Per problem (device, model, task, dataset, dims, heads) and system/layer: the best attempt
 * (the fastest ok one; when none is ok, the newest), and for each baseline the best generated
 * variant of the same problem beside it. Rows with a span rank before rows without one, and by
 * the span: a comparison of whole layers picks the variant whose whole layer is fastest (the
 * fastest kernel sum can have the slower span: its zero-fills, or gaps between its launches).
 * Only float32 variants stand against the baselines, which all compute in float32. Times
 * compared: spans where the generated row has one (a baseline without one gives its wall time,
 * or its kernel sum for the cuBLAS layers), else kernel sums against the baseline's stored time. */
#define PAIRS_CTE \
    "with r as (\n" \
    "  select m.id, m.device_key, m.system, m.layer, m.status, m.median_ms, m.git_commit, v.model, v.task,\n" \
    "         d.name as dataset, v.dim_in, v.dim_out, v.heads, " METRIC("m.id", "span_ms") " as span,\n" \
    "         " PRECISION("v.config") " as precision\n" \
    "  from measurements m join variants v on v.id = m.variant_id join datasets d on d.id = m.dataset_id),\n" \
    "ranked as (\n" \
    "  select r.*, row_number() over (partition by device_key, system, layer, model, task, dataset, dim_in, dim_out, heads,\n" \
    "                                              precision\n" \
    "                                 order by status <> 'ok', span is null, coalesce(span, median_ms), id desc) as rk\n" \
    "  from r),\n" \
    "g as (select * from ranked where system = 'generated' and status = 'ok' and rk = 1 and precision = 'fp32'),\n" \
    "b as (select * from ranked where system <> 'generated' and rk = 1),\n" \
    "pairs as (\n" \
    "  select b.model, b.task, b.dataset, b.dim_in, b.dim_out, b.heads, b.device_key, b.system, b.layer, b.status,\n" \
    "         b.median_ms as b_ms, b.span as b_span, b.git_commit as b_commit,\n" \
    "         g.median_ms as g_ms, g.span as g_span, g.git_commit as g_commit,\n" \
    "         iif(g.span is not null, coalesce(b.span, b.median_ms), b.median_ms) / coalesce(g.span, g.median_ms) as ratio,\n" \
    "         iif(g.span is not null and b.span is not null, 'span', iif(b.system like 'cublas-%', 'sum', 'wall'))\n" \
    "           || ' / ' || iif(g.span is not null, 'span', 'sum') as basis\n" \
    "  from b left join g on g.device_key = b.device_key and g.model = b.model and g.task = b.task\n" \
    "    and g.dataset = b.dataset and g.dim_in = b.dim_in and g.dim_out = b.dim_out and g.heads = b.heads)\n"

static const char SQL_COUNTS[] =
    "select m.system as system, v.task as task, count(*) as measurements, sum(m.status = 'ok') as ok,\n"
    "       count(distinct v.model || '/' || d.name || '/' || v.dim_in || ',' || v.dim_out || '/' || v.heads) as problems,\n"
    "       count(distinct m.run_id) as runs, count(distinct m.git_commit) as commits,\n"
    "       0 as _k, m.device_key as _device, group_concat(distinct m.git_commit) as _commits\n"
    "from measurements m join variants v on v.id = m.variant_id join datasets d on d.id = m.dataset_id\n"
    "group by m.device_key, m.system, v.task\n"
    "union all\n"
    "select 'all', '', count(*), sum(m.status = 'ok'),\n"
    "       count(distinct m.system || '/' || v.model || '/' || v.task || '/' || d.name || '/' || v.dim_in || ',' || v.dim_out\n"
    "                      || '/' || v.heads),\n"
    "       count(distinct m.run_id), count(distinct m.git_commit), 1, m.device_key, group_concat(distinct m.git_commit)\n"
    "from measurements m join variants v on v.id = m.variant_id join datasets d on d.id = m.dataset_id\n"
    "group by m.device_key\n"
    "order by _device, _k, system, task;\n";

/* The best generated variant per problem and precision, the first in ORDER (an SQL order over m, the
 * measurements), with its floors. */
#define BEST_SQL(ORDER) \
    "with ok as (\n" \
    "  select m.id, m.device_key, m.git_commit, m.median_ms, v.hash, v.model, v.task, d.name as dataset,\n" \
    "         v.dim_in, v.dim_out, v.heads, " PRECISION("v.config") " as precision,\n" \
    "         row_number() over p as rk, count(*) over p as n_ok\n" \
    "  from measurements m join variants v on v.id = m.variant_id join datasets d on d.id = m.dataset_id\n" \
    "  where m.system = 'generated' and m.status = 'ok'\n" \
    "  window p as (partition by m.device_key, v.model, v.task, d.name, v.dim_in, v.dim_out, v.heads,\n" \
    "               " PRECISION("v.config") "\n" \
    "               order by " ORDER " rows between unbounded preceding and unbounded following)),\n" \
    "best as (\n" \
    "  select b.*, " METRIC("b.id", "span_ms") " as span,\n" \
    "         " METRIC("b.id", "floor_bytes") " as fb,\n" \
    "         " METRIC("b.id", "floor_flops") " as ff,\n" \
    "         " METRIC("b.id", "ceil_copy_Bps") " as bw,\n" \
    "         " METRIC("b.id", "ceil_l2_Bps") " as l2bw,\n" \
    "         coalesce(iif(b.precision like 'tf32%', " METRIC("b.id", "ceil_tf32_flops") ",\n" \
    "                      iif(b.precision like 'bf16%', " METRIC("b.id", "ceil_bf16_flops") ", null)),\n" \
    "                  " METRIC("b.id", "ceil_fp32_flops") ") as pk,\n" \
    "         " METRIC("b.id", "l2_bytes") " as l2,\n" \
    "         " METRIC("b.id", "gather_floor_ms") " as gf,\n" \
    "         (select sum(value) from metrics x where x.measurement_id = b.id and coalesce(x.kernel, '') <> ''\n" \
    "            and x.name in ('dram__bytes_read.sum', 'dram__bytes_write.sum')) as dram\n" \
    "  from ok b where b.rk = 1),\n" \
    "fl as (\n" \
    "  select *, 1000 * max(fb / bw, ff / pk) as floor_ms,\n" \
    "         iif(fb <= l2, 1000 * max(fb / l2bw, ff / pk), null) as l2_floor_ms\n" \
    "  from best)\n" \
    "select model, task, dataset, dim_in || ',' || dim_out || '/' || heads as \"dims/heads\", precision, n_ok as \"ok rows\",\n" \
    "       printf('%.4f', median_ms) as \"kernel sum ms\", " MS("span", "span ms") ",\n" \
    "       " MS("floor_ms", "DRAM floor ms") ", " MS("l2_floor_ms", "L2 floor ms") ",\n" \
    "       iif(floor_ms is null, '-', printf('%.1f', coalesce(span, median_ms) / floor_ms)) as \"x DRAM floor\",\n" \
    "       " MS("gf", "gather floor ms") ",\n" \
    "       iif(gf is null, '-', printf('%.2f', coalesce(span, median_ms) / gf)) as \"x gather floor\",\n" \
    "       iif(dram is null, '-', printf('%.3f', dram / 1e9)) as \"DRAM GB\",\n" \
    "       iif(dram is null or bw is null, '-', printf('%.1f%%', 100 * dram / (median_ms / 1000) / bw)) as \"DRAM BW\",\n" \
    "       hash as variant, substr(git_commit, 1, 7) as \"commit\", device_key as _device, git_commit as _commits\n" \
    "from fl order by device_key, model, task, dataset, dim_in, dim_out, heads, precision;\n"

static const char SQL_BEST[] = BEST_SQL("m.median_ms, m.id");

/* The same by the whole layer's time: the span where one is stored (before rows without one), else the kernel
 * sum; under launch=dag the fastest kernel sum can have the longer span. */
static const char SQL_BEST_SPAN[] =
    BEST_SQL(METRIC("m.id", "span_ms") " is null, coalesce(" METRIC("m.id", "span_ms") ", m.median_ms), m.id");

static const char SQL_GEOMEAN[] = PAIRS_CTE
    "select model, task, dim_in || ',' || dim_out || '/' || heads as \"dims/heads\",\n"
    "       system || iif(layer = '', '', ' ' || layer) as baseline, basis, count(*) as datasets,\n"
    "       printf('%.2fx', exp(avg(ln(ratio)))) as \"geomean baseline / generated\",\n"
    "       printf('%.2fx', min(ratio)) as lowest, printf('%.2fx', max(ratio)) as highest,\n"
    "       device_key as _device, group_concat(distinct b_commit) || ',' || group_concat(distinct g_commit) as _commits\n"
    "from pairs where status = 'ok' and ratio is not null\n"
    "group by device_key, model, task, dim_in, dim_out, heads, system, layer, basis\n"
    "order by device_key, model, task, dim_in, dim_out, heads, system, layer, basis;\n";

static const char SQL_BASELINES[] = PAIRS_CTE
    "select model, task, dataset, dim_in || ',' || dim_out || '/' || heads as \"dims/heads\",\n"
    "       " MS("g_ms", "generated ms") ", " MS("g_span", "generated span ms") ",\n"
    "       system || iif(layer = '', '', ' ' || layer) as baseline,\n"
    "       iif(status = 'ok', printf('%.4f', b_ms), upper(status)) as \"baseline ms\", " MS("b_span", "baseline span ms") ",\n"
    "       iif(status = 'ok' and ratio is not null, printf('%.2fx', ratio), '-') as \"baseline / generated\",\n"
    "       iif(status = 'ok' and ratio is not null, basis, '-') as basis,\n"
    "       device_key as _device, b_commit || iif(g_commit is null, '', ',' || g_commit) as _commits\n"
    "from pairs order by device_key, model, task, dataset, dim_in, dim_out, heads, system, layer;\n";

/* Where the optimum moves (issue 19): per problem whose float32 rows, all per-kernel-uniform, vary both tile and
 * coarsening at one commit, the fastest config's schedule beside the fixed corner (tile 64, coarsening 4, launch
 * bounds off, the dims-64 winner of the first sweeps) and which numeric axis the winner sits at the largest or
 * smallest measured value of. */
static const char SQL_SIZES[] =
    "with ok as (\n"
    "  select m.id, m.device_key, m.git_commit, m.median_ms, v.model, v.task, d.name as dataset, v.dim_in, v.dim_out,\n"
    "         v.heads, json_extract(v.config, '$.tile') as tile, json_extract(v.config, '$.coarsen') as coarsen,\n"
    "         coalesce(json_extract(v.config, '$.lb'), 0) as lb\n"
    "  from measurements m join variants v on v.id = m.variant_id join datasets d on d.id = m.dataset_id\n"
    "  where m.system = 'generated' and m.status = 'ok' and " PRECISION("v.config") " = 'fp32'\n"
    "    and instr(v.config, '.') = 0),\n"
    "prob as (\n"
    "  select device_key, git_commit, model, task, dataset, dim_in, dim_out, heads, count(*) as n,\n"
    "         min(tile) as tmin, max(tile) as tmax, min(coarsen) as cmin, max(coarsen) as cmax,\n"
    "         min(iif(tile = 64 and coarsen = 4 and lb = 0, median_ms, null)) as corner\n"
    "  from ok group by device_key, git_commit, model, task, dataset, dim_in, dim_out, heads\n"
    "  having count(distinct tile) > 1 and count(distinct coarsen) > 1),\n"
    "ranked as (\n"
    "  select o.*, p.n, p.tmin, p.tmax, p.cmin, p.cmax, p.corner,\n"
    "         row_number() over (partition by o.device_key, o.git_commit, o.model, o.task, o.dataset, o.dim_in,\n"
    "                                         o.dim_out, o.heads order by o.median_ms, o.id) as rk\n"
    "  from ok o join prob p using (device_key, git_commit, model, task, dataset, dim_in, dim_out, heads))\n"
    "select model, task, dataset, dim_in || ',' || dim_out || '/' || heads as \"dims/heads\", n as \"ok rows\",\n"
    "       tile as \"best tile\", coarsen as \"best coarsen\", iif(lb, 'on', 'off') as \"best lb\",\n"
    "       printf('%.4f', median_ms) as \"best ms\", " MS("corner", "tile 64, coarsen 4, lb off ms") ",\n"
    "       iif(corner is null, '-', printf('%.2fx', corner / median_ms)) as \"corner / best\",\n"
    "       trim(iif(tmax > tmin and tile = tmax, 'tile=max(' || tmax || ') ', '')\n"
    "            || iif(tmax > tmin and tile = tmin, 'tile=min(' || tmin || ') ', '')\n"
    "            || iif(cmax > cmin and coarsen = cmax, 'coarsen=max(' || cmax || ') ', '')\n"
    "            || iif(cmax > cmin and coarsen = cmin, 'coarsen=min(' || cmin || ')', '')) as \"on the boundary\",\n"
    "       substr(git_commit, 1, 7) as \"commit\", device_key as _device, git_commit as _commits\n"
    "from ranked where rk = 1\n"
    "order by device_key, model, task, dataset, dim_in, dim_out, heads, git_commit;\n";

/* Transfer across GPUs (issue 20): per problem measured on two devices over the same points, the config that is
 * fastest on device A measured on device B, against B's own best (its oracle over the points both measured). */
/* Per set of kernels (a generated variant's config without its `launch`) measured under stream and graph or
 * dag at one commit: the mean span and kernel sum under each launch, and the spans' speed-ups over stream. */
static const char SQL_LAUNCH[] =
    "with r as (\n"
    "  select m.device_key, m.git_commit, m.median_ms, v.model, v.task, d.name as dataset, v.dim_in, v.dim_out,\n"
    "         v.heads, coalesce(json_extract(v.config, '$.launch'), 'stream') as launch,\n"
    "         json_remove(v.config, '$.launch') as kernels, " METRIC("m.id", "span_ms") " as span\n"
    "  from measurements m join variants v on v.id = m.variant_id join datasets d on d.id = m.dataset_id\n"
    "  where m.system = 'generated' and m.status = 'ok'),\n"
    "g as (\n"
    "  select device_key, git_commit, model, task, dataset, dim_in, dim_out, heads, count(*) as n,\n"
    "         avg(iif(launch = 'stream', span, null)) as s_stream, avg(iif(launch = 'graph', span, null)) as s_graph,\n"
    "         avg(iif(launch = 'dag', span, null)) as s_dag, avg(iif(launch = 'stream', median_ms, null)) as k_stream,\n"
    "         avg(iif(launch = 'dag', median_ms, null)) as k_dag\n"
    "  from r where span is not null\n"
    "  group by device_key, git_commit, model, task, dataset, dim_in, dim_out, heads, kernels\n"
    "  having s_stream is not null and (s_graph is not null or s_dag is not null))\n"
    "select model, task, dataset, dim_in || ',' || dim_out || '/' || heads as \"dims/heads\", n as \"ok rows\",\n"
    "       " MS("s_stream", "span stream") ", " MS("s_graph", "span graph") ", " MS("s_dag", "span dag") ",\n"
    "       iif(s_graph is null, '-', printf('%.2fx', s_stream / s_graph)) as \"graph speed-up\",\n"
    "       iif(s_dag is null, '-', printf('%.2fx', s_stream / s_dag)) as \"dag speed-up\",\n"
    "       " MS("k_stream", "kernel sum stream") ", " MS("k_dag", "kernel sum dag") ",\n"
    "       device_key as _device, git_commit as _commits\n"
    "from g order by _device, model, task, dataset, \"dims/heads\", git_commit;\n";

static const char SQL_TRANSFER[] =
    "with ok as (\n"
    "  select m.device_key, v.hash, v.model, v.task, d.name as dataset, v.dim_in, v.dim_out, v.heads,\n"
    "         min(m.median_ms) as ms\n"
    "  from measurements m join variants v on v.id = m.variant_id join datasets d on d.id = m.dataset_id\n"
    "  where m.system = 'generated' and m.status = 'ok'\n"
    "  group by m.device_key, v.hash, v.model, v.task, d.name, v.dim_in, v.dim_out, v.heads),\n"
    "both as (\n"
    "  select a.device_key as dev_a, b.device_key as dev_b, a.hash, a.model, a.task, a.dataset, a.dim_in, a.dim_out,\n"
    "         a.heads, a.ms as ms_a, b.ms as ms_b\n"
    "  from ok a join ok b on a.hash = b.hash and a.dataset = b.dataset and a.device_key <> b.device_key),\n"
    "ranked as (\n"
    "  select *, row_number() over (partition by dev_a, dev_b, model, task, dataset, dim_in, dim_out, heads\n"
    "                               order by ms_a, hash) as rk_a,\n"
    "         min(ms_b) over (partition by dev_a, dev_b, model, task, dataset, dim_in, dim_out, heads) as oracle_b,\n"
    "         count(*) over (partition by dev_a, dev_b, model, task, dataset, dim_in, dim_out, heads) as n\n"
    "  from both)\n"
    "select replace(dev_a, ' (sm_90)', '') || ' -> ' || replace(dev_b, ' (sm_90)', '') as transfer, model, task, dataset,\n"
    "       dim_in || ',' || dim_out || '/' || heads as \"dims/heads\", n as \"points on both\",\n"
    "       printf('%.4f', ms_b) as \"A's best on B ms\", printf('%.4f', oracle_b) as \"B's oracle ms\",\n"
    "       printf('%.3fx', ms_b / oracle_b) as \"A's best / B's oracle\", hash as \"A's best\",\n"
    "       '' as _commits, 0 as _k, dev_b as _device\n"
    "from ranked where rk_a = 1 and n > 1\n"
    "union all\n"
    "select replace(dev_a, ' (sm_90)', '') || ' -> ' || replace(dev_b, ' (sm_90)', ''), 'geomean', '', '', '',\n"
    "       sum(n), '-', '-', printf('%.3fx', exp(avg(ln(ms_b / oracle_b)))), count(*) || ' problems', '', 1, dev_b\n"
    "from ranked where rk_a = 1 and n > 1 group by dev_a, dev_b\n"
    "order by transfer, _k, model, task, dataset, \"dims/heads\";\n";

/* The boundary check (issue 18: no winner on the boundary of a numeric dimension unless the next value is invalid):
 * per problem and commit, every numeric config key (a global one, and a per-kernel override where the rows hold one)
 * whose measured values differ across the problem's ok rows, with each row's value as it applies (an override, else
 * the global value, else the key's default: keys at their default are not stored), and those on which the fastest
 * row sits at the smallest or largest value measured. `*` marks a value that is also the key's first or last legal
 * value (config_keys.def), where no next value exists. The keys' defaults and extremes come from the key table, so
 * this query's text is built at run time (boundary_sql). */
#define BOUNDARY_KEYS_MAX 4096
static const char BOUNDARY_HEAD[] = "with keys(key, def, first, last) as (values ";
static const char BOUNDARY_BODY[] =
    "),\n"
    "ok as (\n"
    "  select m.id, m.device_key, m.git_commit, m.median_ms, v.model, v.task, d.name as dataset, v.dim_in,\n"
    "         v.dim_out, v.heads, v.config\n"
    "  from measurements m join variants v on v.id = m.variant_id join datasets d on d.id = m.dataset_id\n"
    "  where m.system = 'generated' and m.status = 'ok'),\n"
    "dims as (\n"
    "  select distinct o.device_key, o.git_commit, o.model, o.task, o.dataset, o.dim_in, o.dim_out, o.heads,\n"
    "         j.key as dim, k.key as base\n"
    "  from ok o, json_each(o.config) j join keys k on k.key = substr(j.key, instr(j.key, '.') + 1)\n"
    "  where instr(j.key, '.') > 0\n"
    "  union\n"
    "  select distinct o.device_key, o.git_commit, o.model, o.task, o.dataset, o.dim_in, o.dim_out, o.heads,\n"
    "         k.key, k.key\n"
    "  from ok o, keys k),\n"
    "vals as (\n"
    "  select o.id, o.median_ms, x.device_key, x.git_commit, x.model, x.task, x.dataset, x.dim_in, x.dim_out,\n"
    "         x.heads, x.dim, k.first, k.last,\n"
    "         coalesce(json_extract(o.config, '$.\"' || x.dim || '\"'), json_extract(o.config, '$.' || x.base),\n"
    "                  k.def) as value\n"
    "  from ok o join dims x using (device_key, git_commit, model, task, dataset, dim_in, dim_out, heads)\n"
    "       join keys k on k.key = x.base),\n"
    "ranges as (\n"
    "  select device_key, git_commit, model, task, dataset, dim_in, dim_out, heads, dim, min(value) as lo,\n"
    "         max(value) as hi\n"
    "  from vals group by device_key, git_commit, model, task, dataset, dim_in, dim_out, heads, dim\n"
    "  having min(value) < max(value)),\n"
    "prob as (\n"
    "  select device_key, git_commit, model, task, dataset, dim_in, dim_out, heads, count(*) as n,\n"
    "         min(median_ms) as best_ms\n"
    "  from ok group by device_key, git_commit, model, task, dataset, dim_in, dim_out, heads),\n"
    "winner as (\n"
    "  select * from (select o.id, o.config, o.device_key, o.git_commit, o.model, o.task, o.dataset, o.dim_in,\n"
    "                        o.dim_out, o.heads, row_number() over (partition by o.device_key, o.git_commit, o.model,\n"
    "                        o.task, o.dataset, o.dim_in, o.dim_out, o.heads order by o.median_ms, o.id) as rk\n"
    "                 from ok o)\n"
    "  where rk = 1),\n"
    "edge as (\n"
    "  select r.device_key, r.git_commit, r.model, r.task, r.dataset, r.dim_in, r.dim_out, r.heads, r.dim,\n"
    "         v.value, iif(v.value = r.hi, 'max', iif(v.value = r.lo, 'min', null)) as side,\n"
    "         (v.value = r.hi and v.value = v.last) or (v.value = r.lo and v.value = v.first) as final\n"
    "  from ranges r join winner w using (device_key, git_commit, model, task, dataset, dim_in, dim_out, heads)\n"
    "       join vals v on v.id = w.id and v.dim = r.dim),\n"
    "varied as (\n"
    "  select device_key, git_commit, model, task, dataset, dim_in, dim_out, heads, count(*) as n_dims\n"
    "  from ranges group by device_key, git_commit, model, task, dataset, dim_in, dim_out, heads),\n"
    "edges as (\n"
    "  select device_key, git_commit, model, task, dataset, dim_in, dim_out, heads,\n"
    "         group_concat(dim || '=' || side || '(' || value || ')' || iif(final, '*', ''), ' ') as list\n"
    "  from (select * from edge where side is not null order by dim)\n"
    "  group by device_key, git_commit, model, task, dataset, dim_in, dim_out, heads)\n"
    "select p.model, p.task, p.dataset, p.dim_in || ',' || p.dim_out || '/' || p.heads as \"dims/heads\",\n"
    "       p.n as \"ok rows\", printf('%.4f', p.best_ms) as \"best ms\", x.n_dims as \"numeric dims varied\",\n"
    "       coalesce(e.list, '') as \"on the boundary\", '' as \"next value invalid\",\n"
    "       substr(p.git_commit, 1, 7) as \"commit\", p.device_key as _device, p.git_commit as _commits,\n"
    "       w.config as _config\n"
    "from prob p join varied x using (device_key, git_commit, model, task, dataset, dim_in, dim_out, heads)\n"
    "     join winner w using (device_key, git_commit, model, task, dataset, dim_in, dim_out, heads)\n"
    "     left join edges e using (device_key, git_commit, model, task, dataset, dim_in, dim_out, heads)\n"
    "order by p.device_key, p.model, p.task, p.dataset, p.dim_in, p.dim_out, p.heads, p.git_commit;\n";

/* The legal value of numeric key k next beyond `value` (above it: up > 0; below: up < 0); 0 when none is. */
static int next_legal(const cfg_key *k, long value, int up, long *next)
{
    int found = 0;
    char *end;
    for (const char *p = k->values; *p; p = end) {
        long v = strtol(p, &end, 10);
        if (end == p) break;
        if ((up > 0 ? v > value : v < value) && (!found || (up > 0 ? v < *next : v > *next))) *next = v, found = 1;
    }
    return found;
}

/* BOUNDARY_HEAD, a VALUES row (name, default, first, last) per numeric key of the table, BOUNDARY_BODY. */
static const char *boundary_sql(void)
{
    static char sql[sizeof BOUNDARY_HEAD + BOUNDARY_KEYS_MAX + sizeof BOUNDARY_BODY];
    if (sql[0]) return sql;
    char rows[BOUNDARY_KEYS_MAX] = "";
    for (int i = 0; i < CFG_NKEYS; i++) {
        const cfg_key *k = cfg_key_at(i);
        if (k->kind != CFG_INT) continue;
        long first = 0, last = 0;
        int numeric = next_legal(k, LONG_MIN, 1, &first) && next_legal(k, LONG_MAX, -1, &last);
        RG_ASSERT(numeric);   /* a CFG_INT key lists its values */
        size_t used = strlen(rows);
        int n = snprintf(rows + used, sizeof rows - used, "%s('%s', %s, %ld, %ld)", used ? ", " : "", k->name,
                         k->dflt, first, last);
        RG_ASSERT(n > 0 && (size_t)n < sizeof rows - used);
    }
    snprintf(sql, sizeof sql, "%s%s%s", BOUNDARY_HEAD, rows, BOUNDARY_BODY);
    return sql;
}

typedef struct pt_query {
    const char *name, *title, *about, *sql;   /* sql NULL: built at run time (query_sql) */
    int baseline_notes;   /* follow the table with the notes on what each baseline computes */
} pt_query;

static const pt_query QUERIES[] = {
    {"counts", "Measurement counts",
     "Every measurement of the store by system and task: ok ones, problems (model, dataset, dims, heads), runs and "
     "commits.",
     SQL_COUNTS, 0},
    {"best", "Best generated variant per problem, against the floor",
     "Per problem and precision (fp32, tf32 or bf16 GEMM operands, `+bf16-store`: features and messages stored in "
     "bfloat16; each has its own validation tolerance, README Numerics) the fastest ok generated measurement (kernel sum, the median over timed repeats) of every commit the "
     "store holds; `ok rows` counts the ok generated measurements of the problem. The floor is the layer's DRAM-cold "
     "floor `max(floor_bytes / ceil_copy_Bps, floor_flops / ceil_fp32_flops)` from the metrics stored with that "
     "measurement (docs/floor.md; the same selection as docs/floor.sql), the L2 floor only where the floor's bytes fit "
     "in the L2; `x DRAM floor` divides the span (the kernel sum where no span is stored) by it; the flop ceiling is the "
     "precision's (`ceil_tf32_flops`, `ceil_bf16_flops` for tf32 and bf16 GEMM operands), the bytes are at the "
     "variant's storage widths. `DRAM GB` and `DRAM BW` (measured with `--metrics` only): the bytes the kernels "
     "moved to and from DRAM (CUPTI `dram__bytes_read.sum + dram__bytes_write.sum` over every kernel) and that over "
     "the kernel sum, as a share of the measured copy ceiling. `gather floor ms`: the faster of cuSPARSE's SpMM and a "
     "plain gather of ours summing one source row per edge at the variant's storage width (training: and one "
     "destination row per edge backward), on the graph as given (rows of b2c4672: on the variant's node order), "
     "what a layer that gathers per edge pays for its gathers alone (docs/floor.md); `x gather floor` divides the "
     "span by it. "
     "`-`: the measurement predates these metrics or was taken without `--metrics`.",
     SQL_BEST, 0},
    {"best-span", "Best generated variant per problem by its span, against the floor",
     "As the table above, but the variant chosen per problem and precision is the one with the shortest span (the "
     "run's first memset or kernel start to its last kernel end, the median over timed repeats: the whole layer's "
     "time), rows without a stored span after those with one. It differs from the kernel-sum choice where zero-fills, "
     "launch gaps or kernels run side by side (`launch`) make the fastest kernels the longer run.",
     SQL_BEST_SPAN, 0},
    {"geomean", "Generated code against each baseline: geometric mean over the datasets",
     "The per-problem ratios of the next table, summarized per model, task, dims and baseline (> 1: the generated code "
     "is faster). Rows of different bases (see `basis` below) are not mixed.",
     SQL_GEOMEAN, 1},
    {"baselines", "Generated code against each baseline, per problem",
     "Per problem and baseline (system and layer) its best attempt (the fastest ok one; when none is ok, the newest, "
     "with its status) beside the best generated variant of the same problem in the same store. `baseline / "
     "generated` compares spans where the generated row stores one (a baseline without a span gives its wall time), "
     "else kernel sums against the baseline's stored time; `basis` says which: `span` (first to last kernel of a run, "
     "zero-fills included), `sum` (sum of kernel durations), `wall` (CUDA-event time of one call, launch gaps and "
     "Python overhead included).",
     SQL_BASELINES, 1},
    {"sizes", "Where the optimum moves: the best schedule per size",
     "Per problem (and commit) whose float32 rows without per-kernel overrides vary both the tile and the coarsening: "
     "the fastest one's tile, coarsening and launch bounds beside the fixed corner (tile 64, coarsening 4, launch "
     "bounds off; `-` where that point was not measured), and the axes on which the winner is the largest or smallest "
     "value measured for that problem (`on the boundary`: read with the space each store's sweep used; the tile "
     "cannot exceed 64 today, see docs/perf-notes.md).",
     SQL_SIZES, 0},
    {"transfer", "Transfer across GPUs: one device's best config on another",
     "Per problem measured on two devices over the same variants (the points both measured ok): the variant fastest "
     "on device A, timed on device B, against the fastest of those points on B (B's oracle over the shared points), "
     "and the geometric mean over the problems. Each device's time is its best ok measurement of the variant.",
     SQL_TRANSFER, 0},
    {"launch", "How the run reaches the GPU: one launch at a time, one graph, the dependency DAG",
     "Per set of kernels (a generated variant's config without its `launch` key, at one commit) measured under "
     "`stream` and under `graph` or `dag` (config key `launch`, README \"How a run reaches the GPU\"): the mean span "
     "(first memset or kernel start to last kernel end of a run, the median over timed repeats) and kernel sum under "
     "each, over `ok rows` measurements, and the spans' speed-ups over `stream` (> 1: shorter). Under `dag` kernels "
     "run side by side and each takes longer, so its kernel sum rises where its span falls.",
     SQL_LAUNCH, 0},
    {"boundary", "Winners on the boundary of a numeric dimension",
     "Per problem and commit whose ok generated rows vary some numeric config key: the keys varied (a per-kernel "
     "override, INSTANCE.KEY, is a dimension of its own where the rows hold one; a row's value is its override, else "
     "its global value, else the key's default) and those on which the fastest row (kernel sum) has the smallest "
     "(`min`) or largest (`max`) value measured for the problem. `*`: that value is also the key's first or last "
     "legal value, so no value lies beyond it; `!`: the next legal value breaks a config rule for the winner's "
     "config (`next value invalid` quotes the rule; plan-level refusals, which need the model and graph, are not "
     "tried); any other entry is a winner on the edge of what was measured, where the space should be extended. A "
     "key that none of the winner's kernels use (nchunk under trav=edge, say) can be listed too.",
     NULL, 0},
};
#define NQUERIES ((int)(sizeof QUERIES / sizeof QUERIES[0]))

/* What each baseline system or PyG class does beside or instead of our layer (issue 17). */
static const struct {
    const char *system, *layer, *note;
} NOTES[] = {
    {"cublas-seg", NULL, "per relation, cublasSgemm on the gathered rows of its edges (DGL style), one simple kernel per "
                         "other step: the same math as ours, not fused."},
    {"cublas-bmm", NULL, "the relation's weight replicated per edge, then one strided batched GEMM (PyG FastRGCNConv "
                         "style): E x d x d weight bytes."},
    {"cublas-grouped", NULL, "one cublasSgemmGroupedBatched over the relations, one simple kernel per other step."},
    {"torch-eager", NULL, "baselines/torch_equal.py: exactly our layer (models/*.rgnn, same loss, input gradient and SGD "
                          "step) in plain PyTorch ops, eager; checked against the float64 reference first."},
    {"torch-compile", NULL, "the same program under torch.compile."},
    {"pyg", "RGCNConv", "PyG 2.8 RGCNConv: mean aggregation per relation into all N rows, then all N rows times W_r "
                        "for every relation (R x N x d x d flops; ours: one product per unique (source, relation) "
                        "pair), plus a root weight."},
    {"pyg", "FastRGCNConv", "PyG 2.8 FastRGCNConv: W[edge_type] replicated per edge (E x d x d floats) and a batched "
                            "product per edge."},
    {"pyg", "RGATConv", "PyG 2.8 RGATConv: attention vectors shared across relations (ours: per relation), W[edge_type] "
                        "materialized per edge."},
    {"pyg", "HGTConv", "PyG 2.8 HGTConv: k_rel/v_rel applied to every node of the source type once per relation (on "
                       "fb15k237 474 x 14,541 = 6.9M rows each, ours 162K unique rows), plus biases, GELU, a per-type "
                       "output linear and a gated skip connection."},
    {"pyg", NULL, "PyG training (task train) computes no input gradient and takes no optimizer step; ours does both."},
};
#define NNOTES ((int)(sizeof NOTES / sizeof NOTES[0]))

/* A query's text: its constant, or the one built at run time (NULL sql). */
static const char *query_sql(const pt_query *q) { return q->sql ? q->sql : boundary_sql(); }

const char *pt_query_sql(const char *name)
{
    for (int i = 0; i < NQUERIES; i++)
        if (!strcmp(QUERIES[i].name, name)) return query_sql(&QUERIES[i]);
    return NULL;
}

const char *pt_query_names(void)
{
    static char names[256];
    if (!names[0])
        for (int i = 0; i < NQUERIES; i++) {
            size_t used = strlen(names);
            snprintf(names + used, sizeof names - used, "%s%s", i ? " " : "", QUERIES[i].name);
        }
    return names;
}

/* ---------------------------------------------------------------- results ---- */

typedef struct pt_result {
    int ncol, nrow, cap;
    char **names;     /* ncol */
    char **cells;     /* nrow x ncol; NULL values as "-" */
} pt_result;

static void result_free(pt_result *r)
{
    for (int i = 0; i < r->ncol; i++) free(r->names[i]);
    for (long i = 0; i < (long)r->nrow * r->ncol; i++) free(r->cells[i]);
    free(r->names), free(r->cells);
    memset(r, 0, sizeof *r);
}

static int run_query(sqlite3 *db, const char *store, const char *name, const char *sql, pt_result *r, rg_err *err)
{
    memset(r, 0, sizeof *r);
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
        return rg_errf(err, "%s: query %s: %s", store, name, sqlite3_errmsg(db));
    r->ncol = sqlite3_column_count(st);
    r->names = rg_xcalloc((size_t)r->ncol, sizeof *r->names);
    for (int i = 0; i < r->ncol; i++) r->names[i] = rg_xstrdup(sqlite3_column_name(st, i));
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        if (r->nrow == r->cap) r->cells = rg_xrealloc(r->cells, (size_t)(r->cap = r->cap ? 2 * r->cap : 16) * (size_t)r->ncol * sizeof *r->cells);
        for (int i = 0; i < r->ncol; i++) {
            const unsigned char *t = sqlite3_column_text(st, i);
            r->cells[(long)r->nrow * r->ncol + i] = rg_xstrdup(t ? (const char *)t : "-");
        }
        r->nrow++;
    }
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE) {
        result_free(r);
        return rg_errf(err, "%s: query %s: %s", store, name, sqlite3_errmsg(db));
    }
    return 0;
}

static int column_of(const pt_result *r, const char *name)
{
    for (int i = 0; i < r->ncol; i++)
        if (!strcmp(r->names[i], name)) return i;
    return -1;
}

static const char *cell(const pt_result *r, int row, int col) { return r->cells[(long)row * r->ncol + col]; }

/* ---------------------------------------------------------------- commits ---- */

/* The store's commits in the order of their first measurement: commit ranges read oldest to newest
 * without asking git, which may not know a commit measured on another branch. */
typedef struct commit_order {
    char **sha;
    int n;
} commit_order;

static int load_commit_order(sqlite3 *db, const char *store, commit_order *co, rg_err *err)
{
    pt_result r;
    int rc = run_query(db, store, "commit order",
                       "select git_commit from measurements group by git_commit order by min(recorded_at), min(id)", &r, err);
    if (rc) return rc;
    co->n = r.nrow;
    co->sha = rg_xcalloc((size_t)(r.nrow ? r.nrow : 1), sizeof *co->sha);
    for (int i = 0; i < r.nrow; i++) co->sha[i] = rg_xstrdup(cell(&r, i, 0));
    result_free(&r);
    return 0;
}

static void commit_order_free(commit_order *co)
{
    for (int i = 0; i < co->n; i++) free(co->sha[i]);
    free(co->sha);
}

static int is_unknown_commit(const char *c) { return !*c || !strcmp(c, "-") || !strcmp(c, "unknown"); }

/* Marks in seen[] (indexed like co) every commit named in the comma-separated list; 1 when the
 * list names an unknown commit (rows imported without one). */
static int mark_commits(const commit_order *co, const char *list, unsigned char *seen)
{
    int unknown = 0;
    char *copy = rg_xstrdup(list), *save = NULL;
    for (char *c = strtok_r(copy, ",", &save); c; c = strtok_r(NULL, ",", &save)) {
        if (is_unknown_commit(c)) {
            unknown = 1;
            continue;
        }
        for (int i = 0; i < co->n; i++)
            if (!strcmp(co->sha[i], c)) seen[i] = 1;
    }
    free(copy);
    return unknown;
}

static void print_commits(FILE *out, const pt_result *r, const commit_order *co)
{
    int col = column_of(r, "_commits"), unknown = 0, n = 0;
    unsigned char *seen = rg_xcalloc((size_t)(co->n ? co->n : 1), 1);
    for (int i = 0; col >= 0 && i < r->nrow; i++) unknown |= mark_commits(co, cell(r, i, col), seen);
    fprintf(out, "Commits of its rows, oldest first:");
    for (int i = 0; i < co->n; i++)
        if (seen[i] && !is_unknown_commit(co->sha[i])) fprintf(out, "%s `%.7s`", n++ ? "," : "", co->sha[i]);
    if (unknown) fprintf(out, "%s rows imported without a commit", n++ ? ";" : "");
    if (!n) fprintf(out, " none");
    fprintf(out, ".\n");
    free(seen);
}

/* ---------------------------------------------------------------- printing ---- */

static void print_text_cell(FILE *out, const char *s)
{
    fputc(' ', out);
    for (; *s; s++) {
        if (*s == '|') fputs("\\|", out);
        else fputc(*s == '\n' ? ' ' : *s, out);
    }
    fputs(" |", out);
}

/* The distinct values of `_device` in row order (rows are sorted by device). */
static int count_devices(const pt_result *r, FILE *out)
{
    int col = column_of(r, "_device"), n = 0;
    for (int i = 0; col >= 0 && i < r->nrow; i++) {
        if (i && !strcmp(cell(r, i, col), cell(r, i - 1, col))) continue;
        if (out) fprintf(out, "%s%s", n ? "; " : "", cell(r, i, col));
        n++;
    }
    return n;
}

static int shown(const pt_result *r, int col, int show_device)
{
    return r->names[col][0] != '_' || (show_device && !strcmp(r->names[col], "_device"));
}

static void print_table(FILE *out, const pt_result *r)
{
    int show_device = count_devices(r, NULL) > 1;
    fputc('|', out);
    for (int c = 0; c < r->ncol; c++)
        if (shown(r, c, show_device)) print_text_cell(out, strcmp(r->names[c], "_device") ? r->names[c] : "device");
    fputs("\n|", out);
    for (int c = 0; c < r->ncol; c++)
        if (shown(r, c, show_device)) fputs("---|", out);
    fputc('\n', out);
    for (int i = 0; i < r->nrow; i++) {
        fputc('|', out);
        for (int c = 0; c < r->ncol; c++)
            if (shown(r, c, show_device)) print_text_cell(out, cell(r, i, c));
        fputc('\n', out);
    }
}

static int row_has_baseline(const pt_result *r, const char *system, const char *layer)
{
    int col = column_of(r, "baseline");
    size_t ns = strlen(system);
    for (int i = 0; col >= 0 && i < r->nrow; i++) {
        const char *b = cell(r, i, col);
        if (strncmp(b, system, ns) || (b[ns] && b[ns] != ' ')) continue;
        if (!layer || (b[ns] == ' ' && !strcmp(b + ns + 1, layer))) return 1;
    }
    return 0;
}

/* The notes of the baselines that appear in r, marked in used[] (NNOTES). */
static void mark_notes(const pt_result *r, unsigned char *used)
{
    for (int i = 0; i < NNOTES; i++) used[i] |= (unsigned char)row_has_baseline(r, NOTES[i].system, NOTES[i].layer);
}

static void print_notes(FILE *out, const unsigned char *used)
{
    int n = 0;
    for (int i = 0; i < NNOTES; i++) {
        if (!used[i]) continue;
        if (!n++) fprintf(out, "\nWhat each baseline computes:\n\n");
        fprintf(out, "- `%s%s%s`: %s\n", NOTES[i].system, NOTES[i].layer ? " " : "", NOTES[i].layer ? NOTES[i].layer : "",
                NOTES[i].note);
    }
}

/* One store's rows of a table: its caption (store, query, commits, device) and the table. */
static void print_store_table(FILE *out, const char *store, const pt_query *q, const pt_result *r, const commit_order *co)
{
    fprintf(out, "\n#### %s\n\n", store);
    if (r->nrow == 0) {
        fprintf(out, "No rows in `%s`.\n", store);
        return;
    }
    fprintf(out, "Store `%s`, query `%s` (`build/explore perf-tables --query %s | sqlite3 -header -markdown %s`). ",
            store, q->name, q->name, store);
    print_commits(out, r, co);
    fprintf(out, "Device: ");
    count_devices(r, out);
    fprintf(out, ".\n\n");
    print_table(out, r);
}

/* Whether `winner` with dimension `dim` (KEY or INSTANCE.KEY) moved to `next` is invalid; the reason goes to why. */
static int next_is_invalid(const cg_config *winner, const char *dim, long next, rg_err *why)
{
    cg_config c = *winner;
    char kv[96];
    snprintf(kv, sizeof kv, "%s=%ld", dim, next);
    if (cfg_parse(&c, kv, why)) return 1;
    return cfg_validate(&c, why) != 0;
}

/* The reasons of one row's invalid next values, each once with the dimensions it holds for ("gemm_2.tile=128,
 * gemm_3.tile=128: why"): a plan's GEMMs fail the same rule together. */
#define BOUNDARY_REASONS_MAX 16
typedef struct edge_reasons {
    int n;
    char *why[BOUNDARY_REASONS_MAX];
    rg_str dims[BOUNDARY_REASONS_MAX];
} edge_reasons;

/* The rule's text without the instance and "invalid: " cfg_validate puts before it. */
static const char *rule_text(const char *msg)
{
    const char *p = strstr(msg, "invalid: ");
    return p ? p + 9 : msg;
}

static void add_reason(edge_reasons *er, const char *dim, long next, const char *msg)
{
    int i = 0;
    while (i < er->n && strcmp(er->why[i], rule_text(msg))) i++;
    if (i == er->n) {
        if (er->n == BOUNDARY_REASONS_MAX) return;   /* the row's cell shows the `!` still */
        er->why[er->n++] = rg_xstrdup(rule_text(msg));
    }
    rg_str_printf(&er->dims[i], "%s%s=%ld", er->dims[i].len ? ", " : "", dim, next);
}

static char *reasons_text(edge_reasons *er)
{
    rg_str out = {0};
    for (int i = 0; i < er->n; i++) {
        rg_str_printf(&out, "%s%s: %s", i ? "; " : "", er->dims[i].s, er->why[i]);
        free(er->why[i]), free(er->dims[i].s);
    }
    return out.s ? out.s : rg_xstrdup("");
}

/* One entry `DIM=SIDE(VALUE)` of the boundary column, copied to `marked` with `!` appended where the next legal
 * value outward is invalid for the winner's config (the reason to er; winner NULL: not checked). */
static void check_edge(const char *entry, const cg_config *winner, rg_str *marked, edge_reasons *er)
{
    char dim[64], side[4];
    long value = 0, next = 0;
    const cfg_key *k;
    const char *base;
    rg_str_printf(marked, "%s%s", marked->len ? " " : "", entry);
    if (!winner || entry[strlen(entry) - 1] == '*' || sscanf(entry, "%63[^=]=%3[a-z](%ld)", dim, side, &value) != 3)
        return;
    base = strchr(dim, '.') ? strchr(dim, '.') + 1 : dim;
    if (!(k = cfg_find_key(base)) || !next_legal(k, value, strcmp(side, "max") ? -1 : 1, &next)) return;
    rg_err why;
    if (!next_is_invalid(winner, dim, next, &why)) return;
    rg_str_puts(marked, "!");
    add_reason(er, dim, next, why.msg);
}

/* The boundary table's last step, in C: each edge of the winner not at its key's last value is tried one legal
 * value further against the config rules (cfg_validate), which SQL cannot run. A winner whose stored config no
 * longer parses (an old store's key) is left unchecked. */
static void mark_invalid_next(pt_result *r)
{
    int cb = column_of(r, "on the boundary"), cn = column_of(r, "next value invalid"), cc = column_of(r, "_config");
    RG_ASSERT(cb >= 0 && cn >= 0 && cc >= 0);
    for (int row = 0; row < r->nrow; row++) {
        cg_config winner;
        rg_err err;
        cfg_default(&winner);
        int readable = !cfg_parse_json(&winner, cell(r, row, cc), &err);
        char *list = rg_xstrdup(cell(r, row, cb)), *save = NULL;
        rg_str marked = {0};
        edge_reasons er = {0};
        for (char *e = strtok_r(list, " ", &save); e; e = strtok_r(NULL, " ", &save))
            check_edge(e, readable ? &winner : NULL, &marked, &er);
        char **b = &r->cells[(long)row * r->ncol + cb], **n = &r->cells[(long)row * r->ncol + cn];
        free(*b), free(*n);
        *b = marked.s ? marked.s : rg_xstrdup("");
        *n = reasons_text(&er);
        free(list);
    }
}

typedef struct pt_source {
    const char *path;
    sqlite3 *db;
    commit_order co;
} pt_source;

static int print_query(FILE *out, const pt_query *q, pt_source *src, int nsrc, rg_err *err)
{
    unsigned char used[NNOTES] = {0};
    fprintf(out, "\n### %s\n\n%s\n", q->title, q->about);
    for (int i = 0; i < nsrc; i++) {
        pt_result r;
        if (run_query(src[i].db, src[i].path, q->name, query_sql(q), &r, err)) return -1;
        if (!q->sql) mark_invalid_next(&r);   /* the one query built at run time, boundary */
        print_store_table(out, src[i].path, q, &r, &src[i].co);
        if (q->baseline_notes) mark_notes(&r, used);
        result_free(&r);
    }
    print_notes(out, used);
    return 0;
}

static void write_header(FILE *out, const char *const *stores, int nstores, int nextra)
{
    fprintf(out, "# Performance tables (generated)\n\n"
                 "<!-- Written by `make perf-tables` (`build/explore perf-tables`); do not edit: regenerate. -->\n\n"
                 "The tables of record for the numbers the docs quote as headline results. Each one is a fixed query "
                 "(listed at the end, and printed by `build/explore perf-tables --query NAME`) run on a committed "
                 "results store opened read-only; each names its store, its query and the commits its rows were "
                 "measured at. Nothing here is typed by hand: `make perf-tables` rewrites this file from the stores, "
                 "and `.ci/run` fails when the file differs from what the stores give. docs/perf-notes.md keeps the "
                 "history of each session (with the numbers as measured then); where the two differ, this file is the "
                 "one of record.%s\n\n"
                 "Times are in ms, medians over the timed repeats of a measurement. Stores:\n\n",
            nextra ? " The last sections (after the query tables) are computed by the explorer from a store, each "
                     "naming the command that prints the same numbers."
                   : "");
    for (int i = 0; i < nstores; i++) fprintf(out, "- `%s`\n", stores[i]);
    fprintf(out, "\n## Tables\n");
}

static void write_queries(FILE *out)
{
    fprintf(out, "\n## Queries\n");
    for (int i = 0; i < NQUERIES; i++)
        fprintf(out, "\n### %s\n\n```sql\n%s```\n", QUERIES[i].name, query_sql(&QUERIES[i]));
}

static void close_sources(pt_source *src, int n)
{
    for (int i = 0; i < n; i++) {
        commit_order_free(&src[i].co);
        if (src[i].db) sqlite3_close_v2(src[i].db);
    }
    free(src);
}

/* Every store opened read-only before anything is printed: a bad path is one error, no half file. */
static pt_source *open_sources(const char *const *stores, int n, rg_err *err)
{
    pt_source *src = rg_xcalloc((size_t)n, sizeof *src);
    for (int i = 0; i < n; i++) {
        src[i].path = stores[i];
        rs_store *s = rs_open_read(stores[i], err);
        if (!s) {
            close_sources(src, i);
            return NULL;
        }
        src[i].db = rs_detach(s);
        if (load_commit_order(src[i].db, stores[i], &src[i].co, err)) {
            close_sources(src, i + 1);
            return NULL;
        }
    }
    return src;
}

int pt_write(const char *const *stores, int nstores, FILE *out, rg_err *err)
{
    return pt_write_sections(stores, nstores, NULL, 0, out, err);
}

int pt_write_sections(const char *const *stores, int nstores, const pt_section *extra, int nextra, FILE *out,
                      rg_err *err)
{
    RG_ASSERT(nstores > 0);
    pt_source *src = open_sources(stores, nstores, err);
    if (!src) return -1;
    char *text = NULL;
    size_t len = 0;
    FILE *mem = open_memstream(&text, &len);
    RG_ASSERT(mem);
    write_header(mem, stores, nstores, nextra);
    int rc = 0;
    for (int i = 0; !rc && i < NQUERIES; i++) rc = print_query(mem, &QUERIES[i], src, nstores, err);
    for (int i = 0; i < nextra; i++) fprintf(mem, "\n### %s\n\n%s\n%s", extra[i].title, extra[i].about, extra[i].text);
    write_queries(mem);
    fclose(mem);
    close_sources(src, nstores);
    if (!rc && fwrite(text, 1, len, out) != len) rc = rg_errf(err, "cannot write the tables");
    free(text);
    return rc;
}
