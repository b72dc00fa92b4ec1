-- Best generated variant per (model, task, dataset) at dims 64 against the layer's DRAM-cold floor
-- max(floor_bytes / ceil_copy_Bps, floor_flops / ceil_fp32_flops), every term a stored metric of the
-- measurement (docs/floor.md). Measurements from before these metrics have no floor (NULL).
-- Usage: sqlite3 -column results/h100/results.db < docs/floor.sql
with best as (
  select v.model, v.task, d.name as ds, m.id, m.median_ms,
         row_number() over (partition by v.model, v.task, d.name order by m.median_ms) as rk
  from measurements m join variants v on v.id = m.variant_id join datasets d on d.id = m.dataset_id
  where m.status = 'ok' and m.system = 'generated' and v.dim_in = 64 and v.dim_out = 64 and v.heads = 1),
mv as (
  select b.*, (select value from metrics x where x.measurement_id = b.id and x.name = 'span_ms' and coalesce(x.kernel, '') = '') as span_ms,
         (select value from metrics x where x.measurement_id = b.id and x.name = 'floor_bytes' and coalesce(x.kernel, '') = '') as fb,
         (select value from metrics x where x.measurement_id = b.id and x.name = 'floor_flops' and coalesce(x.kernel, '') = '') as ff,
         (select value from metrics x where x.measurement_id = b.id and x.name = 'ceil_copy_Bps' and coalesce(x.kernel, '') = '') as bw,
         (select value from metrics x where x.measurement_id = b.id and x.name = 'ceil_fp32_flops' and coalesce(x.kernel, '') = '') as pk
  from best b where b.rk = 1),
floors as (select model, task, ds, median_ms, span_ms, 1000 * max(fb / bw, ff / pk) as floor_ms from mv)
select model, task, ds, round(median_ms, 3) as best_ms, round(span_ms, 3) as span_ms, round(floor_ms, 4) as floor_ms,
       round(span_ms / floor_ms, 1) as x_floor
from floors order by task, model, ds;
