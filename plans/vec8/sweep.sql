-- Session 22 (issue 18): per problem of the vec8 sweep (plans/vec8/list.txt, one run each), the best point, the best
-- vec=8 point and the best of each unroll value. Usage: sqlite3 -header -column results/h200/session22.db < plans/vec8/sweep.sql
with s as (
  select v.model, v.task, d.name as dataset, m.median_ms as ms,
         coalesce(json_extract(v.config, '$.vec'), json_extract(v.config, '$."trav_4.vec"'), 1) as vec,
         coalesce(json_extract(v.config, '$.unroll'), json_extract(v.config, '$."trav_4.unroll"'), 'auto') as unroll,
         coalesce(json_extract(v.config, '$.lanes'), 32) as lanes
  from measurements m join variants v on v.id = m.variant_id join datasets d on d.id = m.dataset_id
  where m.status = 'ok' and m.run_id in (select id from runs where command_line like '%plans/vec8/%'
                                          and command_line not like '%/ab-%' and command_line not like '%/refused%'
                                          and command_line not like '%/lifted-%'))
select model, task, dataset, count(*) as points, printf('%.4f', min(ms)) as "best ms",
       iif(min(iif(vec = 8, ms, null)) is null, '-', printf('%.4f', min(iif(vec = 8, ms, null)))) as "best vec=8",
       iif(min(iif(vec = 8, ms, null)) / min(ms) is null, '-', printf('%.2f', min(iif(vec = 8, ms, null)) / min(ms))) as "vec=8 / best",
       iif(min(iif(unroll = 'auto', ms, null)) is null, '-', printf('%.4f', min(iif(unroll = 'auto', ms, null)))) as "unroll auto",
       iif(min(iif(unroll = '2', ms, null)) is null, '-', printf('%.4f', min(iif(unroll = '2', ms, null)))) as "2",
       iif(min(iif(unroll = '4', ms, null)) is null, '-', printf('%.4f', min(iif(unroll = '4', ms, null)))) as "4",
       iif(min(iif(unroll = '8', ms, null)) is null, '-', printf('%.4f', min(iif(unroll = '8', ms, null)))) as "8"
from s group by model, task, dataset order by model, task, dataset;
