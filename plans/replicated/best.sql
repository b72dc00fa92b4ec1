-- Session 19 (issue 18): the best of each problem by who evaluates its per-edge scalars, forward (fwd: trav_3, trav_4
-- or trav_6) and backward (bwd: trav_9_bwd, trav_10_bwd or trav_12_bwd), at the session's commit 349a6f5, and the
-- overall best's gather floor (its own measurement's, docs/floor.md):
--   sqlite3 -header -column results/h200/session19.db < plans/replicated/best.sql
-- columns: model, task, dataset, best ms with group everywhere, best with lane and replicated forward and backward as
-- named (training: fwd/bwd), the best, best / all-group, gather floor ms, best x gather floor
with m as (
  select v.model, v.task, d.name ds, m.id, m.median_ms ms,
         coalesce(json_extract(v.config, '$."trav_4.scalars"'), json_extract(v.config, '$."trav_6.scalars"'),
                  json_extract(v.config, '$."trav_3.scalars"'), 'group') fwd,
         coalesce(json_extract(v.config, '$."trav_10_bwd.scalars"'), json_extract(v.config, '$."trav_12_bwd.scalars"'),
                  json_extract(v.config, '$."trav_9_bwd.scalars"'), 'group') bwd
  from measurements m join variants v on v.id=m.variant_id join datasets d on d.id=m.dataset_id
  where m.status='ok' and m.git_commit like '349a6f5%'),
p as (select model, task, ds,
        min(case when fwd='group' and bwd='group' then ms end) gg,
        min(case when fwd='lane' and bwd='group' then ms end) lg,
        min(case when fwd='lane' and bwd='lane' then ms end) ll,
        min(case when fwd='lane' and bwd='replicated' then ms end) lr,
        min(case when fwd='replicated' and bwd='replicated' then ms end) rr,
        min(case when fwd='replicated' and bwd='group' then ms end) rg,
        min(ms) best from m group by 1,2,3),
b as (select model, task, ds, id, ms, fwd, bwd, row_number() over (partition by model, task, ds order by ms) rk from m)
select p.model, p.task, p.ds, round(gg,4) all_group, round(lg,4) lane_grp, round(ll,4) lane_lane,
       round(lr,4) lane_repl, round(rg,4) repl_grp, round(rr,4) repl_repl,
       b.fwd || case when p.task='train' then '/' || b.bwd else '' end best_is, round(best,4) best,
       round(best/gg,3) vs_group, round(x.value,4) gather_floor, round(best/x.value,2) x_floor
from p join b on b.model=p.model and b.task=p.task and b.ds=p.ds and b.rk=1
left join metrics x on x.measurement_id=b.id and x.name='gather_floor_ms'
order by 2,1,3;
