-- Best generated variant per (model, task, dataset) at dims 64 against the roofline floor
-- max(bytes / 3.0 TB/s, flops / 51.6 TFLOP/s), bytes and flops counted from the IR.
-- Usage: sqlite3 -column results/h100/results.db < docs/floor.sql
with best as (
  select v.model, v.task, d.name as ds, m.id, m.median_ms,
         row_number() over (partition by v.model, v.task, d.name order by m.median_ms) as rk
  from measurements m join variants v on v.id = m.variant_id join datasets d on d.id = m.dataset_id
  where m.status = 'ok' and m.system = 'generated' and v.dim_in = 64 and v.dim_out = 64 and v.heads = 1),
floors as (
  select b.model, b.task, b.ds, b.median_ms,
         1000 * max((select value from metrics where measurement_id = b.id and name = 'bytes' and coalesce(kernel, '') = '') / 3.0e12,
                    (select value from metrics where measurement_id = b.id and name = 'flops' and coalesce(kernel, '') = '') / 51.6e12) as floor_ms
  from best b where b.rk = 1)
select model, task, ds, round(median_ms, 3) as best_ms, round(floor_ms, 4) as floor_ms,
       round(median_ms / floor_ms, 1) as x_floor
from floors order by task, model, ds;
