-- Session 23 (issue 18): the traversals with (b0fc3fb) and without their unread id loads, two alternated runs each
-- (plans/idloads). Usage: sqlite3 -header -column results/h200/session23.db < plans/idloads/ab.sql
.read plans/layer.sql
select v.model, v.task, d.name as dataset, coalesce(json_extract(v.config, '$.lanes'), 32) as lanes,
       coalesce(json_extract(v.config, '$.vec'), 1) as vec,
       case when m.git_commit like 'b0fc3fb%' then 'id loads' else 'without' end as traversal,
       group_concat(printf('%.4f', m.median_ms), ' ') as "kernel sum ms (runs)",
       group_concat(printf('%.4f', l.span_ms), ' ') as "span ms",
       group_concat(printf('%.4f', l.gather_floor_ms), ' ') as "gather floor ms"
from measurements m join variants v on v.id = m.variant_id join datasets d on d.id = m.dataset_id
     join layer l on l.measurement_id = m.id
where m.status = 'ok' and m.run_id in (select id from runs where command_line like '%plans/idloads/%')
group by v.id, d.id, m.git_commit
order by v.model, v.task, d.name, lanes, vec, traversal desc;
