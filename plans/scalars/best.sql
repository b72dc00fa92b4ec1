-- Session 18 (issue 18): the best of each problem without and with scalars=lane, and the best's gather floor (its own
-- measurement's: the floor at its storage width, docs/floor.md):
--   sqlite3 results/h200/session18.db < plans/scalars/best.sql
-- columns: model, task, dataset, best group ms, best lane ms, lane / group, gather floor ms, best x gather floor
with m as (
  select v.model, v.task, d.name ds, m.id, m.median_ms ms, v.config like '%scalars":"lane%' lane
  from measurements m join variants v on v.id=m.variant_id join datasets d on d.id=m.dataset_id
  where m.status='ok' and d.name not in ('aifb','mutag')),
p as (select model, task, ds, min(case when not lane then ms end) grp, min(case when lane then ms end) lane from m group by 1,2,3),
b as (select model, task, ds, id, ms, row_number() over (partition by model, task, ds order by ms) rk from m)
select p.model, p.task, p.ds, round(grp,4), round(lane,4), round(lane/grp,3),
       round(x.value,4), round(b.ms/x.value,2)
from p join b on b.model=p.model and b.task=p.task and b.ds=p.ds and b.rk=1
left join metrics x on x.measurement_id=b.id and x.name='gather_floor_ms'
order by 2,1,3;
