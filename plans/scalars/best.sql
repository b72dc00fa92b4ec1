-- Session 18 (issue 18): the best of each problem without and with scalars=lane, and its gather floor:
--   sqlite3 results/h200/session18.db < plans/scalars/best.sql
-- columns: model, task, dataset, best group ms, best lane ms, lane / group, gather floor ms, best x gather floor
with p as (
  select v.model, v.task, d.name ds,
         min(case when v.config not like '%scalars":"lane%' then m.median_ms end) grp,
         min(case when v.config like '%scalars":"lane%' then m.median_ms end) lane
  from measurements m join variants v on v.id=m.variant_id join datasets d on d.id=m.dataset_id
  where m.status='ok' and d.name not in ('aifb','mutag') group by 1,2,3),
f as (select v.model, v.task, d.name ds, max(x.value) gf from metrics x join measurements m on m.id=x.measurement_id join variants v on v.id=m.variant_id join datasets d on d.id=m.dataset_id where x.name='gather_floor_ms' group by 1,2,3)
select p.model, p.task, p.ds, round(grp,4), round(lane,4), round(lane/grp,3), round(f.gf,4), round(min(grp,coalesce(lane,1e9))/f.gf,2) from p left join f using (model, task, ds) order by 2,1,3;
