-- Session 29 (issue 18): the zero-fill A/B, per problem: the kernel sum (median_ms) and the span of the same
-- configuration at c741eee (every zero-initialised variable zero-filled, one memset each) and at f872d55 (only
-- those a kernel reads back, in one memset), each the mean of the two measurements of one call (30 repeats each),
-- their ratios, and the span over the graph's gather floor before and after. Usage:
--   sqlite3 -header -column results/h200/session29.db < plans/small/zfill.sql
.read plans/layer.sql
with ab as (
  select v.model, v.task, d.name as dataset, m.git_commit as c, m.median_ms, l.span_ms, l.gather_floor_ms
  from measurements m join variants v on v.id = m.variant_id join datasets d on d.id = m.dataset_id
       join layer l on l.measurement_id = m.id join runs r on r.id = m.run_id
  where m.status = 'ok' and m.git_commit in ('c741eee', 'f872d55') and r.command_line like '%one.space%'),
pair as (
  select model, task, dataset,
         avg(case when c = 'c741eee' then median_ms end) as sum_before, avg(case when c = 'f872d55' then median_ms end) as sum_after,
         avg(case when c = 'c741eee' then span_ms end) as span_before, avg(case when c = 'f872d55' then span_ms end) as span_after,
         avg(gather_floor_ms) as floor, count(*) as n
  from ab group by model, task, dataset)
select model, task, dataset, n,
       printf('%.4f', sum_before) as "kernel sum before", printf('%.4f', sum_after) as "after",
       printf('%.4f', span_before) as "span before", printf('%.4f', span_after) as "after",
       printf('%.3f', span_before / span_after) as "span speed-up", printf('%.3f', sum_before / sum_after) as "sum speed-up",
       printf('%.1f -> %.1f', span_before / floor, span_after / floor) as "span / gather floor"
from pair order by model, task, dataset;
