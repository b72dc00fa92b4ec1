-- Session 25 (issue 18): crsum run against defer, the deferred kernel's lanes and accumulators, pfetch off against
-- on; one row per variant and dataset, its times in the order of the calls (plans/defer/README.md). Usage:
--   sqlite3 -header -column results/h200/session25.db < plans/defer/ab.sql
.read plans/layer.sql
with deferred(model, kernel) as (values ('rgat', 'trav_12_bwd'), ('hgt', 'trav_21_bwd'))
select v.model, v.task, d.name as dataset, json_extract(v.config, '$.crsum') as crsum,
       case when json_extract(v.config, '$.crsum') = 'defer'
            then coalesce(json_extract(v.config, '$."' || k.kernel || '.lanes"'), json_extract(v.config, '$.lanes'), 32)
            end as "deferred lanes",
       json_extract(v.config, '$."' || k.kernel || '.acc"') as "deferred acc",
       case when json_extract(v.config, '$.pfetch') then 'all'
            when json_extract(v.config, '$."' || k.kernel || '.pfetch"') then 'deferred' else 'off' end as pfetch,
       group_concat(case when m.status = 'ok' then printf('%.4f', m.median_ms) else m.status end, ' ') as "ms (calls)",
       group_concat(case when m.status = 'ok' then printf('%.1f', l.span_ms / l.gather_floor_ms) else '-' end, ' ')
           as "span / gather floor",
       group_concat(distinct substr(m.git_commit, 1, 7) || case when m.git_commit like '%+%'
                    then substr(m.git_commit, instr(m.git_commit, '+')) else '' end) as tree
from measurements m join variants v on v.id = m.variant_id join datasets d on d.id = m.dataset_id
     join layer l on l.measurement_id = m.id left join deferred k on k.model = v.model
where m.run_id in (select id from runs where command_line like '%plans/defer/%')
group by v.id, d.id
order by v.model, v.task, d.name, crsum desc, "deferred lanes", "deferred acc", pfetch;
