-- Session 24 (issue 18): acc=reg against acc=reg32, and RGCN's e.norm stored float64 (binary f3b1c6a+norm64) against
-- float32, each space run twice in alternation (plans/reg32). Usage:
--   sqlite3 -header -column results/h200/session24.db < plans/reg32/ab.sql
.read plans/layer.sql
select v.model, v.task, d.name as dataset,
       case when v.model = 'hgt' and v.task = 'train'   -- trav_6 / trav_12_bwd
            then coalesce(json_extract(v.config, '$."trav_6.acc"'), 'smem') || '/' ||
                 coalesce(json_extract(v.config, '$."trav_12_bwd.acc"'), 'smem')
            else coalesce(json_extract(v.config, '$.acc'), json_extract(v.config, '$."trav_4.acc"'), 'smem') end as acc,
       case when m.git_commit like '%norm64' then 'float64' else 'float32' end as norm,
       group_concat(printf('%.4f', m.median_ms), ' ') as "kernel sum ms (runs)",
       group_concat(printf('%.4f', l.span_ms), ' ') as "span ms",
       group_concat(printf('%.4f', l.gather_floor_ms), ' ') as "gather floor ms"
from measurements m join variants v on v.id = m.variant_id join datasets d on d.id = m.dataset_id
     join layer l on l.measurement_id = m.id
where m.status = 'ok' and m.run_id in (select id from runs where command_line like '%plans/reg32/%'
                                        and command_line not like '%-sweep.space%')
group by v.id, d.id, m.git_commit
order by v.model, v.task, d.name, norm desc, acc;
