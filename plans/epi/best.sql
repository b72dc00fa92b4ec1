-- Session 20 (issue 18): the best of each problem with epi=off and with epi=on, both from one run
-- (commit 41abad1: plans/epi/list.txt; f518cfb's rows are epi's first version, the later commits' other
-- runs), with the best point's form (trav/lanes/nchunk/cdot) and the gather floor (its own measurement's):
--   sqlite3 -header -column results/h200/session20.db < plans/epi/best.sql
-- columns: model, task, dataset, best epi=off (its form: trav/lanes/nchunk), best epi=on (its form),
-- on / off, gather floor ms, best x gather floor
with m as (
  select v.model, v.task, d.name ds, m.id, m.median_ms ms, coalesce(json_extract(v.config, '$.epi'), 0) epi,
         json_extract(v.config, '$.trav') || '/' || coalesce(json_extract(v.config, '$.lanes'), '-') || '/' ||
         coalesce(json_extract(v.config, '$.nchunk'), 64) || '/' || coalesce(json_extract(v.config, '$.cdot'), 'table') form
  from measurements m join variants v on v.id=m.variant_id join datasets d on d.id=m.dataset_id
  where m.status='ok' and m.git_commit like '41abad1%'
    and d.name in ('fb15k237', 'mag_0.1', 'synth:am', 'synth:mag')),
r as (select *, row_number() over (partition by model, task, ds, epi order by ms) rk from m),
off as (select * from r where epi=0 and rk=1),
onn as (select * from r where epi=1 and rk=1)
select off.model, off.task, off.ds, round(off.ms,4) best_off, off.form off_form, round(onn.ms,4) best_on,
       onn.form on_form, round(onn.ms/off.ms,3) on_vs_off, round(x.value,4) gather_floor,
       round(min(off.ms,onn.ms)/x.value,2) x_floor
from off join onn on onn.model=off.model and onn.task=off.task and onn.ds=off.ds
left join metrics x on x.measurement_id=case when onn.ms < off.ms then onn.id else off.id end and x.name='gather_floor_ms'
order by 2,1,3;
